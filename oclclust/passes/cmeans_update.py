"""The fuzzy c-means centre update on the device: the centres of a
CMeansPass (passes/cmeans.py, with the update) kept there between passes.

The update is k-means' (passes/lloyd_update.py, its templates): new_centers
over the pass's c x (d + 1) statistics (CentersSpec ``packed``: each
centre's numerator row with its weight last) computes the new centres in
float64 as cluster.empty_clusters.centers_update does (a centre of no
weight keeps its place), their squared moves, and the pass's next input,
the centres rounded to the data's type (the "rows" layout: what
CMeansPass.upload writes); summarize sums the moves in numpy's pairwise
order, so the shift is ``((new - centers) ** 2).sum()``'s bits.

ResidentCMeans: one device, the fit's one partition.  The statistics are
the pass's own, settled on the device (the exact fold rounded as
ExactWords.value() rounds it; without split-free sums the float64
reduction of the partials), as the host's update would read them; each
iteration enqueues the pass, the update and the reads of its objective's
group values, its non-finite count and its shift into page-locked memory,
and up to ``depth`` iterations are enqueued ahead of the one read.

SharedCMeans: one of several devices of one process, each with its rows in
one resident chunk.  Split-free, every device's statistics' words are
added and rounded on every device (exact_fold.SharedFold: the host's
ExactWords.total and value() bits; on two H200s the host's total of 100 x
25 statistics took 0.77 ms of a 4.6 ms iteration, bench/scaling.py's R);
else the host adds them as the host path does and writes the totals back
to each (``update``).  Each device computes the same new centres from
them, and the first device's summary gives the shift.

The tensor-core pass (cmeans_mma.py, whose centres are operands the host
derives) keeps the host's update (``can_update``)."""
import numpy as np
import pyopencl.array as cla

from ..runtime.codegen import kernel
from ..runtime.exact_fold import SharedFold
from ..runtime.transfer import PinnedStaging, wait
from .lloyd_update_specs import (RESULTS, SHIFT, CentersSpec, SummarySpec,
                                 summary_work_group, update_work_group)


def can_update(cpass):
    """Whether the centres of *cpass* (a CMeansPass) can be updated on its
    device: the portable pass with the update (its centres the rows in the
    data's type), fp64."""
    return cpass.update and not cpass.mma and cpass.part.acc_double


