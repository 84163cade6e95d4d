"""The device side of Gaussian-mixture EM: the E and M passes over one
DevicePartition (cluster/mixture/gmm_shards.py's GmmShards runs them over a
fit's rows), their kernels planned by gmm_specs.py.

Pairs with templates/gmm/gmm_estep.cl.mako (log-densities, log-sum-exp,
responsibilities), templates/gmm/gmm_mstep.cl.mako (per-component N, sums and
scatter about the current means; GPUs) and gmm_mstep_rowwise.cl.mako (the
same statistics, a work-item per component; CPUs).  Only the reduced float64
statistics leave the device; cluster/mixture/gmm.py and mdl.py do the
model's math.  An initialisation's one-hot responsibilities are made in
place by templates/gmm/gmm_onehot.cl.mako (from labels or from k rows).
"""
import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime import exact_fold, exact_sums
from ..runtime.reduce import enqueue_reduce, partial_buffer, totals_of
from ..runtime.transfer import PinnedStaging, wait
from .gmm_mma import (MmaEStepSpec, MmaMStepSpec, StageFlags, central, central_stats,
                      enqueue_central, enqueue_grid, means_of, mstep_size, own_spec, shift_of)
from .gmm_mma_full import MmaFullEStepSpec, enqueue_operands as enqueue_full_operands
from .gmm_mma_operands import enqueue_operands, full_layout
from .gmm_mstats_grid import MStatsGrid
from .gmm_specs import _estep_specs, _mstep_specs, _onehot_specs, plan, record_size, stats_size


