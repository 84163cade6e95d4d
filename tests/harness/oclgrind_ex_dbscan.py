"""oclgrind plugin: DBSCAN's device passes (passes/dbscan.py) -- counts and
least labels within eps on a ragged set with distances exactly at eps, in
every metric, with the eps-graph stored (its rows made and read) and
without it, against numpy.

Run:  cd /tmp && PYOPENCL_NO_CACHE=1 oclgrind --data-races --uninitialized \
      --check-api --build-options -cl-opt-disable python tests/harness/oclgrind_driver.py --only dbscan
"""
import numpy as np
from scipy.spatial.distance import cdist

from oclgrind_driver import mark, profile_for
from oclclust.passes.linkage import plan_for
from oclclust.passes.dbscan import Neighbourhoods


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


EXERCISERS = {name: [exercise_dbscan] for name in (
    "dbscan_counts.cl.mako", "dbscan_min_label.cl.mako", "dbscan_neighbours.cl.mako",
    "dbscan_graph_min_label.cl.mako")}