class CentersOnDevice:
    """The update's buffers and kernels on one CMeansPass's device: a ring
    of *ring* float64 centre buffers (``current``: the centres of the next
    pass), the squared moves, and *slots* summary results, each read through
    page-locked memory (``staging``: one array a kind, a slot each, made
    once: a page-locked array costs ~10 ms on a GPU host)."""

    def __init__(self, cpass, ring, slots):
        part, q = cpass.part, cpass.part.queue
        c, d = cpass.c, part.d
        self.cpass, self.c, self.d = cpass, c, d
        self.buffers = [cla.empty(q, c * d, np.float64) for _ in range(ring)]
        self.moved = cla.empty(q, c * d, np.float64)
        self.norms = cla.empty(q, c, part.dtype)   # new_centers writes them; unread here
        self.results = [cla.empty(q, RESULTS, np.float64) for _ in range(slots)]
        self.staging = PinnedStaging(q)
        self.staging.host("summary", slots * RESULTS, np.float64)
        self.current = 0
        self.active = False
        self.centers_spec = CentersSpec(dtype=part.dtype.name, acc_double=True, d=d, k=c,
                                        kp=c, layout="rows", wg=update_work_group(part.profile),
                                        packed=True)
        self.summary_spec = SummarySpec(dtype=part.dtype.name, acc_double=True, k=c,
                                        wg=summary_work_group(part.profile))
        # fetched here, in the fit (its kernels_ record them), not per launch
        self.new_centers = kernel(q.context, self.centers_spec, "new_centers")
        self.summarize = kernel(q.context, self.summary_spec, "summarize")

    def start(self, centers):
        """*centers* (c x d float64, the host's: current) uploaded, as the
        pass's input and the update's."""
        q = self.cpass.part.queue
        self.cpass.upload(centers)
        self.current = 0
        self.buffers[0].set(np.ascontiguousarray(centers, np.float64).ravel(), q)
        self.active = True

    def enqueue_update(self, stats, slot=None):
        """The new centres from *stats* (a c x (d + 1) float64 device array)
        into the next ring buffer and the pass's input; with *slot*, their
        shift summed into that slot and read: its read event."""
        q, cs = self.cpass.part.queue, self.centers_spec
        old = self.buffers[self.current]
        self.current = (self.current + 1) % len(self.buffers)
        centers = self.cpass.centers
        self.new_centers(
            q, (-(-self.c // cs.wg) * cs.wg,), (cs.wg,), stats.data, stats.data, old.data,
            self.buffers[self.current].data, self.moved.data, centers.data, centers.data,
            self.norms.data)
        if slot is None:
            return None
        ss, out = self.summary_spec, self.results[slot]
        # only the shift: no inertia, flag or weight is summed (0 groups; the
        # weights read for the empty flag, unread, are the statistics' first c)
        self.summarize(
            q, (ss.wg,), (ss.wg,), self.moved.data, np.int64(self.c * self.d), self.moved.data,
            self.cpass.part_flags.data, np.int64(0), self.cpass.part_flags.data, np.int64(0),
            stats.data, out.data, np.int64(0))
        return self.staging.get("summary", out, at=slot * RESULTS)

    def shift(self, slot):
        """The shift the read of *slot* brought (waited on by the caller)."""
        return float(self.staging.read("summary", RESULTS, slot * RESULTS)[SHIFT])

    def centers_to_host(self):
        """The current centres (c x d float64); none resident after."""
        self.active = False
        q = self.cpass.part.queue
        return self.buffers[self.current].get(q).reshape(self.c, self.d)


class ResidentCMeans(CentersOnDevice):
    """The centres of the fit's one CMeansPass (its only partition) kept on
    its device.  ``start(centers)`` uploads them; each ``step(ahead)`` runs
    the pass over them and the update, up to *ahead* (at most ``depth``)
    further iterations enqueued first, and returns (objective as
    CMeansPass.collect gives it, non-finite rows, shift).  An iteration
    enqueued ahead and not read (the fit stopped, or raised) only wrote
    buffers nothing reads again: ``drop`` forgets it."""

    def __init__(self, cpass, depth=1):
        super().__init__(cpass, depth + 2, depth + 1)
        self.depth = depth
        self.next_slot = 0
        self.pending = []   # enqueued, unread: (slot, ring buffer written, read events)
        self.read = 0       # the ring buffer of the last iteration read
        groups = cpass.groups   # each slot's objective and flags by work-group
        self.staging.host("obj", (depth + 1) * groups, cpass.part_obj.dtype)
        self.staging.host("flags", (depth + 1) * groups, cpass.part_flags.dtype)

    def start(self, centers):
        self.drop()
        super().start(centers)
        self.next_slot = self.read = 0

    def _enqueue(self):
        """The pass over the centres the last enqueued update wrote, its
        update and its reads."""
        p, slot = self.cpass, self.next_slot
        self.next_slot = (slot + 1) % len(self.results)
        p.enqueue_sums(settle=True)
        at = slot * p.groups
        events = [self.enqueue_update(p.summed(), slot),
                  self.staging.get("obj", p.part_obj, at=at),
                  self.staging.get("flags", p.part_flags, at=at)]
        p.part.queue.flush()
        self.pending.append((slot, self.current, events))

    def step(self, ahead=0):
        """(objective, non-finite rows, shift) of the next iteration; the
        new centres are the current ones."""
        while len(self.pending) < 1 + min(self.depth, ahead):
            self._enqueue()
        slot, self.read, events = self.pending.pop(0)
        wait(events)
        p, stage, at = self.cpass, self.staging, slot * self.cpass.groups
        objective = p.objective_of(stage.read("obj", p.groups, at))
        return objective, int(stage.read("flags", p.groups, at).sum()), self.shift(slot)

    def drop(self):
        """Forget the iterations enqueued ahead, once their reads are done
        (nothing left writing the page-locked slots)."""
        for _, _, events in self.pending:
            wait(events)
        self.pending = []

    def centers_to_host(self):
        """The centres of the last iteration read (c x d float64; the
        passes dropped wrote the ring's others); none resident after."""
        self.drop()
        self.current = self.read
        return super().centers_to_host()


class SharedCMeans(CentersOnDevice):
    """The centres of one device's CMeansPass when several devices share
    one update (cluster.mixture.cmeans_shards.CMeansShards): ``launch``
    enqueues the pass over the resident centres with its reads
    (CMeansPass.launch without the upload), ``update(totals)`` writes every
    device's added statistics here and computes the new centres from
    them."""

    def __init__(self, cpass):
        super().__init__(cpass, 2, 1)
        self.totals = cla.empty(cpass.part.queue, cpass.size, np.float64)
        self.write = None   # the last update's copy up (staging's "totals")
        # split-free: every device's statistics' words added here
        self.shared_stats = SharedFold(cpass.fold) if cpass.exact else None

    def launch(self):
        """The pass over the resident centres with its reads, enqueued
        (CMeansPass.collect_parts them: split-free, with no statistics)."""
        if self.shared_stats is None:
            return self.cpass.launch(None)
        events = self.cpass.launch(None, read_stats=False)
        events.append(self.shared_stats.read())
        self.cpass.part.queue.flush()
        return events

    def update(self, totals, summarize=False, own=None):
        """All devices' statistics in, the new centres computed; with
        *summarize* their shift summed and read: its read event (else
        None).  Not waited on.  *totals*: c x (d + 1) float64, or
        split-free every device's words (their SharedFold.words, in chunk
        order; this device's at *own*, taken on the device)."""
        q = self.cpass.part.queue
        if self.shared_stats is not None:
            self.shared_stats.wait_writes()
            self.shared_stats.enqueue_total(totals, own, self.totals)
        else:
            if self.write is not None:   # the last copy from the page-locked array is done
                self.write.wait()
            self.write = self.staging.put("totals", self.totals,
                                          np.asarray(totals, np.float64))
        read = self.enqueue_update(self.totals, 0 if summarize else None)
        q.flush()
        return read
