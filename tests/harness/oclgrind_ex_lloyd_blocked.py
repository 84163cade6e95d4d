"""oclgrind plugin: the register-blocked Lloyd variant (passes/lloyd_blocked.py)
-- labels, inertia, distances and sums against numpy for every precision,
with and without the update and weights, chunks of 2 blocks of 3 rows
(N=37: a ragged last block and chunk) x 2 vectors of 4 (2 in double)
centroids (K=5: padded panels), and the smallest block; then a whole
weighted fit (the centres updated on the device, in panels) against the
rowwise variant's.

Run:  cd /tmp && PYOPENCL_NO_CACHE=1 oclgrind --data-races --uninitialized \
      --check-api --build-options -cl-opt-disable python tests/harness/oclgrind_driver.py --only lloyd_blocked
"""
import itertools

import numpy as np

import oclclust as oc
from oclgrind_driver import (D, K, LLOYD_PROFILE, PRECISIONS, check_lloyd_pass, close, data,
                             device_manager, mark, profile_for)
from oclclust.passes import lloyd

BLOCKED = dict(LLOYD_PROFILE, lloyd_variant="blocked", blocked_rows=3, blocked_vectors=2,
               blocked_unroll=2, blocked_chunk=2)


def exercise_blocked(device, log):
    count = 0
    for (dtype, fp64), (rows, vectors, chunk) in itertools.product(
            PRECISIONS, ((3, 2, 2), (1, 1, 1))):
        profile = profile_for(device, fp64, **dict(BLOCKED, blocked_rows=rows,
                                                   blocked_vectors=vectors,
                                                   blocked_chunk=chunk))
        X, w = data(dtype, seed=3)
        centers = X[[0, 9, 18, 27, 36]].astype(np.float64)
        rtol = 1e-4 if dtype == "float32" else 1e-10
        for update, weighted in itertools.product((True, False), (False, True)):
            spec = next(lloyd.candidate_specs(profile, dtype, D, K, update, weighted))
            assert (spec.variant, spec.rb, spec.cv, spec.nb) == ("blocked", rows, vectors,
                                                                 chunk), spec
            mark(f"lloyd blocked fp64={fp64} {spec}")
            check_lloyd_pass(profile, spec, X, w, centers, rtol)
            count += 1
    log(f"lloyd blocked: {count} specs")


def exercise_fit(device, log):
    """A weighted fit of the blocked variant equals the rowwise one's."""
    X, w = data("float32", seed=4)
    init = X[[0, 9, 18, 27, 36]].astype(np.float64)
    fits = []
    for terms in (BLOCKED, dict(LLOYD_PROFILE, lloyd_variant="rowwise")):
        mark(f"lloyd blocked fit {terms['lloyd_variant']}")
        fits.append(oc.KMeans(K, init=init, n_init=1, max_iter=4, tol=0.0,
                              devices=device_manager(profile_for(device, True, **terms)))
                    .fit(X, sample_weight=w))
    a, b = fits
    if not np.array_equal(a.labels_, b.labels_):
        raise AssertionError(f"blocked fit labels {a.labels_} != rowwise {b.labels_}")
    close(a.cluster_centers_, b.cluster_centers_, "blocked fit centres", 1e-6)
    log("lloyd blocked fit: ok")


EXERCISERS = {"lloyd_blocked.cl.mako": [exercise_blocked, exercise_fit]}
