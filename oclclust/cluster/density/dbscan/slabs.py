"""DBSCAN's grid of cells cut into slabs of cell keys, each answered for by
one holder of rows (an MPI rank: ranks.py; a Dask worker: dask_slabs.py):
the pieces both share, whatever carries the rows between them.

Every holder grids its own rows under the bounds of all rows (joined_bounds
of each holder's value_bounds), so a row's cell key is the same wherever it
is keyed.  The slabs are cut at quantiles of a sample of every holder's
keys (key_sample, slab_cuts); a slab holds the rows of its key range and of
its halo, the keys of the cells within eps around it (halo_ranges), sent
by every holder in holder order, each holder's part in its sorted order
(to_slabs), so every slab sorts the rows of one key alike.  A HeldSlab
counts its rows' neighbours and joins its core rows on its holder's devices
(passes/dbscan_grid.py's GridNeighbourhoods); between its steps, the halo
rows' core flags and cluster numbers come from the slabs that answer for
them (halo_parts out, held in), the links between the slabs' components
are joined (dbscan_grid.joined_roots) and the clusters numbered by their
least rows (least_rows, numbered).  Each row's label and core flag then go
back to the holder that passed it (owner_parts, owned).
"""
import numpy as np

from ....passes.dbscan_grid import GridNeighbourhoods
from ....passes.grid import CellGrid

SAMPLES = 256          # keys a holder offers for the slabs' cuts
MAX_ROWS = (1 << 31) - 1   # the kernels number rows in int32
LAST_KEY = 1 << 62     # past every cell key (keys stay below 2^60)


def value_bounds(values):
    """(least, greatest) of each feature of a holder's rows *values* (in the
    devices' value type), in float64."""
    return values.min(axis=0).astype(np.float64), values.max(axis=0).astype(np.float64)


def joined_bounds(bounds):
    """The grid's bounds (least values, extents) of every holder's *bounds*
    (value_bounds' pairs): those grid_features finds in all rows at once."""
    lo = np.min([b[0] for b in bounds], axis=0)
    return lo, np.max([b[1] for b in bounds], axis=0) - lo


def key_sample(keys):
    """(keys, weights) a holder of ascending *keys* (at least one) offers for
    the slabs' cuts: SAMPLES of them, each standing for its share."""
    take = np.unique(np.linspace(0, len(keys) - 1, SAMPLES).astype(np.int64))
    return keys[take], np.full(len(take), len(keys) / len(take))


def slab_cuts(offered, slabs):
    """The first keys of *slabs* slabs, then LAST_KEY: quantiles of every
    holder's key_sample (*offered*), so each slab holds about an equal share
    of the rows (an empty slab where one key holds more)."""
    sample = np.concatenate([k for k, _ in offered])
    order = np.argsort(sample, kind="stable")
    weight = np.cumsum(np.concatenate([c for _, c in offered])[order])
    at = np.searchsorted(weight, weight[-1] * np.arange(1, slabs) / slabs)
    inner = sample[order][np.minimum(at, len(sample) - 1)]
    return np.concatenate([[0], np.maximum.accumulate(inner), [LAST_KEY]]).astype(np.int64)


def halo_ranges(cuts, grid):
    """(low, high): every slab's key range with its halo, ends included.  A
    cell's neighbours differ from its key by at most the sum of *grid*'s key
    multipliers (any CellGrid under the joined bounds: they share a shape)."""
    reach = int(grid.shape[:grid.g].sum())
    return cuts[:-1] - reach, cuts[1:] - 1 + reach


def to_slabs(keys, low, high):
    """parts(values): *values* of rows of ascending *keys* cut into the
    parts each slab holds (halo_ranges' *low*, *high*): one a slab."""
    starts = np.searchsorted(keys, low, "left")
    stops = np.searchsorted(keys, high, "right")
    return lambda values: [values[a:b] for a, b in zip(starts, stops)]


