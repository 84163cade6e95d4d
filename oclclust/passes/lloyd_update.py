"""The k-means centre update on the device (templates/lloyd_update/*.cl.mako).

On a single resident chunk with double precision, an iteration of KMeans's
Lloyd loop keeps the centres on the device: after the Lloyd pass
(lloyd.LloydPass) the partial sums are reduced there (runtime/reduce.py's
kernel, its order), the new centres computed in float64 as
cluster.empty_clusters.centers_update computes them, with the next pass's inputs
(rounded centres in the variant's layout, their norms as
lloyd.center_norms sums them), and one work-group sums the shift and the
inertia in numpy's pairwise order and counts the changed and non-finite
rows and the empty clusters (and a fast precision's re-checked rows).
The host reads those six numbers, on a queue of its own into page-locked
memory, and uploads nothing.  The shift and inertia are np.sum's bits, so
the host's convergence test on them and history_ are the host update's;
an iteration with an empty cluster or a non-finite row is the host's (its
statistics read from the device, where the pass ahead overwrote them from
the copies made before it, or from the pass run again over the same
centres where none were made).

The next iteration is enqueued before this one's numbers are read (one
ahead, speculatively); a stop or the host's iteration drops it and puts
back the labels it overwrote (ResidentCenters).

Split-free (the pass's ``exact``: runtime/exact_sums.py), the sums and
weights are the pass's exact folds' words, which new_centers rounds as
ExactWords.value() rounds them on the host (common/exact_words.cl.mako), so
the centres are the host update's bit for bit; the inertia is the exact
sum of the pass's block sums, which the host reads with the six numbers (one
copy a slot) and folds (exact_sums.rounded_sum: ExactWords.of_values
rounded), as the host path does.  An iteration's launches are the pass's,
its folds and block sums, the update and the summary ("mma": the centres'
split); a small fit's iteration is bound by them (about 15 us of host time
each on an H200's host), so there one work-group makes all but the pass's
in one launch, with their code (GroupUpdateSpec).
"""
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime.codegen import own_kernel
from ..runtime.exact_sums import blocks_of, rounded_sum
from ..runtime.kernel_recorder import note
from ..runtime.reduce import ReduceSpec
from ..runtime.transfer import PinnedStaging
# the same condition as the ensemble's: one chunk, one rank, fp64
from .ensemble_update import centers_can_stay_resident  # noqa: F401
from .lloyd import LloydStats
from .lloyd_mma import split_args, split_plan
from .lloyd_update_specs import (CHANGED, EMPTY, GROUP_INERTIA_ARG, GROUP_RESULTS_ARG, INERTIA,
                                 NONFINITE, RECHECKED, RESULTS, SHIFT, CentersSpec,
                                 SummarySpec, group_update_spec, summary_work_group,
                                 update_work_group)


def default_depth(part, k):
    """Iterations enqueued ahead of the one read: a GPU's short passes
    (n x d x k under 2^27) are shorter than their launches, so several are
    queued and read a few at a time; a long pass hides one read (and a
    stop wastes the passes ahead).  A CPU runtime's passes share its cores
    with the host: none ahead.  There a pass ahead saved nothing and was
    lost at every stop and flagged iteration (one empty cluster: two
    passes), and its read, on a queue of its own, took a core from the pass
    on Intel's runtime: small and large fits alike ran slower with one
    ahead than without (PoCL's no faster)."""
    if part.profile.type == "cpu":
        return 0
    return 1 if part.n * part.d * k >= 1 << 27 else 6


