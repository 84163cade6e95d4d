"""oclgrind plugin: mini-batch rows gathered on the device, assigned, and
folded there (passes/minibatch.py) -- a batch with repeated rows against
numpy and against the host's fold (cluster/kmeans/minibatch_sums.fold), bit for bit;
and a MiniBatchKMeans fit (its batches on the device) against
scikit-learn's from the same random state.

Run:  cd /tmp && PYOPENCL_NO_CACHE=1 oclgrind --data-races --uninitialized \
      --check-api --build-options -cl-opt-disable python tests/harness/oclgrind_driver.py --only minibatch
"""
import numpy as np
import pyopencl.array as cla

import oclclust as oc
from oclgrind_driver import close, data, device_manager, mark, profile_for
from oclclust.cluster.kmeans.minibatch_sums import BatchTotals, fold
from oclclust.passes.minibatch import BatchPass, gather_rows
from oclclust.runtime.partition import DevicePartition


def exercise_batch(device, log):
    for dtype in (np.float32, np.float64):
        mark(f"minibatch gather and fold {np.dtype(dtype).name}")
        X, _ = data(dtype)
        part = DevicePartition(profile_for(device, True), X)
        q = part.queue
        idx = np.array([0, 3, 3, 7, len(X) - 1], np.int64)
        out = cla.empty(q, (len(idx), X.shape[1]), X.dtype)
        gather_rows(part, cla.to_device(q, idx), out, len(idx)).wait()
        if not np.array_equal(out.get(), X[idx]):
            raise AssertionError(f"minibatch gather {np.dtype(dtype).name}: differs from numpy")
        centers = X[:3].astype(np.float64)
        batch = BatchPass(part, 3, len(idx))
        labels, dist = batch.assign(idx, centers)
        d2 = ((X[idx, None].astype(np.float64) - centers[None]) ** 2).sum(-1)
        close(dist, d2.min(1), "batch distances", 1e-4)
        weights = np.array([1.0, 0.5, 2.0, 1.0, 3.0])
        total = BatchTotals(np.arange(3.0 * X.shape[1]).reshape(3, -1), np.zeros(3), 0.0)
        if not np.array_equal(batch.fold(total.sums, labels, weights, np.argsort(labels, kind="stable")),
                              fold(total, X[idx], weights, labels, dist).sums):
            raise AssertionError("minibatch fold: differs from the host's fold")
    log("minibatch gather and fold: ok")


def exercise_fit(device, log):
    from sklearn.cluster import MiniBatchKMeans
    mark("minibatch fit")
    X, _ = data(np.float64)
    params = dict(n_clusters=3, random_state=0, batch_size=8, max_iter=2)
    ours = oc.MiniBatchKMeans(**params, devices=device_manager(profile_for(device, True))).fit(X)
    theirs = MiniBatchKMeans(**params).fit(X)
    close(ours.cluster_centers_, theirs.cluster_centers_, "minibatch fit", 1e-9)
    log("minibatch fit: ok")


EXERCISERS = {"minibatch_gather.cl.mako": [exercise_batch, exercise_fit],
              "minibatch_fold.cl.mako": [exercise_batch]}
