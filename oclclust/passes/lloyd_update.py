"""The k-means centre update on the device (templates/lloyd_update/*.cl.mako).

On a single resident chunk with double precision, an iteration of KMeans's
Lloyd loop keeps the centres on the device: after the Lloyd pass
(lloyd.LloydPass) the partial sums are reduced there (runtime/reduce.py's
kernel, its order), the new centres computed in float64 as
cluster._base.centers_update computes them, with the next pass's inputs
(rounded centres in the variant's layout, their norms as
lloyd.center_norms sums them), and one work-group sums the shift and the
inertia in numpy's pairwise order and counts the changed and non-finite
rows and the empty clusters.  The host reads those five numbers, on a
queue of its own into page-locked memory, and uploads nothing.  The shift
and inertia are np.sum's bits, so the host's convergence test on them and
history_ are the host update's; an iteration with an empty cluster or a
non-finite row is the host's (its statistics read from the device, or the
pass run again over the same centres where the pass ahead overwrote them).

The next iteration is enqueued before this one's numbers are read (one
ahead, speculatively); a stop or the host's iteration drops it and puts
back the labels it overwrote (ResidentCenters).
"""
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime.codegen import Spec, kernel
from ..runtime.reduce import enqueue_reduce
from ..runtime.transfer import pinned_empty
from .distance_tile import power_of_two_at_most
from .ensemble_update import usable  # noqa: F401 -- the same condition: one chunk, one rank, fp64
from .lloyd import LloydStats
from .lloyd_mma import split_centers

EXACT = ()    # build options: IEEE products and sums (no -cl-mad-enable)


@dataclasses.dataclass(frozen=True)
class CentersSpec(Spec):
    """``layout`` "rows" (K x D: the tiled variant, and the mma variant's
    rows before their split), "columns" (D x KP: rowwise, gemm) or
    "panels" (KP / cb panels of D x cb: blocked, lloyd_blocked.pack_centers);
    ``rows``: also the K x D rows (gemm)."""
    template = "lloyd_new_centers.cl.mako"
    build_options = EXACT
    d: int = 1
    k: int = 1
    kp: int = 1
    layout: str = "rows"
    cb: int = 1
    rows: bool = False
    wg: int = 64


@dataclasses.dataclass(frozen=True)
class SummarySpec(Spec):
    template = "lloyd_summary.cl.mako"
    build_options = EXACT
    k: int = 1
    wg: int = 64

    def template_args(self):
        return dict(super().template_args(), levels=self.wg.bit_length() - 1)


# what summarize writes, in order
SHIFT, INERTIA, CHANGED, NONFINITE, EMPTY = range(5)


