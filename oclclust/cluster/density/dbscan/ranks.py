"""DBSCAN across MPI ranks (``DBSCAN(comm=...)``): each rank passes its own
rows and ends with their labels, those one process gives all ranks' rows.

The grid of cells (passes/grid.py) is all ranks' (their features' bounds
joined), and rank r answers for a slab of its cell keys, cut at quantiles
of a sample of every rank's keys: every rank sends it the rows whose keys
fall in the slab or in its halo, the key range of the cells within eps
around it (one Alltoallv), so a rank holds its own rows and its slab's,
O(n / ranks + halo).  The rank's devices count its slab's rows' neighbours
and join its core rows (passes/dbscan_grid.py's GridNeighbourhoods over the
slab, cut again where the rank has several devices); the core flags and
cluster numbers of a slab's halo rows come from the ranks that answer for
them (halo exchanges of the answered rows' values).  The links between the
slabs' components (a few a halo row) are gathered by every rank and joined
(dbscan_grid.joined_roots), and the clusters are numbered by their least
rows, gathered too (8 bytes a cluster).  Each row's label then goes back to
the rank that passed it.

Every exchange is a collective of the fit's communicator (parallel/comm.py):
a rank that fails makes every rank raise, none is left waiting.
"""
import numpy as np

from ....parallel.comm import Ranks, rank_error_type
from ....passes.dbscan_grid import GridNeighbourhoods, joined_roots
from ....passes.grid import CellGrid, Slab

SAMPLES = 256          # keys a rank offers for the slabs' cuts
MAX_ROWS = (1 << 31) - 1   # the kernels number rows in int32
LAST_KEY = 1 << 62     # past every cell key (keys stay below 2^60)


def labels_across_ranks(comm, X, w, params, plans, split, error):
    """(labels, core mask, {device: rows answered}) of this rank's rows X
    (dense, checked, or None where *error* is this rank's exception) with
    weights *w* (or None); *params*: (eps, min_samples, metric) as the
    device compares them (GRID_METRICS), the same on every rank; *plans*:
    this rank's devices, of one value type, and *split* the keywords that
    split its slab over them (GridNeighbourhoods' shares, executor)."""
    shape = (0, 0, "float64") if error is not None else (
        X.shape[0], X.shape[1], plans[0].dtype.name)
    ranks = Ranks(comm, *shape, error=error)
    try:
        if ranks.n > MAX_ROWS:   # (every rank sees the same n: all raise)
            raise rank_error_type("ValueError")(
                f"DBSCAN across MPI ranks numbers rows in int32: {ranks.n} rows are more "
                f"than {MAX_ROWS}")
        agreed = ranks.gather(params)
        if any(p != agreed[0] for p in agreed):
            raise rank_error_type("ValueError")(
                "the ranks' DBSCAN parameters (eps, min_samples, metric) disagree: " +
                ", ".join(f"rank {r}: {p}" for r, p in enumerate(agreed)))
        fitted = _fit(ranks, X, w, *params, plans, split)
        ranks.finished()   # no rank returns labels while another fails
    except BaseException as exc:   # an interrupt too: no rank may be left waiting
        ranks.raise_left(exc)
    return fitted


