"""Dask: a fit's passes on a distributed cluster's workers, beside their rows.

Each block of rows of a dask array (one chunk along the features) is loaded
once onto its worker's devices: a DeviceData there, kept in the worker's
registry under the fit's id and the block's index (freed when the fit ends,
also on error), resident across iterations.  DaskData is the client's view
of them, a sharded_data.RemoteShardedData: a ShardedPass over it sends its
functions to the blocks (one small task per block, to the worker holding it)
and gets each chunk's statistics back, summed on the client in float64 in
chunk order.  The blocks' row boundaries are first moved to the nearest
whole number of the fit's sum blocks (runtime.exact_sums.block_rows_for:
dask moves the rows between them once), and the workers' partitions count
their sum blocks from those boundaries, so the model is bit for bit that of
one device (split-free sums).  Per-row outputs (labels) stay on the workers
as dask arrays, in the user's row chunks; only rows a rule asks for by index
(seeds, relocated centres) travel, k at a time.

A worker lost during a fit does not end it: its
blocks are computed anew from the dask array's graph on the workers left,
loaded there, and the passes' states they held rebuilt by running the
fit's keyed passes on them again in order (a journal of them is kept on
the client); the pass in flight runs there, the other blocks' results
kept.  The sums being split-free, the model is the undisturbed one bit for
bit.  WorkerLostError only where no worker is left, a block cannot be
computed or laid out as before, or the journal outgrew JOURNAL_BYTES.

A fitted estimator's calls on a dask array (predict, transform, score ...)
run on the blocks where they are (map_rows, block_total), with each
worker's devices.

The workers' side (their registry of blocks, the tasks sent to a block) is
dask_blocks.py.  The only modules that import dask: placement imports this
one for a dask array.
"""
import contextlib
import threading
import time
import uuid
import warnings

import numpy as np
import pyopencl as cl

from ..runtime.extras import require
from ..runtime.devices import select_devices
from ..runtime.exact_sums import block_rows_for
from .placement import compute_dtype
from .dask_blocks import (_BLOCKS, _block_rows, _free, _on_block,  # noqa: F401 (_BLOCKS:
                          _rebuild_block, _rows_of_block,   # the workers' registry, here too)
                          _shape_and_dtype, _with_block, worker_devices)
from .sharded_data import RemoteShardedData, combined_magnitudes, combined_mean_var_finite
from ..runtime.warning_site import user_stacklevel

# the [dask] extra: dask, distributed (and cloudpickle, which comes with them)
da = require("dask.array", "fitting dask arrays")
distributed = require("distributed", "fitting dask arrays")
cloudpickle = require("cloudpickle", "fitting dask arrays")
get_client, get_worker, wait = distributed.get_client, distributed.get_worker, distributed.wait

POLL_SECONDS = 1.0     # how often a waiting pass checks that its workers are alive
NO_WORKER_SECONDS = 5.0   # how long a move waits for a worker when none is left
#                           (a nanny restarts a killed worker in a second or two)
JOURNAL_BYTES = 1 << 28   # the keyed passes kept for a rebuild: beyond, none is kept


class WorkerLostError(RuntimeError):
    """A Dask worker that held a fit's blocks left during the fit and its
    blocks could not be rebuilt elsewhere (no worker left, a block that
    cannot be computed again, or laid out as before)."""


def active_client():
    """The distributed Client in use (distributed.get_client()), or None."""
    try:
        return get_client()
    except ValueError:
        return None


def dask_fit_data(X, sample_weight, devices, dtype, comm, name, stat_values=1):
    """(DaskData or DeviceData, host weights) of a fit on a dask array X:
    on the active Client's workers; without one, X computed here (as any
    array: the one-process fit)."""
    from .placement import _local_fit_data
    if comm is not None:
        raise ValueError("a fit takes a dask array or an MPI comm, not both")
    client = active_client()
    if client is None:
        return _local_fit_data(X.compute(), _computed(sample_weight), devices, dtype,
                               None, None, name, stat_values)
    data = DaskData(client, X, sample_weight, devices, dtype, name, stat_values)
    if sample_weight is None:
        return data, np.ones(data.n, data.dtype)
    # one number per row (the seeding's first draw and random inits draw by them)
    return data, np.asarray(_computed(sample_weight), data.dtype)


def _computed(a):
    return a.compute() if isinstance(a, da.Array) else a


# ------------------------------------------------------------- the client
class _Chunk:
    """The client's note of a chunk on a worker: its first row and size."""

    def __init__(self, offset, n):
        self.offset, self.n = offset, n


