"""The CSR assignment and distances (passes/lloyd_csr.py) against numpy on
ragged sparse rows: empty rows, a dense row, k below, at and past the
kernel's centre chunk, both dtypes."""
import numpy as np
import pytest
import scipy.sparse as sp

from oclclust.passes.lloyd_csr import CsrAssignSpec, CsrRows


def sparse_rows(n, d, density, dtype, seed=0):
    rng = np.random.RandomState(seed)
    X = sp.random(n, d, density=density, random_state=rng, format="lil", dtype=np.float64)
    X[0] = 0                                   # a row with no nonzero
    X[1] = rng.uniform(-3, 3, d)               # a dense row
    return X.tocsr().astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,d,k", [(2, 1, 1), (37, 5, CsrAssignSpec.ct),
                                   (101, 70, CsrAssignSpec.ct + 1), (64, 300, 3)])
def test_assign_and_distances_equal_numpy(devices, dtype, n, d, k):
    X = sparse_rows(n, d, 0.1, dtype)
    centers = np.random.RandomState(1).normal(size=(k, d))
    rows = CsrRows(devices[0], X)
    dense = X.toarray().astype(np.float64)
    c = centers.astype(dtype).astype(np.float64)        # the centres as the device holds them
    want = ((dense[:, None, :] - c[None]) ** 2).sum(axis=2)
    rtol = 1e-9 if devices[0].fp64 else 1e-4
    np.testing.assert_allclose(rows.distances(centers), want, rtol=rtol, atol=rtol)
    labels, dist = rows.assign(centers)
    np.testing.assert_allclose(dist, want.min(axis=1), rtol=rtol, atol=rtol)
    clear = np.sort(want, axis=1)
    clear = clear[:, 1] - clear[:, 0] > 1e-6 if k > 1 else np.ones(n, bool)
    assert np.array_equal(labels[clear], want.argmin(axis=1)[clear])


def test_ties_take_the_first_centre(devices):
    X = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 0.0]]))
    centers = np.array([[0.0, 1.0], [1.0, 1.0], [0.0, 1.0], [1.0, 1.0]])
    labels, _ = CsrRows(devices[0], X).assign(centers)
    assert labels.tolist() == [1, 0]
