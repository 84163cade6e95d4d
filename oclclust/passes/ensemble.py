"""The ensemble statistics pass on one device partition: task, data and
concatenated parallelism (Ravunnikutty et al., "Ensemble K-means on
multi-core architectures"), plus the labels / inertia pass.

Pairs with templates/ensemble/ensemble_stats.cl.mako and ensemble_assign.cl.mako.
The M models of a pass are packed: centroid rows of all models one after
another (``model_off`` says where each model starts), so models may have
different K.  Sums are 64-bit fixed point (FixedPoint): exact, hence the same
bits whatever the strategy, the order of the atomic updates, the KD-tree
mapping or the split of the rows over devices.
"""
import dataclasses
import math

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime import exact_sums
from ..runtime.codegen import Launch, Spec, kernel, kernel_work_group_limit
from ..runtime.profiles import declare_terms, term
from ..runtime.reduce import partial_buffer, reduce_partials

STRATEGIES = ("task", "data", "concatenated")
UNROLLED_K = 32   # models of at most this many centroids get a fully unrolled scoring loop


@declare_terms
@dataclasses.dataclass(frozen=True)
class EnsembleTerms:
    """``strategy``: EnsembleKMeans' "auto" choice; ``order``: the model
    access order of the concatenated strategy (distributed: the paper's);
    ``word_atomics`` 1: local statistics added as 32-bit word pairs (where
    64-bit local atomics are slow); the statistics pass's
    ``work_group_size`` and ``groups_per_compute_unit`` (0: the profile's
    generic ones)."""
    strategy: str = term("ensemble_strategy", STRATEGIES)
    order: str = term("ensemble_order", ("distributed", "uniform"))
    word_atomics: int = term("ensemble_word_atomics", 0, 1)
    work_group_size: int = term("ensemble_work_group_size", 0, 4096)
    groups_per_compute_unit: int = term("ensemble_groups_per_compute_unit", 0, 4096)


@dataclasses.dataclass(frozen=True)
class StatsSpec(Spec):
    template = "ensemble/ensemble_stats.cl.mako"
    strategy: str = "concatenated"
    d: int = 1
    wg: int = 1
    staged: bool = True
    distributed: bool = True
    weighted: bool = False
    k: int = 0
    word_atomics: bool = False


@dataclasses.dataclass(frozen=True)
class AssignSpec(Spec):
    template = "ensemble/ensemble_assign.cl.mako"
    d: int = 1
    wg: int = 1
    labels: bool = True
    min_dist: bool = False
    weighted: bool = False
    blocks: bool = False


@dataclasses.dataclass(frozen=True)
class FixedPoint:
    """A point adds round(w (x - shift) sx) to its centroid's sums and
    round(w sw) to its weight; sx, sw are powers of two chosen so that no
    total can exceed 2**62 (the sum of all |w (x - shift)|)."""
    shift: np.ndarray
    sx: float
    sw: float

    @classmethod
    def for_bounds(cls, shift, n, wmax, spread):
        def scale(bound):
            bound = max(float(bound) * 1.01, 1e-300)
            return 2.0 ** min(100, max(-100, math.floor(62 - math.log2(bound))))
        return cls(np.asarray(shift, np.float64), scale(n * wmax * spread), scale(n * wmax))

    def to_float(self, sums, counts):
        """(sums of w x, sums of w) in float64 from the integer totals."""
        weights = counts.astype(np.float64) / self.sw
        return sums.astype(np.float64) / self.sx + weights[:, None] * self.shift, weights


def work_group(profile, kern=None, size=0):
    """A power-of-two work-group size: *size* (0: the profile's), within
    the device's and *kern*'s limits."""
    wg = min(size or profile.work_group_size, profile.max_work_group_size)
    if kern is not None:
        wg = min(wg, kernel_work_group_limit(kern, profile.cl_device()))
    return 1 << (max(1, wg).bit_length() - 1)


def staged_bytes(nc, d, itemsize, stats=True, models=1):
    """Local memory for nc centroids of *models* models (and their
    statistics, 64-bit), each model's block padded by up to one element."""
    return (nc * d + models) * itemsize + ((nc * (d + 1) + 2 * models) * 8 if stats else 0)


def model_tiles(model_off, budget, d, itemsize, per_model=False, stats=True):
    """(first model, count, staged) launches covering the models: consecutive
    models that fit the local-memory budget together (*per_model*: each model
    alone must fit); a model too large for local memory gets a launch of its
    own that reads centroids from and adds statistics to global memory."""
    sizes = np.diff(model_off)
    fits = [staged_bytes(int(k), d, itemsize, stats) <= budget for k in sizes]
    tiles, m, n_models = [], 0, len(sizes)
    while m < n_models:
        if not fits[m]:
            tiles.append((m, 1, False))
            m += 1
            continue
        end = m + 1
        while end < n_models and fits[end] and (
                per_model or staged_bytes(int(model_off[end + 1] - model_off[m]), d, itemsize,
                                          stats, end + 1 - m) <= budget):
            end += 1
        tiles.append((m, end - m, True))
        m = end
    return tiles


