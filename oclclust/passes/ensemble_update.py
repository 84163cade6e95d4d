"""The ensemble's model update on the device (templates/ensemble_update/ensemble_update.cl.mako).

On a single device, an iteration of an ensemble's Lloyd loop (cluster/kmeans/lloyd_loop.py) keeps
the active models' centres on the device: the statistics pass reads them
from there, the update kernel writes the next ones (float64, and rounded for
the next pass), and the host reads back one shift and one flag per model
instead of the statistics, and uploads nothing.  Its results are bit for bit
the host update's (cluster.kmeans.lloyd_loop.host_update), which takes over for an
iteration with a flagged model (an empty cluster to relocate, a shift within
rounding of tol), and always with several chunks or ranks or without double
precision.
"""
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime.codegen import Launch, Spec, kernel
from .ensemble import work_group
from ..runtime.transfer import pinned_empty


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

    def __init__(self, stats_pass):
        self.stats_pass = stats_pass
        self.brute = getattr(stats_pass, "brute", stats_pass)
        self.active = None       # the models resident, in pass order; None: none
        self.buffers = []
        self.results = None      # a result slot per buffer: device, and host (pinned)
        self.pending = []        # enqueued iterations, not yet read: (input, output, event)
        q = self.brute.part.queue
        self.ahead = default_ahead(self.brute.part.profile)
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
        b, q = self.brute, self.brute.part.queue
        self.stats_pass.enqueue(None, zero=not self.zeroed)   # the centres are there already
        self.zeroed = True
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
