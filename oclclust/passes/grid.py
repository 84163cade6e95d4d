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
import numpy as np
import pyopencl.array as cla

GRID_DIMS = 3          # features cut into cells: 3^g cells searched a row
MARGIN = 2.0 ** -10    # a cell's width over eps
MAX_CELLS = 1 << 20    # cells along a feature (keys stay below 2^60)


def grid_features(X, g=GRID_DIMS):
    """The (at most) g features of widest extent, in feature order."""
    extent = X.max(axis=0) - X.min(axis=0)
    return np.sort(np.argsort(-extent, kind="stable")[:min(g, X.shape[1])])


class CellGrid:
    """The rows of X (n x d) in the device's value type *dtype*, sorted by
    their cell under radius *eps* (see the module), on the host:
    ``order`` (the sorted rows' indices in X), ``keys`` (their cell keys,
    int64 ascending), ``shape`` (the grid for the kernels, int64: each
    gridded feature's key multiplier, then its number of cells),
    ``features`` (the gridded ones) and ``occupancy`` (rows a non-empty
    cell).  ``upload(queue)``: the device's copies."""

    def __init__(self, X, eps, dtype):
        self.n, self.d = X.shape
        values = np.ascontiguousarray(X, dtype)
        self.features = grid_features(values)
        cut = values[:, self.features].astype(np.float64)
        lo, extent = cut.min(axis=0), cut.max(axis=0) - cut.min(axis=0)
        width = np.maximum(eps * (1 + MARGIN), extent / (MAX_CELLS - 1))
        self.cells = (np.floor(extent / width).astype(np.int64) + 1)
        coords = np.minimum(np.floor((cut - lo) / width).astype(np.int64), self.cells - 1)
        multiplier = np.ones(len(self.cells), np.int64)
        for f in range(len(self.cells) - 2, -1, -1):
            multiplier[f] = multiplier[f + 1] * self.cells[f + 1]
        keys = coords @ multiplier
        self.order = np.argsort(keys, kind="stable")
        self.keys = keys[self.order]
        self.occupancy = np.diff(np.flatnonzero(np.diff(self.keys, prepend=-1, append=-1)))
        self.shape = np.concatenate([multiplier, self.cells])
        self._values = values

    def upload(self, queue):
        """(x, keys, index, shape) on *queue*'s device: the sorted rows,
        their keys, their indices in X (int32) and the grid's shape."""
        return (cla.to_device(queue, self._values[self.order]),
                cla.to_device(queue, self.keys),
                cla.to_device(queue, self.order.astype(np.int32)),
                cla.to_device(queue, self.shape))

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
