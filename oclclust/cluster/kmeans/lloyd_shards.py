"""The k-means passes over a fit's rows (parallel/sharded.py's protocol):
the fused Lloyd pass on every chunk, its labels and distances left on the
devices, and the centre update kept there between passes: one device's
resident update (passes.lloyd_update.ResidentCenters) or, over several
resident devices of one process, one update every device computes from
the same totals (passes.lloyd_shared.SharedCenters).  What a chunk's passes allocate
is pooled across fits (LloydState)."""
import dataclasses
import threading
import weakref

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ...passes import lloyd_update
from ...passes.lloyd_shared import SharedCenters
from ...passes.lloyd import LloydPass, center_norms
from ...runtime import exact_sums
from ...runtime.group_maxima import largest
from ...runtime.kernel_recorder import note
from ...runtime.reduce import count_labels
from ...runtime.transfer import download
from ...parallel.manager import DEVICE_ERRORS, DeviceFailure
from ...parallel.sharded import (ShardedPass, chunk_farthest, farthest_of, shareable,
                                 words_over_ranks)


# ------------------------------------------------ per-fit state, pooled
class LloydState:
    """What a chunk's Lloyd passes allocate (passes, resident centres, a
    labels buffer): pooled across fits per (queue, rows' shape and dtype,
    weights, k), one fit's at a time (_LloydChunk takes one and gives it
    back when it is collected), so a warm fit allocates nothing and makes
    no queue (two threads fitting at once each take their own)."""
    __slots__ = ("passes", "resident", "labels", "shared")

    def __init__(self):
        self.passes, self.resident, self.labels, self.shared = {}, None, None, None


# Reentrant: give_state runs as a finalizer, so a garbage collection on this
# thread while it holds the lock (any allocation may start one) gives a state
# back under it.  A plain Lock deadlocked there (a CI run hung on PoCL).
_LLOYD_POOL, _LLOYD_POOL_LOCK = {}, threading.RLock()
_POOL_PER_KEY = 4        # states kept per key (threads fitting the same shape at once)
POOL_MAX_ROWS = 1 << 22  # larger chunks' states are not kept: their per-row buffers
#                          would hold device memory after the fit, for a fixed cost
#                          that is small beside their passes


def take_state(key):
    """A pooled LloydState of *key* (a new one when none is free)."""
    with _LLOYD_POOL_LOCK:
        free = _LLOYD_POOL.get(key)
        if free:
            return free.pop()
    return LloydState()


def give_state(key, state, rows):
    """*state* back to the pool, unless its chunk had more than POOL_MAX_ROWS
    *rows*; it keeps no reference to the fit's rows (their device buffer)."""
    for lp in state.passes.values():
        lp.part = None
    if state.resident is not None:
        state.resident.drop()
        state.resident.active = False
        state.resident.labels = state.resident.launches = state.resident.kept = None
    if state.shared is not None:
        state.shared.active = False
    if rows > POOL_MAX_ROWS:
        return
    with _LLOYD_POOL_LOCK:
        free = _LLOYD_POOL.setdefault(key, [])
        if len(free) < _POOL_PER_KEY:
            free.append(state)


