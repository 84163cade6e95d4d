"""oclgrind plugin: k-means|| seeding (cluster/inits.kmeans_parallel) --
the rounds (the Lloyd pass over a round's candidates, the closest and
nearest lowered, the nearest counted) on resident and streamed rows, and
the weighted greedy k-means++ over the candidates with every step on the
device (passes/kmeanspp.DeviceGreedy: candidate_potentials indexed,
draw_trials), in every precision, weighted and not, against the host loop's
picks from the same draws.

Run:  cd /tmp && PYOPENCL_NO_CACHE=1 oclgrind --data-races --uninitialized \
      --check-api --build-options -cl-opt-disable python tests/harness/oclgrind_ex_kmeans_parallel.py
      (or oclgrind_driver.py --only kmeans_parallel)
"""
import numpy as np

from oclgrind_driver import (D, K, N, PRECISIONS, check_layout, data, device_manager,
                             managers, mark, profile_for)
from oclclust.cluster.inits import kmeans_parallel, kmeans_plusplus
from oclclust.passes import kmeanspp
from oclclust.runtime.partition import DevicePartition


def exercise_device_greedy(device, log):
    """DeviceGreedy's picks are the host loop's from the same draws: 150
    rows in at most two candidate groups (128 rows and a ragged 22), so
    draw_trials scans the groups' sums and walks a group's rows."""
    trials, n = 3, 150
    saved, kmeanspp.DeviceGreedy.BLOCKS = kmeanspp.DeviceGreedy.BLOCKS, 2
    try:
        for dtype, fp64 in PRECISIONS:
            rng = np.random.RandomState(5)
            X = (rng.randn(n, D) + rng.randint(0, 4, (n, 1)) * 4).astype(dtype)
            w = rng.uniform(0.5, 2.0, n).astype(dtype)
            profile = profile_for(device, fp64)
            for weights in (None, w):
                mark(f"device greedy {dtype} fp64={fp64} weighted={weights is not None}")
                host_w = np.ones(n, dtype) if weights is None else weights
                rs = np.random.RandomState(1)
                first = int(rs.choice(n, p=host_w / host_w.sum()))
                greedy = kmeanspp.DeviceGreedy(DevicePartition(profile, X, weights), trials)
                if (greedy.groups, greedy.rows_per_group) != (2, 128):
                    raise AssertionError(f"device greedy: {greedy.groups} groups")
                mine = greedy.run(first, rs.uniform(size=(K - 1) * trials), K)
                data_ = device_manager(profile).scatter(X, weights)
                ref = kmeans_plusplus(data_, K, np.random.RandomState(1), host_w, trials)
                if mine.tolist() != ref.tolist():
                    raise AssertionError(f"device greedy {dtype} fp64={fp64}: {mine} != {ref}")
    finally:
        kmeanspp.DeviceGreedy.BLOCKS = saved
    log("device greedy: ok")


def exercise_kmeans_parallel(device, log):
    """The whole seeding, resident and streamed in chunks: the same centres,
    rows of X."""
    for dtype, fp64 in PRECISIONS:
        X, w = data(dtype, seed=6)
        profile = profile_for(device, fp64)
        for weights in (None, w):
            got = {}
            for how, mgr in managers(profile, dtype):
                mark(f"k-means|| {dtype} fp64={fp64} weighted={weights is not None} {how}")
                sharded = mgr.scatter(X, weights)
                check_layout(sharded, how)
                host_w = np.ones(N, dtype) if weights is None else weights
                centres = kmeans_parallel(sharded, K, np.random.RandomState(2), host_w,
                                          oversampling_factor=0.5, rounds=3)
                if not all((X == c.astype(dtype)).all(axis=1).any() for c in centres):
                    raise AssertionError(f"k-means|| {how}: centres not rows of X")
                got[how] = centres.tolist()
            if got["streamed"] != got["resident"]:
                raise AssertionError(f"k-means|| {dtype} fp64={fp64}: streamed centres differ")
    log("k-means||: ok")


EXERCISERS = {"kmeanspp_draw.cl.mako": [exercise_device_greedy, exercise_kmeans_parallel],
              "kmeanspp_candidates.cl.mako": [exercise_device_greedy, exercise_kmeans_parallel]}