class DaskData(RemoteShardedData):
    """A fit's rows as blocks on a Dask cluster's workers (see the module).
    It is also its own manager (no device of a worker is dropped: a failure
    raises)."""

    remote = True
    reshards = 0

    def __init__(self, client, X, sample_weight, devices, dtype, name, stat_values=1):
        self.stat_values = stat_values
        if X.ndim != 2:
            raise ValueError(f"Expected 2D array, got {X.ndim}D dask array instead.")
        if any(np.isnan(c) for c in X.shape):
            raise ValueError("the dask array's row chunks must be known "
                             "(compute_chunk_sizes())")
        self.client, self.fit = client, uuid.uuid4().hex
        self.manager = self
        devices = picklable_devices(devices)
        # the compute dtype of devices with fp64 (without, the sums are not split-free)
        item = compute_dtype(dtype, X, []).itemsize
        self.block_rows = block_rows_for(X.shape[1], item, stat_values)
        self.user_chunks = X.chunks[0]   # per-row outputs go back to these
        X = X.rechunk({0: whole_block_chunks(X.chunks[0], self.block_rows), 1: -1})
        # each block's graph: what a block whose worker left is computed anew from
        self._graphs = list(X.to_delayed().ravel())
        parts = client.compute(self._graphs)
        weights = [None] * len(parts)
        if isinstance(sample_weight, da.Array):
            by_block = sample_weight.rechunk((X.chunks[0],))
            weights = client.compute(list(by_block.to_delayed().ravel()))
        elif sample_weight is not None:
            sample_weight = np.asarray(sample_weight)
            if sample_weight.shape != (X.shape[0],):
                raise ValueError(f"sample_weight.shape == {sample_weight.shape}, "
                                 f"expected ({X.shape[0]},)!")
            weights = np.split(sample_weight, np.cumsum(X.chunks[0])[:-1])
        self._weights = weights   # small (one number a row): kept for a rebuild
        self._loading = (devices, dtype, name)
        self.block_starts = np.concatenate([[0], np.cumsum(X.chunks[0])[:-1]])
        self._journal, self._journal_bytes, self._passes = [], 0, 0
        self._outputs = []   # rows_states' futures {block: future}, made again on a move
        self.workers, self.chunks, self.blocks, self._layouts = [], [], [], []
        first, self.moves = [], []   # (block, from worker, to worker) of every block moved
        try:
            wait(parts + [w for w in weights if hasattr(w, "key")])   # Dask recomputes
            who = client.who_has(parts)                               # a lost part
            self.workers = [who[p.key][0] for p in parts]
            first = list(parts)   # each block's rows where Dask made them, once

            def load(i):
                part, first[i] = first[i], None
                return [self._rebuild(i, part)]
            loaded = self._per_block(load, places=True)
        except BaseException:
            self.close()
            raise
        finally:
            del parts, first   # the rows live on in the workers' registries
        for message in sorted({m for block in loaded for m in block["warnings"]}):
            warnings.warn(message, RuntimeWarning, stacklevel=user_stacklevel())
        dtypes = {block["dtype"] for block in loaded}
        if len(dtypes) > 1:
            self.close()
            raise ValueError(f"the workers' devices compute in different dtypes {dtypes}: "
                             "pass dtype='float32'")
        self.n, self.d = X.shape
        self.source = X   # the rows as the user's dask array (an init may fit on them)
        self.dtype = np.dtype(dtypes.pop())
        self._layouts = [block["chunks"] for block in loaded]
        self.blocks = [[_Chunk(o, n) for o, n in block["chunks"]] for block in loaded]
        self.chunks = [c for block in self.blocks for c in block]
        self._block_devices = [block["rows_per_device"] for block in loaded]
        self._count_rows()

    def _count_rows(self):
        """rows_per_device: {"worker device": rows} of the blocks where they are."""
        self.rows_per_device = {}
        for addr, block in zip(self.workers, self._block_devices):
            for device, rows in block.items():
                key = f"{addr} {device}"
                self.rows_per_device[key] = self.rows_per_device.get(key, 0) + rows

    def __reduce__(self):
        raise TypeError("a fit's DaskData stays on the client: a function sent to the "
                        "workers must not hold it")

    # ------------------------------------------------------------- passes
    def map_states(self, key, make, fn, timed=False, others=(), each=None, rows=True):
        """[fn(chunk, its state, *its states of the passes keyed *others*[,
        each[i]])] over every chunk i in row order, on the workers; a
        chunk's state is make(chunk), made there once per *key* (those of
        the keys *others*: made by earlier maps).  *each*: one value per
        chunk, each block sent only its own chunks'.  *timed*, *rows*: as
        DeviceData.map's, on each block's devices."""
        payload = cloudpickle.dumps((make, fn))
        ends = np.cumsum([0] + [len(block) for block in self.blocks])
        mine = [None if each is None else list(each[lo:hi])
                for lo, hi in zip(ends, ends[1:])]
        args = (key, payload, timed, tuple(others), rows)
        out = self._per_block(lambda i: [self._submit(i, _on_block, *args, mine[i])])
        self._note(_on_block, args, None if each is None else mine, key is not None)
        return [r for block in out for r in block]

    def map(self, fn, timed=False, rows=True):
        """[fn(chunk)] over every chunk in row order, on the workers."""
        return self.map_states(None, None, lambda chunk, _: fn(chunk), timed, rows=rows)

    def map_enqueued(self, launch, collect, timed=False):
        """[collect(chunk, launch(chunk))] over every chunk in row order, on
        the workers (each block's map)."""
        return self.map(lambda chunk: collect(chunk, launch(chunk)), timed)

    def rows_states(self, key, make, fn):
        """fn(chunk, state) -> per-row values, as a dask array whose blocks
        stay on the workers (computed now: the states go with the fit), in
        the row chunks of the user's array.  Their tasks are pinned to their
        block's worker as every pass is (Dask steals a task placed loosely
        to an idle worker, where the block is not).  A block's values lost
        with its worker later in the fit are made again where it moves
        (_move); lost after the fit, computing them raises (their states
        went with it: close lifts the pins)."""
        payload = cloudpickle.dumps((make, fn))
        made, version = {}, self._passes + 1   # the keyed pass it will be

        def one(i):   # the block's values stay there: only their shape comes
            made[i] = self._submit(i, _rows_of_block, key, payload, version)
            return [made[i], self.client.submit(_shape_and_dtype, made[i], pure=False)]
        metas = self._per_block(one)
        while True:   # made, they stay: a worker that left since took some with it
            gone = sorted(set(self.workers) - set(workers_info(self.client)))
            if not gone:
                break
            lost = [i for i, w in enumerate(self.workers) if w in gone]
            self._move(gone)
            for i, meta in zip(lost, self._per_block(one, lost)):
                metas[i] = meta
        self._note(_rows_of_block, (key, payload, version), None, True)
        self._outputs.append(made)
        return da.concatenate([da.from_delayed(made[i], shape=shape, dtype=dtype)
                               for i, (shape, dtype) in enumerate(metas)]
                              ).rechunk({0: self.user_chunks})

    def _submit(self, i, task, *args):
        """A future of task(fit, i, *args) on block i's worker, and there only."""
        return self.client.submit(task, self.fit, i, *args, workers=[self.workers[i]],
                                  allow_other_workers=False, pure=False)

    def _pin(self, where):
        """Dask's worker restrictions of tasks already submitted: *where*
        {key: [worker], or [] for any worker}."""
        self.client.sync(self.client.scheduler.set_restrictions, worker=where)

    def _note(self, task, args, per_block, keyed):
        """A keyed pass that ran on every block, in the journal a rebuilt
        block runs again (its states are then those it had: the passes are
        deterministic); a pass without a key keeps no state."""
        if not keyed:
            return
        self._passes += 1   # as each block's version counts them
        if self._journal is None:
            return
        self._journal_bytes += len(args[1]) + (0 if per_block is None else
                                               len(cloudpickle.dumps(per_block)))
        if self._journal_bytes > JOURNAL_BYTES:
            self._journal = None   # a lost block cannot be rebuilt: WorkerLostError then
            return
        self._journal.append((task, args, per_block))

    def rows(self, indices):
        """Rows *indices* (global), from their blocks' host copies."""
        indices = np.asarray(indices, np.int64)
        block = np.searchsorted(self.block_starts, indices, side="right") - 1
        out = np.empty((len(indices), self.d), self.dtype)
        asked = {int(b): np.flatnonzero(block == b) for b in np.unique(block)}
        got = self._per_block(lambda b: [self._submit(b, _block_rows, indices[asked[b]]
                                                      - self.block_starts[b])], asked)
        for at, rows in zip(asked.values(), got):
            out[at] = rows
        return out

    def row(self, i):
        """Row *i* (global), from its block's host copy."""
        return self.rows([i])[0]

    def fold_rows(self, indices, weights, centers, total, assign, fold):
        """*total* continued with rows *indices* (global, ascending) of
        *weights*, assigned about *centers*: every block holding some
        assigns its own on its worker's devices at once
        (``assign(block's rows, local indices, weights, centers)``), then the
        blocks fold theirs in block order (``fold(total, assigned)``), each
        handing the running totals to the next; the rows stay where they
        are.  (The mini-batch's functions: cluster/kmeans/minibatch_sums.py.)
        A worker lost, its blocks move and the whole chain runs again."""
        indices = np.asarray(indices, np.int64)
        weights = np.asarray(weights, np.float64)
        block = np.searchsorted(self.block_starts, indices, side="right") - 1
        ends = np.searchsorted(block, np.arange(len(self.workers)), side="right")
        spans = [(b, lo, hi) for b, (lo, hi) in enumerate(zip(np.r_[0, ends[:-1]], ends))
                 if hi > lo]
        if not spans:
            return total
        while True:
            chain, running = {}, total
            for b, lo, hi in spans:
                part = self._submit(b, _with_block, assign, indices[lo:hi]
                                    - self.block_starts[b], weights[lo:hi], centers)
                running = self.client.submit(fold, running, part, workers=[self.workers[b]],
                                             allow_other_workers=False, pure=False)
                chain[b] = [part, running]
            every = [f for fs in chain.values() for f in fs]
            got, gone = self._watched(chain, [running], lambda _: every)
            if not gone:
                return got[0]
            self._move(gone)

    def mean_var_finite(self):
        """(column means, column variances, all finite) over all rows, in
        float64: each chunk's on its worker, combined here as DeviceData's."""
        return combined_mean_var_finite(self)

    moments = mean_var_finite   # its former name, on the API page of this module

    def magnitudes(self):
        """(max ``|x|`` of each column, max weight) over all rows, each chunk's
        on its worker (one pass, kept)."""
        if getattr(self, "_magnitudes", None) is None:
            self._magnitudes = combined_magnitudes(self)
        return self._magnitudes

    def rebalance(self, save=None, min_gain=0.05):
        """The blocks stay where Dask put them: None."""
        return None

    def reshard(self):
        """Never: the blocks stay on the workers that hold them."""
        raise RuntimeError("a Dask fit's blocks do not move between workers")

    def drop(self, failure):
        """As its own manager: no worker's device is dropped, *failure* raises."""
        raise failure

    # ------------------------------------------------ waiting, moving, end
    def _per_block(self, submit, blocks=None, places=False):
        """[the last of submit(i)'s futures' result] for each block i (all,
        or *blocks*), submit(i) giving a list of futures on block i's worker.
        A block whose worker left is moved (_move: rebuilt on a worker
        left) and submitted there anew; the other blocks' futures are kept
        (they ran once: a keyed pass changes its states).  *places*:
        submit(i) places the block itself (it loads it), nothing to move."""
        blocks = range(len(self.workers)) if blocks is None else blocks
        futures = {i: submit(i) for i in blocks}
        while True:
            got, gone = self._watched(futures, [fs[-1] for fs in futures.values()],
                                      lambda g: [f for i, fs in futures.items()
                                                 if self.workers[i] in g for f in fs])
            if not gone:
                return got
            lost = [i for i in futures if self.workers[i] in gone]
            if not places:
                self._move(gone)
            for i in lost:
                futures[i] = submit(i)

    def _watched(self, futures, wanted, of_lost):
        """(the results of *wanted*, []), or (None, the workers gone) when
        one of *futures*' blocks' ({block: [futures]}) workers left
        (watched_gather; of_lost(gone): the futures to cancel then)."""
        return watched_gather(self.client, wanted, {self.workers[i] for i in futures}, of_lost)

    def _move(self, gone):
        """The blocks of the workers *gone* rebuilt on workers left (each
        where fewest blocks are), their keyed passes run again (_rebuild)."""
        lost = [i for i, w in enumerate(self.workers) if w in gone]
        if not lost:
            return
        if self._journal is None:
            raise WorkerLostError(
                f"Dask worker(s) {', '.join(gone)} left during the fit with block(s) {lost} "
                f"of its rows; the passes that made their states outgrew the "
                f"{JOURNAL_BYTES} bytes kept to rebuild them: fit again")
        try:
            loaded = self._per_block(lambda i: [self._rebuild(i, None, gone)], lost,
                                     places=True)
        except WorkerLostError:
            raise
        except Exception as exc:   # noqa: BLE001 -- Dask's or a pass's own, in its words
            raise WorkerLostError(f"block(s) {lost} of lost Dask worker(s) "
                                  f"{', '.join(gone)} could not be rebuilt: {exc}") from exc
        for i, block in zip(lost, loaded):
            if block["chunks"] != self._layouts[i] or block["dtype"] != self.dtype.name:
                raise WorkerLostError(
                    f"block {i} of a lost Dask worker ({', '.join(gone)}) cannot be laid "
                    f"out as before on {self.workers[i]} (its devices differ): fit again")
            self._block_devices[i] = block["rows_per_device"]
        self._count_rows()
        self._remake_outputs(lost)

    def _remake_outputs(self, moved):
        """The per-row values of earlier rows_states on the blocks *moved*,
        lost with their worker: their tasks, pinned to it, wait in Dask's
        no-worker state; pinned to the block's new worker and retried, they
        run there from what its rebuild kept (_KEPT).  Values a worker left
        still holds (a copy Dask made) stay."""
        lost = [made[i] for made in self._outputs for i in moved]
        self._pin({made[i].key: [self.workers[i]] for made in self._outputs for i in moved})
        held = self.client.who_has(lost)
        self.client.retry([f for f in lost if not held.get(f.key)])
        shapes = [self.client.submit(_shape_and_dtype, f, pure=False) for f in lost]
        _, gone = self._watched({i: [made[i]] for made in self._outputs for i in moved},
                                shapes, lambda g: shapes)
        if gone:
            raise WorkerLostError(f"Dask worker(s) {', '.join(gone)} left while the fit's "
                                  f"per-row values were made again: fit again")

    def _rebuild(self, i, part=None, gone=()):
        """A future of block i loaded on a worker with its keyed passes run
        again: from *part* (its rows' future) on its worker, or, without,
        computed anew from its graph on the worker left that holds fewest
        blocks (waiting NO_WORKER_SECONDS for one)."""
        if part is None:
            was = self.workers[i]
            self.workers[i] = self._place([*gone, was])
            self.moves.append((i, was, self.workers[i]))
            part = self.client.compute(self._graphs[i], workers=[self.workers[i]])
        devices, dtype, name = self._loading
        local = local_indices(self.client).get(self.workers[i], (0, 1))
        replay = [(task, args, None if each is None else each[i])
                  for task, args, each in self._journal]
        return self._submit(i, _rebuild_block, part, self._weights[i],
                            int(self.block_starts[i]), devices, dtype, local, name,
                            self.stat_values, replay)

    def _place(self, gone):
        """The worker left holding fewest of the fit's blocks (then by
        address), waited for NO_WORKER_SECONDS when none is left."""
        deadline = time.monotonic() + NO_WORKER_SECONDS
        while True:
            alive = sorted(set(workers_info(self.client)) - set(gone))
            if alive:
                return min(alive, key=lambda w: (self.workers.count(w), w))
            if time.monotonic() > deadline:
                raise WorkerLostError(
                    f"Dask worker(s) {', '.join(gone)} left during the fit and no worker "
                    f"is left to take their blocks of its rows")
            time.sleep(POLL_SECONDS / 4)

    def close(self):
        """Free the fit's blocks on every worker (those still there), and
        lift the pins of its per-row values: lost after the fit, Dask makes
        them again anywhere, where _rows_of_block raises (pinned to a worker
        gone, they would wait for it forever)."""
        if self.workers:
            try:   # a worker that left is not waited for (a connection's timeout)
                alive = set(workers_info(self.client))
                self.client.run(_free, self.fit, workers=sorted(set(self.workers) & alive),
                                on_error="ignore")
                self._pin({f.key: [] for made in self._outputs for f in made.values()})
            except Exception as exc:   # noqa: BLE001 -- never hides the fit's own error
                warnings.warn(f"freeing the fit's blocks on the Dask workers failed: {exc}",
                              RuntimeWarning, stacklevel=user_stacklevel())
            self.workers, self._outputs = [], []
        self._journal = self._graphs = self._weights = None   # nothing left to rebuild


