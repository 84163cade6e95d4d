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
a dask array of those blocks, in X's row chunks; the core flags come to
the client (a bit a row), which makes core_sample_indices_ of them.

A worker lost mid-fit takes its slab with it: WorkerLostError within
seconds (the k-family's passes rebuild a lost block; this fit does not).

The workers' side (the tasks, the registry of slabs) is dask_slab_tasks.py.
"""
import operator
import uuid
import warnings

import numpy as np

from ....parallel.dask import (WorkerLostError, da, local_indices, picklable_devices, wait,
                               watched_gather, workers_info)
from ....passes.grid import CellGrid
from ....runtime.validation import check_sample_weight, is_sparse
from ....runtime.warning_site import user_stacklevel
from .dask_slab_tasks import (SPARSE, _block_grid, _block_out, _check_block, _free, _hold,
                              _label, _least, _link, _number, _offer, _routed)
from .slabs import MAX_ROWS, halo_ranges, joined_bounds, slab_cuts

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
    user_chunks = X.chunks[0]   # (whole rows may drop empty chunks)
    X = X.rechunk({1: -1})
    counts = [int(c) for c in X.chunks[0]]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    weights, checked = _weight_blocks(sample_weight, n, counts)
    fit = _Fit(client, uuid.uuid4().hex)
    try:
        blocks = client.compute(list(X.to_delayed().ravel()))
        if not checked:   # a dask array's blocks, made on the workers
            weights = client.compute(weights)
        wait(blocks + (weights if not checked else []))
        who = client.who_has(blocks)
        fit.workers = [who[b.key][0] for b in blocks]
        fit.local = local_indices(client)
        labels, core, rows = fit.run(blocks, weights, checked, counts, starts, params,
                                     picklable_devices(devices), name, X.shape[1])
        return (labels if labels.chunks[0] == user_chunks else
                labels.rechunk({0: user_chunks})), core, rows
    finally:
        fit.close()


def _checked_shape(X, name):
    """X's rows, as the one-process fit checks X's shape (before any work)."""
    if X.ndim != 2:
        raise ValueError(f"Expected 2D array, got {X.ndim}D dask array instead.")
    if any(np.isnan(c) for c in X.shape):
        raise ValueError("the dask array's row chunks must be known (compute_chunk_sizes())")
    if is_sparse(getattr(X, "_meta", None)):
        raise TypeError(SPARSE)
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
        future, so that its next step waits for its last even where no
        halo ties it to another slab."""
        return [[made[r] if r == s else self.on(self.slabs[s], operator.getitem, made[s], r)
                 for s in range(len(made))] for r in range(len(made))]

    def run(self, blocks, weights, checked, counts, starts, params, devices, name, d):
        """fit_on_workers' answer, *blocks* (futures of X's row blocks)
        on self.workers."""
        eps, min_samples, metric = params
        nb = range(len(blocks))
        dtype, bounds = self.checked(blocks, weights, checked, counts, starts, devices, name)
        keyed = [self.on(self.workers[i], _block_grid, blocks[i], weights[i], starts[i],
                         bounds, eps, dtype) for i in nb]
        blocks.clear()   # the keyed rows stand for them now (Dask keeps them till then)
        self.slabs = sorted({self.workers[i] for i in nb if counts[i]})
        cuts = slab_cuts(self.gather([self.on(self.workers[i], _offer, keyed[i])
                                      for i in nb if counts[i]]), len(self.slabs))
        low, high = halo_ranges(cuts, CellGrid(np.zeros((0, d), dtype), eps, dtype, bounds))
        routed = [self.on(self.workers[i], _routed, keyed[i], low, high) for i in nb]
        made = [self.on(w, _hold, self.fit, s, [self.on(self.workers[i], operator.getitem,
                                                        routed[i], s) for i in nb],
                        self.local.get(w, (0, 1)), eps, metric, min_samples, bounds, cuts,
                        low, high, devices, d, dtype)
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
        labels, core = self.by_block(labelled, starts, counts)
        rows = {}
        for w, (_, _, answered) in zip(self.slabs, linked):
            for device, count in answered.items():
                rows[f"{w} {device}"] = rows.get(f"{w} {device}", 0) + count
        return labels, core, rows

    def checked(self, blocks, weights, checked, counts, starts, devices, name):
        """(the devices' value type, the grid's bounds) of the blocks, each
        checked on its worker: a refusal raised here, naming its block."""
        seen = self.gather([self.on(self.workers[i], _check_block, blocks[i], weights[i],
                                    devices, self.local.get(self.workers[i], (0, 1)), name)
                            for i in range(len(blocks))])
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
        return np.dtype(dtypes.pop()), joined_bounds(
            [got["bounds"] for got in seen if got["bounds"] is not None])

    def by_block(self, labelled, starts, counts):
        """(labels: a dask array of each block's, made on its worker from the
        slabs' *labelled* parts; the core rows' indices)."""
        nb = range(len(counts))
        outs = [self.on(self.workers[i], _block_out, counts[i],
                        [self.on(w, operator.getitem, labelled[s], i)
                         for s, w in enumerate(self.slabs)]) for i in nb]
        labels = [self.on(self.workers[i], operator.getitem, outs[i], 0) for i in nb]
        flags = self.gather([self.on(self.workers[i], operator.getitem, outs[i], 1)
                             for i in nb] + [self.on(self.workers[i], len, labels[i]) for i in nb])
        core = [np.flatnonzero(np.unpackbits(flags[i], count=counts[i])) + starts[i]
                for i in nb]
        # a labels block lost later is computed again anywhere (where it raises:
        # its slab went with the fit), not waited for on a worker gone
        self.client.sync(self.client.scheduler.set_restrictions,
                         worker={f.key: [] for f in labels})
        return (da.concatenate([da.from_delayed(f, shape=(c,), dtype=np.intp)
                                for f, c in zip(labels, counts)]),
                np.concatenate(core))

    def close(self):
        """Free the fit's slabs on the workers still there."""
        if self.slabs:
            try:   # a worker that left is not waited for (a connection's timeout)
                alive = set(workers_info(self.client))
                self.client.run(_free, self.fit, workers=sorted(set(self.slabs) & alive),
                                on_error="ignore")
            except Exception as exc:   # noqa: BLE001 -- never hides the fit's own error
                warnings.warn(f"freeing the DBSCAN fit's slabs on the Dask workers failed: "
                              f"{exc}", RuntimeWarning, stacklevel=user_stacklevel())
            self.slabs = []