class HeldSlab:
    """Slab *index* of the grid under *bounds* cut at *cuts* (halo_ranges
    *low*, *high*): the rows of its key range and halo (*rows*, their *ids*
    among all rows and weights *w* or None: every holder's part, in holder
    order), sorted (``grid``), on *plans*' devices, its rows cut again among
    them by *split* (GridNeighbourhoods' keywords), the radius *eps* in
    *metric*.  Its methods' per-row values are those of the rows it answers
    for (``ids``), in sorted order, unless named held: every sorted row's."""

    def __init__(self, index, rows, ids, w, eps, metric, bounds, cuts, low, high, plans, split):
        self.index = index
        self.grid = CellGrid(rows, eps, plans[0].dtype, bounds, ids)
        first, last = (int(i) for i in np.searchsorted(self.grid.keys, cuts[index:index + 2]))
        self.ids = self.grid.ids[first:last]
        self.answered_to = to_slabs(self.grid.keys[first:last], low, high)
        self.hoods = GridNeighbourhoods(plans, self.grid, eps, metric, span=(first, last),
                                        **split)
        # (the weights of every neighbour of a slab's row are in the slab's)
        self.sorted_w = None if w is None else self.grid.sorted(w)

    def core(self, min_samples):
        """The core flags: weighted neighbour counts of at least *min_samples*."""
        return self.hoods.answered_counts(self.sorted_w, min_samples) >= min_samples

    def halo_parts(self, answered):
        """*answered* (values of the rows answered for) cut into the parts
        each other slab holds in its halo (its own part left empty)."""
        parts = self.answered_to(answered)
        parts[self.index] = answered[:0]
        return parts

    def held(self, got, answered):
        """Every held row's values: *got* (the other slabs' halo_parts for
        this one, in slab order; its own entry ignored) around *answered*:
        the lesser slabs answer for the rows below its keys, the greater
        above."""
        return np.concatenate([*got[:self.index], answered, *got[self.index + 1:]])

    def links(self, core, held_core):
        """(root, a, b): each core row's root in this slab (a row id), and
        the links between slabs' components it sees (joined_roots' *a*, *b*):
        its devices' (their halos' core rows to their roots there, ...) and
        its core rows another slab holds in its halo, to their roots."""
        root, a, b = self.hoods.answered_roots(held_core)
        shared = np.zeros(len(self.ids), bool)
        for r, part in enumerate(self.answered_to(np.arange(len(self.ids)))):
            if r != self.index:
                shared[part] = True
        shared &= core
        return root, np.concatenate([a, self.ids[shared]]), np.concatenate([b, root[shared]])

    def least_rows(self, core, root):
        """The rows that are their clusters' least (*root*: joined roots)."""
        return self.ids[core & (root == self.ids)]

    def labels(self, core, number, held_core, held_number):
        """Each row's cluster: a core row's *number*, a border row's least
        among its core neighbours' (-1: noise)."""
        return np.where(core, number, self.hoods.answered_min_label(held_number, ~held_core))


def numbered(core, root, least):
    """The core rows' cluster numbers (-1 for the others): their joined
    *root*'s place among every cluster's *least* row (ascending), as
    scikit-learn numbers them."""
    return np.where(core, np.searchsorted(least, root), -1)


def owner_parts(ids, labels, core, counts):
    """Rows (local index, label, core) of the rows *ids* cut into one part a
    holder, *counts*: each holder's rows, in id order."""
    ends = np.cumsum(counts)
    owner = np.searchsorted(ends, ids, side="right")
    by_owner = np.argsort(owner, kind="stable")
    rows = np.column_stack([ids - np.concatenate([[0], ends])[owner], labels, core])[by_owner]
    return np.split(rows, np.cumsum(np.bincount(owner, minlength=len(counts)))[:-1])


def owned(parts, n):
    """(labels, core mask) of a holder's *n* rows from the owner_parts the
    slabs sent it."""
    got = np.concatenate(parts).reshape(-1, 3)
    out = np.empty((n, 2), np.int64)
    out[got[:, 0]] = got[:, 1:]
    return out[:, 0].astype(np.intp), out[:, 1].astype(bool)