def watched_gather(client, wanted, workers, of_lost):
    """(the results of *wanted*, []), or (None, the workers gone) when one
    of *workers* left first: a watcher asks the scheduler every poll
    whether they are all there and cancels the futures of_lost(gone) then.
    (Dask would wait for a lost worker forever for the tasks pinned to it.)"""
    lost, done = [], threading.Event()
    mine = set(workers)

    def watch():
        while not done.wait(POLL_SECONDS):
            try:
                gone = sorted(mine - set(workers_info(client)))
            except Exception:   # noqa: BLE001 -- the scheduler is gone: Dask raises
                return
            if gone:
                lost.extend(gone)
                client.cancel(of_lost(gone))
                return
    watcher = threading.Thread(target=watch, daemon=True, name="oclclust-dask-watch")
    watcher.start()
    try:
        return client.gather(wanted), []
    except BaseException:   # a cancellation too (not an Exception)
        if not lost:   # a task that Dask ran again elsewhere may fail first
            with contextlib.suppress(Exception):
                lost = sorted(mine - set(workers_info(client)))
            if not lost:
                raise
            client.cancel(of_lost(lost))
        return None, lost
    finally:
        done.set()
        watcher.join()


def workers_info(client):
    """{address: its information} of the workers there are now (asked of
    the scheduler: a client's cached view may lag or lack them)."""
    return client.sync(client.scheduler.identity, n_workers=-1,
                       callback_timeout=30)["workers"]


