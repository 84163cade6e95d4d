"""oclgrind plugin: DBSCAN's device passes (passes/dbscan.py and
passes/dbscan_grid.py) -- counts and least labels within eps on a ragged
set with distances exactly at eps, in every metric, with the eps-graph
stored (its rows made and read), without it, and over the grid of cells
(its counts with and without weights and an early stop, and the core rows'
components by its union-find; on one slab the rows and per-row values
sorted and put back on the device, passes/permute.py), against numpy.

Run:  cd /tmp && PYOPENCL_NO_CACHE=1 oclgrind --data-races --uninitialized \
      --check-api --build-options -cl-opt-disable python tests/harness/oclgrind_driver.py --only dbscan
"""
import numpy as np
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import cdist

from oclgrind_driver import CallingThread, mark, profile_for
from oclclust.passes.linkage import plan_for
from oclclust.passes.dbscan import Neighbourhoods
from oclclust.passes.dbscan_grid import GridNeighbourhoods
from oclclust.passes.grid import CellGrid


def exercise_dbscan(device, log):
    X = np.random.RandomState(4).randint(0, 4, (37, 3)).astype(float)
    for metric, graph in (("euclidean", True), ("cityblock", False), ("chebyshev", True),
                          ("euclidean", False)):
        mark(f"dbscan {metric} graph={graph}")
        near = cdist(X, X, metric) <= 1.0
        hoods = Neighbourhoods(plan_for([profile_for(device, True)]), X, 1.0, metric, graph)
        if not np.array_equal(hoods.counts(), near.sum(axis=1)):
            raise AssertionError(f"dbscan counts {metric}")
        if (hoods.graph is not None) != graph:
            raise AssertionError("dbscan: the eps-graph stored or not as asked")
        label = np.arange(len(X))
        got = hoods.min_label(label, np.ones(len(X), bool))
        if not np.array_equal(got, np.where(near, label[None, :], len(X)).min(axis=1)):
            raise AssertionError(f"dbscan least labels {metric}")
    log("dbscan: ok")


def exercise_dbscan_grid(device, log):
    """One slab, then three (halos: rows outside [first, last) read, never written)."""
    X = np.random.RandomState(5).randint(0, 5, (41, 3)).astype(float)
    w = np.random.RandomState(6).uniform(0, 2, len(X))
    plan = plan_for([profile_for(device, True)])
    for metric, shares in (("euclidean", None), ("cityblock", None), ("chebyshev", None),
                           ("euclidean", [1, 2, 1])):
        mark(f"dbscan grid {metric} {shares}")
        near = cdist(X, X, metric) <= 1.0
        grid = CellGrid(X, 1.0, plan.dtype)
        hoods = (GridNeighbourhoods(plan, grid, 1.0, metric) if shares is None else
                 GridNeighbourhoods([plan] * len(shares), grid, 1.0, metric, shares,
                                    executor=CallingThread))
        if (hoods.whole is not None) != (shares is None):
            raise AssertionError("dbscan grid: one slab's values permuted on the device")
        full = near.sum(axis=1)
        if not np.allclose(hoods.counts(w), near @ w, rtol=1e-12):
            raise AssertionError(f"dbscan grid weighted counts {metric}")
        stopped = hoods.counts(enough=3)
        if not np.array_equal(np.minimum(stopped, 3), np.minimum(full, 3)):
            raise AssertionError(f"dbscan grid counts stopped at 3 {metric}")
        label = np.arange(len(X))
        got = hoods.min_label(label, np.ones(len(X), bool))
        if not np.array_equal(got, np.where(near, label[None, :], len(X)).min(axis=1)):
            raise AssertionError(f"dbscan grid least labels {metric}")
        core = full >= 3
        _, part = connected_components(near & core[:, None] & core[None, :], directed=False)
        least = {p: np.flatnonzero(core & (part == p)).min() for p in set(part[core])}
        expected = np.array([least[p] if c else -1 for p, c in zip(part, core)])
        if not np.array_equal(hoods.components(core), expected):
            raise AssertionError(f"dbscan grid components {metric}")
    log("dbscan grid: ok")


EXERCISERS = {
    **{name: [exercise_dbscan] for name in (
        "dbscan_counts.cl.mako", "dbscan_min_label.cl.mako", "dbscan_neighbours.cl.mako",
        "dbscan_graph_min_label.cl.mako")},
    **{name: [exercise_dbscan_grid] for name in (
        "dbscan_grid_counts.cl.mako", "dbscan_grid_min_label.cl.mako",
        "dbscan_grid_union.cl.mako", "permute_rows.cl.mako")},
}
