"""k nearest distances of every row on the device: HDBSCAN's core distances.

Pairs with templates/neighbours/knn_core.cl.mako: distances computed from
the rows as the MST engine computes them (passes/mst.py, pdist's
arithmetic), never stored, so the core distances and the mutual
reachability weights round alike.  O(n k) memory, O(n^2 d) work.  Over a
grid of cells (passes/grid.py; knn_grid_core.cl.mako) in low dimensions:
each row searches rings of cells around its own until its k-th distance is
inside them, the same k values; the rows still searching after GRID_RINGS
rings (far from every other) finish with knn_core over every row.
"""
import dataclasses

import numpy as np
import pyopencl.array as cla

from scipy.spatial.distance import cdist

from ..runtime.codegen import Spec
from ..runtime.transfer import download, upload
from .grid import CellGrid
from .linkage import Plan, exact_kernel
from .mst import MST_METRICS

NEIGHBOUR_METRICS = MST_METRICS


@dataclasses.dataclass(frozen=True)
class KnnCoreSpec(Spec):
    template = "neighbours/knn_core.cl.mako"
    d: int = 1
    metric: str = "euclidean"
    k: int = 1
    wg: int = 64
    subset: bool = False
    ids: bool = False


@dataclasses.dataclass(frozen=True)
class KnnGridCoreSpec(Spec):
    template = "neighbours/knn_grid_core.cl.mako"
    d: int = 1
    metric: str = "euclidean"
    k: int = 1
    g: int = 1
    ids: bool = False


GRID_METRICS = ("euclidean", "cityblock", "chebyshev")   # distances >= each feature's difference
GRID_RINGS = 8         # rings of cells a row searches before knn_core finishes it
WIDTH_QUERIES = 256    # rows whose neighbours estimate the grid's cell width
WIDTH_SAMPLE = 1 << 16   # rows they are measured against
# the most neighbours a row keeps for the MST (core_distances' neighbours):
# n x m ints and values, and m registers of the kernels' lists
NEIGHBOURS_KEPT = 33


def row_tile_work_group(plan, d, extra_bytes=0):
    """Work-items of a kernel that stages one row of d values (and
    *extra_bytes*) per work-item in local memory: as many as the local
    memory budget holds (a power of two, the plan's at most)."""
    fits = max(1, plan.profile.local_memory_budget // (d * plan.dtype.itemsize + extra_bytes))
    return 1 << (min(fits, plan.wg).bit_length() - 1)


def knn_spec(plan, d, metric, k, subset=False, ids=False):
    """A work-group's tile of rows in local memory (row_tile_work_group)."""
    return KnnCoreSpec(d=d, metric=metric, k=k, wg=row_tile_work_group(plan, d),
                       subset=subset, ids=ids, **plan.base)


def _plan(plan):
    return plan if isinstance(plan, Plan) else Plan(plan, np.float64 if plan.fp64 else np.float32)


def _check(X, k, metric, metrics=NEIGHBOUR_METRICS):
    if metric not in metrics:
        raise ValueError(f"metric must be one of {metrics}, got {metric!r}")
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"Expected 2D array, got {X.ndim}D array instead")
    if not 1 <= k <= X.shape[0]:
        raise ValueError(f"k must be in [1, n_samples={X.shape[0]}], got {k}")
    return X


