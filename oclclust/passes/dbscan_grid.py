"""DBSCAN on the device over a grid of eps-wide cells (pairs with
templates/dbscan/dbscan_grid_*.cl.mako): the neighbour counts, the core
rows' components and the border rows' clusters of passes/dbscan.py's
Neighbourhoods, each row comparing only the rows of the cells around its own
(passes/grid.py).  The same comparisons, so the same neighbours and labels;
O(n) memory, the pairs never stored; the components in one pass (a
lock-free union-find) instead of rounds.  For euclidean, cityblock and
chebyshev distances, whose neighbours differ by at most eps in each feature.
"""
import dataclasses

import numpy as np
import pyopencl.array as cla

from ..runtime.codegen import Spec
from ..runtime.transfer import download, upload
from .linkage import exact_kernel

GRID_METRICS = ("euclidean", "cityblock", "chebyshev")


@dataclasses.dataclass(frozen=True)
class GridCountsSpec(Spec):
    template = "dbscan/dbscan_grid_counts.cl.mako"
    d: int = 1
    metric: str = "sqeuclidean"
    g: int = 1
    weighted: bool = False


@dataclasses.dataclass(frozen=True)
class GridUnionSpec(Spec):
    template = "dbscan/dbscan_grid_union.cl.mako"
    d: int = 1
    metric: str = "sqeuclidean"
    g: int = 1


@dataclasses.dataclass(frozen=True)
class GridMinLabelSpec(Spec):
    template = "dbscan/dbscan_grid_min_label.cl.mako"
    d: int = 1
    metric: str = "sqeuclidean"
    g: int = 1


class GridNeighbourhoods:
    """passes/dbscan.py's Neighbourhoods over *grid* (a passes.grid.CellGrid of X
    with the same eps): the rows on *plan*'s device and the radius eps in *metric*
    (one of GRID_METRICS; euclidean compared squared)."""

    def __init__(self, plan, grid, eps, metric):
        if metric not in GRID_METRICS:
            raise ValueError(f"the grid searches {GRID_METRICS} distances, not {metric!r}")
        self.plan, self.q = plan, plan.queue
        self.n, self.d = grid.n, grid.d
        self.metric = "sqeuclidean" if metric == "euclidean" else metric
        self.radius = plan.dtype.type(eps * eps if metric == "euclidean" else eps)
        self.grid = grid
        self.x, self.keys, self.index, self.shape = grid.upload(self.q)
        self.wg = plan.wg
        self.size = -(-self.n // self.wg) * self.wg

    def _base(self):
        return dict(d=self.d, metric=self.metric, g=self.grid.g, **self.plan.base)

    def _launch(self, spec, name, *args):
        exact_kernel(self.q, spec, name)(
            self.q, (self.size,), (self.wg,), self.x.data, np.int32(self.n), self.radius,
            self.keys.data, self.shape.data, self.index.data, *args)

    def _sorted(self, values, dtype):
        return upload(self.q, self.grid.sorted(values), dtype)

    def counts(self, w=None, enough=np.inf):
        """Each row's summed weight (1 each without *w*) within eps, its own
        included: exact below *enough*, some sum >= *enough* otherwise (the
        rows' search stops there where no weight is negative)."""
        if w is not None and np.any(w < 0):
            enough = np.inf
        weights = (cla.empty(self.q, 1, self.plan.dtype) if w is None
                   else self._sorted(w, self.plan.dtype))
        out = cla.empty(self.q, self.n, self.plan.dtype)
        self._launch(GridCountsSpec(weighted=w is not None, **self._base()),
                     "dbscan_grid_counts", weights.data, self.plan.dtype.type(enough),
                     out.data)
        return download(self.q, out).astype(np.float64)

    def components(self, core):
        """Each core row's component as its least core row index (-1 for the others)."""
        parent = upload(self.q, np.arange(self.n, dtype=np.int32))
        spec = GridUnionSpec(**self._base())
        self._launch(spec, "dbscan_grid_union", self._sorted(core, np.int8).data, parent.data)
        root = cla.empty(self.q, self.n, np.int32)
        exact_kernel(self.q, spec, "dbscan_grid_roots")(
            self.q, (self.size,), (self.wg,), np.int32(self.n), parent.data, root.data)
        return np.where(core, download(self.q, root), -1).astype(np.int64)

    def min_label(self, label, want):
        """As Neighbourhoods.min_label: for each row with *want*, the least
        of its own label and those >= 0 of the rows within eps (-1: none)."""
        out = cla.empty(self.q, self.n, np.int32)
        self._launch(GridMinLabelSpec(**self._base()), "dbscan_grid_min_label",
                     self._sorted(label, np.int32).data, self._sorted(want, np.int8).data,
                     out.data)
        return download(self.q, out).astype(np.int64)
