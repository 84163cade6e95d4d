"""The split-free sums' device side (runtime/exact_sums.py the host's):
each statistic's block partials folded into exact words on the device
(Fold: templates/runtime/exact_fold.cl.mako, its words rounded by
exact_value.cl.mako for a device-resident update), one value a block summed
(block_sums.cl.mako), and the rows' column magnitudes the grids are cut
from (column_absmax.cl.mako)."""
import dataclasses
import functools
import math

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from .codegen import Spec, c_type, kernel
from .kernel_recorder import active_recorders, note
from .exact_sums import ARRAY_WORDS, ExactWords, blocks_of, lsb_for_bounds
from .transfer import PinnedStaging, wait

FOLD_ITEMS = 2048              # a fold's work-items a compute unit (latency hidden)
FOLD_BLOCKS = 1 << 13          # a fold's blocks a work-item: its double words stay exact
FOLD_ALONE = 64                # blocks a work-item folds alone rather than in parts: a
#                                second launch costs more than that loop (the same words)


def magnitudes_of(part):
    """(max |x| of each column, max weight) over all the fit's rows: what a
    pass bounds its partials with.  A ShardedPass sets them on its chunks
    (all chunks and ranks: the same grid everywhere); a partition of its
    own measures its rows."""
    if part.magnitudes is None:
        wmax = 1.0 if part.weights is None else float(
            _absmax(part, part.weights, part.n, 1, 1)[0])
        part.magnitudes = (_absmax(part, part.x, part.n, part.d, part.stride), wmax)
    return part.magnitudes



@dataclasses.dataclass(frozen=True)
class ExactFoldSpec(Spec):
    template = "runtime/exact_fold.cl.mako"
    dtype: str = "float64"


@dataclasses.dataclass(frozen=True)
class ExactValueSpec(Spec):
    template = "runtime/exact_value.cl.mako"
    build_options = ()    # IEEE products and sums: ExactWords.value()'s bits
    dtype: str = "float64"


@dataclasses.dataclass(frozen=True)
class BlockSumsSpec(Spec):
    """``weight_dtype``: the weights' type ("": the values'; k-means++'s
    float64 distances of float32 rows have float32 weights)."""
    template = "runtime/block_sums.cl.mako"
    weighted: bool = False
    weight_dtype: str = ""

    def template_args(self):
        args = super().template_args()
        args["weight_t"] = c_type(self.weight_dtype or self.dtype)
        return args


@dataclasses.dataclass(frozen=True)
class ColumnAbsmaxSpec(Spec):
    template = "runtime/column_absmax.cl.mako"
    d: int = 1
    wg: int = 1


# one spec of each (a spec made and hashed a launch was a fold's host work)
FOLD_SPEC = ExactFoldSpec()
VALUE_SPEC = ExactValueSpec(acc_double=True)


