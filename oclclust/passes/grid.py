"""A uniform grid of cells at least eps wide over the rows: exact radius
searches in low dimensions (DBSCAN's grid passes) in O(n) memory.

Pairs with templates/grid/grid_cells.cl.mako, the kernels' candidate loop.
Up to GRID_DIMS features (those of widest extent) are cut into cells; a row's
cell key is its cells' coordinates in mixed radix, the last feature fastest.
The rows go to the device sorted by key (stably: a cell's rows in row
order), so the rows of three cells adjacent along the last feature are one
contiguous range: a row's candidates are 3^(g-1) ranges, each found by two
binary searches of the sorted keys.

Exact: a pair within eps in euclidean, cityblock or chebyshev distance
differs by at most eps in every feature, so its cells differ by at most one
in each gridded feature when a cell is wider than eps.  A cell is MARGIN
wider than eps: the device's compared distance (rounded, float32 on devices
without fp64) can pass a pair whose true difference exceeds eps by a few
ulps, and the cells are cut from the device's own values (the rows as the
device stores them, widened to float64 exactly) in float64, whose rounding
is far below the margin while a feature has at most MAX_CELLS cells (past
that the cells widen: more candidates, the same pairs).
"""
import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..runtime.transfer import upload
from .permute import gather

GRID_DIMS = 3          # features cut into cells: 3^g cells searched a row
MARGIN = 2.0 ** -10    # a cell's width over eps
MAX_CELLS = 1 << 20    # cells along a feature (keys stay below 2^60)
SORT_THREADS = max(1, min(16, os.cpu_count() or 1))
SORT_SPLIT = 1 << 20   # keys a sort takes before it is spread over threads


def grid_features(X, g=GRID_DIMS):
    """(the at most g features of widest extent in feature order, every
    feature's least value, every feature's extent)."""
    lo = np.array([X[:, f].min() for f in range(X.shape[1])], np.float64)
    extent = np.array([X[:, f].max() for f in range(X.shape[1])], np.float64) - lo
    return widest(lo, extent, g)


def widest(lo, extent, g=GRID_DIMS):
    """grid_features' answer for features of least values *lo* and *extent*."""
    lo, extent = np.asarray(lo, np.float64), np.asarray(extent, np.float64)
    return np.sort(np.argsort(-extent, kind="stable")[:min(g, len(extent))]), lo, extent


