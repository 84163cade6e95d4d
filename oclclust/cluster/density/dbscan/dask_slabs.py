"""DBSCAN fitted on a Dask cluster's workers (``DBSCAN().fit(dask_array)``
with a distributed Client active): slabs.py's slabs of the grid of cells,
one a worker that holds rows, the rows never on the client.

Each block of rows (whole rows: one chunk along the features) is checked
and bounded on its worker; the client joins the bounds (the grid every row
is keyed in) and cuts the slabs from each block's sample of its sorted cell
keys.  Each block cuts its rows into the parts the slabs hold (key range
and halo): a task's result on the block's worker, which the slab's worker
fetches, so rows move worker to worker.  Each slab is held on its worker's
devices (a HeldSlab in that worker's registry, under the fit's id) and the
fit's steps run there as tasks pinned to it, as ranks.py runs them on a
rank: the counts; the halo rows' core flags from the slabs that answer for
them (each slab's halo_parts, fetched by the other workers); the roots and
the links between slabs' components, gathered by the client (a few a halo
row) and sent back to every slab to join; each cluster's least row,
gathered to number the clusters (8 bytes a cluster); the halo rows'
numbers, moved as the core flags were; the labels.  Each block's labels and
core flags then come from the slabs to the block's worker: ``labels_`` is
a dask array of those blocks, in X's row chunks; the core rows' indices
come to the client (8 bytes a core row).

A worker lost mid-fit takes its slab with it: WorkerLostError within
seconds (the k-family's passes rebuild a lost block; this fit does not).
"""
import operator
import uuid

import numpy as np

from ....parallel.dask import (WorkerLostError, da, local_indices, picklable_devices, wait,
                               watched_gather, workers_info)
from ....passes.dbscan_grid import joined_roots
from ....passes.grid import CellGrid
from ....passes.linkage import check_range
from ....runtime.validation import check_data, check_sample_weight
from .plans import worker_plans
from .slabs import (MAX_ROWS, HeldSlab, halo_ranges, joined_bounds, key_sample, numbered,
                    owned, owner_parts, slab_cuts, to_slabs, value_bounds)

REFUSALS = {"ValueError": ValueError, "TypeError": TypeError}


def fit_on_workers(client, X, sample_weight, params, devices, name):
    """(labels: a dask array in X's row chunks, the core rows' indices,
    {"worker device": rows answered}) of DBSCAN on the rows of dask array X
    (2-D, row chunks known) on *client*'s workers; *sample_weight*: None,
    numpy or a dask array; *params*: (eps, min_samples, metric) as the
    device compares them (GRID_METRICS); *devices*: each worker's
    (worker_plans), picklable."""
    n = _checked_shape(X, name)
    if n > MAX_ROWS:
        raise ValueError(f"DBSCAN numbers rows in int32: {n} rows are more than {MAX_ROWS}")
    X = X.rechunk({1: -1})
    counts = [int(c) for c in X.chunks[0]]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    weights, checked = _weight_blocks(sample_weight, n, counts)
    fit = _Fit(client, uuid.uuid4().hex)
    try:
        blocks = client.compute(list(X.to_delayed().ravel()))
        weights = [client.compute(w) if hasattr(w, "dask") else w for w in weights]
        wait(blocks + [w for w in weights if hasattr(w, "key")])
        who = client.who_has(blocks)
        fit.workers = [who[b.key][0] for b in blocks]
        fit.local = local_indices(client)
        return fit.run(blocks, weights, checked, counts, starts, params,
                       picklable_devices(devices), name, X.shape[1])
    finally:
        fit.close()


def _checked_shape(X, name):
    """X's rows, as the one-process fit checks X's shape (before any work)."""
    if X.ndim != 2:
        raise ValueError(f"Expected 2D array, got {X.ndim}D dask array instead.")
    if any(np.isnan(c) for c in X.shape):
        raise ValueError("the dask array's row chunks must be known (compute_chunk_sizes())")
    if X.shape[0] < 1:
        raise ValueError(f"Found array with 0 sample(s) (shape={X.shape}) while a minimum "
                         f"of 1 is required by {name}.")
    return int(X.shape[0])


def _weight_blocks(sample_weight, n, counts):
    """(one weight block a row block: None, numpy or dask, whether the
    whole was checked here): numpy weights are the client's already."""
    if sample_weight is None:
        return [None] * len(counts), True
    if isinstance(sample_weight, da.Array):
        if sample_weight.shape != (n,):
            raise ValueError(f"sample_weight.shape == {sample_weight.shape}, expected ({n},)!")
        return list(sample_weight.rechunk((tuple(counts),)).to_delayed().ravel()), False
    w = check_sample_weight(sample_weight, n, np.float64, signed=True)
    return np.split(w, np.cumsum(counts)[:-1]), True