class _RankSlab:
    """This rank's slab: the rows of every rank in its key range and halo,
    sorted (a CellGrid of them, numbered as all ranks' rows), and the halo
    exchanges of values of the rows it answers for."""

    def __init__(self, ranks, values, w, eps, plan):
        lo = values.min(axis=0).astype(np.float64)
        hi = values.max(axis=0).astype(np.float64)
        both = ranks.gather((lo, hi))
        lo = np.min([b[0] for b in both], axis=0)
        bounds = (lo, np.max([b[1] for b in both], axis=0) - lo)
        mine = CellGrid(values, eps, plan.dtype, bounds, ranks.offset + np.arange(len(values)))
        self.ranks, self.rank = ranks, ranks.rank
        cuts = _cuts(ranks, mine.keys)
        reach = int(mine.shape[:mine.g].sum())
        # every slab's key range with its halo, ends included
        self.low, self.high = cuts[:-1] - reach, cuts[1:] - 1 + reach
        sent = self._to_slabs(mine.keys)
        rows = np.concatenate(ranks.exchange(sent(values[mine.order])))
        ids = np.concatenate(ranks.exchange(sent(mine.ids)))
        self.w = None if w is None else np.concatenate(ranks.exchange(sent(w[mine.order])))
        self.grid = CellGrid(rows, eps, plan.dtype, bounds, ids)
        first, last = np.searchsorted(self.grid.keys, cuts[self.rank:self.rank + 2])
        self.slab = Slab(0, int(first), int(last), self.grid.n)
        self.ids = self.grid.ids[first:last]
        self.answered_to = self._to_slabs(self.grid.keys[first:last])

    def _to_slabs(self, keys):
        """parts(values): *values* of rows of ascending *keys* cut into the
        parts each slab holds (its key range and halo)."""
        starts = np.searchsorted(keys, self.low, "left")
        stops = np.searchsorted(keys, self.high, "right")
        return lambda values: [values[a:b] for a, b in zip(starts, stops)]

    def halo(self, answered):
        """The slab's rows' values, halo included, from *answered* (this
        rank's answered rows' values in their sorted order): the lesser
        ranks answer for the rows below its keys, the greater above."""
        parts = self.answered_to(answered)
        parts[self.rank] = answered[:0]
        got = self.ranks.exchange(parts)
        return np.concatenate([*got[:self.rank], answered, *got[self.rank + 1:]])

    def shared(self):
        """Mask of the answered rows some other slab holds in its halo."""
        shared = np.zeros(len(self.ids), bool)
        for r, part in enumerate(self.answered_to(np.arange(len(self.ids)))):
            if r != self.rank:
                shared[part] = True
        return shared


def _fit(ranks, X, w, eps, min_samples, metric, plans, split):
    slab = _RankSlab(ranks, np.ascontiguousarray(X, plans[0].dtype), w, eps, plans[0])
    grid, s = slab.grid, slab.slab
    # this rank's devices, each a part of its slab (GridNeighbourhoods' slabs)
    hoods = GridNeighbourhoods(plans, grid, eps, metric, span=(s.first, s.last), **split)
    sorted_w = None if slab.w is None else grid.sorted(slab.w)
    # (the weights of every neighbour of a slab's row are in the slab's)
    core = hoods.answered_counts(sorted_w, min_samples) >= min_samples
    held_core = slab.halo(core.astype(np.int8)).astype(bool)
    # the links between slabs: this rank's devices' (their halos' core rows
    # to their roots there, ...), and its core rows another rank holds
    root, a, b = hoods.answered_roots(held_core)
    shared = slab.shared() & core
    links = ranks.gather((np.concatenate([a, slab.ids[shared]]),
                          np.concatenate([b, root[shared]])))
    root = joined_roots(root, np.concatenate([a for a, _ in links]),
                        np.concatenate([b for _, b in links]))
    # clusters numbered by their least rows (scikit-learn's numbering)
    least = np.sort(np.concatenate(ranks.gather(slab.ids[core & (root == slab.ids)])))
    number = np.where(core, np.searchsorted(least, root), -1)
    border = hoods.answered_min_label(slab.halo(number), ~held_core)
    labels = np.where(core, number, border)
    # each row's label and core flag back to the rank that passed it
    owner = np.searchsorted(np.cumsum(ranks.counts), slab.ids, side="right")
    by_owner = np.argsort(owner, kind="stable")
    rows = np.column_stack([slab.ids - np.concatenate([[0], np.cumsum(ranks.counts)])[owner],
                            labels, core])[by_owner]
    got = np.concatenate(ranks.exchange(np.split(rows, np.cumsum(
        np.bincount(owner, minlength=ranks.size))[:-1])))
    out = np.empty((len(X), 2), np.int64)
    out[got[:, 0]] = got[:, 1:]
    return out[:, 0].astype(np.intp), out[:, 1].astype(bool), hoods.rows()


def _cuts(ranks, keys):
    """The slabs' first keys, one a rank, and LAST_KEY: quantiles of every
    rank's (ascending) *keys*, from SAMPLES of each, each standing for its
    share of its rank's rows."""
    take = np.unique(np.linspace(0, len(keys) - 1, SAMPLES).astype(np.int64))
    offered = ranks.gather((keys[take], np.full(len(take), len(keys) / len(take))))
    sample = np.concatenate([k for k, _ in offered])
    order = np.argsort(sample, kind="stable")
    weight = np.cumsum(np.concatenate([c for _, c in offered])[order])
    at = np.searchsorted(weight, weight[-1] * np.arange(1, ranks.size) / ranks.size)
    inner = sample[order][np.minimum(at, len(sample) - 1)]
    return np.concatenate([[0], np.maximum.accumulate(inner), [LAST_KEY]]).astype(np.int64)