class ResidentCenters:
    """The centres of one LloydPass (with the update) kept on its device.

    ``start(centers)`` uploads them (the host's are current); each
    ``step(labels, ahead)`` runs the pass over them and the update, and
    returns (LloydStats without sums, shift, whether the host must take this
    iteration: an empty cluster or a non-finite row).  Unflagged, the new
    centres are the current ones; flagged, the current ones stay this
    iteration's, and ``stats()`` gives the pass's full statistics.

    With *ahead*, the next iteration is enqueued before this one is read
    (speculatively), so the device does not wait for the host's read and
    decision.  Its pass overwrites the labels this one wrote, so they are
    copied aside first: when the fit stops here or the host takes this
    iteration, the next one is dropped (``drop``) and the labels put back.
    Three centre buffers turn: this iteration's input, its output, and the
    next one's output; each iteration has its own result slot."""

    def __init__(self, lloyd_pass):
        self.lloyd = lp = lloyd_pass
        part, spec, q = lp.part, lp.spec, lp.part.queue
        k, d = lp.k, part.d
        self.buffers = [cla.empty(q, k * d, np.float64) for _ in range(3)]
        self.sums = cla.empty(q, k * d, np.float64)
        self.weights = cla.empty(q, k, np.float64)
        self.moved = cla.empty(q, k * d, np.float64)
        self.results = [cla.empty(q, 5, np.float64) for _ in range(2)]
        self.host_results = [pinned_empty(q, 5, np.float64) for _ in range(2)]
        # what a pass enqueued ahead overwrites of the one before it, saved:
        # a flagged iteration's host update reads them (no pass again)
        self.saved_labels = cla.empty(q, part.n, np.int32)
        self.saved_dist = cla.empty(q, part.n, part.dtype)
        self.saved_sums = cla.empty(q, k * d, np.float64)
        self.saved_weights = cla.empty(q, k, np.float64)
        self.reader = cl.CommandQueue(q.context, q.device)   # the read holds no pass back
        self.active = False
        self.current = 0
        self.pending = []        # enqueued iterations not read: (target buffer, slot, event)
        self.clobbered = False   # a dropped pass overwrote the last read one's outputs
        self.labels = None
        wg = power_of_two_at_most(min(64, part.profile.max_work_group_size))
        # tiled: K x D; rowwise, gemm: D x KP (gemm also the rows); blocked:
        # panels of D x cv * vw; mma: the rows, which split_centers lays out
        # in its fragments' order
        layout = ("columns" if spec.variant in ("rowwise", "gemm") else
                  "panels" if spec.variant == "blocked" else "rows")
        self.centers_spec = CentersSpec(dtype=part.dtype.name, acc_double=True, d=d, k=k,
                                        kp=spec.kp, layout=layout,
                                        cb=spec.cv * spec.vw if layout == "panels" else 1,
                                        rows=spec.variant == "gemm", wg=wg)
        # the buffers new_centers writes: (layout, rows; unwritten without rows)
        self.targets = ((lp.center_rows, lp.center_rows) if spec.variant == "mma" else
                        (lp.centers, lp.center_rows if spec.variant == "gemm" else lp.centers))
        # a CPU runtime runs a work-group's items in turn, switching at each
        # barrier: one item sums alone there (Intel, 1k x 2: 5 ms an iteration
        # with 256 items)
        wg = (1 if part.profile.type == "cpu" else
              power_of_two_at_most(min(256, part.profile.max_work_group_size)))
        self.summary_spec = SummarySpec(dtype=part.dtype.name, acc_double=True, k=k, wg=wg)
        self.last = None

    def start(self, centers):
        """Upload *centers* (k x d float64): the pass's inputs and the update's."""
        q = self.lloyd.part.queue
        self.drop()
        self.lloyd.upload(centers)
        self.current = 0
        self.buffers[0].set(np.ascontiguousarray(centers, np.float64).ravel(), q)
        self.active = True
        self.clobbered = False

    def _enqueue(self, labels):
        """The pass and update of the iteration after the last enqueued."""
        lp, q = self.lloyd, self.lloyd.part.queue
        part, k, d = lp.part, lp.k, lp.part.d
        if self.pending:     # the outputs of the pass before, should this one be dropped
            for saved, now in ((self.saved_labels, labels), (self.saved_dist, lp.min_dist),
                               (self.saved_sums, self.sums),
                               (self.saved_weights, self.weights)):
                cl.enqueue_copy(q, saved.data, now.data)
        source = self.pending[-1][0] if self.pending else self.current
        target = min({0, 1, 2} - {self.current, *(p[0] for p in self.pending)})
        slot = (self.pending[-1][1] + 1) % 2 if self.pending else 0
        lp.enqueue(labels)
        enqueue_reduce(q, lp.part_sums, lp.partials, k * d, part.dtype, True, self.sums)
        enqueue_reduce(q, lp.part_weights, lp.partials, k, part.dtype, True, self.weights)
        self.new_centers(self.buffers[source], self.buffers[target])
        ss = self.summary_spec
        done = kernel(q.context, ss, "summarize")(
            q, (ss.wg,), (ss.wg,), self.moved.data, np.int64(k * d), lp.part_inertia.data,
            lp.part_flags.data, np.int64(lp.groups), self.weights.data,
            self.results[slot].data)
        q.flush()                       # the reader waits for it
        read = cl.enqueue_copy(self.reader, self.host_results[slot], self.results[slot].data,
                               wait_for=[done], is_blocking=False)
        self.pending.append((target, slot, read))

    def step(self, labels, ahead=False):
        """One pass over the current centres (previous *labels* in, new ones
        out) and the update: (LloydStats with no sums, shift, flagged); with
        *ahead*, the next iteration is enqueued before this one is read."""
        self.labels = labels
        if not self.pending:
            self._enqueue(labels)
        if ahead:
            self._enqueue(labels)
        target, slot, read = self.pending.pop(0)
        read.wait()
        got = self.host_results[slot]
        self.last = LloydStats(None, None, float(got[INERTIA]), int(got[CHANGED]),
                               int(got[NONFINITE]))
        flagged = bool(got[EMPTY]) or self.last.n_nonfinite > 0
        self.clobbered = False
        if flagged:
            self.drop()
        else:
            self.current = target
        return self.last, float(got[SHIFT]), flagged

    def drop(self):
        """Forget the iterations enqueued ahead; the labels and distances of
        the last one read are put back."""
        if not self.pending:
            return
        q = self.lloyd.part.queue
        for now, saved in ((self.labels, self.saved_labels),
                           (self.lloyd.min_dist, self.saved_dist)):
            cl.enqueue_copy(q, now.data, saved.data)
        q.finish()
        self.reader.finish()
        self.pending = []
        self.clobbered = True

    def new_centers(self, old, new):
        """Enqueue the update of *old* centres into *new* from the reduced
        sums and weights, and the next pass's inputs from *new*."""
        lp, q = self.lloyd, self.lloyd.part.queue
        cs, (layout, rows) = self.centers_spec, self.targets
        kernel(q.context, cs, "new_centers")(
            q, (-(-lp.k // cs.wg) * cs.wg,), (cs.wg,), self.sums.data, self.weights.data,
            old.data, new.data, self.moved.data, layout.data, rows.data, lp.norms.data)
        if lp.spec.variant == "mma":
            split_centers(q, lp.spec, lp.center_rows, lp.centers)

    def stats(self):
        """The last read pass's LloydStats with its sums and weights (as
        LloydPass.run returns them), its distances and labels in the pass's
        buffers.  When a dropped pass overwrote them, the copies saved
        before it was enqueued (drop() put the labels and distances back):
        a flagged iteration costs its reads, not a pass again."""
        lp, q = self.lloyd, self.lloyd.part.queue
        sums, weights = ((self.saved_sums, self.saved_weights) if self.clobbered else
                         (self.sums, self.weights))
        return dataclasses.replace(self.last, sums=sums.get(q).reshape(lp.k, -1),
                                   weights=weights.get(q))

    def hand_back(self):
        """The current centres (k x d float64); none resident after."""
        self.drop()
        self.active = False
        q = self.lloyd.part.queue
        return self.buffers[self.current].get(q).reshape(self.lloyd.k, -1)
