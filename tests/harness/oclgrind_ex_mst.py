"""oclgrind plugin: the MST engine's templates (passes/mst.py) on 7..10 rows.

Boruvka's round (mst_nearest.cl.mako) with the other rows staged in local
memory and read from global memory, the row in registers and not, with and
without core distances, tiles skipped by their box (every metric but
cosine) and by their component, and (index=True, with core) nodes of the
tiles' hierarchy skipped whole, probes and capped scans (PROBE = 1), and
started from the core distances' nearest rows (nearest: mst_seed.cl.mako),
what each round knows of the rows unscanned and the scans' rows taken in
(mst_known.cl.mako), with the tiles' reach (mst_tile_reach.cl.mako)
filtering each round's rows;
scipy's Prim on the rows (mst_prim.cl.mako) in one
persistent launch and in a launch a step; every metric (odd and even d: the
cosine tail), in each precision of PRECISIONS, a work-group of 4 so the
rows span several work-groups and blocks.  Continuous rows give Boruvka's
tree alone, integer grids tied weights (Prim's order).  Checked against
scipy's single linkage (merges equal, heights to rounding).
"""
import numpy as np
from oclgrind_driver import PRECISIONS, close, mark, profile_for
from scipy.cluster import hierarchy
from scipy.spatial.distance import cdist

import oclclust.passes.mst as mst
from oclclust.cluster.hierarchy.linkage_matrix import METRICS, label
from oclclust.passes.linkage import Plan
from oclclust.passes.neighbours import core_distances


def _rows(kind, n, d, seed):
    rng = np.random.RandomState(seed)
    if kind == "grid":
        return rng.randint(1, 4, (n, d)).astype(np.float64)
    return rng.randn(n, d) * 2 + 1


def _check(a, b, w, ref, what, rtol):
    n = len(w) + 1
    Z = np.empty((n - 1, 4))
    Z[:, 0], Z[:, 1], Z[:, 2] = a, b, w
    Z = label(Z, n)
    if not np.array_equal(Z[:, [0, 1, 3]], ref[:, [0, 1, 3]]):
        raise AssertionError(f"{what}: merges {Z[:, [0, 1, 3]]}, expected {ref[:, [0, 1, 3]]}")
    close(Z[:, 2], ref[:, 2], what, rtol)


def exercise_mst(device, log):
    for dtype, fp64 in PRECISIONS:
        rtol = 1e-4 if dtype == "float32" else 1e-12
        for metric in METRICS:
            for d, staged, private, persistent in ((3, True, True, True),
                                                   (4, False, False, False)):
                extra = {} if staged else {"local_memory_fraction": 0.0}
                plan = Plan(profile_for(device, fp64, work_group_size=4, **extra), dtype)
                plan.persistent = persistent
                saved = mst.PRIVATE_ROW_FEATURES, mst.PROBE
                # probes of components past 4 rows: capped scans too
                mst.PRIVATE_ROW_FEATURES, mst.PROBE = (64 if private else 0), 1
                try:
                    for kind, n in (("random", 9), ("grid", 10)):
                        X = _rows(kind, n, d, seed=d).astype(dtype)
                        X64 = X.astype(np.float64)
                        tag = (f"{metric} {kind} d={d} {dtype} fp64={fp64} staged={staged} "
                               f"private={private} persistent={persistent}")
                        mark(f"mst {tag}")
                        _check(*mst.minimum_spanning_tree(plan, X, metric),
                               hierarchy.linkage(X64, "single", metric), tag, rtol)
                        mark(f"mst core {tag}")
                        D = cdist(X64, X64, metric)
                        core = np.sort(D, axis=1)[:, 2]
                        M = np.maximum(D, np.maximum.outer(core, core))
                        np.fill_diagonal(M, 0)
                        ref = hierarchy.linkage(M[np.triu_indices(n, 1)], "single")
                        _check(*mst.minimum_spanning_tree(plan, X, metric, core=core),
                               ref, f"core {tag}", rtol)
                        mark(f"mst core index {tag}")
                        _check(*mst.minimum_spanning_tree(plan, X, metric, core=core,
                                                          index=True),
                               ref, f"core index {tag}", rtol)
                        if dtype == "float64":     # the seed's distances: the engine's
                            mark(f"mst core index nearest {tag}")
                            c, nearest = core_distances(plan, X, 3, metric, neighbours=True)
                            _check(*mst.minimum_spanning_tree(plan, X, metric, core=c,
                                                              index=True, nearest=nearest),
                                   ref, f"core index nearest {tag}", rtol)
                finally:
                    mst.PRIVATE_ROW_FEATURES, mst.PROBE = saved
    log("mst: ok")


EXERCISERS = {
    "mst_nearest.cl.mako": [exercise_mst],
    "mst_prim.cl.mako": [exercise_mst],
    "mst_tile_reach.cl.mako": [exercise_mst],
    "mst_seed.cl.mako": [exercise_mst],
    "mst_known.cl.mako": [exercise_mst],
}