def k_nearest_distances(plan, X, k, metric="euclidean", ids=False):
    """n x k float64: each row's k smallest distances to the rows of X (its
    own, 0, among them), ascending; with *ids*, (those, n x k int32: the
    rows they are to, ties in any order).  *plan*: a passes.linkage.Plan or
    a DeviceProfile."""
    X = _check(X, k, metric)
    n, d = X.shape
    plan = _plan(plan)
    q = plan.queue
    spec = knn_spec(plan, d, metric, int(k), ids=ids)
    kern = exact_kernel(q, spec, "knn_core")
    x = cla.to_device(q, np.ascontiguousarray(X, plan.dtype))
    out = cla.empty(q, (n, k), plan.dtype)
    out_j = cla.empty(q, (n, k), np.int32) if ids else None
    groups = -(-n // spec.wg)
    kern(q, (groups * spec.wg,), (spec.wg,), x.data, np.int32(n), out.data,
         *((out_j.data,) if ids else ()))
    distances = out.get(q).astype(np.float64)
    return (distances, out_j.get(q)) if ids else distances


def _subset_nearest(plan, x, n, d, rows, k, metric, ids=False):
    """len(rows) x k: the k smallest distances of the device rows x[rows]
    to all n rows of x (knn_core's subset); with *ids*, and their rows'
    places in x."""
    q = plan.queue
    spec = knn_spec(plan, d, metric, int(k), subset=True, ids=ids)
    out = cla.empty(q, (len(rows), k), plan.dtype)
    out_j = cla.empty(q, (len(rows), k), np.int32) if ids else None
    groups = -(-len(rows) // spec.wg)
    exact_kernel(q, spec, "knn_core")(q, (groups * spec.wg,), (spec.wg,), x.data, np.int32(n),
                                      upload(q, rows.astype(np.int32)).data,
                                      np.int32(len(rows)), out.data,
                                      *((out_j.data,) if ids else ()))
    return (download(q, out), download(q, out_j)) if ids else download(q, out)


def _kth_euclidean(queries, sample, column):
    """Each query's euclidean distance to its column-th nearest row of
    *sample* (0 first), that row chosen by the squared distances as a
    product of the rows gives them (a BLAS product: 256 x 65536 distances
    of 8 features took cdist 0.26 s of a 1M-row fit on an H200 host) and
    its distance then computed as a difference, so duplicates give 0.  The
    rows are taken about the sample's mean: the product's rounding grows
    with their norms, not with their distances."""
    origin = sample.mean(axis=0)
    queries, sample = queries - origin, sample - origin
    near = queries @ sample.T
    near *= -2
    near += np.einsum("ij,ij->i", sample, sample)
    near += np.einsum("ij,ij->i", queries, queries)[:, None]
    at = np.argpartition(near, column, axis=1)[:, column]
    diff = queries - sample[at]
    return np.sqrt(np.einsum("ij,ij->i", diff, diff))


def grid_width(X, k, metric):
    """The grid's cell width for k nearest rows: half the median k-th
    distance of WIDTH_QUERIES rows, estimated from their nearest among
    WIDTH_SAMPLE rows (the k m/n-th of m rows sits about as far as the k-th
    of n); a positive width where that is 0 (duplicates)."""
    n = X.shape[0]
    sample = X[::max(1, n // WIDTH_SAMPLE)]
    queries = X[::max(1, n // WIDTH_QUERIES)]
    column = int(np.clip(round(k * len(sample) / n), 1, len(sample))) - 1
    # that column of the rows sorted: a partition in place gives it (a sort
    # of the 256 x 65536 distances and its copy took 0.9 s of a 200k x 3
    # fit on two cores)
    if metric == "euclidean":
        kth = _kth_euclidean(queries, sample, column)
    else:
        near = cdist(queries, sample, metric)
        near.partition(column, axis=1)
        kth = near[:, column]
    positive = kth[kth > 0]
    if positive.size == 0:
        return float(np.ptp(X, axis=0).max() or 1.0)
    return float(np.median(positive)) / 2


def grid_k_nearest_distances(plan, X, k, metric="euclidean", ids=False):
    """k_nearest_distances over a grid of cells (see the module): the same
    n x k values (with *ids*, and their rows), for the metrics of
    GRID_METRICS."""
    X = _check(X, k, metric, GRID_METRICS)
    n, d = X.shape
    plan = _plan(plan)
    q = plan.queue
    grid = CellGrid(X, grid_width(X, k, metric), plan.dtype)
    x, keys, index, shape = grid.upload(q)
    out = cla.empty(q, (n, k), plan.dtype)
    left = cla.empty(q, n, np.int8)
    out_j = cla.empty(q, (n, k), np.int32) if ids else None
    spec = KnnGridCoreSpec(d=d, metric=metric, k=int(k), g=grid.g, ids=ids, **plan.base)
    size = -(-n // plan.wg) * plan.wg
    exact_kernel(q, spec, "knn_grid_core")(
        q, (size,), (plan.wg,), x.data, np.int32(n), keys.data, shape.data, index.data,
        plan.dtype.type(grid.eps), np.int32(GRID_RINGS), np.int32(grid.cells.max() - 1),
        out.data, left.data, *((out_j.data,) if ids else ()))
    distances = download(q, out)
    near = download(q, out_j) if ids else None
    rows = np.flatnonzero(download(q, left))
    if rows.size:                  # their places among the sorted rows
        place = np.empty(n, np.int64)
        place[grid.order] = np.arange(n)
        found = _subset_nearest(plan, x, n, d, place[rows], k, metric, ids)
        if ids:
            distances[rows], near[rows] = found[0], grid.order[found[1]]
        else:
            distances[rows] = found
    return (distances.astype(np.float64), near) if ids else distances.astype(np.float64)


def core_distances(plan, X, min_samples, metric="euclidean", grid=False, neighbours=False):
    """Each row's distance to its min_samples-th nearest row, itself
    counted; over a grid of cells with *grid* (grid_k_nearest_distances).
    *neighbours*: (core, (distances, ids)), each row's min_samples + 1
    nearest (n x m, ascending; m at most NEIGHBOURS_KEPT, else None): the
    MST's first candidates (passes/mst.py boruvka's *nearest*)."""
    nearest = grid_k_nearest_distances if grid else k_nearest_distances
    m = min(len(X), min_samples + 1)
    if not neighbours or m > NEIGHBOURS_KEPT:
        core = nearest(plan, X, min_samples, metric)[:, -1]
        return (core, None) if neighbours else core
    distances, ids = nearest(plan, X, m, metric, ids=True)
    return distances[:, min_samples - 1].copy(), (distances, ids)


@dataclasses.dataclass(frozen=True)
class PrimSourceSpec(Spec):
    template = "neighbours/prim_source.cl.mako"
    d: int = 1
    metric: str = "euclidean"


def prim_edges(plan, X, metric, core):
    """The mutual-reachability MST as scikit-learn's Prim records it: (source,
    new, height) in Prim's order from node 0, source the first tree node at
    the height (templates/neighbours/prim_source.cl.mako).  Prim's steps are
    the MST engine's (passes/mst.py prim_rows): n launches, for trees whose
    heights tie."""
    from . import mst                       # the engine's Prim on the rows
    plan = _plan(plan)
    q = plan.queue
    n, d = X.shape
    x = cla.to_device(q, np.ascontiguousarray(X, plan.dtype))
    core_dev = cla.to_device(q, np.ascontiguousarray(core, plan.dtype))
    _, new, h = mst.prim_rows(plan, x, n, d, metric, core_dev)
    seq = cla.to_device(q, np.concatenate([[0], new]).astype(np.int32))
    height = cla.to_device(q, h.astype(plan.dtype))
    src = cla.empty(q, n - 1, np.int32)
    spec = PrimSourceSpec(d=d, metric=metric, **plan.base)
    exact_kernel(q, spec, "prim_source")(q, (max(1, n - 1),), None, x.data, np.int32(n), core_dev.data, seq.data,
         height.data, src.data)
    return src.get(q).astype(np.int64), new, h