class _LloydChunk:
    """A chunk's Lloyd passes (with and without the update) and its labels,
    which stay on the device between passes."""

    def __init__(self, chunk, k, precision="float32"):
        self.chunk, self.k, self.labels = chunk, k, None
        self.noted = set()   # the passes whose kernels this fit has recorded (lloyd_pass)
        self.precision = precision
        # a pass's layout is its blocks' (LloydPass): the fit's block_rows, exact or not
        key = (chunk.queue.int_ptr, chunk.profile, chunk.n, chunk.d, chunk.stride,
               chunk.dtype.str, chunk.weighted, k, precision, chunk.block_rows,
               exact_sums.exact_device(chunk))
        self.state = take_state(key)
        for lp in self.state.passes.values():   # a pooled state's passes: over these rows
            lp.part = chunk
        if self.state.resident is not None:      # whatever an earlier fit left (an error)
            self.state.resident.drop()
            self.state.resident.active = False
        weakref.finalize(self, give_state, key, self.state, chunk.n)

    @property
    def passes(self):
        return self.state.passes

    def lloyd_pass(self, update):
        if update not in self.passes:
            self.passes[update] = LloydPass(self.chunk, self.k, update,
                                            precision=self.precision)
            self.noted.add(update)
        elif update not in self.noted:   # a pooled state's pass: its kernels run in this fit
            self.noted.add(update)
            note(self.chunk.queue.context, *self.passes[update].kernel_specs())
        return self.passes[update]

    def launch(self, centers, update, norms=None):
        return self.lloyd_pass(update).launch(centers, self.current_labels(), norms)

    def collect(self, update, launched):
        return self.passes[update].collect(launched)

    def device_step(self, centers, iterations_left):
        """The resident update's step (lloyd_update.ResidentCenters.step),
        starting from *centers* when none are resident; flagged, the
        current (this iteration's) centres are handed back into them.
        *iterations_left*: how many iterations may follow (None: any number)."""
        st = self.state
        lp = self.lloyd_pass(True)
        if st.resident is None or st.resident.depth != lloyd_update.default_depth(lp.part,
                                                                                   self.k):
            st.resident = lloyd_update.ResidentCenters(
                lp, lloyd_update.default_depth(lp.part, self.k))
        resident = st.resident
        if not resident.active:
            resident.start(centers[0], self.current_labels())
        stats, shift, flagged = resident.step(resident.depth if iterations_left is None
                                              else iterations_left)
        if flagged:
            centers[0] = resident.centers_to_host()
            stats = resident.stats(centers[0])
        return stats, shift, flagged

    def centers_to_host(self, centers):
        resident = self.state.resident
        if resident is not None and resident.active:
            centers[0] = resident.centers_to_host()

    def shared_centers(self):
        """This chunk's lloyd_shared.SharedCenters (pooled with its state)."""
        if self.state.shared is None:
            self.state.shared = SharedCenters(self.lloyd_pass(True))
        return self.state.shared

    def current_labels(self):
        """The labels of the last pass (-1 before the first)."""
        if self.labels is None:
            q = self.chunk.queue
            if self.state.labels is None:
                self.state.labels = cla.empty(q, self.chunk.n, np.int32)
            self.labels = self.state.labels
            cl.enqueue_fill_buffer(q, self.labels.data, np.int32(-1), 0, self.labels.nbytes)
        return self.labels


