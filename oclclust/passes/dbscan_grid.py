"""DBSCAN on the device over a grid of eps-wide cells (pairs with
templates/dbscan/dbscan_grid_*.cl.mako): the neighbour counts, the core
rows' components and the border rows' clusters of passes/dbscan.py's
Neighbourhoods, each row comparing only the rows of the cells around its own
(passes/grid.py).  The same comparisons, so the same neighbours and labels;
O(n) memory, the pairs never stored; the components in one pass (a
lock-free union-find) instead of rounds.  For euclidean, cityblock and
chebyshev distances, whose neighbours differ by at most eps in each feature.

Over several devices the sorted rows are cut into slabs of cell keys
(CellGrid.slabs), one a device, each with a halo of the cells within eps
of it: a device answers for its slab's rows alone, whose neighbours are all
on it, so the counts and border rows need nothing from the others.  Each
device's union-find joins the pairs with a row in its slab; a halo row's
root there is a link between two slabs' components, which the host joins
(joined_roots: a graph of the halos' links, O(halo) nodes).  The same
components, so the same labels, whatever the split.

On one device answering for every row (WholeGrid) the per-row values of the
row-index API go to the device in row order and come back in it, sorted
and put back by the grid's order there (passes/permute.py): the host
permutes no n-sized array.
"""
import dataclasses
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl.array as cla
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..runtime.codegen import Spec
from ..runtime.kernel_recorder import recorded_on_workers
from ..runtime.transfer import download, upload
from .grid import Slab
from .linkage import exact_kernel
from .permute import gather, scatter, scatter_positions

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


