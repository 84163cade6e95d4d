"""oclgrind plugin: every hierarchical template variant on 7..9 points.

Distances for every metric (odd and even d: cosine's two-lane dot products
have a tail only for odd d), one work-item per pair and register-tiled
(distance_tile.cl.mako), Prim's single linkage and the nearest-neighbour
chain for complete/average/weighted/ward (each in one persistent launch and
in two launches a step), and the generic algorithm for
centroid/median, in each precision of PRECISIONS, with a work-group of 4 so
the row searches span several work-groups.  Results are checked against
scipy (merges equal, heights to rounding).

The matrix across three device buffers (exercise_buffers: every kernel
above reaching entries through condensed.cl.mako's accessor), against the
one-buffer result bit for bit.

Bad data too (exercise_bad_data): linkage() takes negative distances as
scipy does, and the passes' entry points check nothing, so negative and NaN
distances reach every linkage kernel here, with ties and duplicate points:
no index a kernel derives from them may leave its buffer.
"""
import numpy as np
from oclgrind_driver import PRECISIONS, close, mark, profile_for
from scipy.cluster import hierarchy
from scipy.spatial.distance import pdist

from oclclust.cluster.hierarchy.linkage_matrix import METRICS, _sorted_linkage
from oclclust.passes.linkage import Plan, condensed_distances, nn_chain, prim_single
from oclclust.passes.linkage_generic import NO_NEIGHBOUR, generic_linkage


def _points(n, d, seed):
    return np.random.RandomState(seed).randn(n, d) * 2 + 1


def _plans(device):
    for dtype, fp64 in PRECISIONS:
        yield dtype, Plan(profile_for(device, fp64, work_group_size=4), dtype)


def _check_z(Z, X, method, rtol, what):
    ref = hierarchy.linkage(X, method)
    if not np.array_equal(Z[:, [0, 1, 3]], ref[:, [0, 1, 3]]):
        raise AssertionError(f"{what}: merges {Z[:, [0, 1, 3]]}, expected {ref[:, [0, 1, 3]]}")
    close(Z[:, 2], ref[:, 2], what, rtol)


# register-tiled distances: 4 x 4 pair tiles of 2 x 2 registers, 2 features a
# chunk; on 9 points (a ragged last row tile) and d = 3 (a ragged chunk) with
# vector reads of 2, d = 4 with scalar ones
DISTANCE_TILES = dict(lloyd_tile_rows=4, lloyd_tile_centroids=4, lloyd_reg_rows=2,
                      lloyd_reg_centroids=2, lloyd_depth=2)


def exercise_distances(device, log):
    for dtype, fp64 in PRECISIONS:
        rtol = 1e-4 if dtype == "float32" else 1e-12
        for metric in METRICS:
            for d, vw in ((3, 2), (4, 1)):
                for tiled in (False, True) if metric != "cosine" else (False,):
                    plan = Plan(profile_for(device, fp64, work_group_size=4,
                                            lloyd_vector_width=vw, **DISTANCE_TILES), dtype)
                    plan.tiled = tiled
                    n = 9 if tiled else 8
                    X = _points(n, d, seed=d).astype(dtype)
                    tag = f"{metric} d={d} {dtype} fp64={fp64} tiled={tiled}"
                    mark(f"hierarchical distances {tag}")
                    dist, _ = condensed_distances(plan, X=X, metric=metric)
                    close(dist.get(plan.queue), pdist(X.astype(np.float64), metric),
                          f"distances {tag}", rtol)
                    if tiled and dtype == "float64":      # pdist's rounding exactly
                        np.testing.assert_array_equal(dist.get(plan.queue), pdist(X, metric))
    log("hierarchical distances: ok")


def exercise_linkages(device, log):
    for dtype, plan in _plans(device):
        rtol = 1e-4 if dtype == "float32" else 1e-12
        X = _points(9, 2, seed=7).astype(dtype).astype(np.float64)
        y = pdist(X)
        for persistent in (True, False):     # one launch in all, or two a step
            plan.persistent = persistent
            tag = f"{dtype} fp64={plan.profile.fp64} persistent={persistent}"
            mark(f"hierarchical prim {tag}")
            dist, n = condensed_distances(plan, y=y)
            _check_z(_sorted_linkage(*prim_single(plan, dist, n), n), X, "single", rtol,
                     f"prim {tag}")
            for method in ("complete", "average", "weighted", "ward"):
                mark(f"hierarchical nn_chain {method} {tag}")
                dist, n = condensed_distances(plan, y=y)
                Z = _sorted_linkage(*nn_chain(plan, dist, n, method), n)
                _check_z(Z, X, method, rtol, f"nn_chain {method} {tag}")
        tag = f"{dtype} fp64={plan.profile.fp64}"
        for method in ("centroid", "median"):
            mark(f"hierarchical generic {method} {tag}")
            dist, n = condensed_distances(plan, y=y)
            _check_z(generic_linkage(plan, dist, n, method), X, method, rtol,
                     f"generic {method}")
    log("hierarchical linkages: ok")


