"""oclgrind plugin: k-means over sparse rows (passes/lloyd_csr.py) -- the
CSR assignment and distance kernels against numpy on rows with no nonzero,
duplicate-free ragged rows, k not a multiple of the centre chunk, in every
precision; and a whole sparse fit.

Run:  cd /tmp && PYOPENCL_NO_CACHE=1 oclgrind --data-races --uninitialized \
      --check-api --build-options -cl-opt-disable python tests/harness/oclgrind_driver.py --only lloyd_csr
"""
import numpy as np
import scipy.sparse as sp

import oclclust as oc
from oclgrind_driver import PRECISIONS, close, device_manager, mark, profile_for
from oclclust.passes.lloyd_csr import CsrRows


def rows(dtype, seed=0):
    rng = np.random.RandomState(seed)
    X = sp.random(23, 9, density=0.3, random_state=rng, format="csr", dtype=np.float64)
    X = sp.vstack([X, sp.csr_matrix((2, 9))]).tocsr()   # two rows with no nonzero
    return X.astype(dtype)


def exercise_kernels(device, log):
    for dtype, fp64 in PRECISIONS:
        mark(f"lloyd_csr {dtype} fp64={fp64}")
        X = rows(dtype)
        csr = CsrRows(profile_for(device, fp64), X)
        centers = np.random.RandomState(1).uniform(0, 1, (11, 9))
        dense = X.toarray().astype(np.float64)
        want = ((dense[:, None, :] - centers.astype(dtype)[None]) ** 2).sum(axis=2)
        rtol = 1e-10 if fp64 else 1e-4
        close(csr.distances(centers), want, f"csr distances {dtype}", rtol)
        labels, dist = csr.assign(centers)
        close(dist, want.min(axis=1), f"csr min distances {dtype}", rtol)
        if not (want[np.arange(len(want)), labels] <= want.min(axis=1) + rtol).all():
            raise AssertionError(f"csr labels {dtype}: not the nearest centres")
    log("lloyd_csr kernels: ok")


def exercise_fit(device, log):
    mark("lloyd_csr fit")
    X = rows("float64", seed=3)
    km = oc.KMeans(3, n_init=1, random_state=0, max_iter=4,
                   devices=device_manager(profile_for(device, True))).fit(X)
    close(km.inertia_, ((X.toarray() - km.cluster_centers_[km.labels_]) ** 2).sum(),
          "csr fit inertia", 1e-9)
    log("lloyd_csr fit: ok")


EXERCISERS = {
    "lloyd_csr_assign.cl.mako": [exercise_kernels, exercise_fit],
    "lloyd_csr_distances.cl.mako": [exercise_kernels, exercise_fit],
}
