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
a rank that fails makes every rank raise, none is left waiting.  The steps
between the exchanges are slabs.py's, which the fit on Dask workers
(dask_slabs.py) takes too.
"""
import numpy as np

from ....parallel.comm import Ranks, rank_error_type
from ....passes.dbscan_grid import joined_roots
from ....passes.grid import CellGrid
from .slabs import (MAX_ROWS, HeldSlab, halo_ranges, joined_bounds, key_sample, numbered,
                    owned, owner_parts, slab_cuts, to_slabs, value_bounds)


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


def _fit(ranks, X, w, eps, min_samples, metric, plans, split):
    values = np.ascontiguousarray(X, plans[0].dtype)
    bounds = joined_bounds(ranks.gather(value_bounds(values)))
    mine = CellGrid(values, eps, plans[0].dtype, bounds, ranks.offset + np.arange(len(values)))
    cuts = _cuts(ranks, mine.keys)
    low, high = halo_ranges(cuts, mine)
    # this rank's rows to the slabs that hold them, in its sorted order
    sent = to_slabs(mine.keys, low, high)
    rows = np.concatenate(ranks.exchange(sent(values[mine.order])))
    ids = np.concatenate(ranks.exchange(sent(mine.ids)))
    w = None if w is None else np.concatenate(ranks.exchange(sent(w[mine.order])))
    # its slab, on this rank's devices (each a part of it: GridNeighbourhoods' slabs)
    slab = HeldSlab(ranks.rank, rows, ids, w, eps, metric, bounds, cuts, low, high, plans,
                    split)

    def held(answered):   # the halo rows' values from the ranks that answer for them
        return slab.held(ranks.exchange(slab.halo_parts(answered)), answered)
    core = slab.core(min_samples)
    held_core = held(core.astype(np.int8)).astype(bool)
    root, a, b = slab.links(core, held_core)
    links = ranks.gather((a, b))
    root = joined_roots(root, np.concatenate([a for a, _ in links]),
                        np.concatenate([b for _, b in links]))
    # clusters numbered by their least rows (scikit-learn's numbering)
    least = np.sort(np.concatenate(ranks.gather(slab.least_rows(core, root))))
    number = numbered(core, root, least)
    labels = slab.labels(core, number, held_core, held(number))
    # each row's label and core flag back to the rank that passed it
    got = ranks.exchange(owner_parts(slab.ids, labels, core, ranks.counts))
    return (*owned(got, len(X)), slab.hoods.rows())


def _cuts(ranks, keys):
    """The slabs' first keys, one a rank, and LAST_KEY (slab_cuts of every
    rank's key_sample)."""
    return slab_cuts(ranks.gather(key_sample(keys)), ranks.size)
