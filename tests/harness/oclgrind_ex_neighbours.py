"""oclgrind plugin: the neighbours templates (passes/neighbours.py) on 9 rows.

knn_grid_core.cl.mako (the k nearest over the grid of cells, its rings)
and knn_core's subset (the rows left past the rings: with none allowed, all
of them) on 23 rows with an outlier, against knn_core over every pair; with
ids, the rows of those distances (every pair's, the grid's and the subset's).

knn_core.cl.mako (k nearest distances, rows staged a work-group's tile at
a time: 9 rows over work-groups of 4, the last tile ragged) for every metric
and k of 1 and 4, against numpy; prim_source.cl.mako (scikit-learn's Prim
edges) on an integer grid, where heights tie, against the edges taken from
the mutual-reachability matrix on the host.  Each precision of PRECISIONS.
"""
import numpy as np
from oclgrind_driver import PRECISIONS, close, mark, profile_for
from scipy.spatial.distance import cdist

import oclclust.passes.neighbours as nb
from oclclust.passes.linkage import Plan


def _prim_reference(M):
    """scikit-learn's Prim from node 0 over the matrix M: (source, new)."""
    n = len(M)
    in_tree, best, src = np.zeros(n, bool), np.full(n, np.inf), np.zeros(n, int)
    node, out = 0, []
    for _ in range(n - 1):
        in_tree[node] = True
        lower = ~in_tree & (M[node] < best)
        best[lower], src[lower] = M[node][lower], node
        cand = np.where(in_tree, np.inf, best)
        node = int(np.argmin(cand))
        out.append((src[node], node))
    return np.array(out)


def exercise_neighbours(device, log):
    for dtype, fp64 in PRECISIONS:
        rtol = 1e-4 if dtype == "float32" else 1e-12
        plan = Plan(profile_for(device, fp64, work_group_size=4), dtype)
        X = (np.random.RandomState(5).randn(9, 3) * 2).astype(dtype)
        X64 = X.astype(np.float64)
        for metric in nb.NEIGHBOUR_METRICS:
            for k in (1, 4):
                mark(f"knn_core {metric} k={k} {dtype} fp64={fp64}")
                close(nb.k_nearest_distances(plan, X, k, metric),
                      np.sort(cdist(X64, X64, metric), axis=1)[:, :k],
                      f"knn {metric} k={k}", rtol)
        if dtype == "float32":
            continue     # the tie check needs exact heights
        G = np.random.RandomState(2).randint(0, 3, (9, 2)).astype(dtype)
        core = nb.core_distances(plan, G, 3)
        mark(f"prim_source {dtype} fp64={fp64}")
        src, new, _ = nb.prim_edges(plan, G, "euclidean", core)
        D = cdist(G.astype(np.float64), G.astype(np.float64))
        M = np.maximum(D, np.maximum.outer(core, core))
        ref = _prim_reference(M)
        if not (np.array_equal(src, ref[:, 0]) and np.array_equal(new, ref[:, 1])):
            raise AssertionError(f"prim_source: {src}, {new}; expected {ref.T}")
    log("neighbours: ok")


def exercise_grid_neighbours(device, log):
    plan = Plan(profile_for(device, True), "float64")
    rng = np.random.RandomState(8)
    X = np.vstack([rng.randint(0, 4, (22, 3)).astype(float), [[40.0, 0, 0]]])
    rings = nb.GRID_RINGS
    for metric in nb.GRID_METRICS:
        for nb.GRID_RINGS in (rings, -1):
            mark(f"knn_grid_core {metric} rings={nb.GRID_RINGS}")
            if not np.array_equal(nb.grid_k_nearest_distances(plan, X, 4, metric),
                                  nb.k_nearest_distances(plan, X, 4, metric)):
                raise AssertionError(f"knn_grid_core {metric} rings={nb.GRID_RINGS}")
            mark(f"knn_grid_core ids {metric} rings={nb.GRID_RINGS}")
            D = cdist(X, X, metric)
            for distances, ids in (nb.grid_k_nearest_distances(plan, X, 4, metric, ids=True),
                                   nb.k_nearest_distances(plan, X, 4, metric, ids=True)):
                if not np.array_equal(np.take_along_axis(D, ids.astype(np.int64), 1),
                                      distances):
                    raise AssertionError(f"knn ids {metric} rings={nb.GRID_RINGS}: {ids}")
    nb.GRID_RINGS = rings
    log("grid neighbours: ok")


EXERCISERS = {
    "knn_core.cl.mako": [exercise_neighbours, exercise_grid_neighbours],
    "prim_source.cl.mako": [exercise_neighbours],
    "knn_grid_core.cl.mako": [exercise_grid_neighbours],
}
