"""KMeans on scipy.sparse input (cluster/kmeans/sparse.py) against scikit-learn's
KMeans on the same sparse matrix, from the same random_state: the same
seeding draws, so the same centres, labels, inertia and iterations."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans as SKKMeans

import oclclust as oc


def sparse_blobs(n=400, d=30, dtype=np.float64, seed=0):
    rng = np.random.RandomState(seed)
    X = sp.random(n, d, density=0.15, random_state=rng, format="csr", dtype=np.float64)
    X.data *= 4
    return X.astype(dtype)


def assert_same_fit(ours, ref, dtype):
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    assert ours.n_iter_ == ref.n_iter_
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=rtol,
                               atol=rtol)
    assert ours.inertia_ == pytest.approx(ref.inertia_, rel=rtol)
    assert np.array_equal(ours.labels_, ref.labels_)
    assert ours.cluster_centers_.dtype == ref.cluster_centers_.dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("init,n_init", [("k-means++", 1), ("random", 3), ("array", 1)])
@pytest.mark.parametrize("weighted", [False, True])
def test_sparse_fit_equals_sklearn(devices, dtype, init, n_init, weighted):
    X = sparse_blobs(dtype=dtype)
    w = np.random.RandomState(2).uniform(0.5, 2.0, X.shape[0]) if weighted else None
    if init == "array":
        init = X[:6].toarray().astype(np.float64)
    kw = dict(n_clusters=6, init=init, n_init=n_init, random_state=3, max_iter=100)
    ours = oc.KMeans(devices=devices, **kw).fit(X, sample_weight=w)
    ref = SKKMeans(algorithm="lloyd", **kw).fit(X, sample_weight=w)
    assert_same_fit(ours, ref, dtype)


@pytest.mark.parametrize("fmt", ["csc", "coo", "lil"])
def test_every_sparse_format_fits_as_csr(devices, fmt):
    X = sparse_blobs()
    ours = oc.KMeans(5, n_init=1, random_state=0, devices=devices).fit(X.asformat(fmt))
    ref = oc.KMeans(5, n_init=1, random_state=0, devices=devices).fit(X)
    assert np.array_equal(ours.cluster_centers_, ref.cluster_centers_)


def test_predict_transform_score_on_sparse_rows(devices):
    X = sparse_blobs()
    ours = oc.KMeans(5, n_init=1, random_state=0, devices=devices).fit(X)
    ref = SKKMeans(5, n_init=1, random_state=0, algorithm="lloyd").fit(X)
    new = sparse_blobs(n=50, seed=9)
    assert np.array_equal(ours.predict(new), ref.predict(new))
    np.testing.assert_allclose(ours.transform(new), ref.transform(new), rtol=1e-12)
    assert ours.score(new) == pytest.approx(ref.score(new), rel=1e-12)
    assert np.array_equal(ours.predict(new), ours.predict(new.toarray()))   # as dense rows
    np.testing.assert_allclose(ours.fit_transform(X), ref.fit_transform(X), rtol=1e-12)


def test_a_sparse_fit_with_duplicate_rows_warns_as_sklearn(devices):
    X = sp.csr_matrix(np.repeat(np.eye(3), 4, axis=0))
    with pytest.warns(Warning, match="Number of distinct clusters"):
        oc.KMeans(5, n_init=1, random_state=0, devices=devices).fit(X)


@pytest.mark.parametrize("make,error,match", [
    (lambda X: X.multiply(np.nan).tocsr(), ValueError, "NaN"),
    (lambda X: X[:3], ValueError, "n_samples=3 should be >= n_clusters=6"),
    (lambda X: sp.csr_matrix((0, 30)), ValueError, "0 sample"),
    (lambda X: X.astype(np.complex128), ValueError, "Complex"),
])
def test_bad_sparse_input_is_refused(devices, make, error, match):
    with pytest.raises(error, match=match):
        oc.KMeans(6, devices=devices).fit(make(sparse_blobs()))


def test_sparse_rows_of_other_width_are_refused(devices):
    km = oc.KMeans(4, n_init=1, random_state=0, devices=devices).fit(sparse_blobs())
    with pytest.raises(ValueError, match="X has 7 features"):
        km.predict(sp.csr_matrix((2, 7)))


@pytest.mark.parametrize("name", ["FuzzyCMeans", "GaussianMixture", "EnsembleKMeans"])
def test_estimators_without_a_sparse_path_refuse_sparse_rows(devices, name):
    # as scikit-learn's GaussianMixture: a TypeError naming the way out
    with pytest.raises(TypeError, match="sparse"):
        getattr(oc, name)(3, devices=devices).fit(sparse_blobs())


def test_spherical_sparse_fit_equals_the_dense_one(devices):
    X = sparse_blobs()
    X[5] = 0                               # a row of norm 0 stays 0
    kw = dict(n_clusters=5, init=X[10:15].toarray(), n_init=1, spherical=True, tol=0,
              max_iter=30, devices=devices)
    ours = oc.KMeans(**kw).fit(X)
    dense = oc.KMeans(**kw).fit(X.toarray())
    np.testing.assert_allclose(ours.cluster_centers_, dense.cluster_centers_, rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(ours.cluster_centers_, axis=1), 1.0)
    assert ours.inertia_ == pytest.approx(dense.inertia_, rel=1e-10)
    # a row of norm 0 (row 5, and those the random matrix left empty) is at
    # distance 1 from every centre: its label is the rounding's
    keep = np.asarray(abs(X).sum(axis=1)).ravel() > 0
    assert np.array_equal(ours.labels_[keep], dense.labels_[keep])
    new = sparse_blobs(n=40, seed=4) * 3
    assert np.array_equal(ours.predict(new), dense.predict(new.toarray()))
    np.testing.assert_allclose(ours.transform(new), dense.transform(new.toarray()), rtol=1e-10)