def local_indices(client):
    """{worker address: (its index among its host's workers, their number)}:
    as MPI's local ranks, by address."""
    info = workers_info(client)
    hosts = {}
    for addr in sorted(info):
        hosts.setdefault(info[addr].get("host"), []).append(addr)
    local = {}
    for same in hosts.values():   # one host's workers, by address
        for addr in same:
            local[addr] = (same.index(addr), len(same))
    return local


def picklable_devices(devices):
    """*devices* as the workers receive them: pyopencl Devices (which do not
    pickle) as their profiles; names, profiles and managers as they are."""
    if isinstance(devices, cl.Device):
        return select_devices(devices)[0]
    if isinstance(devices, (list, tuple)) and any(isinstance(d, cl.Device) for d in devices):
        return select_devices(devices)
    return devices


def whole_block_chunks(chunks, block_rows):
    """Row chunks (sizes) whose boundaries are *chunks*' moved to the
    nearest multiple of *block_rows* (a chunk left empty merges with the
    next): every chunk but the last a whole number of blocks, the sums'
    blocks counted from the first row wherever the chunks fall."""
    ends = np.cumsum(chunks)
    n = int(ends[-1]) if len(ends) else 0
    cuts = np.minimum(np.rint(ends / block_rows).astype(np.int64) * block_rows, n)
    cuts = np.unique(np.append(cuts[cuts > 0], n))
    return tuple(int(c) for c in np.diff(cuts, prepend=0)) if n else tuple(chunks)


