"""The ensemble's model update on the device (templates/ensemble_update.cl.mako).

On a single device, an iteration of ensemble.lloyd_ensemble keeps the active
models' centres on the device: the statistics pass reads them from there,
the update kernel writes the next ones (float64, and rounded for the next
pass), and the host reads back one shift and one flag per model instead of
the statistics, and uploads nothing.  Its results are bit for bit the host
update's (ensemble.ensemble_step), which takes over for an iteration with a
flagged model (an empty cluster to relocate, a shift within rounding of
tol), and always with several chunks or ranks or without double precision.
"""
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from . import mpi
from .codegen import Launch, Spec, kernel


@dataclasses.dataclass(frozen=True)
class UpdateSpec(Spec):
    template = "ensemble_update.cl.mako"
    d: int = 1


def usable(data, comm):
    """Whether the fit's centres can stay on its one device between passes."""
    return (len(data.chunks) == 1 and mpi.size(comm) == 1 and data.chunks[0].acc_double
            and not any(shard.streamed for shard in data.shards))


class DeviceUpdate:
    """The resident centres of one chunk's ensemble pass (EnsemblePass or
    KDTreePass, whose ``brute`` holds the buffers).

    While the host reads iteration i's shifts, iteration i + 1 runs: it is
    enqueued before i's result is waited for (speculatively: i's result may
    stop a model or flag one, and i + 1 is then dropped).  Three centre
    buffers turn: i's input (handed back if i is flagged), i's output (the
    current centres once i is read), and i + 1's output."""

    def __init__(self, stats_pass):
        self.stats_pass = stats_pass
        self.brute = getattr(stats_pass, "brute", stats_pass)
        self.active = None       # the models resident, in pass order; None: none
        self.buffers = []
        self.pending = []        # enqueued iterations, not yet read: (input, output, result)

    def start(self, centers, active):
        """Upload the *active* models' centres (the host's are current)."""
        b, q = self.brute, self.brute.part.queue
        rows = [centers[m] for m in active]
        b.upload(rows)
        packed = np.ascontiguousarray(np.concatenate(rows), np.float64)
        if not self.buffers or self.buffers[0].shape != packed.shape:
            self.buffers = [cla.empty(q, packed.shape, np.float64) for _ in range(3)]
        if getattr(self, "result", None) is None or self.result.size != 2 * len(active):
            self.result = cla.empty(q, 2 * len(active), np.float64)
            self.host_results = [np.empty(2 * len(active)) for _ in range(2)]
        self.current = 0                      # the buffer of the current centres
        self.buffers[0].set(packed, q)
        self.sizes = [len(r) for r in rows]
        self.active = list(active)
        self.zeroed = False          # the update kernel zeroes the statistics it read
        self.pending, self.enqueued = [], 0
        self.launches = {}           # (source, target, tol): the update's arguments

    def _enqueue(self, tol, source):
        """Pass and update from centre buffer *source*; the pending entry."""
        b, q = self.brute, self.brute.part.queue
        self.stats_pass.enqueue(None, zero=not self.zeroed)   # the centres are there already
        self.zeroed = True
        n_models = len(self.active)
        # not the source, nor the pending iteration's own source (its fallback)
        target = 3 - source - self.pending[-1][0] if self.pending else (source + 1) % 3
        key = (source, target, tol)
        if key not in self.launches:
            kern = kernel(q.context, UpdateSpec(dtype=b.part.dtype.name, acc_double=True,
                                                d=b.part.d), "update_models")
            self.launches[key] = Launch(kern, (-(-n_models // 64) * 64,), None, (
                b.sums.data, b.counts.data, b.shift.data, *map(np.float64, b.scales),
                b.model_off.data, np.int32(n_models), np.float64(tol),
                self.buffers[source].data, self.buffers[target].data, b.centers.data,
                self.result.data))
        self.launches[key](q)
        self.enqueued += 1                    # two results at most are unread
        host = self.host_results[self.enqueued % 2]
        event = cl.enqueue_copy(q, host, self.result.data, is_blocking=False)
        self.pending.append((source, target, host, event))

    def step(self, tol, ahead=True):
        """One pass and update of the resident models: (shifts, flags), M each;
        *ahead*: the next iteration is enqueued before this one is read.
        Unflagged, the new centres become the current ones; flagged, they
        stay this iteration's (to hand back to the host)."""
        if not self.pending:
            self._enqueue(tol, self.current)
        if ahead:
            self._enqueue(tol, self.pending[0][1])
        source, target, host, event = self.pending.pop(0)
        event.wait()
        n_models = len(self.active)
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
            self.pending = []

    def hand_back(self, centers):
        """The current centres into *centers* (host arrays); none resident after."""
        if self.active is None:
            return
        self.drop()
        rows = np.split(self.buffers[self.current].get(self.brute.part.queue),
                        np.cumsum(self.sizes)[:-1])
        for m, row in zip(self.active, rows):
            centers[m] = row
        self.active = None
