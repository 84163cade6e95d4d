"""The ensemble's model update on the device (templates/ensemble_update/ensemble_update.cl.mako).

On a single device, an iteration of an ensemble's Lloyd loop (cluster/kmeans/lloyd_loop.py) keeps
the active models' centres on the device: the statistics pass reads them
from there, the update kernel writes the next ones (float64, and rounded for
the next pass), and the host reads back one shift and one flag per model
instead of the statistics, and uploads nothing.  Its results are bit for bit
the host update's (cluster.kmeans.lloyd_loop.host_update), which takes over for an
iteration with a flagged model (an empty cluster to relocate, a shift within
rounding of tol), and always with several ranks, streamed or remote rows, or
without double precision.

Several resident chunks of one process (several devices, or one device's
several buffers) share one update (SharedUpdate): each pass's integer
statistics are read, added on the host (integers: the host update's totals,
in any order), and written over every chunk's statistics, and every chunk
runs the same update kernel on them, so all hold the same new centres.
"""
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime.codegen import Launch, Spec, kernel
from .ensemble import work_group
from ..runtime.transfer import PinnedStaging, pinned_empty, wait


@dataclasses.dataclass(frozen=True)
class UpdateSpec(Spec):
    template = "ensemble_update/ensemble_update.cl.mako"
    d: int = 1
    wg: int = 64


def centers_can_stay_resident(data, comm):
    """Whether the fit's centres can stay on its one device between passes
    (not for rows on Dask workers: their one block is on another process)."""
    return (not getattr(data, "remote", False) and len(data.chunks) == 1
            and (comm is None or comm.Get_size() == 1) and data.chunks[0].acc_double
            and not any(shard.streamed for shard in data.shards))


def centers_can_be_shared(data, comm):
    """Whether the fit's centres can stay on its several chunks' devices
    between passes under one shared update (SharedUpdate): one process,
    every chunk resident with double precision.  Wider than
    parallel.sharded.shareable (KMeans' and c-means' rule): integer
    statistics add alike over any chunks, a device's several too, and an
    ensemble's rows are never laid out anew during a fit."""
    return (not getattr(data, "remote", False) and len(data.chunks) > 1
            and (comm is None or comm.Get_size() == 1)
            and all(chunk.acc_double for chunk in data.chunks)
            and not any(shard.streamed for shard in data.shards))


AHEAD = 2   # iterations enqueued beyond the one being read (GPUs)


def default_ahead(profile):
    """Iterations enqueued beyond the one read: AHEAD, or none on a CPU
    runtime, whose passes share its cores with the host (faster so on
    both runtimes; see lloyd_update.default_depth)."""
    return 0 if profile.type == "cpu" else AHEAD