# ------------------------------------------------------- passes on devices
class GmmPass:
    """The E and M kernels over one DevicePartition (components: at most k).
    Split-free (runtime.exact_sums.exact_device): the log-likelihood summed
    a fixed block of rows at a time (over ``lse``), the M kernel's chunks
    those blocks, their statistics folded exactly (estep_sums, mstep_sums:
    ExactWords; estep and mstep settle them)."""

    def __init__(self, part, k, full, specs=None, chunks=None, precision="float32",
                 mma_mstep=True):
        """specs: an (E-step, M-step) spec pair offered alone instead of the
        planners' lists (still checked and built; a harness runs every variant).
        chunks: the M kernel's chunks of rows where the sums are not
        split-free (default: enough work-groups for every compute unit, no
        more chunks than tiles of rows); split-free, they are the blocks.
        precision: the estimators' (lloyd_mma.PRECISIONS); the tensor-core
        kernels read it (gmm_mma.estep_specs, mstep_specs): 3xTF32 at
        "float32", one product at "tf32" and "bf16".  mma_mstep False: the
        portable M kernels alone (a fit whose devices do not all plan the tensor-core
        one: mma_mstep_planned)."""
        self.part, self.k, self.full = part, k, full
        q, p, dt = part.queue, part.profile, part.dtype
        esteps, msteps = (([specs[0]], [specs[1]]) if specs else
                          (_estep_specs(p, dt, part.d, full, k, precision),
                           _mstep_specs(p, dt, part.d, full, precision, mma_mstep)))
        self.espec, self.ekernel = plan(p, q, esteps, "gmm_estep")
        self.mspec, self.mkernel = plan(p, q, msteps, "gmm_mstep")
        self.groups = self._groups(self.espec)[0]
        # (the tensor-core E kernels' records in double)
        self.mma = isinstance(self.espec, (MmaEStepSpec, MmaFullEStepSpec))
        self.params = cla.empty(q, k * record_size(part.d, full), np.float64 if self.mma else dt)
        self.means = cla.empty(q, k * part.d, dt)
        self.lse = cla.empty(q, part.n, dt)
        self.labels = cla.empty(q, part.n, np.int32)
        self.part_ll = partial_buffer(q, self.groups, 1, part.acc_double)
        self.part_bad = cla.empty(q, self.groups, np.int32)
        self.resp = None
        # resp holds log-densities the tensor-core M kernel normalises as it
        # reads them (the E kernel's store_resp 2: one pass over n x k less)
        self.resp_log = False
        self.scales = None
        if self.mma:   # the GEMM form's operands, made on the device from double records
            kp, dp = self.espec.kp, self.espec.dp
            # diagonal: coefs, consts, shift; full: the packed records, shift
            sizes = (kp * full_layout(dp)[1], dp) if full else (kp * 2 * dp, kp, dp)
            self.operands = tuple(cla.empty(q, size, np.float32) for size in sizes)
            self.shift64 = cla.empty(q, dp, np.float64)   # (enqueue_operands)
            # a one-product kernel's re-check scales of its coefficient rows
            self.scales = cla.empty(q, kp * 2, np.float32) if self.espec.rechecks else None
        self.mma_m = isinstance(self.mspec, MmaMStepSpec)
        if self.mma_m:   # the M kernel's other sums are about a shift of its own,
            # its own sums about the means (float32): each row's own component
            # is its label when the responsibilities were made (self.own), the
            # own sums by a kernel of their own (gmm_mma_own.cl.mako)
            self.mshift = cla.empty(q, self.mspec.dp, np.float32)
            self.mmeans = cla.empty(q, k * self.mspec.dp, np.float32)
            self.own = cla.zeros(q, max(part.n, 1), np.int32)
            self.ospec, self.okernel = plan(p, q, [own_spec(part.d, k, self.mspec.precision)],
                                            "gmm_own")
            # exact totals rounded here are made central here (enqueue_central)
            self.mmeans64 = cla.empty(q, k * part.d, np.float64)
            self.mgrid_head = cla.empty(q, 2 + 2 * part.d, np.int32)   # ... their grid (enqueue_grid)
            self.stage_flags = StageFlags(q, self.mspec)   # (the stages it multiplies)
        else:
            self.own = self.labels   # (the one-hot kernel's output: unread)
        self.exact = exact_sums.exact_device(part)
        if self.exact:   # a chunk a block (a partition without rows: one, empty)
            self.block_rows = exact_sums.block_rows_of(part, k * self._mstats_size())
            chunks = max(1, exact_sums.blocks_of(part.n, self.block_rows))
            self.block_ll = cla.empty(q, chunks, np.float64)
            self.folds = {}   # by k (mdl.py's orders): the M statistics' exact folds
            self._shared_folds = {}   # ... their totals over several devices (total_mstats)
        elif chunks is None:
            target = p.compute_units * p.groups_per_compute_unit * (4 if p.type == "gpu" else 1)
            per_chunk = self.mspec.groups_per_chunk(k)
            chunks = int(max(1, min(-(-target // per_chunk), -(-part.n // self.mspec.tile))))
        self.chunks = chunks
        slabs = self.chunks * self.mspec.reps
        self.part_stats = partial_buffer(q, slabs, k * self._mstats_size(), part.acc_double)
        self.reduced = None   # the M statistics' float64 totals (not split-free)
        self.mvalues = None   # ... or their exact totals rounded on the device (em_launch)
        self.mcentral = None  # ... and those made central (the tensor-core kernel's)
        self._settled = self._settled_ll = False
        self.staging = PinnedStaging(q)   # uploads and reads (em_launch)
        # the M kernel's inputs go up beside the E kernel, on a queue of their own (em_launch)
        self.uploads = cl.CommandQueue(q.context, q.device)
        self.mstaging, self._m_ready = PinnedStaging(self.uploads), None
        # the exact fold's grid of the M statistics (its scratch, the rows' magnitudes)
        self.grid = MStatsGrid(part, self.block_rows, full, self.uploads) if self.exact else None

    def _mstats_size(self):
        """Reals per component of the M kernel's statistics."""
        return mstep_size(self.part.d) if self.mma_m else stats_size(self.part.d, self.full)

    def _groups(self, spec):
        """(persistent work-groups, tiles each): on a GPU four times the
        profile's groups per compute unit, so the E kernel's long per-point
        work keeps every multiprocessor busy to the end."""
        p = self.part.profile
        tiles = -(-self.part.n // spec.rows)
        groups = max(1, min(tiles, p.compute_units * p.groups_per_compute_unit *
                            (4 if p.type == "gpu" else 1)))
        return groups, -(-tiles // groups)

    def _resp(self, k):
        if self.resp is None:
            self.resp = cla.empty(self.part.queue, self.k * self.part.n, self.part.dtype)
        return self.resp

    def estep(self, records, store_resp=True):
        """Run the E kernel for the k x CP *records*; (sum of log p(x), bad rows)."""
        ll, bad = self.estep_sums(records, store_resp)
        return float(exact_sums.settle(ll)), bad

    def estep_sums(self, records, store_resp=True, for_mstep=False):
        """estep's (sum of log p(x), bad rows), the sum exact
        (exact_sums.ExactWords: the rows' lse a block at a time; a bad
        row's is in it, but the fit stops on any) where split-free.
        *for_mstep*: the responsibilities are read by mstep alone, which
        (both kernels the tensor-core ones) normalises the log-densities
        as it reads them: the same statistics, bit for bit."""
        events, params = self._estep_put(records)
        self._settled_ll = False
        wait(events + self._estep_enqueue(records.shape[0], params, store_resp, for_mstep))
        return self._estep_result()

    def mstep(self, means):
        """The M kernel on the responsibilities in place: k x SZ float64 stats."""
        stats, raw = self.mstep_sums(means)
        return central(exact_sums.settle(stats), means, raw)

    def mstep_sums(self, means, settle=False):
        """(the M kernel's statistics, raw): split-free, exact
        (exact_sums.ExactWords; *settle*: rounded on the device, as
        em_launch's) and, from the tensor-core kernel, its raw sums (*raw*
        True: made central once summed, ``central``); else k x SZ float64
        about the means."""
        wait(self._mstep_put(means) + self._mstep_enqueue(means, settle))
        return self._mstep_result()

    def em_launch(self, records, means, settle=False):
        """One EM pass (estep_sums(records, for_mstep=True), then
        mstep_sums(means)) enqueued, its uploads and reads through
        page-locked memory, not waited on (flushed: it starts now): what
        em_collect() waits for.  Several devices' passes are launched one
        after another from one thread, then collected.  *settle*: this
        partition is the fit's only one, so its exact M statistics are
        rounded to float64 on the device (exact_fold.Fold.enqueue_value:
        the bits ExactWords.value() gives) and only those are read."""
        # the E kernel's uploads first, while the queue is idle: on NVIDIA's
        # runtime a write enqueued behind a kernel waits for it, page-locked
        # and non-blocking as it is (a GMM's M grid behind its E and M kernels
        # ran four H200s' passes one by one); the M kernel's, on a queue of
        # their own, made and sent while the E kernel runs
        events, params = self._estep_put(records)
        events += self._estep_enqueue(records.shape[0], params, True, True)
        self.part.queue.flush()
        events += self._mstep_put(means)
        events += self._mstep_enqueue(means, settle)
        self._settled_ll = settle
        self.part.queue.flush()
        return events

    def em_collect(self, events, mstats=True):
        """(sum of log p(x), bad rows, M statistics, raw) of em_launch's pass;
        *mstats* False: the statistics None, their words left as read
        (mstats_words: one device totals every device's, total_mstats)."""
        wait(events)
        if not mstats:
            return (*self._estep_result(), None, self.mma_m)
        return (*self._estep_result(), *self._mstep_result())

    def mstats_words(self, k):
        """The words of the M statistics of *k* components the last
        em_launch read (split-free, not settled; page-locked, in the
        device's layout): until the next launch."""
        return self.staging.read("mstats", self.folds[k].out.size)

    def total_mstats(self, k, words, own):
        """Every device's M statistics of *k* components (*words*: their
        mstats_words, on this pass's grid, in chunk order; this device's at
        *own*, still in its fold) added and rounded on this device (the bits
        of ExactWords.total(...).value()) and, from the tensor-core kernel,
        made central there: k x SZ float64, as central() gives them from
        the host's total.  The host adds none
        of them (2 x H200, diag 1M x 128, K = 1024: its total of two
        devices' 1024 x 514 statistics took ~27 ms an iteration)."""
        fold, q = self.folds[k], self.part.queue
        if k not in self._shared_folds:
            self._shared_folds[k] = exact_fold.SharedFold(fold)
        shared = self._shared_folds[k]
        if self.mvalues is None:
            self.mvalues = cla.empty(q, self.k * self._mstats_size(), np.float64)
        shared.enqueue_total(words, own, self.mvalues)
        values, size = self._central_values(k)
        wait([self.staging.get("mtotal", values, size)])
        shared.wait_writes()   # (done: before the read, on this queue)
        return self.staging.read("mtotal", size).reshape(k, -1).copy()

    def _central_values(self, k):
        """(device array, count) of the M statistics of *k* components
        rounded on the device (mvalues), made central there where they are
        the tensor-core kernel's raw sums (about the means _mstep_put sent):
        what the host reads, the statistics central() gives."""
        if not self.mma_m:
            return self.mvalues, k * self._mstats_size()
        size = k * stats_size(self.part.d, False)
        if self.mcentral is None:   # (the largest k's, as mvalues)
            self.mcentral = cla.empty(self.part.queue, self.k * stats_size(self.part.d, False),
                                      np.float64)
        spec = self.mspec
        enqueue_central(self.part.queue, self.mvalues, k, self.part.d, spec.dp,
                        self.mmeans64, self.mshift, self.mmeans, self.mcentral)
        return self.mcentral, size

    def _estep_put(self, records):
        """The E kernel's parameters going up: (the copies' events, the
        kernel's parameter arguments)."""
        part, stage, spec = self.part, self.staging, self.espec
        put = stage.put("params", self.params, np.asarray(records, self.params.dtype))
        if self.mma and self.full:
            enqueue_full_operands(part.queue, self.params, records.shape[0], part.d, spec.dp,
                                  spec.kp, self.shift64, self.operands)
            return [put], tuple(a.data for a in self.operands)
        if self.mma:
            enqueue_operands(part.queue, self.params, records.shape[0], part.d, spec.dp, spec.kp,
                             self.shift64, self.operands, self.scales)
            scales = () if self.scales is None else (self.scales.data,)
            return [put], tuple(a.data for a in self.operands) + scales
        return [put], (self.params.data,)

    def _estep_enqueue(self, k, params, store_resp, for_mstep):
        """The E kernel over *k* components (*params*: _estep_put's) and its
        reads enqueued: the reads' events."""
        part, q, stage, spec = self.part, self.part.queue, self.staging, self.espec
        events = []
        groups, tiles = self._groups(spec)
        # (not written; a one-product kernel's re-check reads its values there)
        resp = self._resp(k) if store_resp or self.scales is not None else self.lse
        self.resp_log = bool(store_resp and for_mstep and self.mma and self.mma_m)
        mode = 2 if self.resp_log else int(bool(store_resp))
        self.ekernel(q, (groups * spec.wg,), (spec.wg,), part.x.data, np.int64(part.n),
                     np.int64(part.stride), *params, np.int32(k), self.lse.data,
                     self.labels.data, np.int32(mode), resp.data,
                     self.part_ll.data, self.part_bad.data, np.int64(tiles))
        if store_resp and self.mma_m and part.n:   # the rows' own components
            cl.enqueue_copy(q, self.own.data, self.labels.data, byte_count=part.n * 4)
        events.append(stage.get("bad", self.part_bad, groups))
        if self.exact:
            exact_fold.enqueue_block_sums(q, self.lse, None, part.n, self.block_rows,
                                          self.block_ll)
            events.append(stage.get("ll", self.block_ll,
                                    exact_sums.blocks_of(part.n, self.block_rows)))
        else:
            events.append(stage.get("ll", self.part_ll, groups * (1 if part.acc_double
                                                                  else 2)))
        return events

    def _estep_result(self):
        part, stage = self.part, self.staging
        groups = self._groups(self.espec)[0]
        bad = int(stage.read("bad", groups).sum())
        if self.exact:
            blocks = exact_sums.blocks_of(part.n, self.block_rows)
            sums = stage.read("ll", blocks)
            if self._settled_ll:   # em_launch's *settle*
                return exact_sums.rounded_sum(sums), bad
            return exact_sums.ExactWords.of_values(sums), bad
        ll = stage.read("ll", groups * (1 if part.acc_double else 2)).astype(np.float64)
        ll = ll[:groups].sum() - (0 if part.acc_double else ll[groups:2 * groups].sum())
        return float(ll), bad

    def _mstep_put(self, means):
        """The M kernel's means (about which it sums) and its exact fold's
        grid going up on the uploads queue, whose last copy the M kernel
        waits for (_m_ready): the copies' events."""
        part, spec, up, stage = self.part, self.mspec, self.uploads, self.mstaging
        k = means.shape[0]
        if self.exact and k not in self.folds:
            self.folds[k] = exact_fold.Fold(part.queue, (k, self._mstats_size()))
        if self.mma_m:   # about the shift and about the means (float32)
            shift, means32 = shift_of(means, spec.dp), means_of(means, spec.dp)
            self._about = means, shift, means32
            events = [stage.put("mshift", self.mshift, shift),
                      stage.put("mmeans", self.mmeans, means32)]
            if self.exact:   # the grid of the own sums from the means, on the device
                events += [stage.put("mmeans64", self.mmeans64, means),
                           stage.put("mgrid_head", self.mgrid_head, self.grid.head(shift))]
                absmax, scale = self.grid.scale()
                events.append(enqueue_grid(up, self.mmeans64, k, part.d, absmax, scale,
                                           self.mgrid_head, self.folds[k].lsb_dev))
                self.folds[k].grid_enqueued()
        else:
            self._about = means, None, None
            events = [stage.put("means", self.means, np.asarray(means, part.dtype))]
            if self.exact:
                events.append(self.folds[k].set_lsb(self.grid.portable(means), stage))
        events = [e for e in events if e is not None]
        self._m_ready = events[-1:]   # (the queue's last: the M kernels wait for it)
        up.flush()
        return events

    def _mstep_enqueue(self, means, settle=False):
        """The M kernel (its inputs put by _mstep_put) and its reads
        enqueued: the reads' events (*settle*: em_launch's)."""
        part, q, spec, stage = self.part, self.part.queue, self.mspec, self.staging
        k = means.shape[0]
        events = []
        rows = self.block_rows if self.exact else -(-part.n // self.chunks)
        if self.mma_m:
            # the own entries of the same slabs, on the uploads queue after the
            # means it sums about and the E step (a marker here), beside the
            # stage flags and the GEMM kernel, which write the other entries
            ospec, e_done = self.ospec, cl.enqueue_marker(q)
            own_done = self.okernel(
                self.uploads, (self.chunks * ospec.groups_per_chunk(k) * ospec.wg,), (ospec.wg,),
                part.x.data, np.int64(part.n), np.int64(part.stride), self._resp(k).data,
                self.lse.data, np.int32(self.resp_log), self.mmeans.data, self.own.data,
                np.int32(k), np.int64(rows), self.part_stats.data, wait_for=[e_done])
            self.uploads.flush()
            # (and the stages the GEMM kernel multiplies: gmm_mma.StageFlags)
            flags, words = self.stage_flags.enqueue(self._resp(k), self.lse, int(self.resp_log),
                                                    self.own, part.n, k, rows, self.chunks)
            about = (self.lse.data, np.int32(self.resp_log), self.mshift.data, self.own.data,
                     flags.data, np.int64(words))
        else:
            about = (self.means.data,)
        ready = self._m_ready
        self.mkernel(q, (self.chunks * spec.groups_per_chunk(k) * spec.wg,), (spec.wg,),
                     part.x.data, np.int64(part.n), np.int64(part.stride), self._resp(k).data,
                     *about, np.int32(k), np.int64(rows), self.part_stats.data, wait_for=ready)
        if self.mma_m:   # the slabs' sums read once the own entries are in too
            cl.enqueue_barrier(q, wait_for=[own_done])
        # the kernel packs the slabs for this k (Kahan: then the compensations)
        self._settled = bool(settle and self.exact)
        if self.exact:
            fold = self.folds[k]
            fold.enqueue(self.part_stats, self.chunks * spec.reps)
            if self._settled:   # (the largest k's: mdl.py's orders only shrink it)
                if self.mvalues is None:
                    self.mvalues = cla.empty(q, self.k * self._mstats_size(), np.float64)
                fold.enqueue_value(self.mvalues)
                events.append(stage.get("mstats", *self._central_values(k)))
            else:
                events.append(stage.get("mstats", fold.out))
        else:
            size = k * self._mstats_size()
            if self.reduced is None:   # for the largest k (mdl.py's orders only shrink it)
                self.reduced = partial_buffer(q, 1, self.k * self._mstats_size(), part.acc_double)
            enqueue_reduce(q, self.part_stats, self.chunks * spec.reps, size, part.dtype,
                           part.acc_double, self.reduced)
            events.append(stage.get("mstats", self.reduced))
        return events

    def _mstep_result(self):
        part, stage = self.part, self.staging
        means, shift, means32 = self._about
        k = means.shape[0]
        if self._settled:   # central (_central_values); a copy: the array is read into again
            return stage.read("mstats", k * stats_size(part.d, False) if self.mma_m
                              else k * self._mstats_size()).reshape(k, -1).copy(), False
        if self.exact:
            fold = self.folds[k]
            return fold.words(stage.read("mstats", fold.out.size)), self.mma_m
        stats = totals_of(stage.read("mstats", self.reduced.size), k * self._mstats_size(),
                          part.acc_double).reshape(k, -1)
        return (central_stats(stats, means, shift, means32) if self.mma_m else stats), False

    def set_resp(self, rows, start=0):
        """Responsibilities of rows start.. from the host (b x k), into their
        columns of the component-major buffer (one rectangular copy)."""
        part, (b, k) = self.part, rows.shape
        item = part.dtype.itemsize
        self.resp_log = False
        block = np.ascontiguousarray(rows.T, part.dtype)   # k x b
        if self.mma_m and b:   # each row's own component: its largest responsibility
            cl.enqueue_copy(part.queue, self.own.data, block.argmax(axis=0).astype(np.int32),
                            dst_offset=start * 4)
        cl.enqueue_copy(part.queue, self._resp(k).data, block,
                        buffer_origin=(start * item, 0), host_origin=(0, 0),
                        region=(b * item, k), buffer_pitches=(part.n * item,),
                        host_pitches=(b * item,))

    def onehot(self, k, labels):
        """One-hot responsibilities of k components made on the device from
        each row's *labels* (a device int32 array of the n rows)."""
        part, q = self.part, self.part.queue
        if part.n == 0:   # (a rank without rows: no kernel of no work-items)
            return
        self.resp_log = False
        spec, kern = plan(part.profile, q, _onehot_specs(part.profile, part.dtype), "gmm_onehot")
        kern(q, (-(-part.n // spec.wg) * spec.wg,), (spec.wg,), self._resp(k).data,
             np.int64(part.n), np.int32(k), labels.data, self.own.data)