def stable_order(keys, threads=SORT_THREADS):
    """np.argsort(keys, kind="stable"), its work spread over *threads*
    (numpy sorts without the GIL): the keys split into value ranges at a
    sample's quantiles, the split's order stable (a radix sort of 16-bit
    range numbers), each range's rows sorted stably on a thread of its own."""
    if threads < 2 or len(keys) < SORT_SPLIT:
        return np.argsort(keys, kind="stable")
    sample = np.sort(keys[::max(1, len(keys) // (64 * threads))])
    bounds = sample[(np.arange(1, threads) * len(sample)) // threads]
    part = np.searchsorted(bounds, keys, side="right").astype(np.uint16)
    order = np.argsort(part, kind="stable")
    edges = np.searchsorted(part[order], np.arange(threads + 1))

    def sort_range(r):
        rows = order[edges[r]:edges[r + 1]]
        rows[:] = rows[np.argsort(keys[rows], kind="stable")]
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(sort_range, range(threads)))
    return order


@dataclasses.dataclass(frozen=True)
class Slab:
    """Sorted rows of a CellGrid: [first, last) answered for, [lo, hi) with
    the halo around them (CellGrid.slabs)."""
    lo: int
    first: int
    last: int
    hi: int


class CellGrid:
    """The rows of X (n x d) in the device's value type *dtype*, sorted by
    their cell under radius *eps* (see the module), on the host:
    ``order`` (the sorted rows' indices in X), ``ids`` (their row indices
    as the kernels see them: *ids* of X's rows, X's own by default; under
    MPI, a rank's rows numbered among all ranks'), ``keys`` (their cell
    keys, int64 ascending), ``shape`` (the grid for the kernels, int64:
    each gridded feature's key multiplier, then its number of cells),
    ``features`` (the gridded ones), ``cells`` (along each), ``eps`` and
    ``occupancy`` (rows a non-empty cell).  ``upload(queue)``: the
    device's copies.  *bounds*: (least values, extents) of every feature
    (of all ranks' rows: one grid, whichever rows a rank holds), by
    default grid_features' of X."""

    def __init__(self, X, eps, dtype, bounds=None, ids=None):
        self.n, self.d = X.shape
        self.eps = eps
        values = np.ascontiguousarray(X, dtype)
        self.features, lo, extent = (grid_features(values) if bounds is None
                                     else widest(*bounds))
        lo, extent = lo[self.features], extent[self.features]
        width = np.maximum(eps * (1 + MARGIN), extent / (MAX_CELLS - 1))
        self.cells = (np.floor(extent / width).astype(np.int64) + 1)
        keys = np.zeros(self.n, np.int64)
        cut = np.empty(self.n, np.float64)
        for f, feature in enumerate(self.features):      # mixed radix, the last fastest
            np.subtract(values[:, feature], lo[f], out=cut)
            np.floor(np.divide(cut, width[f], out=cut), out=cut)
            keys *= self.cells[f]
            keys += np.minimum(cut.astype(np.int64), self.cells[f] - 1)
        multiplier = np.ones(len(self.cells), np.int64)
        for f in range(len(self.cells) - 2, -1, -1):
            multiplier[f] = multiplier[f + 1] * self.cells[f + 1]
        self.order = stable_order(keys)
        self.ids = self.order if ids is None else np.asarray(ids, np.int64)[self.order]
        self.keys = keys[self.order]
        starts = np.flatnonzero(self.keys[1:] != self.keys[:-1]) + 1
        self.occupancy = np.diff(np.concatenate([[0], starts, [self.n]]))
        self.shape = np.concatenate([multiplier, self.cells])
        self._values = values

    def upload(self, queue, start=0, stop=None):
        """(x, keys, index, shape) on *queue*'s device: the sorted rows
        [start, stop) (all by default), their keys, their ids (int32) and
        the grid's shape.  All the rows, numbered as X's, are sorted there
        (their ids are the permutation): the host gathers none."""
        stop = self.n if stop is None else stop
        index = upload(queue, self.ids[start:stop].astype(np.int32))
        if self.numbered_as_rows() and (start, stop) == (0, self.n):
            x = gather(queue, index, upload(queue, self._values))
        else:
            x = upload(queue, np.take(self._values, self.order[start:stop], axis=0))
        return x, upload(queue, self.keys[start:stop]), index, upload(queue, self.shape)

    def numbered_as_rows(self):
        """Whether the ids are X's row indices (no *ids* given): the sorted
        rows' ids are then their order, the permutation the device moves
        per-row values by (passes/permute.py)."""
        return self.ids is self.order

    def slabs(self, shares, start=0, stop=None):
        """The sorted rows [start, stop) (all by default; whole cells) cut
        into one slab a share, each a Slab: the rows it answers for,
        [first, last), about its share (whole cells, so a slab is a range of
        cell keys; a slab may be empty), and its halo, the rows of the
        cells within eps of them: [lo, first) and [last, hi).  A cell's
        neighbours differ from its key by at most the sum of the key
        multipliers, so the halo is the key range that wide on either side:
        contiguous sorted rows."""
        stop = self.n if stop is None else stop
        if stop == start:
            return [Slab(start, start, start, start) for _ in shares]
        shares = np.asarray(shares, np.float64)
        cuts = start + np.round(np.cumsum(shares)[:-1] / shares.sum() *
                                (stop - start)).astype(np.int64)
        # each cut moved to the start of the cell it falls in
        cuts = np.where(cuts < stop, np.searchsorted(
            self.keys, self.keys[np.minimum(cuts, stop - 1)], "left"), stop)
        bounds = np.concatenate([[start], np.maximum.accumulate(np.maximum(cuts, start)),
                                 [stop]])
        reach = int(self.shape[:self.g].sum())
        slabs = []
        for first, last in zip(bounds[:-1], bounds[1:]):
            if last > first:
                lo = np.searchsorted(self.keys, self.keys[first] - reach, "left")
                hi = np.searchsorted(self.keys, self.keys[last - 1] + reach, "right")
            else:
                lo, hi = first, last
            slabs.append(Slab(int(lo), int(first), int(last), int(hi)))
        return slabs

    @property
    def g(self):
        """The number of gridded features."""
        return len(self.features)

    def candidate_pairs(self):
        """The pairs the grid's passes compare, estimated: each cell's rows
        against 3^g cells as full as it (the rows' own cells' occupancy)."""
        return 3 ** self.g * float(np.sum(self.occupancy.astype(np.float64) ** 2))

    def sorted(self, values):
        """Host per-row *values* in the grid's row order."""
        return np.ascontiguousarray(np.asarray(values)[self.order])
