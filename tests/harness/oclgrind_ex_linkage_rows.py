"""oclgrind plugin: ward linkage on the rows (passes/linkage_rows.py) -- the
chain's nearest-cluster kernel through a whole tree of ragged size, against
scipy's merges.

Run:  cd /tmp && PYOPENCL_NO_CACHE=1 oclgrind --data-races --uninitialized \
      --check-api --build-options -cl-opt-disable python tests/harness/oclgrind_driver.py --only linkage_rows
"""
import numpy as np
from scipy.cluster import hierarchy

from oclgrind_driver import mark, profile_for
from oclclust.cluster import hierarchical as hier
from oclclust.passes.linkage_rows import ward_rows


def exercise_ward_rows(device, log):
    for fp64 in (True, False):
        mark(f"ward rows fp64={fp64}")
        X = np.random.RandomState(3).randn(37, 3)
        plan = hier._plan([profile_for(device, fp64)])
        Z = hier._sorted_linkage(*ward_rows(plan, X), len(X))
        if fp64 and not np.array_equal(Z[:, [0, 1, 3]], hierarchy.linkage(X, "ward")[:, [0, 1, 3]]):
            raise AssertionError("ward rows: merges differ from scipy's")
    log("ward rows: ok")


EXERCISERS = {"ward_nearest.cl.mako": [exercise_ward_rows]}