class _Fit:
    """The client's side of one fit: its tasks, pinned to their workers,
    and its waits, which raise WorkerLostError when one of them leaves."""

    def __init__(self, client, fit):
        self.client, self.fit, self.workers, self.slabs, self.local = client, fit, [], [], {}

    def on(self, worker, fn, *args):
        return self.client.submit(fn, *args, workers=[worker], allow_other_workers=False,
                                  pure=False)

    def gather(self, futures):
        got, gone = watched_gather(self.client, futures, set(self.workers), lambda _: futures)
        if gone:
            raise WorkerLostError(f"Dask worker(s) {', '.join(gone)} left during the DBSCAN "
                                  "fit with its rows or slabs: fit again")
        return got

    def halos(self, made):
        """For each slab, the other slabs' halo_parts for it (*made*: each
        slab's future of them), fetched where it is held, and its own
        future: its next step waits for its last (no halo may link them)."""
        return [[made[r] if r == s else self.on(self.slabs[s], operator.getitem, made[s], r)
                 for s in range(len(made))] for r in range(len(made))]

    def run(self, blocks, weights, checked, counts, starts, params, devices, name, d):
        eps, min_samples, metric = params
        nb = range(len(blocks))
        local = [self.local.get(w, (0, 1)) for w in self.workers]
        seen = self.gather([self.on(self.workers[i], _check_block, blocks[i], weights[i],
                                    devices, local[i], name) for i in nb])
        for i, got in enumerate(seen):
            if got["refused"] is not None:
                kind, message = got["refused"]
                raise REFUSALS[kind](f"{message} (block {i} of the dask array, rows "
                                     f"{starts[i]} to {starts[i] + counts[i] - 1})")
        if not checked and not any(got["nonzero"] for got in seen):
            raise ValueError("Sample weights must contain at least one non-zero number.")
        dtypes = {got["dtype"] for got in seen}
        if len(dtypes) > 1:
            raise ValueError(f"the workers' devices compute in different dtypes {dtypes}: "
                             "give every worker devices of one kind")
        dtype = np.dtype(dtypes.pop())
        bounds = joined_bounds([got["bounds"] for got in seen if got["bounds"] is not None])
        keyed = [self.on(self.workers[i], _block_grid, blocks[i], weights[i], starts[i],
                         bounds, eps, dtype) for i in nb]
        blocks.clear()   # the keyed rows stand for them now (Dask keeps them till then)
        held = [i for i in nb if counts[i]]
        self.slabs = sorted({self.workers[i] for i in held})
        offered = self.gather([self.on(self.workers[i], _offer, keyed[i]) for i in held])
        cuts = slab_cuts(offered, len(self.slabs))
        low, high = halo_ranges(cuts, CellGrid(np.zeros((0, d), dtype), eps, dtype, bounds))
        routed = [self.on(self.workers[i], _routed, keyed[i], low, high) for i in nb]
        slab_args = (eps, metric, min_samples, bounds, cuts, low, high, devices, d, dtype)
        made = [self.on(w, _hold, self.fit, s, [self.on(self.workers[i], operator.getitem,
                                                        routed[i], s) for i in nb],
                        self.local.get(w, (0, 1)), *slab_args)
                for s, w in enumerate(self.slabs)]
        keyed = routed = None   # the slabs hold their rows now
        linked = self.gather([self.on(w, _link, self.fit, s, got) for s, (w, got)
                              in enumerate(zip(self.slabs, self.halos(made)))])
        a = np.concatenate([a for a, _, _ in linked])
        b = np.concatenate([b for _, b, _ in linked])
        least = np.sort(np.concatenate(self.gather(
            [self.on(w, _least, self.fit, s, a, b) for s, w in enumerate(self.slabs)])))
        made = [self.on(w, _number, self.fit, s, least) for s, w in enumerate(self.slabs)]
        labelled = [self.on(w, _label, self.fit, s, got, counts) for s, (w, got)
                    in enumerate(zip(self.slabs, self.halos(made)))]
        outs = [self.on(self.workers[i], _block_out, starts[i], counts[i],
                        [self.on(w, operator.getitem, labelled[s], i)
                         for s, w in enumerate(self.slabs)]) for i in nb]
        labels = [self.on(self.workers[i], operator.getitem, outs[i], 0) for i in nb]
        core = self.gather([self.on(self.workers[i], operator.getitem, outs[i], 1)
                            for i in nb] + [self.on(self.workers[i], len, labels[i]) for i in nb])
        # a labels block lost later is computed again anywhere (where it raises:
        # its slab went with the fit), not waited for on a worker gone
        self.client.sync(self.client.scheduler.set_restrictions,
                         worker={f.key: [] for f in labels})
        rows = {}
        for w, (_, _, answered) in zip(self.slabs, linked):
            for device, count in answered.items():
                rows[f"{w} {device}"] = rows.get(f"{w} {device}", 0) + count
        return (da.concatenate([da.from_delayed(f, shape=(c,), dtype=np.intp)
                                for f, c in zip(labels, counts)]),
                np.concatenate(core[:len(counts)]), rows)

    def close(self):
        """Free the fit's slabs on the workers still there."""
        if self.slabs:
            alive = set(workers_info(self.client))
            self.client.run(_free, self.fit, workers=sorted(set(self.slabs) & alive),
                            on_error="ignore")
            self.slabs = []


