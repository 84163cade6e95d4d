"""k nearest distances of every row on the device: HDBSCAN's core distances.

Pairs with templates/neighbours/knn_core.cl.mako: distances computed from
the rows as the MST engine computes them (passes/mst.py, pdist's
arithmetic), never stored, so the core distances and the mutual
reachability weights round alike.  O(n k) memory, O(n^2 d) work.
"""
import dataclasses

import numpy as np
import pyopencl.array as cla

from ..runtime.codegen import Spec
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


def row_tile_work_group(plan, d, extra_bytes=0):
    """Work-items of a kernel that stages one row of d values (and
    *extra_bytes*) per work-item in local memory: as many as the local
    memory budget holds (a power of two, the plan's at most)."""
    fits = max(1, plan.profile.local_memory_budget // (d * plan.dtype.itemsize + extra_bytes))
    return 1 << (min(fits, plan.wg).bit_length() - 1)


def knn_spec(plan, d, metric, k):
    """A work-group's tile of rows in local memory (row_tile_work_group)."""
    return KnnCoreSpec(d=d, metric=metric, k=k, wg=row_tile_work_group(plan, d), **plan.base)


def k_nearest_distances(plan, X, k, metric="euclidean"):
    """n x k float64: each row's k smallest distances to the rows of X (its
    own, 0, among them), ascending.  *plan*: a passes.linkage.Plan or a
    DeviceProfile."""
    if metric not in NEIGHBOUR_METRICS:
        raise ValueError(f"metric must be one of {NEIGHBOUR_METRICS}, got {metric!r}")
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"Expected 2D array, got {X.ndim}D array instead")
    n, d = X.shape
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, n_samples={n}], got {k}")
    if not isinstance(plan, Plan):
        plan = Plan(plan, np.float64 if plan.fp64 else np.float32)
    q = plan.queue
    spec = knn_spec(plan, d, metric, int(k))
    kern = exact_kernel(q, spec, "knn_core")
    x = cla.to_device(q, np.ascontiguousarray(X, plan.dtype))
    out = cla.empty(q, (n, k), plan.dtype)
    groups = -(-n // spec.wg)
    kern(q, (groups * spec.wg,), (spec.wg,), x.data, np.int32(n), out.data)
    return out.get(q).astype(np.float64)


def core_distances(plan, X, min_samples, metric="euclidean"):
    """Each row's distance to its min_samples-th nearest row, itself counted."""
    return k_nearest_distances(plan, X, min_samples, metric)[:, -1]


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
    if not isinstance(plan, Plan):
        plan = Plan(plan, np.float64 if plan.fp64 else np.float32)
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
