"""oclgrind plugin: DBSCAN's device passes (passes/dbscan.py) -- counts and
least labels within eps on a ragged set with distances exactly at eps, in
every metric, against numpy.

Run:  cd /tmp && PYOPENCL_NO_CACHE=1 oclgrind --data-races --uninitialized \
      --check-api --build-options -cl-opt-disable python tests/harness/oclgrind_driver.py --only dbscan
"""
import numpy as np
from scipy.spatial.distance import cdist

from oclgrind_driver import mark, profile_for
from oclclust.cluster.hierarchical import _plan
from oclclust.passes.dbscan import Neighbourhoods


def exercise_dbscan(device, log):
    X = np.random.RandomState(4).randint(0, 4, (37, 3)).astype(float)
    for metric in ("euclidean", "cityblock", "chebyshev"):
        mark(f"dbscan {metric}")
        near = cdist(X, X, metric) <= 1.0
        hoods = Neighbourhoods(_plan([profile_for(device, True)]), X, 1.0, metric)
        if not np.array_equal(hoods.counts(), near.sum(axis=1)):
            raise AssertionError(f"dbscan counts {metric}")
        label = np.arange(len(X))
        got = hoods.min_label(label, np.ones(len(X), bool))
        if not np.array_equal(got, np.where(near, label[None, :], len(X)).min(axis=1)):
            raise AssertionError(f"dbscan least labels {metric}")
    log("dbscan: ok")


EXERCISERS = {"dbscan_counts.cl.mako": [exercise_dbscan],
              "dbscan_min_label.cl.mako": [exercise_dbscan]}