def exercise_buffers(device, log):
    """The matrix across three buffers (linkage_buffer_bytes of 16 entries,
    9 points: 36 entries, the last buffer short): distances one pair a
    work-item and tiled, every linkage in both strategies, against scipy and
    the one-buffer result bit for bit."""
    for dtype, fp64 in PRECISIONS:
        X = _points(9, 3, seed=5).astype(dtype).astype(np.float64)
        y = pdist(X)
        rtol = 1e-4 if dtype == "float32" else 1e-12
        plans = [Plan(profile_for(device, fp64, work_group_size=4, linkage_buffer_bytes=b,
                                  **DISTANCE_TILES), dtype)
                 for b in (0, 16 * np.dtype(dtype).itemsize)]
        if plans[1].buffers(9) != 3:
            raise AssertionError(f"{plans[1].buffers(9)} buffers, expected 3")
        for tiled in (False, True):
            tag = f"{dtype} fp64={fp64} tiled={tiled}"
            mark(f"hierarchical buffers distances {tag}")
            got = []
            for plan in plans:
                plan.tiled = tiled
                got.append(condensed_distances(plan, X=X.astype(dtype))[0].get())
            np.testing.assert_array_equal(got[1], got[0])
            close(got[1], y, f"buffers distances {tag}", rtol)
        for persistent in (True, False):
            tag = f"{dtype} fp64={fp64} persistent={persistent}"
            for method in ("single", "complete", "average", "weighted", "ward",
                           "centroid", "median"):
                mark(f"hierarchical buffers {method} {tag}")
                Zs = []
                for plan in plans:
                    plan.persistent = persistent
                    dist, n = condensed_distances(plan, y=y)
                    if method == "single":
                        Zs.append(_sorted_linkage(*prim_single(plan, dist, n), n))
                    elif method in ("centroid", "median"):
                        Zs.append(generic_linkage(plan, dist, n, method))
                    else:
                        Zs.append(_sorted_linkage(*nn_chain(plan, dist, n, method), n))
                np.testing.assert_array_equal(Zs[1], Zs[0])
                _check_z(Zs[1], X, method, rtol, f"buffers {method} {tag}")
    log("hierarchical buffers: ok")


def _check_tree(Z, n, what):
    """Z is a tree whatever its heights: every cluster id merged once, all n
    points in the last merge."""
    ids = Z[:, :2].astype(np.int64).ravel()
    if len(set(ids.tolist())) != len(ids) or ids.min() < 0 or ids.max() > 2 * n - 3 \
            or Z[-1, 3] != n:
        raise AssertionError(f"{what}: not a tree: {Z}")


def _bad_sets():
    """(name, condensed y, whether scipy's Z is a valid tree to compare with)."""
    grid = np.array([[0, 0], [1, 0], [0, 1], [1, 1], [0, 0], [2, 0], [1, 0]], np.float64)
    nan = pdist(_points(6, 2, seed=3))
    nan[[1, 7]] = np.nan
    return [("ties and duplicates", pdist(grid), True),
            ("negative", np.array([1, 2, 3, -4, 5, 6], np.float64), True),
            ("negative, NaN updates", np.array([0, 0, 0, 0, 0, -1, -1, 2, 3, -5], np.float64),
             False),
            ("NaN", nan, False)]


def _expect(y, method, compare, run, rtol, what):
    """run() against scipy where scipy gives a tree (or scipy's ValueError)."""
    n = round((1 + np.sqrt(1 + 8 * len(y))) / 2)
    try:
        ref = hierarchy.linkage(y, method) if compare else None
    except ValueError as exc:
        try:
            run()
        except ValueError as ours:
            if str(ours) != str(exc):
                raise AssertionError(f"{what}: {ours!r}, expected {exc!r}") from ours
            return
        raise AssertionError(f"{what}: no ValueError, expected {exc!r}")
    try:
        Z = run()
    except ValueError as ours:       # the generic algorithm's find_min_dist
        if compare or str(ours) != NO_NEIGHBOUR:
            raise
        return
    _check_tree(Z, n, what)
    if ref is not None:
        if not (np.array_equal(Z[:, [0, 1, 3]], ref[:, [0, 1, 3]])
                and np.allclose(Z[:, 2], ref[:, 2], rtol, rtol, equal_nan=True)):
            raise AssertionError(f"{what}: {Z}, expected {ref}")   # NaN: scipy's ward


def exercise_bad_data(device, log):
    for dtype, plan in _plans(device):
        exact = dtype == "float64"   # float32 may round a near-tie scipy keeps apart
        rtol = 1e-4 if dtype == "float32" else 1e-12
        for name, y, valid in _bad_sets():
            compare = valid and exact
            for persistent in (True, False):
                plan.persistent = persistent
                tag = f"{name} {dtype} fp64={plan.profile.fp64} persistent={persistent}"

                def run(method):
                    dist, n = condensed_distances(plan, y=y)
                    chain = prim_single if method == "single" else \
                        lambda p, d, n: nn_chain(p, d, n, method)
                    return _sorted_linkage(*chain(plan, dist, n), n)
                for method in ("single", "complete", "average", "weighted", "ward"):
                    mark(f"hierarchical bad data {method} {tag}")
                    _expect(y, method, compare, lambda: run(method), rtol, f"{method} {tag}")
            for method in ("centroid", "median"):
                tag = f"{name} {dtype} fp64={plan.profile.fp64}"
                mark(f"hierarchical bad data generic {method} {tag}")

                def run_generic():
                    dist, n = condensed_distances(plan, y=y)
                    return generic_linkage(plan, dist, n, method)
                _expect(y, method, compare, run_generic, rtol, f"generic {method} {tag}")
    log("hierarchical bad data: ok")


EXERCISERS = {
    "hierarchical_distances.cl.mako": [exercise_distances, exercise_buffers],
    "hierarchical_prim.cl.mako": [exercise_linkages, exercise_bad_data, exercise_buffers],
    "hierarchical_linkage.cl.mako": [exercise_linkages, exercise_bad_data, exercise_buffers],
}