class DeviceUpdate:
    """The resident centres of one chunk's ensemble pass (EnsemblePass or
    KDTreePass, whose ``brute`` holds the buffers).

    While the host reads iteration i's shifts, iterations i + 1 ... i +
    ``ahead`` (default_ahead) run: they are enqueued before i's result is
    waited for (speculatively: i's result may stop a model or flag one, and
    they are then dropped).  One ahead, the next pass is enqueued only once
    the host has handled this one's result, and a short pass leaves the
    device idle meanwhile (the KD-tree pass ran faster two ahead than one
    ahead on a GPU).
    ``ahead`` + 2 centre buffers turn: i's input (handed back if i is
    flagged), its output (the current centres once i is read), and the
    outputs of the iterations ahead.  Each output buffer has its own result
    slot, read on a queue of its own where passes are ahead: on the pass's
    queue the read would hold the next pass back."""

    def __init__(self, stats_pass, ahead=None):
        """*ahead*: the iterations enqueued beyond the one read (None: the
        device's default_ahead)."""
        self.stats_pass = stats_pass
        self.brute = getattr(stats_pass, "brute", stats_pass)
        self.active = None       # the models resident, in pass order; None: none
        self.buffers = []
        self.results = None      # a result slot per buffer: device, and host (pinned)
        self.pending = []        # enqueued iterations, not yet read: (input, output, event)
        q = self.brute.part.queue
        self.ahead = default_ahead(self.brute.part.profile) if ahead is None else ahead
        self.reader = cl.CommandQueue(q.context, q.device) if self.ahead else q

    def start(self, centers, active):
        """Upload the *active* models' centres (the host's are current)."""
        b, q = self.brute, self.brute.part.queue
        rows = [centers[m] for m in active]
        b.upload(rows)
        packed = np.ascontiguousarray(np.concatenate(rows), np.float64)
        if not self.buffers or self.buffers[0].shape != packed.shape:
            self.buffers = [cla.empty(q, packed.shape, np.float64)
                            for _ in range(self.ahead + 2)]
        if self.results is None or self.results[0].size != 2 * len(active):
            self.results = [cla.empty(q, 2 * len(active), np.float64) for _ in self.buffers]
            self.host_results = [pinned_empty(q, 2 * len(active), np.float64)
                                 for _ in self.buffers]
        self.current = 0                      # the buffer of the current centres
        self.buffers[0].set(packed, q)
        self.sizes = [len(r) for r in rows]
        self.active = list(active)
        self.zeroed = False          # the update kernel zeroes the statistics it read
        self.pending = []
        self.launches = {}           # (source, target, tol): the update's arguments

    def _enqueue(self, tol):
        """The pass and update of the iteration after the last enqueued."""
        self.enqueue_pass()
        self.enqueue_update(tol)

    def enqueue_pass(self):
        """The statistics pass over the resident centres, enqueued."""
        self.stats_pass.enqueue(None, zero=not self.zeroed)   # the centres are there already
        self.zeroed = True

    def enqueue_update(self, tol):
        """The update of the last pass's statistics (as they are on the
        device when it runs) and its result's read, enqueued."""
        b, q = self.brute, self.brute.part.queue
        n_models = len(self.active)
        source = self.pending[-1][1] if self.pending else self.current
        # a buffer no enqueued iteration reads or writes (source is among these)
        busy = {self.current, *(p[1] for p in self.pending)}
        target = min(set(range(len(self.buffers))) - busy)
        key = (source, target, tol)
        if key not in self.launches:
            wg = work_group(b.part.profile, size=64)
            # a kernel object per buffer pair: its arguments stay set
            kern = kernel(q.context, UpdateSpec(dtype=b.part.dtype.name, acc_double=True,
                                                d=b.part.d, wg=wg), "update_models",
                          instance=(source, target))
            self.launches[key] = Launch(kern, (n_models * wg,), (wg,), (
                b.sums.data, b.counts.data, b.shift.data, *map(np.float64, b.scales),
                b.model_off.data, np.int32(n_models), np.float64(tol),
                self.buffers[source].data, self.buffers[target].data, b.centers.data,
                self.results[target].data))
        updated = self.launches[key](q)
        q.flush()                     # the reader waits for it
        event = cl.enqueue_copy(self.reader, self.host_results[target],
                                self.results[target].data, wait_for=[updated],
                                is_blocking=False)
        self.pending.append((source, target, event))

    def step(self, tol, ahead=AHEAD):
        """One pass and update of the resident models: (shifts, flags), M each;
        up to *ahead* (at most self.ahead) more iterations are enqueued before
        this one is read.  Unflagged, the new centres become the current
        ones; flagged, they stay this iteration's (to hand back to the host)."""
        while len(self.pending) < 1 + min(ahead, self.ahead):
            self._enqueue(tol)
        return self.take()

    def take(self):
        """The first enqueued iteration's (shifts, flags), read (step's)."""
        source, target, event = self.pending.pop(0)
        event.wait()
        host, n_models = self.host_results[target], len(self.active)
        flags = host[n_models:].astype(np.int64)
        shifts = host[:n_models].copy()
        if flags.any():
            self.drop()
        else:
            self.current = target
        return shifts, flags

    def drop(self):
        """Forget the iterations enqueued ahead (the current centres stay)."""
        if self.pending:
            self.brute.part.queue.finish()
            self.reader.finish()
            self.pending = []

    def centers_to_host(self, centers):
        """The current centres into *centers* (host arrays); none resident after."""
        if self.active is None:
            return
        self.drop()
        rows = np.split(self.buffers[self.current].get(self.brute.part.queue),
                        np.cumsum(self.sizes)[:-1])
        for m, row in zip(self.active, rows):
            centers[m] = row
        self.active = None


class SharedUpdate:
    """The resident centres of several chunks' ensemble passes (one
    process; centers_can_be_shared) under one update: every chunk keeps
    the same centres.

    An iteration enqueues every chunk's pass and the read of its integer
    statistics (page-locked); the host adds them (the totals the host
    update's chunks give: integers, any order) and writes the totals over
    every chunk's statistics, behind which each chunk's update kernel runs:
    the same kernel on the same totals and centres, so the same new
    centres, bit for bit the host update's, with none computed, packed or
    uploaded by the host.  An iteration is read before the next is
    enqueued (each waits on every chunk's statistics)."""

    def __init__(self, stats_passes):
        self.updates = [DeviceUpdate(p, ahead=0) for p in stats_passes]
        self.staging = [PinnedStaging(u.brute.part.queue) for u in self.updates]

    @property
    def active(self):
        return self.updates[0].active

    def start(self, centers, active):
        """Upload the *active* models' centres to every chunk."""
        for u in self.updates:
            u.start(centers, active)

    def step(self, tol):
        """One pass over every chunk and the shared update: (shifts, flags),
        M each (DeviceUpdate.step's); None, the centres left as they were,
        where the devices' updates differ (a device that rounds otherwise:
        the host's update must take this iteration and the ones after)."""
        before = [u.current for u in self.updates]
        first = self.updates[0].brute
        sizes = {"sums": len(first.packed) * first.part.d, "counts": len(first.packed)}
        reads = []   # (each chunk's: the devices' contexts may differ)
        for u, stage in zip(self.updates, self.staging):
            u.enqueue_pass()
            reads.append([stage.get(name, getattr(u.brute, name), size)
                          for name, size in sizes.items()])
            u.brute.part.queue.flush()
        for events in reads:
            wait(events)
        totals = {name: np.sum([stage.read(name, size) for stage in self.staging], axis=0)
                  for name, size in sizes.items()}   # (int64: exact, in any order)
        for u, stage in zip(self.updates, self.staging):
            for name, total in totals.items():
                stage.put("total_" + name, getattr(u.brute, name), total)
            u.enqueue_update(tol)
        results = [u.take() for u in self.updates]
        shifts, flags = results[0]
        if any(not (np.array_equal(s, shifts) and np.array_equal(f, flags))
               for s, f in results[1:]):
            for u, current in zip(self.updates, before):
                u.current = current
            return None
        return shifts, flags

    def centers_to_host(self, centers):
        """The current centres into *centers* (host arrays); none resident after."""
        self.updates[0].centers_to_host(centers)
        for u in self.updates[1:]:
            u.active = None
