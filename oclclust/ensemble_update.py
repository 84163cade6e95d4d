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
import pyopencl.array as cla

from . import mpi
from .codegen import Spec, kernel


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
    KDTreePass, whose ``brute`` holds the buffers)."""

    def __init__(self, stats_pass):
        self.stats_pass = stats_pass
        self.brute = getattr(stats_pass, "brute", stats_pass)
        self.active = None       # the models resident, in pass order; None: none
        self.now = self.next = self.result = None

    def start(self, centers, active):
        """Upload the *active* models' centres (the host's are current)."""
        b, q = self.brute, self.brute.part.queue
        rows = [centers[m] for m in active]
        b.upload(rows)
        packed = np.ascontiguousarray(np.concatenate(rows), np.float64)
        if self.now is None or self.now.shape != packed.shape:
            self.now, self.next = cla.empty(q, packed.shape, np.float64), \
                cla.empty(q, packed.shape, np.float64)
            self.result = cla.empty(q, 2 * len(active), np.float64)
        elif self.result.size != 2 * len(active):
            self.result = cla.empty(q, 2 * len(active), np.float64)
        self.now.set(packed, q)
        self.sizes = [len(r) for r in rows]
        self.active = list(active)
        self.zeroed = False          # the update kernel zeroes the statistics it read

    def step(self, tol):
        """One pass and update of the resident models: (shifts, flags), M each.
        Unflagged, the new centres become the resident ones; flagged, they
        stay this iteration's (to hand back to the host)."""
        b, q = self.brute, self.brute.part.queue
        self.stats_pass.enqueue(None, zero=not self.zeroed)   # the centres are there already
        self.zeroed = True
        n_models = len(self.active)
        kern = kernel(q.context, UpdateSpec(dtype=b.part.dtype.name, acc_double=True,
                                            d=b.part.d), "update_models")
        kern(q, (-(-n_models // 64) * 64,), None, b.sums.data, b.counts.data, b.shift.data,
             *(np.float64(s) for s in b.scales), b.model_off.data, np.int32(n_models),
             np.float64(tol), self.now.data, self.next.data, b.centers.data, self.result.data)
        result = self.result.get(q)
        flags = result[n_models:].astype(np.int64)
        if not flags.any():
            self.now, self.next = self.next, self.now
        return result[:n_models], flags

    def hand_back(self, centers):
        """The resident centres into *centers* (host arrays); none resident after."""
        if self.active is None:
            return
        rows = np.split(self.now.get(self.brute.part.queue), np.cumsum(self.sizes)[:-1])
        for m, row in zip(self.active, rows):
            centers[m] = row
        self.active = None
