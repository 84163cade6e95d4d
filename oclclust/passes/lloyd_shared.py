"""One k-means centre update shared by several devices, of one process or
of MPI ranks (cluster.kmeans.lloyd_shards.LloydShards, each device's rows
in one resident chunk, fp64): every device computes the same new centres
from the same totals, so the host computes no centre, norm or layout and
uploads none between passes.

Split-free (the pass's ``exact``), the totals of the k x d sums are made
on every device: each device's folded words (exact_fold.Fold) are read
into page-locked memory, the host writes every other device's words
beside the device's own (over MPI ranks, each place's words summed over
the ranks first), and the device adds them (exact_fold_parts: integers,
the host's ExactWords.total) and rounds them (exact_value:
ExactWords.value()'s bits).  The host adds only what it needs to decide
the iteration (the k weights, the inertia, the counts): on two H200s the
host's total of 1024 x 128 sums' words and their rounding took 4.4 ms of
a 40 ms iteration (bench/scaling.py's R), the words' copies a fraction
of it.  Else (Kahan sums, or exact sums disabled) the host adds the
devices' float64 totals and writes them to every device.
"""
import numpy as np
import pyopencl as cl

from ..runtime.exact_fold import SharedFold
from ..runtime.exact_sums import blocks_of
from ..runtime.kernel_recorder import note
from ..runtime.transfer import PinnedStaging
from .lloyd import LloydStats
from .lloyd_update import SHIFT, ResidentCenters


class SharedCenters:
    """The centres of one device's LloydPass (with the update) when several
    devices share one update.

    The host reads every device's pass statistics (``launch`` /
    ``collect``, the centre upload skipped), adds what decides the
    iteration in chunk order as the host update does, and ``update``
    gives every device the totals (split-free: every device's sums' words,
    ``sums_words``, which it adds itself); each computes the new centres
    with ResidentCenters' new_centers kernel, into the pass's inputs.  The
    first device's summary gives the shift (np.sum's bits, as on one
    device)."""

    def __init__(self, lloyd_pass):
        self.resident = r = ResidentCenters(lloyd_pass, depth=0, totals=True)
        q, k, d = lloyd_pass.part.queue, lloyd_pass.k, lloyd_pass.part.d
        self.exact = lloyd_pass.exact
        self.staging = PinnedStaging(q)   # (pooled: a warm fit page-locks none)
        self.host_sums = None if self.exact else self.staging.host("sums", k * d, np.float64)
        self.host_weights = self.staging.host("weights", k, np.float64)
        self.writes = []   # the last update's copies from the page-locked arrays
        self.active = False
        self.summary = r.summaries[0]
        self.bound = None  # the labels the pass's kernels are bound to (exact)
        # split-free: every device's sums' words added here
        self.shared_sums = SharedFold(lloyd_pass.folds["sums"]) if self.exact else None
        self.kept = None     # the centres start() copies from

    def start(self, centers):
        """*centers* (k x d float64, the host's: current) uploaded, as the
        pass's inputs and the update's."""
        r = self.resident
        lp = r.lloyd
        note(lp.part.queue.context, *r.update_specs)
        lp.upload(centers)
        r.current = 0
        # not waited on: kept until the next start, after a collect (the queue passed it)
        self.kept = np.ascontiguousarray(centers, np.float64).ravel()
        r.buffers[0].set(self.kept, lp.part.queue, async_=True)
        self.bound = None   # a pooled pass's partition is this fit's: bound anew
        self.active = True

    def launch(self, labels):
        """The pass over the resident centres into *labels*, with its
        statistics' reads, enqueued (collect() them)."""
        r = self.resident
        lp = r.lloyd
        if not self.exact:
            return lp.launch(None, labels)
        if self.bound is not labels:
            r.bind(labels)
            self.bound = labels
        q = lp.part.queue
        r.enqueue_pass()
        lp.enqueue_exact()
        host = lp._host()
        reads = [(host["inertia"], lp.block_inertia), (host["flags"], lp.part_flags),
                 (host["weights"], lp.folds["weights"].out)]
        events = [cl.enqueue_copy(q, dst, src.data, is_blocking=False) for dst, src in reads]
        events.append(self.shared_sums.read())
        q.flush()
        return events

    def collect(self, launched):
        """The LloydStats of the pass launch() enqueued; split-free, its
        sums the words read (``sums_words``) and its inertia the block
        sums (a copy: float64, one a block), which the caller adds once
        every device's are in and the next passes are launched."""
        lp = self.resident.lloyd
        if not self.exact:
            return lp.collect(launched)
        cl.wait_for_events(launched)
        host = lp._host()
        flags = host["flags"].reshape(-1, 2)
        return LloydStats(self.sums_words(), lp.folds["weights"].words(host["weights"],
                                                                       copy=False),
                          host["inertia"][:blocks_of(lp.part.n, lp.block_rows)].copy(),
                          int(flags[:, 0].sum()), int(flags[:, 1].sum()), lp.rechecked())

    def sums_words(self):
        """The ExactWords of the last collected pass's sums (views of the
        page-locked array read into)."""
        return self.resident.lloyd.folds["sums"].words(self.shared_sums.words, copy=False)

    def update(self, sums, weights, summarize=False, own=None):
        """All devices' totals in, the new centres computed here; with
        *summarize*, their shift summed and read: its read event (else
        None).  Not waited on.  *weights*: the k totals (float64); *sums*:
        the k x d totals, or split-free the page-locked words arrays of
        every device's pass (their SharedFold.words), in chunk order, *own* this
        device's place among them (its words are taken on the device)."""
        r = self.resident
        q = r.lloyd.part.queue
        if self.writes:   # the last copies from the page-locked arrays are done
            cl.wait_for_events(self.writes)
        self.host_weights[:] = weights
        self.writes = [cl.enqueue_copy(q, r.weights.data, self.host_weights, is_blocking=False)]
        if self.exact:
            self.shared_sums.wait_writes()
            self.shared_sums.enqueue_total(sums, own, r.sums)
        else:
            self.host_sums[:] = sums.reshape(-1)
            self.writes.append(cl.enqueue_copy(q, r.sums.data, self.host_sums,
                                               is_blocking=False))
        r.new_centers(r.current)
        r.current = (r.current + 1) % len(r.buffers)
        read = None
        if summarize:
            ss = r.summary_spec
            cl.enqueue_nd_range_kernel(q, self.summary, (ss.wg,), (ss.wg,))
            read = cl.enqueue_copy(q, r.host_slots[0], r.slots[0].data, is_blocking=False)
        q.flush()
        return read

    def shift(self, read):
        """The shift of the update whose summary *read* is (update's)."""
        read.wait()
        return float(self.resident.host_results[0][SHIFT])

    def centers_to_host(self):
        """The current centres (k x d float64); none resident after."""
        self.active = False
        r = self.resident
        return r.buffers[r.current].get(r.lloyd.part.queue).reshape(r.lloyd.k, -1)