class ResidentCenters:
    """The centres of one LloydPass (with the update) kept on its device.

    ``start(centers, labels)`` uploads them (the host's are current); each
    ``step(ahead)`` runs the pass over them and the update, and returns
    (LloydStats without sums, shift, whether the host must take this
    iteration: an empty cluster or a non-finite row).  Unflagged, the new
    centres are the current ones; flagged, the current ones stay this
    iteration's, and ``stats(centers)`` gives the pass's full statistics.

    Up to *depth* iterations are enqueued ahead of the one read
    (speculatively, at most *ahead* a step; one at a fit's first step, then
    twice as many each step: ``reach``), so the device does not wait
    for the host's reads and decisions, and their numbers are read a few
    iterations at a time (one copy into page-locked memory, on a queue of
    its own where passes are ahead).  The passes ahead overwrite the
    labels, distances and sums of the one read: when the fit stops at an
    iteration with no label changed, the passes after it are over the same
    centres (the same labels give the same sums, bit for bit) and leave the
    same labels and distances; a stop on the shift is followed by a pass
    over the final centres anyway (the labels; KMeans' finish); and a
    flagged iteration's labels, distances and statistics are the copies
    made before the pass ahead (``kept_rows``: one pass ahead, unweighted
    rows) or else come from its pass run again over its centres (``stats``;
    its changed-label count is the one read).  *depth* + 2 centre buffers
    turn in a ring (the current centres, each pending iteration's output),
    and 2 (depth + 1) result slots.

    Split-free, the update rounds the pass's own folds' words into ``sums``
    and ``weights``; with *totals* the caller writes the totals there
    instead (passes.lloyd_shared: several devices' words added).

    Its buffers, queue and kernel objects (arguments bound once) are one
    fit's at a time; cluster.kmeans.lloyd_shards pools them across fits."""

    def __init__(self, lloyd_pass, depth=1, totals=False):
        self.lloyd = lp = lloyd_pass
        part, spec, q = lp.part, lp.spec, lp.part.queue
        ctx, k, d = q.context, lp.k, part.d
        self.depth = depth
        self.reach = 1   # the most enqueued ahead at the next step (start, step)
        self.buffers = [cla.empty(q, k * d, np.float64) for _ in range(depth + 2)]
        self.sums = cla.empty(q, k * d, np.float64)
        self.weights = cla.empty(q, k, np.float64)
        self.moved = cla.empty(q, k * d, np.float64)
        self.n_slots = 2 * (depth + 1)
        # a slot: the block sums of an iteration's inertia (split-free), then
        # its six numbers, in one buffer read by one copy (each enqueued copy
        # costs the host ~15 us on an H200's: a small fit's iteration is its
        # launches); buffers of their own, not sub-buffers of one (NVIDIA's
        # runtime failed fits and crashed at exit with those)
        blocks = lp.blocks if lp.exact else 0
        self.results_at = -(-blocks // RESULTS)   # the summaries' slot argument: 6 x it on
        size = (self.results_at + 1) * RESULTS
        self.slots = [cla.empty(q, size, np.float64) for _ in range(self.n_slots)]
        self.block_inertia = self.slots if blocks else []   # written from the start
        # page-locked, from the process's pool (a pass over more rows than
        # lloyd_shards pools is made anew each fit)
        self.staging = PinnedStaging(q)
        self.host_slots = self.staging.host("slots", self.n_slots * size,
                                            np.float64).reshape(self.n_slots, size)
        self.host_results = self.host_slots[:, self.results_at * RESULTS:]
        self.host_inertia = self.host_slots[:, :blocks]
        # the read on a queue of its own holds no pass ahead back; with none
        # ahead, on the pass's queue (see default_depth)
        self.reader = cl.CommandQueue(ctx, q.device) if depth else q
        self.active = False
        self.current = 0
        # enqueued iterations not consumed: [target buffer, slot, done event, read event]
        self.pending = []
        self.clobbered = False   # a pass ran after the last read one (flagged: see stats)
        self.labels = None
        # copies of an iteration's labels, distances, sums and weights made
        # before the pass ahead overwrites them (None: run again): a flagged
        # iteration ran its pass twice more (the pass ahead, then again: 66 ms
        # each, 10M x 128 x 1024 on an H200).  Where one pass runs ahead (a
        # pass longer than its launch) over unweighted rows: DeviceManager.budget
        # keeps 4 + 3 items a row for the rows' state, of which labels and
        # distances take 4 + 1 (weights, where there are, one more)
        self.kept_rows = None
        if depth == 1 and not part.weighted:
            self.kept_rows = (cla.empty(q, part.n, np.int32),
                              cla.empty(q, lp.min_dist.size, lp.min_dist.dtype),
                              cla.empty(q, k * d, np.float64), cla.empty(q, k, np.float64))
        wg = update_work_group(part.profile)
        # tiled: K x D; rowwise, gemm: D x KP (gemm also the rows); blocked:
        # panels of D x cv * vw (and the rows); mma: the rows, which
        # split_centers lays out in its fragments' order
        layout = ("columns" if spec.variant in ("rowwise", "gemm") else
                  "panels" if spec.variant == "blocked" else "rows")
        self.centers_spec = CentersSpec(dtype=part.dtype.name, acc_double=True, d=d, k=k,
                                        kp=spec.kp, layout=layout,
                                        cb=spec.cv * spec.vw if layout == "panels" else 1,
                                        rows=spec.variant in ("gemm", "blocked"), wg=wg,
                                        words=lp.exact and not totals)
        # the buffers new_centers writes: (layout, rows; unwritten without rows)
        layout_buf, rows_buf = ((lp.center_rows, lp.center_rows) if spec.variant == "mma" else
                                (lp.centers, lp.center_rows if spec.variant in ("gemm", "blocked")
                                 else lp.centers))
        self.summary_spec = ss = SummarySpec(dtype=part.dtype.name, acc_double=True, k=k,
                                             wg=summary_work_group(part.profile))
        self.last = None
        # the launches, their arguments bound once: the reductions, the
        # update from each ring buffer into the next, the summary into each slot
        rs = ReduceSpec(dtype=part.dtype.name, acc_double=True)
        self.reduces = []
        for partial, size, out in () if lp.exact else ((lp.part_sums, k * d, self.sums),
                                                       (lp.part_weights, k, self.weights)):
            kern = own_kernel(ctx, rs, "reduce_partials")
            kern.set_args(partial.data, np.int64(lp.partials), np.int64(size), out.data)
            self.reduces.append((kern, (-(-size // 64) * 64,), (64,)))
        cs = self.centers_spec
        # small fits: the update by one work-group (none of the kernels
        # below), a kernel object from each ring buffer (the slot's block
        # sums and number set at each launch)
        self.group_spec = gs = group_update_spec(lp, cs)
        # split-free: the folds' words and grids, which the update rounds
        words = (() if not cs.words else
                 tuple(buf.data for name in ("sums", "weights")
                       for buf in (lp.folds[name].out, lp.folds[name].lsb_dev)))
        self.updates = []
        for i, old in enumerate(() if gs else self.buffers):
            kern = own_kernel(ctx, cs, "new_centers")
            kern.set_args(self.sums.data, self.weights.data, old.data,
                          self.buffers[(i + 1) % len(self.buffers)].data, self.moved.data,
                          layout_buf.data, rows_buf.data, lp.norms.data, *words)
            self.updates.append(kern)
        self.update_size = ((-(-k // cs.wg) * cs.wg,), (cs.wg,))
        self.groups = []
        for i, old in enumerate(self.buffers if gs else ()):
            kern = own_kernel(ctx, gs, "update_group")
            folds = lp.folds["sums"], lp.folds["weights"]
            rechecked = lp.part_rechecked if spec.rechecks else lp.part_flags   # unread: 0
            kern.set_args(
                lp.min_dist.data, np.int64(part.n), np.int64(lp.block_rows),
                lp.block_inertia.data, lp.part_sums.data, lp.part_weights.data,
                np.int64(lp.partials), folds[0].out.data, folds[0].lsb_dev.data,
                folds[1].out.data, folds[1].lsb_dev.data, self.sums.data, self.weights.data,
                old.data, self.buffers[(i + 1) % len(self.buffers)].data, self.moved.data,
                layout_buf.data, rows_buf.data, lp.norms.data, lp.part_inertia.data,
                lp.part_flags.data, np.int64(lp.groups), rechecked.data,
                np.int64(lp.groups if spec.rechecks else 0), self.slots[0].data,
                np.int64(self.results_at),
                *(split_args(spec, lp.center_rows, lp.centers, lp.center_rounding)[1:]
                  if gs.split else ()))
            self.groups.append(kern)
        self.summaries = []
        for slot in range(0 if gs else self.n_slots):
            kern = own_kernel(ctx, ss, "summarize")
            rechecked = lp.part_rechecked if spec.rechecks else lp.part_flags   # unread: 0
            kern.set_args(self.moved.data, np.int64(k * d), lp.part_inertia.data,
                          lp.part_flags.data, np.int64(lp.groups), rechecked.data,
                          np.int64(lp.groups if spec.rechecks else 0), self.weights.data,
                          self.slots[slot].data, np.int64(self.results_at))
            self.summaries.append(kern)
        self.pass_kernels = {}   # (spec, name) -> its kernel object, bound in start
        self.launches = self.kept = None
        # mma: the new centres split in its fragments' order (by the group's
        # launch where there is one)
        self.split = None
        # the update's kernels, noted again by each fit that starts this
        # (pooled) state: kernel_recorder.note
        self.reduce_spec, self.update_specs = rs, (gs,) if gs else (cs, ss)
        if spec.variant == "mma" and not gs:
            split, global_size, local_size = split_plan(spec)
            kern = own_kernel(ctx, split, "split_centers")
            kern.set_args(*split_args(spec, lp.center_rows, lp.centers, lp.center_rounding))
            self.split = (kern, global_size, local_size)
            self.update_specs += (split,)

    def start(self, centers, labels):
        """Upload *centers* (k x d float64): the pass's inputs and the
        update's; the pass reads and writes *labels* (this fit's rows: the
        pass's arguments bound here)."""
        q = self.lloyd.part.queue
        reduce = () if self.lloyd.exact else (self.reduce_spec,)   # exact: fetched (noted)
        note(q.context, *reduce, *self.update_specs, *self.lloyd.kernel_specs())
        self.drop()
        self.bind(labels)
        self.lloyd.upload(centers)   # from the pass's own page-locked arrays
        # no wait for this copy: its host array kept until the first read
        self.kept = np.ascontiguousarray(centers, np.float64).ravel()
        self.buffers[0].set(self.kept, q, async_=True)
        self.current = 0
        self.next_slot = 0
        self.active = True
        self.clobbered = False
        # the first step enqueues one iteration ahead, not depth: each costs the
        # host its launches (a small fit's first step took 1.2-1.7 ms with six
        # ahead on an H200, its median step 0.14-0.29 ms), and a fit that stops
        # early leaves the device the ones ahead to finish
        self.reach = 1

    def bind(self, labels):
        """The pass's kernels (its own objects) bound to read and write
        *labels*: ``launches``, enqueued without building an argument."""
        q = self.lloyd.part.queue
        self.labels = labels
        self.launches = []
        for spec, name, global_size, local_size, args in self.lloyd.launches(labels):
            if (spec, name) not in self.pass_kernels:
                self.pass_kernels[spec, name] = own_kernel(q.context, spec, name)
            kern = self.pass_kernels[spec, name]
            kern.set_args(*args)
            self.launches.append((kern, global_size, local_size))

    def enqueue_pass(self):
        """The bound pass (``bind``) enqueued, and its reductions."""
        q = self.lloyd.part.queue
        for kern, global_size, local_size in self.launches + self.reduces:
            cl.enqueue_nd_range_kernel(q, kern, global_size, local_size)

    def _enqueue(self):
        """The pass and update of the iteration after the last enqueued."""
        q = self.lloyd.part.queue
        source = self.pending[-1][0] if self.pending else self.current
        target = (source + 1) % len(self.buffers)
        slot = self.next_slot
        self.next_slot = (slot + 1) % self.n_slots
        if self.kept_rows is not None and self.pending:   # a pass ahead of an unread one
            self._keep(self.kept_rows, (self.labels, self.lloyd.min_dist, self.sums,
                                        self.weights))
        self.enqueue_pass()
        lp = self.lloyd
        if self.groups:   # the whole update in one launch
            lp.set_grids()
            kern, wg = self.groups[source], self.group_spec.wg
            kern.set_arg(GROUP_INERTIA_ARG, self.block_inertia[slot].data)
            kern.set_arg(GROUP_RESULTS_ARG, self.slots[slot].data)
            done = cl.enqueue_nd_range_kernel(q, kern, (wg,), (wg,))
        else:
            if lp.exact:   # the folds, which new_centers rounds
                lp.enqueue_exact(self.block_inertia[slot])
            self.new_centers(source)
            ss = self.summary_spec
            done = cl.enqueue_nd_range_kernel(q, self.summaries[slot], (ss.wg,), (ss.wg,))
        self.pending.append([target, slot, done, None])

    def _read(self, count):
        """The reads of the first *count* pending iterations' slots not read
        yet."""
        todo = [p for p in self.pending if p[3] is None][:count]
        self.lloyd.part.queue.flush()   # the reader waits for them
        for p in todo:   # an in-order queue: the last read waits for them all
            read = cl.enqueue_copy(self.reader, self.host_slots[p[1]], self.slots[p[1]].data,
                                   wait_for=[todo[-1][2]], is_blocking=False)
        for p in todo:
            p[3] = read

    def step(self, ahead=0):
        """One pass over the current centres and the update: (LloydStats
        with no sums, shift, flagged); up to *ahead* (at most depth) more
        iterations are enqueued first."""
        want = 1 + min(self.depth, ahead, self.reach)
        self.reach = min(self.depth, 2 * self.reach)
        while len(self.pending) < want:
            self._enqueue()
        if self.pending[0][3] is None:    # read half the pending ones: the rest keep it busy
            self._read(-(-len(self.pending) // 2) if self.depth > 1 else 1)
        target, slot, _, read = self.pending.pop(0)
        read.wait()
        self.kept = None   # the queue has passed start's copies
        got = self.host_results[slot].tolist()
        if self.lloyd.exact:   # the host path's exact inertia
            lp = self.lloyd
            got[INERTIA] = rounded_sum(
                self.host_inertia[slot][:blocks_of(lp.part.n, lp.block_rows)])
        self.last = LloydStats(None, None, got[INERTIA], int(got[CHANGED]),
                               int(got[NONFINITE]), int(got[RECHECKED]))
        flagged = bool(got[EMPTY]) or self.last.n_nonfinite > 0
        self.clobbered = bool(self.pending)
        if flagged:
            self.drop()
        else:
            self.current = target
        return self.last, got[SHIFT], flagged

    def new_centers(self, source):
        """Enqueue the update of ring buffer *source*'s centres into the
        next one from the reduced sums and weights, and the next pass's
        inputs from the new centres."""
        q = self.lloyd.part.queue
        cl.enqueue_nd_range_kernel(q, self.updates[source], *self.update_size)
        if self.split is not None:
            cl.enqueue_nd_range_kernel(q, *self.split)

    def drop(self):
        """Forget the iterations enqueued ahead (they still run, in order,
        before anything enqueued after them)."""
        if not self.pending:
            return
        self.reader.finish()    # no read left writing the page-locked slots
        self.pending = []

    def stats(self, centers):
        """The last read pass's LloydStats with its sums and weights (as
        LloydPass.run returns them), its distances and labels in the pass's
        buffers; *centers*: its centres (centers_to_host's).  Where a pass
        ran after it (rare: flagged iterations), its kept copies come back,
        or where none were kept it runs again over them."""
        lp, q = self.lloyd, self.lloyd.part.queue
        sums, weights = self.sums, self.weights
        if self.clobbered and self.kept_rows is None:
            again = lp.run(centers, self.labels)
            return dataclasses.replace(self.last, sums=again.sums, weights=again.weights)
        if self.clobbered:   # the kept copies back where the pass ahead wrote
            kept_labels, kept_dist, sums, weights = self.kept_rows
            self._keep((self.labels, lp.min_dist), (kept_labels, kept_dist))
            self.clobbered = False
        return dataclasses.replace(self.last, sums=sums.get(q).reshape(lp.k, -1),
                                   weights=weights.get(q))

    def _keep(self, targets, sources):
        """Device copies of *sources* into *targets* (device arrays), in
        the pass's queue's order."""
        q = self.lloyd.part.queue
        for target, source in zip(targets, sources):
            cl.enqueue_copy(q, target.data, source.data, byte_count=source.nbytes)

    def centers_to_host(self):
        """The current centres (k x d float64); none resident after."""
        self.drop()
        self.active = False
        q = self.lloyd.part.queue
        return self.buffers[self.current].get(q).reshape(self.lloyd.k, -1)