def fold_parts(blocks, size, units):
    """The parts a fold of *blocks* partials of *size* elements is made in
    on a device of *units* compute units: one up to FOLD_ALONE blocks; else
    enough for FOLD_ITEMS work-items a unit, and so that no work-item folds
    more than FOLD_BLOCKS, but no more than about the square root of the
    blocks: each part's work-item and then each element's sum of the parts
    walk their terms one by one (98 parts of one block each, then 98 parts
    added: a small fit's two launches of 24 us each on an H200).  Integers:
    the same words for any parts."""
    if blocks <= FOLD_ALONE:
        return 1
    fill = -(-units * FOLD_ITEMS // max(size, 1))
    return int(min(blocks, max(1, min(fill, math.isqrt(blocks - 1) + 1),
                               -(-blocks // FOLD_BLOCKS))))


class FetchedKernels:
    """Kernels fetched once for one owner on one queue (a fold's, the block
    sums'), each spec noted once per recording for the fit's ``kernels_``
    (kernel_recorder.note, as kernel() notes it): an owner pooled across
    fits launches them every iteration, where a look-up a launch was a
    small fit's host work."""

    def __init__(self, queue):
        self.queue = queue
        self._kernels = {}     # name -> its SharedKernel (kernel())
        self._noted = {}       # name -> the recorders (a fit's) that last noted its spec

    def __call__(self, spec, name):
        """The kernel *name* of *spec*, noted for the fit under way: once
        for the recorders active (one tuple a fit, and a fit inside it)."""
        kern = self._kernels.get(name)
        if kern is None:
            kern = self._kernels[name] = kernel(self.queue.context, spec, name)
        recorders = active_recorders()
        if self._noted.get(name) is not recorders:
            note(self.queue.context, spec)
            self._noted[name] = recorders
        return kern


class Fold:
    """The exact fold of one statistic of a pass (*shape*) on a device
    (*queue*): its grid uploaded once per ``set_bounds``, its words in a
    device array (``out``) read by the caller.  Its kernels are fetched
    once, its device's compute units asked once (a fold runs every
    iteration of a fit: a small fit's per-launch look-ups were a part of
    its host work); its specs are noted once per recording for the fit's
    ``kernels_`` (a pooled pass's fold serves later fits)."""

    def __init__(self, queue, shape):
        self.queue, self.shape = queue, tuple(shape)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.lsb = self._bounds = None
        self._lsb_on_device = False   # grid_enqueued's: lsb read back when words need it
        self._staging = PinnedStaging(queue)
        self.lsb_dev = cla.empty(queue, max(self.size, 1), np.int32)
        self.out = cla.empty(queue, (ARRAY_WORDS + 1) * max(self.size, 1), np.float64)
        self._partial = None   # the parts' words (enqueue), made on first use
        self._units = queue.device.max_compute_units
        self._parts = {}       # blocks -> parts (enqueue)
        self._kernel = FetchedKernels(queue)

    def set_bounds(self, bounds):
        """The grid from *bounds* (broadcast to the shape): one block's
        partial of each element is at most its bound in magnitude."""
        bounds = np.broadcast_to(np.asarray(bounds, np.float64), self.shape)
        if self._bounds is not None and np.array_equal(bounds, self._bounds):
            return   # the same grid (every iteration of a fit: its magnitudes are fixed)
        self._bounds = bounds.copy()
        self.set_lsb(lsb_for_bounds(bounds))

    def set_lsb(self, lsb, staging=None):
        """The grid itself: each element's exponent (exact_sums.lsb_for_bounds
        of its bound), uploaded where it changed, through *staging* (a
        transfer.PinnedStaging; default: the fold's own, on its queue): the
        copy's event, None where the grid is the same.  A caller whose
        staging is another queue's makes the fold's kernels wait for it."""
        lsb = np.asarray(lsb, np.int32).ravel()
        if self.lsb is not None and np.array_equal(lsb, self.lsb):
            return None
        self.lsb, self._lsb_on_device = lsb, False
        # not a blocking copy: it would wait for the queue's kernels, and a
        # fit that launches several devices' passes from one thread (a
        # GMM's grid moves with its means) would run them one by one
        return (staging or self._staging).put("lsb", self.lsb_dev, lsb)

    def grid_enqueued(self):
        """The grid was enqueued into ``lsb_dev`` by a kernel of the
        caller's (made on the device: GmmPass's tensor-core M statistics):
        the host reads it back only when it takes words (``words``)."""
        self.lsb = self._bounds = None
        self._lsb_on_device = True

    def enqueue(self, part, blocks, paired=None):
        """Fold *blocks* partials of *part* (blocks x size float64) into
        ``out``: in parts of the blocks, then the parts' words added, where
        the elements alone would leave the device idle (FOLD_ITEMS work-items
        a compute unit).  *paired*: (another Fold on this queue, its
        partials of as many blocks), folded in the same launches (a small
        fit's iteration is bound by its launches)."""
        other, other_part = paired or (None, None)
        size_b = other.size if other else 0
        wg, items = 64, -(-(self.size + size_b) // 64) * 64
        parts = self._parts.get((blocks, size_b))
        if parts is None:
            parts = self._parts[blocks, size_b] = fold_parts(blocks, self.size + size_b,
                                                             self._units)
        targets = [fold._target(parts) for fold in (self, other or self)]
        b = ((other_part, other.lsb_dev, targets[1]) if other else
             (part, self.lsb_dev, targets[0]))   # (unread: size_b 0)
        self._kernel(FOLD_SPEC, "exact_fold")(
            self.queue, (items, parts), (wg, 1), part.data, np.int64(blocks),
            np.int64(self.size), self.lsb_dev.data, targets[0].data, b[0].data,
            np.int64(size_b), b[1].data, b[2].data)
        if parts > 1:
            out_b = other.out if other else self.out
            self._kernel(FOLD_SPEC, "exact_fold_parts")(
                self.queue, (items,), (wg,), targets[0].data, np.int64(parts),
                np.int64(self.size), self.out.data, targets[1].data, np.int64(size_b),
                out_b.data)

    def _target(self, parts):
        """Where exact_fold writes this fold's words in *parts* parts: ``out``
        (one), else the parts' array (made or grown here)."""
        if parts == 1:
            return self.out
        if self._partial is None or self._partial.size < parts * self.out.size:
            self._partial = cla.empty(self.queue, parts * self.out.size, np.float64)
        return self._partial

    def enqueue_total(self, gathered, parts):
        """Enqueue the total of *parts* folds' words (device array
        *gathered*: parts x 4 x size doubles, each a fold's ``out`` on this
        grid, from any device) into ``out``: integers, so the same words
        as the host's ExactWords.total of them (carried alike), in any order."""
        wg = 64
        self._kernel(FOLD_SPEC, "exact_fold_parts")(
            self.queue, (-(-self.size // wg) * wg,), (wg,), gathered.data, np.int64(parts),
            np.int64(self.size), self.out.data, gathered.data, np.int64(0), self.out.data)

    def enqueue_value(self, values):
        """Enqueue ``out`` rounded to float64 into device array *values*
        (size doubles) as ExactWords.value() rounds the words read: a
        device-resident update computes with the host's totals' bits."""
        wg = 64
        self._kernel(VALUE_SPEC, "exact_value")(
            self.queue, (-(-self.size // wg) * wg,), (wg,), self.out.data,
            np.int64(self.size), self.lsb_dev.data, values.data)

    def words(self, host_out, copy=True):
        """The ExactWords of ``out`` as read to *host_out* (*copy* False:
        a fresh array of their own, as ``out.get()`` gives)."""
        if self.lsb is None and self._lsb_on_device:   # (its pass collected: the queue is done)
            self.lsb = self.lsb_dev.get(self.queue)[:self.size]
        return ExactWords.from_device(host_out[:(ARRAY_WORDS + 1) * self.size], self.lsb,
                                      self.shape, copy)


class SharedFold:
    """One device's side of a fold's total over several devices (one
    update shared by devices that each hold rows): its words read into
    page-locked memory (``read``), every device's words gathered on it,
    added (Fold.enqueue_total: integers, any order) and rounded
    (Fold.enqueue_value) on the device, so the host neither adds nor
    rounds them.  The words are read into two page-locked arrays in turn
    (``words``: the last read; made on the first): another device may still
    copy from the last one while the next pass reads into the other; by
    then every device's pass, after those copies on its in-order queue, has
    been collected.  A device that only totals reads none (its caller has
    the words)."""

    def __init__(self, fold):
        self.fold = fold
        self.read_into = []
        self.staging = PinnedStaging(fold.queue)   # (pooled: a warm fit page-locks none)
        self.turn = 0
        self.gathered = None
        self.writes = []   # the last total's copies from the page-locked arrays

    @property
    def words(self):
        """The page-locked array the last read() went into."""
        return self.read_into[self.turn]

    def read(self):
        """The fold's words read (into the next array in turn), not waited
        on: the copy's event."""
        if not self.read_into:
            self.read_into = [self.staging.host(f"words{i}", self.fold.out.size, np.float64)
                              for i in range(2)]
        self.turn ^= 1
        return cl.enqueue_copy(self.fold.queue, self.words, self.fold.out.data,
                               is_blocking=False)

    def summed_host(self, count):
        """A page-locked array for *count* devices' words summed over MPI
        ranks (parallel.sharded.words_over_ranks; made once)."""
        return self.staging.host("summed", count * self.fold.out.size, np.float64)

    def enqueue_total(self, words, own, values):
        """Every device's words (*words*: their page-locked arrays, in
        order; this device's at *own*, taken from its fold's output, or
        None: all from the host) gathered here, added and rounded into
        *values* (a device array of the fold's size, float64), not waited
        on: wait_writes() before the host arrays are written again."""
        fold, q = self.fold, self.fold.queue
        size = fold.out.size
        if self.gathered is None or self.gathered.size != len(words) * size:
            self.gathered = cla.empty(q, len(words) * size, np.float64)
        for i, host in enumerate(words):
            at = i * size * 8
            if i == own:   # the device's own words, still in the fold's output
                cl.enqueue_copy(q, self.gathered.data, fold.out.data, dst_offset=at,
                                byte_count=size * 8)
            else:
                self.writes.append(cl.enqueue_copy(q, self.gathered.data, host,
                                                   dst_offset=at, is_blocking=False))
        fold.enqueue_total(self.gathered, len(words))
        fold.enqueue_value(values)

    def wait_writes(self):
        """The last total's copies from the host's arrays done."""
        wait(self.writes)
        self.writes = []


@functools.lru_cache(maxsize=None)
def _block_sums_spec(dtype, weight_dtype):
    """The BlockSumsSpec of values of *dtype* (a numpy dtype) and weights of
    *weight_dtype* (None: unweighted): made once (every iteration sums its
    distances' blocks)."""
    return BlockSumsSpec(dtype=dtype.name, acc_double=True, weighted=weight_dtype is not None,
                         weight_dtype="" if weight_dtype is None or weight_dtype == dtype
                         else weight_dtype.name)


class BlockSums:
    """The float64 sum of each block of *values* (n, a device array; times
    *weights* when not None) on *queue*, enqueued into a device array (one
    double a block) every iteration of a fit."""

    def __init__(self, queue, values, weights, n, block_rows):
        self.queue, self.blocks = queue, blocks_of(n, block_rows)
        self.values, self.weights, self.n = values, weights, n
        self.spec = _block_sums_spec(values.dtype, None if weights is None else weights.dtype)
        self.args = (values.data, (weights if weights is not None else values).data,
                     np.int64(n), np.int64(block_rows))
        self._kernel = FetchedKernels(queue)

    def of(self, values, weights, n):
        """Whether these are its rows' values (a pooled pass's rows change)."""
        return values is self.values and weights is self.weights and n == self.n

    def enqueue(self, out):
        if self.blocks:
            self._kernel(self.spec, "block_sums")(
                self.queue, (self.blocks * 256,), (256,), *self.args, out.data)


def enqueue_block_sums(queue, values, weights, n, block_rows, out):
    """Enqueue the float64 sum of each block of *values* (n, a device array;
    times *weights* when not None) into *out* (one double a block), once
    (BlockSums: every iteration)."""
    BlockSums(queue, values, weights, n, block_rows).enqueue(out)


def host_magnitudes(X, sample_weight, dtype):
    """magnitudes_of host rows *X* (and weights) as a device holds them (in
    *dtype*): the same maxima (exact; NaN where a NaN is)."""
    absmax = np.abs(np.asarray(X, dtype)).max(axis=0).astype(np.float64)
    wmax = (1.0 if sample_weight is None else
            float(np.abs(np.asarray(sample_weight, dtype)).max()))
    return absmax, wmax


def _absmax(part, x, n, d, stride):
    """max |x| of each of the *d* columns of device rows *x* (float64; NaN
    where a NaN is): exact, so the same over any split."""
    if n == 0:
        return np.zeros(d)
    wg = 1 << min(6, max(d - 1, 0).bit_length())
    spec = ColumnAbsmaxSpec(dtype=part.dtype.name, acc_double=True, d=d, wg=wg)
    groups, steps = part.groups(1, 4096)
    out = cla.empty(part.queue, groups * d, np.float64)
    kernel(part.queue.context, spec, "column_absmax")(
        part.queue, (groups * wg,), (wg,), x.data, np.int64(n), np.int64(stride), out.data,
        np.int64(steps * 4096))
    return out.get(part.queue).reshape(groups, d).max(axis=0)   # NaN stays NaN
