"""oclgrind plugin: ward, centroid and median linkage on the rows
(passes/linkage_rows.py) -- ward's rounds of reciprocal nearest neighbours
(many tiles and work-groups, hints, a tie that gives up, an overflow), the
chain's nearest-cluster kernel and the
generic algorithm's nearest-above and merge scans through whole trees of
ragged size (work-groups of 4: many groups a scan), against scipy's merges;
duplicate points too (zero distances, ties to the lower index), and an
overflow (no neighbour closer than inf: every index stays in its buffer).

Run:  cd /tmp && PYOPENCL_NO_CACHE=1 oclgrind --data-races --uninitialized \
      --check-api --build-options -cl-opt-disable python tests/harness/oclgrind_driver.py --only linkage_rows
"""
import numpy as np
from scipy.cluster import hierarchy

from oclgrind_driver import mark, profile_for
from oclclust.cluster.hierarchy import linkage_matrix as hier
from oclclust.passes.linkage_generic import NO_NEIGHBOUR
from oclclust.passes.linkage_rows import generic_rows, ward_chain, ward_rounds


def exercise_ward_rows(device, log):
    for fp64 in (True, False):
        mark(f"ward rows fp64={fp64}")
        X = np.random.RandomState(3).randn(37, 3)
        plan = hier.plan_for([profile_for(device, fp64)])
        Z = hier._sorted_linkage(*ward_chain(plan, X), len(X))
        if fp64 and not np.array_equal(Z[:, [0, 1, 3]], hierarchy.linkage(X, "ward")[:, [0, 1, 3]]):
            raise AssertionError("ward rows: merges differ from scipy's")
    log("ward rows: ok")


def exercise_ward_rounds(device, log):
    rng = np.random.RandomState(5)
    X = rng.randn(45, 3) + rng.randint(0, 3, (45, 1)) * 4
    for fp64 in (True, False):
        # work-groups and tiles of 4: many of each, the last ragged
        plan = hier.plan_for([profile_for(device, fp64, work_group_size=4)])
        mark(f"ward rounds fp64={fp64}")
        found = ward_rounds(plan, X)
        if fp64:
            if found is None:
                raise AssertionError("ward rounds: gave up without ties")
            Z = hier._sorted_linkage(*found, len(X))
            if not np.array_equal(Z[:, [0, 1, 3]], hierarchy.linkage(X, "ward")[:, [0, 1, 3]]):
                raise AssertionError("ward rounds: merges differ from scipy's")
        mark(f"ward rounds tie fp64={fp64}")
        if ward_rounds(plan, np.repeat(X[:9], 3, axis=0)) is not None:
            raise AssertionError("ward rounds: duplicates did not give up")
        mark(f"ward rounds overflow fp64={fp64}")
        try:
            ward_rounds(plan, X * 1e300)
        except ValueError as exc:
            if str(exc) != NO_NEIGHBOUR:
                raise
        else:
            raise AssertionError("ward rounds: no error on overflowing distances")
    log("ward rounds: ok")


def exercise_generic_rows(device, log):
    rng = np.random.RandomState(4)
    half = rng.randn(9, 3)
    sets = [("blobs", rng.randn(23, 3) + rng.randint(0, 3, (23, 1)) * 4),
            ("duplicates", np.concatenate([half, half])[rng.permutation(18)])]
    for fp64 in (True, False):
        plan = hier.plan_for([profile_for(device, fp64, work_group_size=4)])
        for method in ("centroid", "median"):
            for name, X in sets:
                mark(f"generic rows {method} {name} fp64={fp64}")
                Z = generic_rows(plan, X, method)
                ref = hierarchy.linkage(X, method)
                if fp64 and not np.array_equal(Z[:, [0, 1, 3]], ref[:, [0, 1, 3]]):
                    raise AssertionError(f"generic rows {method} {name}: merges differ")
            mark(f"generic rows {method} overflow fp64={fp64}")
            try:
                generic_rows(plan, sets[0][1] * 1e300, method)
            except ValueError as exc:
                if str(exc) != NO_NEIGHBOUR:
                    raise
            else:
                raise AssertionError("generic rows: no error on overflowing distances")
    log("generic rows: ok")


EXERCISERS = {"ward_nearest.cl.mako": [exercise_ward_rows],
              "ward_rounds.cl.mako": [exercise_ward_rounds],
              "generic_nearest.cl.mako": [exercise_generic_rows]}