class GridSlab:
    """One device's part of the grid's passes: the sorted rows of *slab* (a
    passes.grid.Slab of *grid*, a CellGrid with the same eps), halo
    included, on *plan*'s device, and the radius eps in *metric* (one of
    GRID_METRICS; euclidean compared squared).  Values in and out are in
    the grid's sorted order: the slab's rows [lo, hi) in, its answered rows
    [first, last) out."""

    def __init__(self, plan, grid, slab, eps, metric):
        if metric not in GRID_METRICS:
            raise ValueError(f"the grid searches {GRID_METRICS} distances, not {metric!r}")
        self.plan, self.q, self.slab = plan, plan.queue, slab
        self.n, self.d, self.g = slab.hi - slab.lo, grid.d, grid.g
        self.metric = "sqeuclidean" if metric == "euclidean" else metric
        self.radius = plan.dtype.type(eps * eps if metric == "euclidean" else eps)
        self.x, self.keys, self.index, self.shape = grid.upload(self.q, slab.lo, slab.hi)
        self.first, self.last = slab.first - slab.lo, slab.last - slab.lo
        self.wg = plan.wg
        self.size = max(1, -(-(self.last - self.first) // self.wg)) * self.wg

    def _base(self):
        return dict(d=self.d, metric=self.metric, g=self.g, **self.plan.base)

    def _launch(self, spec, name, *args):
        exact_kernel(self.q, spec, name)(
            self.q, (self.size,), (self.wg,), self.x.data, np.int32(self.n), self.radius,
            self.keys.data, self.shape.data, self.index.data, np.int32(self.first),
            np.int32(self.last), *args)

    def _rows(self, values, dtype):
        """Per-row host values of the grid's sorted rows, the slab's on the device."""
        return upload(self.q, np.asarray(values[self.slab.lo:self.slab.hi]), dtype)

    def _answered(self, out, dtype):
        """The answered rows' values of device array *out* on the host."""
        return download(self.q, out)[:self.last - self.first].astype(dtype, copy=False)

    def counts(self, w, enough):
        """The answered rows' summed weights within eps (GridNeighbourhoods.counts);
        *w*: every sorted row's weight, or None."""
        weights = None if w is None else self._rows(w, self.plan.dtype)
        return self._answered(self.device_counts(weights, enough), np.float64)

    def device_counts(self, weights, enough):
        """counts() on the device: *weights* the slab's rows' (a device
        array) or None; the answered rows' sums, a device array."""
        out = cla.empty(self.q, max(1, self.last - self.first), self.plan.dtype)
        self._launch(GridCountsSpec(weighted=weights is not None, **self._base()),
                     "dbscan_grid_counts",
                     (cla.empty(self.q, 1, self.plan.dtype) if weights is None
                      else weights).data, self.plan.dtype.type(enough), out.data)
        return out

    def roots(self, core):
        """For each row of the slab, halo included, the slab's row of least
        index joined to it by the pairs with a row in the slab (a position in
        the slab; the row itself where it is not core).  *core*: every sorted
        row's."""
        return download(self.q, self.device_roots(self._rows(core, np.int8)))

    def device_roots(self, core):
        """roots() on the device: *core* the slab's rows' flags (int8 device
        array); the roots, an int32 device array."""
        spec = GridUnionSpec(**self._base())
        wide = -(-self.n // self.wg) * self.wg
        parent = cla.empty(self.q, self.n, np.int32)
        exact_kernel(self.q, spec, "dbscan_grid_parents")(
            self.q, (wide,), (self.wg,), np.int32(self.n), parent.data)
        self._launch(spec, "dbscan_grid_union", core.data, parent.data)
        root = cla.empty(self.q, self.n, np.int32)
        exact_kernel(self.q, spec, "dbscan_grid_roots")(
            self.q, (wide,), (self.wg,), np.int32(self.n), parent.data, root.data)
        return root

    def min_label(self, label, want):
        """GridNeighbourhoods.min_label of the answered rows; *label* and
        *want*: every sorted row's."""
        return self._answered(self.device_min_label(self._rows(label, np.int32),
                                                    self._rows(want, np.int8)), np.int64)

    def device_min_label(self, label, want):
        """min_label() on the device: *label* (int32) and *want* (int8) the
        slab's rows' device arrays; the answered rows' labels, an int32
        device array."""
        out = cla.empty(self.q, max(1, self.last - self.first), np.int32)
        self._launch(GridMinLabelSpec(**self._base()), "dbscan_grid_min_label", label.data,
                     want.data, out.data)
        return out


class WholeGrid:
    """A GridSlab that holds and answers for every row of its grid (one
    device, no halo; the grid numbered as X's rows) by row index: per-row
    values go to the device in row order and are sorted there, the answers
    put back in row order there (passes/permute.py by the slab's ids, the
    grid's order), so each crosses to the host once and the host permutes
    nothing."""

    def __init__(self, slab):
        self.slab, self.q, self.order = slab, slab.q, slab.index

    def _sorted(self, values, dtype):
        """Host per-row *values* (row order) in sorted order on the device."""
        return gather(self.q, self.order, upload(self.q, np.asarray(values), dtype))

    def counts(self, w, enough):
        """GridNeighbourhoods.counts by row."""
        weights = None if w is None else self._sorted(w, self.slab.plan.dtype)
        sums = scatter(self.q, self.order, self.slab.device_counts(weights, enough))
        return download(self.q, sums).astype(np.float64, copy=False)

    def components(self, core):
        """GridNeighbourhoods.components by row."""
        root = self.slab.device_roots(self._sorted(core, np.int8))
        return np.where(core, download(self.q, scatter_positions(self.q, self.order, root)),
                        -1).astype(np.int64)

    def min_label(self, label, want):
        """GridNeighbourhoods.min_label by row."""
        out = self.slab.device_min_label(self._sorted(label, np.int32),
                                         self._sorted(want, np.int8))
        return download(self.q, scatter(self.q, self.order, out)).astype(np.int64)


class GridNeighbourhoods:
    """passes/dbscan.py's Neighbourhoods over *grid* (a passes.grid.CellGrid of X
    with the same eps), the radius eps in *metric* (one of GRID_METRICS),
    on *plans*' devices (one Plan, or a list: the rows cut in slabs by
    *shares*, one number a plan, equal by default; every plan of one value
    type, so each pair compares alike wherever it is compared).  *executor*
    makes the pool whose threads drive the slabs' devices at once (a
    DeviceManager's: a harness's runtime may need one thread).  *span*:
    the sorted rows [start, stop) the slabs answer for (by default all;
    the rest a halo around them: an MPI rank's slab of all ranks' rows),
    the values of the answered_* methods; the others' (by row index) need
    all."""

    def __init__(self, plans, grid, eps, metric, shares=None, executor=ThreadPoolExecutor,
                 span=None):
        plans = list(plans) if isinstance(plans, (list, tuple)) else [plans]
        if len({p.dtype for p in plans}) > 1:
            raise ValueError("the devices of one DBSCAN compute in one value type")
        self.n, self.d, self.grid = grid.n, grid.d, grid
        self.start, self.stop = (0, grid.n) if span is None else span
        slabs = grid.slabs(np.ones(len(plans)) if shares is None else shares, self.start,
                           self.stop)
        self.slabs = [GridSlab(plan, grid, slab, eps, metric)
                      for plan, slab in zip(plans, slabs) if slab.last > slab.first]
        self.executor = recorded_on_workers(executor)
        # one device answering for every row: the row-index API by WholeGrid
        self.whole = (WholeGrid(self.slabs[0]) if len(self.slabs) == 1 and
                      self.slabs[0].slab == Slab(0, 0, grid.n, grid.n) and
                      grid.numbered_as_rows() else None)

    def rows(self):
        """{plan's profile: the rows its slab answers for} (a fit's ``devices_``)."""
        rows = {}
        for s in self.slabs:
            name = str(s.plan.profile)
            rows[name] = rows.get(name, 0) + s.slab.last - s.slab.first
        return rows

    def _each(self, work):
        """[work(slab) for each slab], the slabs' devices at once."""
        if len(self.slabs) < 2:
            return [work(slab) for slab in self.slabs]
        with self.executor(len(self.slabs)) as pool:
            return list(pool.map(work, self.slabs))

    def _answered(self, work, dtype):
        """The slabs' work (each slab's answered rows' values), joined in
        the sorted rows' order."""
        return np.concatenate([np.zeros(0, dtype), *self._each(work)]).astype(dtype)

    def _joined(self, values):
        """The answered rows' *values* (sorted order), by row index."""
        out = np.empty(self.n, values.dtype)
        out[self.grid.order] = values
        return out

    def answered_counts(self, sorted_w, enough):
        """counts() of the rows answered for, in sorted order; *sorted_w*:
        every sorted row's weight, or None."""
        if sorted_w is not None and np.any(sorted_w < 0):
            enough = np.inf
        return self._answered(lambda s: s.counts(sorted_w, enough), np.float64)

    def answered_roots(self, sorted_core):
        """(root, a, b): each answered row's root in its slab (a row id), and
        the links between slabs (joined_roots' *a*, *b*) that these slabs
        see: their halo core rows to their roots there, and their core rows
        in another of these slabs' halos to their own roots.  *sorted_core*:
        every sorted row's core flag."""
        roots = self._each(lambda s: s.roots(sorted_core))
        ids, root = self.grid.ids, np.empty(self.stop - self.start, np.int64)
        ends, in_halo = [(np.zeros(0, np.int64), np.zeros(0, np.int64))], \
            np.zeros(self.grid.n, bool)
        for slab, local in zip((s.slab for s in self.slabs), roots):
            local = ids[slab.lo + local]          # each slab row's root there, by row id
            root[slab.first - self.start:slab.last - self.start] = \
                local[slab.first - slab.lo:slab.last - slab.lo]
            halo = np.r_[slab.lo:slab.first, slab.last:slab.hi]
            halo = halo[sorted_core[halo]]
            ends.append((ids[halo], local[halo - slab.lo]))
            in_halo[halo] = True
        shared = np.flatnonzero(in_halo[self.start:self.stop])
        ends.append((ids[self.start + shared], root[shared]))
        return (root, *(np.concatenate(e) for e in zip(*ends)))

    def answered_min_label(self, sorted_label, sorted_want):
        """min_label() of the rows answered for, in sorted order; the
        arguments: every sorted row's."""
        return self._answered(lambda s: s.min_label(sorted_label, sorted_want), np.int64)

    def counts(self, w=None, enough=np.inf):
        """Each row's summed weight (1 each without *w*) within eps, its own
        included: exact below *enough*, some sum >= *enough* otherwise (the
        rows' search stops there where no weight is negative)."""
        if self.whole is not None:
            return self.whole.counts(w, np.inf if w is not None and np.any(w < 0) else enough)
        sorted_w = None if w is None else self.grid.sorted(w)
        return self._joined(self.answered_counts(sorted_w, enough))

    def components(self, core):
        """Each core row's component as its least core row index (-1 for the others)."""
        if self.whole is not None:
            return self.whole.components(core)
        sorted_core = self.grid.sorted(core).astype(bool)
        root = joined_roots(*self.answered_roots(sorted_core))
        return self._joined(np.where(sorted_core, root, -1))

    def min_label(self, label, want):
        """As Neighbourhoods.min_label: for each row with *want*, the least
        of its own label and those >= 0 of the rows within eps (-1: none)."""
        if self.whole is not None:
            return self.whole.min_label(label, want)
        sorted_label, sorted_want = self.grid.sorted(label), self.grid.sorted(want)
        return self._joined(self.answered_min_label(sorted_label, sorted_want))


def joined_roots(roots, a, b):
    """*roots* (row indices: each row's root in the slab that answers for
    it, its joined row of least index there) with the links between slabs
    *a*[i] ~ *b*[i] applied: each root replaced by the least row joined to
    it.  The links: each slab's halo core rows to their roots there, and
    each core row in another slab's halo to its own root, so the rows of a
    component seen by several slabs meet in one graph (its components by
    scipy; a root no link names was the least of its component already:
    every row's root is of lesser index than it)."""
    keep = a != b
    if not keep.any():
        return roots
    nodes, ids = np.unique(np.concatenate([a[keep], b[keep]]), return_inverse=True)
    links = int(keep.sum())
    graph = coo_matrix((np.ones(links, np.int8), (ids[:links], ids[links:])),
                       shape=(len(nodes), len(nodes)))
    _, part = connected_components(graph, directed=False)
    least = nodes[np.unique(part, return_index=True)[1]]   # nodes ascend: a part's first
    at = np.minimum(np.searchsorted(nodes, roots), len(nodes) - 1)
    return np.where(nodes[at] == roots, least[part[at]], roots)
