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

A worker lost during a fit makes it raise WorkerLostError naming it within
a poll (its blocks' device state is gone with it: no retry elsewhere).

A fitted estimator's calls on a dask array (predict, transform, score ...)
run on the blocks where they are (map_rows, block_total), with each
worker's devices.

The only module that imports dask: placement imports it for a dask array.
"""
import contextlib
import copy
import threading
import uuid
import warnings

import numpy as np
import pyopencl as cl

from ..runtime.extras import require
from ..runtime.devices import select_devices
from ..runtime.exact_sums import block_rows_for
from ..runtime.validation import as_dtype, check_data, check_sample_weight
from .manager import DeviceManager
from .placement import bind_by_index, compute_dtype
from .sharded_data import RemoteShardedData, combined_magnitudes, combined_mean_var_finite
from ..runtime.warning_site import user_stacklevel

# the [dask] extra: dask, distributed (and cloudpickle, which comes with them)
da = require("dask.array", "fitting dask arrays")
distributed = require("distributed", "fitting dask arrays")
cloudpickle = require("cloudpickle", "fitting dask arrays")
get_client, get_worker, wait = distributed.get_client, distributed.get_worker, distributed.wait

POLL_SECONDS = 1.0     # how often a waiting pass checks that its workers are alive


class WorkerLostError(RuntimeError):
    """A Dask worker that held a fit's blocks left during the fit."""


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
        parts = client.compute(list(X.to_delayed().ravel()))
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
        self.workers, self.chunks, self.blocks = [], [], []
        try:
            self._wait(parts + [w for w in weights if hasattr(w, "key")])
            who = client.who_has(parts)
            self.workers = [who[p.key][0] for p in parts]
            local = local_indices(client)
            starts = np.concatenate([[0], np.cumsum(X.chunks[0])[:-1]])
            loads = [client.submit(_load, self.fit, i, part, w, int(start), devices,
                                   dtype, local[addr], name, stat_values, workers=[addr],
                                   allow_other_workers=False, pure=False)
                     for i, (part, w, start, addr)
                     in enumerate(zip(parts, weights, starts, self.workers))]
            loaded = self._gather(loads)
        except BaseException:
            self.close()
            raise
        finally:
            del parts, weights   # the rows live on in the workers' registries
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
        self.blocks = [[_Chunk(o, n) for o, n in block["chunks"]] for block in loaded]
        self.chunks = [c for block in self.blocks for c in block]
        self.block_starts = starts
        self.rows_per_device = {}
        for addr, block in zip(self.workers, loaded):
            for device, rows in block["rows_per_device"].items():
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
        futures = self._each_block(_on_block, key, payload, timed, tuple(others), rows,
                                   per_block=mine)
        return [r for block in self._gather(futures) for r in block]

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
        the row chunks of the user's array."""
        payload = cloudpickle.dumps((make, fn))
        futures = self._each_block(_rows_of_block, key, payload)
        self._wait(futures)
        metas = self._gather([self.client.submit(_shape_and_dtype, f, pure=False)
                              for f in futures])
        return da.concatenate([da.from_delayed(f, shape=shape, dtype=dtype)
                               for f, (shape, dtype) in zip(futures, metas)]
                              ).rechunk({0: self.user_chunks})

    def _each_block(self, task, *args, per_block=None):
        """task(fit, i, *args[, per_block[i]]) on each block i's worker."""
        futures = []
        for i, addr in enumerate(self.workers):
            last = () if per_block is None else (per_block[i],)
            futures.append(self.client.submit(task, self.fit, i, *args, *last,
                                              workers=[addr], allow_other_workers=False,
                                              pure=False))
        return futures

    def rows(self, indices):
        """Rows *indices* (global), from their blocks' host copies."""
        indices = np.asarray(indices, np.int64)
        block = np.searchsorted(self.block_starts, indices, side="right") - 1
        out = np.empty((len(indices), self.d), self.dtype)
        asked = {int(b): np.flatnonzero(block == b) for b in np.unique(block)}
        futures = [self.client.submit(_block_rows, self.fit, b,
                                      indices[at] - self.block_starts[b],
                                      workers=[self.workers[b]], pure=False)
                   for b, at in asked.items()]
        for at, rows in zip(asked.values(), self._gather(futures)):
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
        are.  (The mini-batch's functions: cluster/kmeans/minibatch_sums.py.)"""
        indices = np.asarray(indices, np.int64)
        weights = np.asarray(weights, np.float64)
        block = np.searchsorted(self.block_starts, indices, side="right") - 1
        ends = np.searchsorted(block, np.arange(len(self.workers)), side="right")
        futures, lo = [], 0
        for b, (addr, hi) in enumerate(zip(self.workers, ends)):
            if hi > lo:
                pinned = dict(workers=[addr], allow_other_workers=False, pure=False)
                part = self.client.submit(_with_block, self.fit, b, assign,
                                          indices[lo:hi] - self.block_starts[b],
                                          weights[lo:hi], centers, **pinned)
                total = self.client.submit(fold, total, part, **pinned)
                futures += [part, total]
            lo = hi
        if not futures:
            return total
        with self._watched(futures):
            return self.client.gather(futures[-1])

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

    # ------------------------------------------------------- waiting, end
    def _wait(self, futures):
        """Wait for *futures* (see _watched)."""
        with self._watched(futures):
            wait(futures)

    def _gather(self, futures):
        """The results of *futures* (see _watched)."""
        with self._watched(futures):
            return self.client.gather(futures)

    @contextlib.contextmanager
    def _watched(self, futures):
        """While the block runs, a watcher asks the scheduler every poll
        whether this fit's workers are all there; one gone, it cancels
        *futures* and the block raises WorkerLostError naming it.  (Dask
        would wait for a lost block's worker forever: its tasks may run
        nowhere else.  No timeout on Dask's own calls: a cancelled gather
        leaves exceptions no one retrieves, logged at collection.)"""
        lost, done = [], threading.Event()

        def watch():
            while not done.wait(POLL_SECONDS):
                try:
                    gone = sorted(set(self.workers) - set(workers_info(self.client)))
                except Exception:   # noqa: BLE001 -- the scheduler is gone: Dask raises
                    return
                if gone:
                    lost.extend(gone)
                    self.client.cancel(futures)
                    return
        watcher = threading.Thread(target=watch, daemon=True, name="oclclust-dask-watch")
        watcher.start()
        try:
            yield
        except BaseException:   # a cancellation too (not an Exception)
            if not lost:
                raise
            held = [i for i, w in enumerate(self.workers) if w in lost]
            raise WorkerLostError(
                f"Dask worker(s) {', '.join(lost)} left during the fit; they held "
                f"block(s) {held} of its rows on their devices: fit again") from None
        finally:
            done.set()

    def close(self):
        """Free the fit's blocks on every worker (those still there)."""
        if self.workers:
            try:   # a worker that left is not waited for (a connection's timeout)
                alive = set(workers_info(self.client))
                self.client.run(_free, self.fit, workers=sorted(set(self.workers) & alive),
                                on_error="ignore")
            except Exception as exc:   # noqa: BLE001 -- never hides the fit's own error
                warnings.warn(f"freeing the fit's blocks on the Dask workers failed: {exc}",
                              RuntimeWarning, stacklevel=user_stacklevel())
            self.workers = []


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


def worker_devices(devices, local):
    """The devices of this worker (*local*: its index and count on its
    host): a list or a DeviceManager as given; a name (or None) resolved
    here, one GPU per worker on a host of several (bind_by_index)."""
    if isinstance(devices, DeviceManager):
        return copy.deepcopy(devices)
    manager = DeviceManager(devices)
    if devices is None or isinstance(devices, str):
        manager.profiles = bind_by_index(manager.profiles, *local)
    return manager


# --------------------------------------------------- on the workers
_BLOCKS = {}   # (fit id, block index) -> _Block, in each worker process


class _Block:
    """A block's rows on this worker's devices and the passes' states."""

    def __init__(self, data):
        self.data, self.states = data, {}


def _block(fit, index):
    try:
        return _BLOCKS[fit, index]
    except KeyError:
        raise RuntimeError(f"block {index} of the fit is not on Dask worker "
                           f"{get_worker().address} (restarted since it was loaded?)") from None


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


def _load(fit, index, rows, weights, start, devices, dtype, local, name, stat_values):
    X = check_data(rows, name)
    manager = worker_devices(devices, local)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dtype = compute_dtype(dtype, X, manager.profiles)
    w = check_sample_weight(_computed(weights), X.shape[0], dtype)
    data = manager.scatter(as_dtype(X, dtype), w, stat_values=stat_values)
    for chunk in data.chunks:   # global rows: what the passes report and relocation asks
        chunk.offset += start
    _BLOCKS[fit, index] = _Block(data)
    return dict(dtype=dtype.name, chunks=[(c.offset, c.n) for c in data.chunks],
                rows_per_device=data.rows_per_device,
                warnings=[str(c.message) for c in caught])


def _states_fn(fit, index, key, payload, other_keys=(), values=None):
    block = _block(fit, index)
    make, fn = cloudpickle.loads(payload)
    if key is None:
        return block, lambda chunk: fn(chunk, None)
    states = block.states.setdefault(key, {})
    theirs = [block.states[other] for other in other_keys]   # made by earlier maps
    extra = {} if values is None else dict(zip(block.data.chunks, values))

    def one(chunk):
        if chunk not in states:
            states[chunk] = make(chunk)
        return fn(chunk, states[chunk], *[t[chunk] for t in theirs],
                  *([extra[chunk]] if values is not None else []))
    return block, one


def _on_block(fit, index, key, payload, timed, other_keys=(), rows=True, values=None):
    block, one = _states_fn(fit, index, key, payload, other_keys, values)
    return block.data.map(one, timed, rows)


def _rows_of_block(fit, index, key, payload):
    block, one = _states_fn(fit, index, key, payload)
    return np.concatenate(block.data.map(one))


def _shape_and_dtype(array):
    return array.shape, array.dtype


def _block_rows(fit, index, local):
    data = _block(fit, index).data
    return np.array([data.row(int(i)) for i in local]).reshape(len(local), data.d)


def _with_block(fit, index, fn, *args):
    return fn(_block(fit, index).data, *args)


def _free(fit):
    for key in [k for k in _BLOCKS if k[0] == fit]:
        _BLOCKS.pop(key).data.close()


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