def pack(centers_list, dtype):
    """(C x d packed centroids in *dtype*, model offsets int32)."""
    off = np.zeros(len(centers_list) + 1, np.int32)
    off[1:] = np.cumsum([len(c) for c in centers_list])
    return np.ascontiguousarray(np.concatenate(centers_list).astype(dtype)), off


class EnsemblePass:
    """The statistics pass of one strategy over a DevicePartition."""

    def __init__(self, part, strategy, fixed, distributed=None):
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
        self.part, self.strategy, self.fixed = part, strategy, fixed
        q, acc = part.queue, part.acc_double
        self.shift = cla.to_device(q, fixed.shift.astype(np.float64 if acc else np.float32))
        self.scales = (np.float64 if acc else np.float32)(fixed.sx), \
            (np.float64 if acc else np.float32)(fixed.sw)
        # the labels pass and the KD-tree kernels (whose leaves set their size)
        self.wg = work_group(part.profile)
        self.groups, _ = part.groups(self.wg, self.wg)
        # the statistics pass, where the profile says so: more, larger groups
        # hide its local-memory atomics' latency (H100: devices.yaml)
        terms = part.profile.terms(EnsembleTerms)
        self.stats_wg = work_group(part.profile, size=terms.work_group_size)
        self.stats_groups, self.tiles_per_group = part.groups(
            self.stats_wg, self.stats_wg, terms.groups_per_compute_unit)
        self.capacity = 0
        self._launches = {}
        self.word_atomics = bool(terms.word_atomics)
        if distributed is None:
            distributed = terms.order == "distributed"
        self.distributed = bool(distributed)

    def spec(self, staged, strategy=None, k=0):
        p = self.part
        strategy = strategy or self.strategy
        return StatsSpec(dtype=p.dtype.name, acc_double=p.acc_double, strategy=strategy, d=p.d,
                         wg=self.stats_wg, staged=staged,
                         distributed=self.distributed and strategy == "concatenated",
                         weighted=p.weighted, k=k, word_atomics=self.word_atomics)

    def upload(self, centers_list):
        """Pack and copy the models' centroids (no wait: the pass's read of
        the statistics waits); (re)allocate the statistics."""
        q = self.part.queue
        self.packed, self.off = pack(centers_list, self.part.dtype)
        if len(self.packed) > self.capacity:
            self._allocate(len(self.packed))
        # the event is kept: pyopencl's event of a host copy holds the host
        # array, and waits for the copy when it is dropped
        self._copied = cl.enqueue_copy(q, self.centers.data, self.packed, is_blocking=False)
        if getattr(self, "_off_bytes", None) != self.off.tobytes():   # models left or joined
            self.model_off = cla.to_device(q, self.off)
            self._off_bytes = self.off.tobytes()
            self._tiles, self._launches = {}, {}
        return self

    def _allocate(self, n_c):
        """Centroids, and sums then counts in one buffer (one fill, one read
        a pass), the counts at the device's sub-buffer alignment."""
        p, q = self.part, self.part.queue
        self.capacity = n_c
        self._launches = {}     # their arguments name the buffers
        self.centers = cla.empty(q, (n_c, p.d), p.dtype)
        align = max(8, q.device.mem_base_addr_align // 8)
        self._counts_at = -(-n_c * p.d * 8 // align) * align
        self._stats = cl.Buffer(q.context, cl.mem_flags.READ_WRITE, self._counts_at + n_c * 8)
        self.sums = cla.Array(q, n_c * p.d, np.int64,
                              data=self._stats.get_sub_region(0, n_c * p.d * 8))
        self.counts = cla.Array(q, n_c, np.int64,
                                data=self._stats.get_sub_region(self._counts_at, n_c * 8))
        self._host_stats = np.empty(self._counts_at // 8 + n_c, np.int64)

    def zero(self):
        cl.enqueue_fill_buffer(self.part.queue, self._stats, np.int64(0), 0,
                               self._host_stats.nbytes)

    def tiles(self, per_model):
        if per_model not in self._tiles:   # for these models (upload resets)
            p = self.part
            self._tiles[per_model] = model_tiles(self.off, p.profile.local_memory_budget, p.d,
                                                 p.dtype.itemsize, per_model=per_model)
        return self._tiles[per_model]

    def launch(self, strategy, first, count, staged):
        key = (strategy, first, count, staged)
        if key not in self._launches:
            self._launches[key] = self._plan_launch(strategy, first, count, staged)
        return self._launches[key](self.part.queue)

    def _plan_launch(self, strategy, first, count, staged):
        """The Launch over these models."""
        p, q = self.part, self.part.queue
        ks = np.diff(self.off)[first:first + count]
        uniform = int(ks[0]) if (ks == ks[0]).all() and ks[0] <= UNROLLED_K else 0
        kern = kernel(q.context, self.spec(staged, strategy, uniform), "ensemble_stats")
        local = []
        if staged:   # as the template lays them out (odd model strides with a uniform k)
            nm = 1 if strategy == "task" else count
            if uniform:
                cs, ws = nm * ((uniform * p.d) | 1), nm * (uniform | 1)
            else:
                nc = int(ks.max()) if strategy == "task" else int(ks.sum())
                cs, ws = nc * p.d, nc
            local = [cl.LocalMemory(max(1, cs * p.dtype.itemsize)),
                     cl.LocalMemory(max(8, cs * 8)), cl.LocalMemory(max(8, ws * 8))]
        groups = count if strategy == "task" else self.stats_groups
        return Launch(kern, (groups * self.stats_wg,), (self.stats_wg,), (
            p.x.data, np.int64(p.n), np.int64(p.stride), p.weights_arg(), self.centers.data,
            self.model_off.data, np.int32(first), np.int32(count), self.shift.data,
            *self.scales, self.sums.data, self.counts.data, np.int64(self.tiles_per_group),
            *local))

    def stats(self, centers_list):
        """Integer (sums C x d, weights C) of every model, C = all centroids."""
        self.enqueue(centers_list)
        return self.stats_result()

    def enqueue(self, centers_list, zero=True):
        """The statistics pass, enqueued (the result read by stats_result);
        returns the events of its kernels.  *centers_list* None: the
        centroids on the device (ensemble_update.py) are this pass's;
        *zero* False: the statistics are zero already."""
        self.begin(centers_list, zero)
        return self.run_tiles()

    def begin(self, centers_list, zero=True):
        """Before a pass: the centroids uploaded (unless None: on the device
        already) and the statistics zeroed (unless *zero* is False)."""
        if centers_list is not None:
            self.upload(centers_list)
        if zero:
            self.zero()

    def stats_result(self):
        n_c, d, at = len(self.packed), self.part.d, self._counts_at // 8
        cl.enqueue_copy(self.part.queue, self._host_stats, self._stats)
        return (self._host_stats[:n_c * d].reshape(n_c, d).copy(),
                self._host_stats[at:at + n_c].copy())

    def run_tiles(self):
        events = []
        for first, count, staged in self.tiles(per_model=self.strategy != "concatenated"):
            if self.strategy == "data":
                events += [self.launch("data", m, 1, staged) for m in range(first, first + count)]
            else:
                events.append(self.launch(self.strategy, first, count, staged))
        return events

    def assign(self, centers_list, labels=True, min_dist=False):
        """(inertia per model, labels M x n int32 or None, distances M x n or
        None).  The inertia is split-free where the partition sums exactly
        (exact_sums.exact_device): each fixed block's per-model sums, added
        exactly (ExactWords, settled by the caller: exact_sums.settle);
        else float64 from the persistent work-items' partials."""
        p, q = self.part, self.part.queue
        self.upload(centers_list)
        n_models = len(centers_list)
        exact = exact_sums.exact_device(p)
        spec = AssignSpec(dtype=p.dtype.name, acc_double=p.acc_double, d=p.d, wg=self.wg,
                          labels=labels, min_dist=min_dist, weighted=p.weighted, blocks=exact)
        kern = kernel(q.context, spec, "ensemble_assign")
        if exact:   # a work-group a block (an inertia per model a block: stat_values)
            block_rows = exact_sums.block_rows_of(p, n_models)
            blocks = exact_sums.blocks_of(p.n, block_rows)
            items = max(blocks, 1) * self.wg
            per_block = cla.empty(q, max(blocks, 1) * n_models, np.float64)
            extra = (np.int64(block_rows), per_block.data)
        else:
            items, extra = self.groups * self.wg, ()
        lab = cla.empty(q, max(1, n_models * p.n if labels else 1), np.int32)
        dist = cla.empty(q, max(1, n_models * p.n if min_dist else 1), p.dtype)
        part = partial_buffer(q, items, n_models, p.acc_double)
        kern(q, (items,), (self.wg,), p.x.data, np.int64(p.n), np.int64(p.stride),
             p.weights_arg(), self.centers.data, self.model_off.data, np.int32(n_models),
             lab.data, dist.data, part.data, *extra)
        if exact:
            inertia = exact_sums.ExactWords.of_values(
                per_block.get(q)[:blocks * n_models].reshape(blocks, n_models))
        else:
            inertia = reduce_partials(q, part, items, n_models, p.dtype, p.acc_double)
        return (inertia, lab.get(q).reshape(n_models, p.n) if labels else None,
                dist.get(q).reshape(n_models, p.n) if min_dist else None)