class LloydShards(ShardedPass):
    """The fused Lloyd pass (passes.lloyd) over a fit's rows: LloydStats
    of all ranks' rows; labels and distances of this rank's.  *precision*:
    the estimators' (passes.lloyd_mma.PRECISIONS), for the chunks' passes."""

    def __init__(self, data, k, ranks=None, device_update=True, precision="float32"):
        super().__init__(data, ranks, lambda chunk: _LloydChunk(chunk, k, precision))
        # one device: its resident update; several, each with its rows in one
        # chunk: one update that every device computes (lloyd_shared.SharedCenters)
        self.shared_update = device_update and shareable(data, self.ranks)
        self.device_update = self.shared_update or (
            device_update and lloyd_update.centers_can_stay_resident(data, self.ranks.comm))
        self._made = set()   # what _make has made on every chunk
        self._next = None    # (chunks, {chunk: launched}): the shared step's next pass

    def _make(self, what):
        """Every chunk's pass *what* (True / False: with / without the
        update; "shared": its SharedCenters) made on the devices' threads at
        once, before map_enqueued launches from this thread: making one
        loads its programs (slow on NVIDIA's runtime: one device after
        another, they were a large part of a several-GPU fit)."""
        if (what, id(self.data.chunks)) in self._made:
            return
        self.map(lambda chunk, st: st.shared_centers() if what == "shared" else
                 st.lloyd_pass(what), rows=False)
        self._made.add((what, id(self.data.chunks)))

    def run(self, centers, update=True):
        # several chunks: the centres' norms once, not once a device (each
        # thread's numpy waits for the others' under one GIL)
        local = len(self.data.chunks) > 1 and not getattr(self.data, "remote", False)
        norms = center_norms(centers, self.data.dtype) if local else None
        if local:
            self._make(update)
        return self.reduce(None, timed=update, enqueued=(
            lambda chunk, st: st.launch(centers, update, norms),
            lambda chunk, st, launched: st.collect(update, launched)))

    def device_step(self, centers, iterations_left=None):
        """One pass and update with the centres kept on the one device
        (``device_update``): (LloydStats, shift, flagged); flagged (the
        host's update must take the iteration), the stats are the full
        ones and *centers* [k x d] hold this iteration's centres.  With
        *iterations_left* (how many iterations may follow; None: any number)
        the next ones are enqueued before this one is read."""
        if self.shared_update:
            return self._shared_step(centers, iterations_left)
        data = self.data
        shards = getattr(data, "shards", None)
        if (shards and len(shards) == 1 and data.chunks is self._chunks
                and len(data.chunks) == 1):   # one resident chunk: no map (each iteration)
            try:
                return self.state(data.chunks[0]).device_step(centers, iterations_left)
            except DEVICE_ERRORS as exc:     # as data.map raises it: the device dropped
                raise DeviceFailure(shards[0].profile, exc) from exc
        return self.map(lambda chunk, st: st.device_step(centers, iterations_left))[0]

    def _shared_step(self, centers, iterations_left=None):
        """device_step over several devices (``shared_update``): every
        device's pass over its resident centres, their statistics added as
        reduce() adds them (split-free, the sums' words on every device,
        after the ranks' sum; the rest on the host), the totals written
        back and the new centres computed on every device.  Flagged (an
        empty cluster, a non-finite row), nothing is written: *centers* get
        this iteration's centres and the host's update takes it with the
        full statistics.  When another iteration may follow
        (*iterations_left*), each device's next pass is enqueued right
        after its update, before the shift is read, and before the inertia
        is summed: the devices do not wait for the host's read,
        bookkeeping and launches between passes.  If the fit stops there,
        that pass has only rewritten the labels: with none changed, the
        same ones (the same totals give the same centres); else finish()
        assigns anew."""
        self._make("shared")
        ahead, self._next = self._next, None
        if ahead is not None and ahead[0] is not self.data.chunks:
            ahead = None   # laid out anew since (not while the update is shared)

        def launch(chunk, st):   # a device's failure here is map_enqueued's DeviceFailure
            if ahead is not None:
                return ahead[1][chunk]
            sc = st.shared_centers()
            if not sc.active:    # the first step, or after the host's: its centres
                sc.start(centers[0])
            return sc.launch(st.current_labels())
        parts = self.ranks.run_failing_all(lambda: self.map_enqueued(
            launch, lambda chunk, st, launched: st.state.shared.collect(launched), timed=True))
        shared = [self.state(chunk).state.shared for chunk in self.data.chunks]
        exact = shared[0].exact   # the sums' totals made on every device, not here
        blocks = [p.inertia for p in parts] if exact else None   # (block sums: the inertia's)
        light = [dataclasses.replace(p, sums=None, inertia=None) for p in parts] if exact \
            else parts
        total = self.over_ranks(type(parts[0]).total(light))
        if (total.weights == 0).any() or total.n_nonfinite:
            if exact:   # the host's update takes the iteration: its sums too
                total = self.over_ranks(type(parts[0]).total([
                    dataclasses.replace(p, inertia=exact_sums.ExactWords.of_values(b))
                    for p, b in zip(parts, blocks)]))
            centers[0] = shared[0].centers_to_host()
            for sc in shared[1:]:
                sc.active = False
            return total, None, True
        reads, following = [], iterations_left is None or iterations_left > 0
        sums, own = (words_over_ranks(self.ranks, [sc.shared_sums for sc in shared])
                     if exact else (total.sums, False))
        nxt = {}
        # every device's update first, then the passes: the last device's
        # update is not held back by the others' pass launches
        for step in ("update", "launch") if following else ("update",):
            for i, (chunk, sc) in enumerate(zip(self.data.chunks, shared)):
                try:
                    if step == "update":
                        reads.append(sc.update(sums, total.weights, summarize=i == 0,
                                               own=i if own else None))
                    else:
                        nxt[chunk] = sc.launch(self.state(chunk).current_labels())
                except DEVICE_ERRORS as exc:   # as map raises it: the device dropped
                    raise DeviceFailure(chunk.profile, exc) from exc
        if following:
            self._next = (self.data.chunks, nxt)
        inertia = self._inertia(blocks) if exact else total.inertia
        shift = shared[0].shift(reads[0])
        return dataclasses.replace(total, sums=None, weights=None, inertia=inertia), shift, False

    def _one_process(self):
        """Whether the fit has no other rank to sum with."""
        return self.ranks.comm is None or self.ranks.comm.Get_size() == 1

    def _inertia(self, blocks):
        """The inertia of every rank's devices' block sums (*blocks*: this
        rank's, chunk order): their exact sum rounded once, the host path's
        bits (exact_sums.rounded_sum; over the ranks, the words summed)."""
        local = np.concatenate(blocks)
        if self._one_process():
            return exact_sums.rounded_sum(local)
        words = exact_sums.ExactWords.of_values(local)
        return words.from_flat(self.ranks.sum(words.flat(), exact=True)).value()

    def centers_to_host(self, centers):
        """The centres kept on the device, if any, into *centers* [k x d]."""
        if self.shared_update:
            self._next = None   # a pass enqueued ahead: the in-order queues run it first
            shared = [self.state(chunk).state.shared for chunk in self.data.chunks]
            if shared[0] is not None and shared[0].active:
                centers[0] = shared[0].centers_to_host()
            for sc in shared[1:]:
                if sc is not None:
                    sc.active = False
        elif self.device_update:
            self.map(lambda chunk, st: st.centers_to_host(centers), rows=False)

    def labels(self):
        """This rank's labels, each chunk's straight into its rows through
        pinned memory (runtime.transfer.download); over a Dask cluster's
        workers, a dask array of them."""
        if getattr(self.data, "remote", False):
            return self.rows(lambda c, st: st.current_labels().get(c.queue))
        return self._rows(np.int32, lambda st: st.current_labels())

    def cluster_sizes(self):
        """Rows per cluster in the last pass's labels, all ranks' (float64),
        counted on the devices: no label comes to the host (where counting
        them was a noticeable part of a large fit)."""
        def count(chunk, st):
            q = chunk.queue
            counts = cla.zeros(q, st.k, np.int32)
            count_labels(q, st.current_labels(), counts, chunk.n)
            return counts.get(q).astype(np.float64)
        local = self.ranks.run_failing_all(
            lambda: np.sum(self.map(count, rows=False), axis=0))
        return self.ranks.sum(local, exact=True)   # integers: any order

    def set_labels(self, labels):
        def put(chunk, st):
            st.labels = cla.to_device(chunk.queue, labels[chunk.offset:chunk.offset + chunk.n])
        self.map(put, rows=False)

    def min_dist(self, update=True, dtype=np.float64):
        """Each row's distance to its centre in the last pass (the updating
        one, or with *update* False the one without the update), as *dtype*
        (None: the rows' own, as the devices hold them)."""
        return self._rows(dtype or self.data.dtype, lambda st: st.passes[update].min_dist)

    def _rows(self, dtype, array):
        out = np.empty(self.data.n, dtype)
        self.map(lambda c, st: download(c.queue, array(st)[:c.n], out[c.offset:c.offset + c.n]),
                 rows=False)   # the chunks' own arrays: streamed rows need not come
        return out

    def farthest(self, take):
        """The *take* rows farthest from their centres in the last updating
        pass, of all chunks (see farthest_of)."""
        return farthest_of(self.map(lambda chunk, st: chunk_farthest(
            chunk, st.passes[True].min_dist.get(chunk.queue), st.current_labels().get(
                chunk.queue), take)), take)

    def farthest_found(self, take):
        """(distances, rows, labels) of this rank's *take* rows farthest from
        their centres in the last updating pass, largest first, of equals
        the first row: each chunk's found on its device
        (runtime.group_maxima.largest), then merged; only they come to the
        host."""
        found = self.map(lambda chunk, st: largest(chunk.queue, st.passes[True].min_dist,
                                                   st.current_labels(), chunk.n, take),
                         rows=False)
        dist = np.concatenate([f[0] for f in found])
        rows = np.concatenate([f[1] + c.offset for f, c in zip(found, self.data.chunks)])
        first = np.lexsort((rows, -dist))[:take]
        return dist[first], rows[first], np.concatenate([f[2] for f in found])[first]

    def rebalance(self):
        """Measured weights: re-split between iterations, labels kept."""
        saved = self.data.rebalance(save=self.labels)
        if saved is not None:
            self.set_labels(saved)


def lloyd_calibration(part, k):
    """What measured device weights time (DeviceManager.scatter): a Lloyd
    pass of *k* centres over a sample partition (any centres cost the
    same; the sample's first rows serve).  Returns the function that runs
    it once."""
    k = min(k, part.n)
    centers = part.x[:k].get(part.queue).astype(np.float64)
    labels = cla.zeros(part.queue, part.n, np.int32)   # read by the pass
    lloyd = LloydPass(part, k)
    return lambda: lloyd.run(centers, labels)