# --------------------------------------------------- on the workers
_HELD = {}   # (fit id, slab index) -> {"slab": HeldSlab, its values}, in each worker
_ENDED = set()   # the ids of the fits freed here (32 characters a fit): a slab
#                  made after its fit failed elsewhere is not kept


def _rows(block, name):
    """A block's rows as float64, checked as the one-process fit checks X."""
    X = np.asarray(check_data(block, name, min_samples=0), np.float64)
    if not np.isfinite(X).all():
        raise ValueError("Input X contains NaN or infinity.")
    return X


def _weights(w, n):
    """A block's weights (None: unit weights), checked as check_sample_weight
    checks them but for weights all zero: the fit refuses those alone."""
    if w is not None and np.asarray(w).dtype.kind in "biuf" and not np.asarray(w).any():
        return np.zeros(n)
    return check_sample_weight(w, n, np.float64, signed=True)


def _check_block(block, w, devices, local, name):
    """A refusal of a block of rows (its exception's class name and
    message: the client raises it), or its devices' value type, value
    bounds and whether a weight is not zero."""
    try:
        X = _rows(block, name)
        plans, _ = worker_plans(devices, local)
        for plan in plans:
            check_range(X, plan)
        w = _weights(w, len(X))
    except (ValueError, TypeError) as exc:
        return dict(refused=(type(exc).__name__, str(exc)))
    values = np.ascontiguousarray(X, plans[0].dtype)
    return dict(refused=None, dtype=plans[0].dtype.name, nonzero=w is None or bool(w.any()),
                bounds=value_bounds(values) if len(values) else None)


def _block_grid(block, w, start, bounds, eps, dtype):
    """(rows in the devices' value type, weights, their CellGrid under the
    fit's bounds, rows numbered from *start*)."""
    values = np.ascontiguousarray(_rows(block, "DBSCAN"), dtype)
    grid = CellGrid(values, eps, dtype, bounds, start + np.arange(len(values)))
    return values, _weights(w, len(values)), grid


def _offer(keyed):
    return key_sample(keyed[2].keys)


def _routed(keyed, low, high):
    """[(rows, ids, weights)] a slab: the block's rows each slab holds."""
    values, w, grid = keyed
    sent = to_slabs(grid.keys, low, high)
    ws = sent(w[grid.order]) if w is not None else [None] * len(low)
    return list(zip(sent(values[grid.order]), sent(grid.ids), ws))


def _held(fit, index):
    try:
        return _HELD[fit, index]
    except KeyError:
        raise RuntimeError(f"slab {index} of a DBSCAN fit on Dask is not on this worker "
                           "(it left, or the fit ended): fit again") from None


def _hold(fit, index, parts, local, eps, metric, min_samples, bounds, cuts, low, high,
          devices, d, dtype):
    """Slab *index* held here from every block's *parts* (block order), its
    core flags counted: its halo_parts of them."""
    rows = np.concatenate([np.zeros((0, d), dtype)] + [p[0] for p in parts])
    ids = np.concatenate([np.zeros(0, np.int64)] + [p[1] for p in parts])
    w = None if parts[0][2] is None else np.concatenate([p[2] for p in parts])
    plans, split = worker_plans(devices, local)
    slab = HeldSlab(index, rows, ids, w, eps, metric, bounds, cuts, low, high, plans, split)
    state = dict(slab=slab, core=slab.core(min_samples))
    if fit not in _ENDED:
        _HELD[fit, index] = state
    return slab.halo_parts(state["core"].astype(np.int8))


def _link(fit, index, got):
    """(a, b, rows answered): the slab's links between components."""
    state = _held(fit, index)
    slab = state["slab"]
    state["held_core"] = slab.held(got, state["core"].astype(np.int8)).astype(bool)
    state["root"], a, b = slab.links(state["core"], state["held_core"])
    return a, b, slab.hoods.rows()


def _least(fit, index, a, b):
    """Every slab's links joined: the slab's rows that are their cluster's least."""
    state = _held(fit, index)
    state["root"] = joined_roots(state["root"], a, b)
    return state["slab"].least_rows(state["core"], state["root"])


def _number(fit, index, least):
    state = _held(fit, index)
    state["number"] = numbered(state["core"], state["root"], least)
    return state["slab"].halo_parts(state["number"])


def _label(fit, index, got, counts):
    """The slab's rows' (local index, label, core) cut by block."""
    state = _held(fit, index)
    slab = state["slab"]
    labels = slab.labels(state["core"], state["number"], state["held_core"],
                         slab.held(got, state["number"]))
    return owner_parts(slab.ids, labels, state["core"], counts)


def _block_out(start, n, parts):
    """(the block's labels, its core rows' global indices)."""
    labels, core = owned(parts, n)
    return labels, np.flatnonzero(core) + start


def _free(fit):
    _ENDED.add(fit)
    for key in [k for k in _HELD if k[0] == fit]:
        del _HELD[key]
