"""oclgrind plugin: mini-batch rows gathered on the device (passes/minibatch.py)
-- a padded batch with repeated rows of a strided partition against numpy, in
both precisions; and a MiniBatchKMeans fit (a few steps, a reassignment)
against scikit-learn's from the same random state.

Run:  cd /tmp && PYOPENCL_NO_CACHE=1 oclgrind --data-races --uninitialized \
      --check-api --build-options -cl-opt-disable python tests/harness/oclgrind_driver.py --only minibatch
"""
import numpy as np
import pyopencl.array as cla

import oclclust as oc
from oclgrind_driver import close, data, device_manager, mark, profile_for
from oclclust.passes.minibatch import BatchPass, gather_rows
from oclclust.runtime.partition import DevicePartition


def exercise_gather(device, log):
    for dtype in (np.float32, np.float64):
        mark(f"minibatch gather {np.dtype(dtype).name}")
        X, _ = data(dtype)
        part = DevicePartition(profile_for(device, True), X)
        q = part.queue
        idx = np.array([3, 0, 3, len(X) - 1, 7], np.int64)
        out = cla.empty(q, (len(idx), X.shape[1]), X.dtype)
        gather_rows(part, cla.to_device(q, idx), out, len(idx)).wait()
        if not np.array_equal(out.get(), X[idx]):
            raise AssertionError(f"minibatch gather {np.dtype(dtype).name}: differs from numpy")
        centers = X[:3].astype(np.float64)
        stats = BatchPass(part, 3, 8).run(idx, np.ones(len(idx)), centers)
        d2 = ((X[idx, None].astype(np.float64) - centers[None]) ** 2).sum(-1)
        close(stats.weights, np.bincount(d2.argmin(1), minlength=3), "batch weights", 1e-6)
        close(stats.inertia, d2.min(1).sum(), "batch inertia", 1e-4)
    log("minibatch gather: ok")


def exercise_fit(device, log):
    from sklearn.cluster import MiniBatchKMeans
    mark("minibatch fit")
    X, _ = data(np.float64)
    params = dict(n_clusters=3, random_state=0, batch_size=8, max_iter=2)
    ours = oc.MiniBatchKMeans(**params, devices=device_manager(profile_for(device, True))).fit(X)
    theirs = MiniBatchKMeans(**params).fit(X)
    close(ours.cluster_centers_, theirs.cluster_centers_, "minibatch fit", 1e-9)
    log("minibatch fit: ok")


EXERCISERS = {"minibatch_gather.cl.mako": [exercise_gather, exercise_fit]}