# ---------------------------------- a fitted estimator's calls on the blocks
def _on_blocks(X, fn, devices, weights):
    """(X in whole rows, [its weights as an n x 1 dask array], on_block):
    on_block(block[, w]) runs fn(block, the worker's devices[, w])."""
    if X.ndim != 2:
        raise ValueError(f"Expected 2D array, got {X.ndim}D dask array instead.")
    client = active_client()
    local = local_indices(client) if client is not None else {}
    devices = picklable_devices(devices)

    def on_block(block, *w):
        here = local.get(get_worker().address, (0, 1)) if local else (0, 1)
        return fn(block, worker_devices(devices, here), *[v[:, 0] for v in w])
    X = X.rechunk({1: -1})
    if weights is None:
        return X, [], on_block
    return X, [da.asarray(weights).rechunk((X.chunks[0],))[:, None]], on_block


def map_rows(X, fn, devices, dtype, columns=None):
    """fn(block, devices) on each block of rows of X on its worker, with the
    worker's devices (worker_devices): a dask array of one value per row
    (*columns*: of that many columns), never gathered."""
    X, _, on_block = _on_blocks(X, fn, devices, None)
    if columns is None:
        return X.map_blocks(on_block, drop_axis=1, dtype=dtype)
    return X.map_blocks(on_block, chunks=(X.chunks[0], (columns,)), dtype=dtype)


def block_total(X, fn, devices, sample_weight=None):
    """The sum of fn(block, devices, its weights or None) (a number per
    block, on its worker) over the blocks of X, in block order."""
    def one_number(block, devices, *w):
        return np.array([fn(block, devices, *(w or [None]))])
    X, w, on_block = _on_blocks(X, one_number, devices, sample_weight)
    parts = da.map_blocks(on_block, X, *w, drop_axis=1,
                          chunks=((1,) * X.numblocks[0],), dtype=np.float64)
    return float(sum(parts.compute()))
