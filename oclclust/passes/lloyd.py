"""The Lloyd pass on one device partition: labels, partial sums, inertia.

Pairs with templates/lloyd*/*.cl.mako: the fused tiled and row-wise kernels,
and the register-tiled GEMM-style assignment followed by the label-driven
accumulation of sums ("gemm"; "mma" on NVIDIA tensor cores).  The pass is
the *local statistics* step of k-means (cluster/kmeans/lloyd_shards.py's LloydShards
runs it over a fit's rows); the k-means loop (cluster/kmeans/lloyd_loop.py) only sees
the reduced statistics, never where or how distances are computed.
"""
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime.codegen import (EmulatedBuild, Spec, first_fitting, kernel,
                               kernel_work_group_limit)
from ..runtime import codegen, exact_fold, exact_sums
from ..runtime.profiles import declare_terms, term
from .distance_tile import power_of_two_at_most
from .lloyd_blocked import blocked_specs, items_per_unit, pack_centers
from .lloyd_gemm import AccumulateSpec, gemm_specs, segments
from .lloyd_mma import bound_terms, mma_specs, split_centers, tile_words
from ..runtime.reduce import AdditiveStats, acc_dtype, enqueue_reduce, partial_buffer
from ..runtime.transfer import PinnedStaging

VARIANTS = ("tiled", "rowwise", "blocked", "gemm", "mma")


@declare_terms
@dataclasses.dataclass(frozen=True)
class LloydTerms:
    """``variant``: the planner's first choice (LloydSpec says what each is;
    the gemm and mma variants take their tiles from TileTerms).
    ``points_per_item`` x ``centroid_tile``: the points a work-item keeps in
    registers and the centroids it scores per pass over them (tiled and
    rowwise; the blocked variant's blocks are BlockedTerms, lloyd_blocked.py).
    ``prefetch`` (gemm): 1 reads the next chunk into registers early, 2 also
    double-buffers the local chunks (one barrier a chunk)."""
    variant: str = term("lloyd_variant", VARIANTS)
    points_per_item: int = term("points_per_item", 1, 16)
    centroid_tile: int = term("centroid_tile", 1, 64)
    prefetch: int = term("lloyd_prefetch", 0, 2)


@dataclasses.dataclass(frozen=True)
class LloydSpec(EmulatedBuild, Spec):
    """``variant`` "tiled": a point per work-item, a slab per work-group
    (GPUs); "rowwise": a work-item walks its rows with vw-wide vectors over
    the centroids (CPUs).  The two give bitwise-equal sums and labels.
    "blocked" (lloyd_blocked.py): rowwise's work-items, scoring chunks of nb
    blocks of rb rows x cv vw-wide vectors of centroids in registers against
    centroid panels packed D x (cv * vw); ppi = rb * nb rows a step; the same
    labels as rowwise (the same scores, in the same order).
    "gemm": tm x tn tiles of points x centroids per work-group, rm x rn per
    work-item, kc dimensions (of dp) per local-memory chunk, vw-wide local
    reads; the sums follow from the labels, ``slice`` clusters per work-group
    of ``acc_wg`` work-items (AccumulateSpec; ``walk``: its walk kernel).
    "mma": the gemm variant's outputs from NVIDIA tensor cores (lloyd_mma.py):
    wg / 32 warps of mt m16 row tiles, chunks of tn centroids, kpar
    accumulator sets, ``precision``
    "float32" (3xTF32), "tf32" or "bf16" (one product, near ties re-checked);
    every other variant is float32 alone (its precision stays "float32");
    ``emulate``: the mma variant's products in plain OpenCL on any device
    (tests), ``truncate`` with them the tensor cores' truncating sums
    (common/mma_fragments.cl.mako)."""
    variant: str = "tiled"
    vw: int = 1
    d: int = 1
    k: int = 1
    kp: int = 1
    wg: int = 1
    ppi: int = 1
    ctile: int = 1
    stage_centers: bool = False
    cchunk: int = 1
    stage_point: bool = False
    rb: int = 1
    nb: int = 1
    cv: int = 1
    unroll: int = 1
    update: bool = True
    weighted: bool = False
    tm: int = 1
    tn: int = 1
    rm: int = 1
    rn: int = 1
    kc: int = 1
    dp: int = 1
    slice: int = 1
    acc_wg: int = 1
    walk: bool = False
    prefetch: int = 0
    mt: int = 1
    kpar: int = 1
    precision: str = "float32"
    emulate: bool = False
    truncate: bool = False

    @property
    def template(self):
        return {"tiled": "lloyd/lloyd_assign_accumulate.cl.mako",
                "rowwise": "lloyd/lloyd_assign_accumulate_rowwise.cl.mako",
                "blocked": "lloyd_blocked/lloyd_blocked.cl.mako",
                "gemm": "lloyd_gemm/lloyd_gemm_assign.cl.mako",
                "mma": "lloyd_mma/lloyd_mma_assign.cl.mako"}[self.variant]

    @property
    def labels_first(self):
        """Whether the pass is two kernels: the labels, then the sums from them."""
        return self.variant in ("gemm", "mma")

    @property
    def reads_rows(self):
        """Whether the pass also reads the centres as K x D rows (gemm, mma
        before their split; blocked: its winners' exact distances)."""
        return self.labels_first or self.variant == "blocked"

    @property
    def kernel_name(self):
        return "assign_gemm" if self.labels_first else "assign_and_accumulate"

    def accumulate_spec(self):
        return AccumulateSpec(dtype=self.dtype, acc_double=self.acc_double, d=self.d, k=self.k,
                              slice=self.slice, acc_wg=self.acc_wg, weighted=self.weighted,
                              walk=self.walk)

    def local_bytes(self):
        item = np.dtype(self.dtype).itemsize
        acc = 8 if self.acc_double else 4
        if self.variant in ("rowwise", "blocked"):
            return 0
        sums = self.accumulate_spec().local_bytes() if self.update else 0
        if self.variant == "mma":    # as lloyd_mma_assign.cl.mako lays it out
            chunks = self.tn * tile_words(self) // self.kp * 2   # two copies, uint32 words
            winners = (12 if self.rechecks else 8) * self.tm
            emulated = self.wg * 24 if self.emulate else 0
            return max(max(chunks, winners) * 4 + self.wg * acc + emulated, sums)
        if self.variant == "gemm":   # as lloyd_gemm_assign.cl.mako lays it out
            winners = self.tm * (self.tn // self.rn)
            chunks = self.copies * self.kc * (self.tm + self.vw + self.tn) * item
            assign = chunks + (0 if self.aliased else winners * (item + 4)) + self.wg * acc
            return max(assign, sums)
        staged = (self.cchunk * self.d + self.cchunk) * item if self.stage_centers else 0
        return self.wg * acc + staged + (self.wg * self.ppi * 4 if self.update else 0)

    @property
    def copies(self):
        """Copies of the gemm's local chunks (2: double-buffered)."""
        return 2 if self.prefetch == 2 else 1

    @property
    def aliased(self):
        """Whether the gemm rows' partial winners (tm x tn / rn of them) fit
        in its chunks' local memory, which is free once a row tile is scored."""
        winners = self.tm * (self.tn // self.rn)
        return winners <= self.copies * self.kc * min(self.tm + self.vw, self.tn)

    @property
    def rechecks(self):
        """Whether the pass re-checks near ties (the mma variant's fast modes)."""
        return self.variant == "mma" and self.precision != "float32"

    def template_args(self):
        args = dict(super().template_args(), copies=self.copies, aliased=self.aliased)
        gamma, quantum = (bound_terms(self.precision, self.dp, self.kp) if self.rechecks
                          else (0, 0))
        return dict(args, gamma=f"{gamma:.9e}f", quantum=f"{quantum:.9e}f")

    def private_floats(self):
        if self.variant == "blocked":   # accumulators, a panel's vectors, the winners
            return (self.rb * self.cv + self.cv + 2 * self.rb * self.nb) * self.vw
        return self.ppi * (self.ctile + (self.d if self.stage_point else 0))


def candidate_specs(profile, dtype, d, k, update, weighted, precision="float32"):
    """Specs from the profile's choice down to the smallest; the first that
    fits the device is used.  The profile's variant comes first, the other
    after it: the row-wise one needs no local memory, so one always fits.
    *precision* reaches the mma variant alone (lloyd_mma.PRECISIONS): the
    others are float32, whatever it says."""
    base = dict(dtype=np.dtype(dtype).name, acc_double=profile.fp64, d=d, k=k,
                update=update, weighted=weighted)
    variant = profile.terms(LloydTerms).variant
    if variant == "tiled":
        variants = (_tiled_specs, _rowwise_specs)
    elif variant == "blocked":   # then the row-wise one (it always fits)
        variants = (_blocked_specs, _rowwise_specs)
    elif variant == "gemm":   # then the fused ones
        variants = (_gemm_specs, _tiled_specs, _rowwise_specs)
    elif variant == "mma":    # where tensor cores are; else gemm
        variants = (_mma_specs, _gemm_specs, _tiled_specs, _rowwise_specs)
    else:
        variants = (_rowwise_specs, _tiled_specs)
    for specs in variants:
        if specs is _mma_specs:   # the one variant that reads *precision*
            yield from specs(profile, base, precision)
        else:
            yield from specs(profile, base)


def _rowwise_specs(profile, base):
    terms = profile.terms(LloydTerms)
    vw = min(16, max(2, profile.native_vector_bytes // np.dtype(base["dtype"]).itemsize))
    for ppi, ctile in ((terms.points_per_item, terms.centroid_tile), (1, 1)):
        ctile = max(1, min(ctile, -(-base["k"] // vw)))
        kp = -(-base["k"] // (vw * ctile)) * vw * ctile
        yield LloydSpec(variant="rowwise", vw=vw, kp=kp, wg=1, ppi=ppi, ctile=ctile, **base)


def _tiled_specs(profile, base):
    """Smaller work-groups and tiles, then centroids read from global memory."""
    d, k = base["d"], base["k"]
    terms = profile.terms(LloydTerms)
    ctile = max(1, min(terms.centroid_tile, k))
    wg = power_of_two_at_most(min(profile.work_group_size, profile.max_work_group_size))
    while True:
        for stage_centers in (True, False):
            for ppi in sorted({terms.points_per_item, 1}, reverse=True):
                cchunk, kp = _centroid_chunks(profile, base["dtype"], d, k, ctile, wg, ppi,
                                              base["update"])
                yield LloydSpec(kp=kp, wg=wg, ppi=ppi, ctile=ctile,
                                stage_centers=stage_centers and cchunk > 0,
                                cchunk=max(cchunk, ctile),
                                stage_point=ppi * (ctile + d) <= profile.private_floats, **base)
        if wg == 1:
            return
        wg //= 2


def _blocked_specs(profile, base):
    return blocked_specs(profile, base, LloydSpec)


def _gemm_specs(profile, base):
    return gemm_specs(profile, dict(base, prefetch=profile.terms(LloydTerms).prefetch),
                      LloydSpec)


def _mma_specs(profile, base, precision):
    return mma_specs(profile, base, LloydSpec, precision)


def _centroid_chunks(profile, dtype, d, k, ctile, wg, ppi, update):
    """(centroids staged in local memory at a time, padded k): equal chunks,
    multiples of ctile, as large as the local-memory budget allows (0: none fit)."""
    item = np.dtype(dtype).itemsize
    spare = profile.local_memory_budget - wg * 8 - (wg * ppi * 4 if update else 0)
    most = spare // ((d + 1) * item) // ctile * ctile
    k_tiles = -(-k // ctile) * ctile
    if most < ctile:
        return 0, k_tiles
    chunks = -(-k_tiles // most)
    cchunk = -(-(-(-k_tiles // chunks)) // ctile) * ctile
    return cchunk, chunks * cchunk


def plan(profile, queue, dtype, d, k, update, weighted, spec=None, precision="float32"):
    """The built kernel and spec of the first candidate that fits the device
    (built in *queue*'s context); *spec*: offered alone instead of the
    candidates (see LloydPass)."""
    def sums_fit(spec):   # the gemm variant's second kernel must fit too
        if not spec.labels_first or not update:
            return True
        sums = kernel(queue.context, spec.accumulate_spec(), "accumulate_sums")
        return kernel_work_group_limit(sums, queue.device) >= spec.acc_wg
    specs = ([spec] if spec is not None else
             candidate_specs(profile, dtype, d, k, update, weighted, precision))
    return codegen.plan("lloyd", queue.context,
                        (profile, np.dtype(dtype).name, d, k, update, weighted, spec,
                         precision),
                        lambda: first_fitting(profile, queue, specs,
                                              lambda spec: spec.kernel_name, "Lloyd", sums_fit))


def center_norms(centers, dtype):
    """The squared norms of *centers* rounded to *dtype*, summed in float64
    in dimension order (as lloyd_new_centers.cl.mako sums them on the device),
    then rounded to *dtype*; a norm past the dtype is inf (the pass flags
    its rows)."""
    rounded = centers.astype(dtype).astype(np.float64)
    with np.errstate(over="ignore"):
        return np.cumsum(rounded * rounded, axis=1)[:, -1].astype(dtype)


def stat_values(k, d):
    """Float64 values of one block's partial statistics of a k-means pass
    (k x d sums, k weights): what sizes its blocks (exact_sums.block_rows_for)."""
    return k * (d + 1)


@dataclasses.dataclass
class LloydStats(AdditiveStats):
    """A pass's statistics.  Split-free (exact_sums.exact_device), the sums,
    weights and inertia are exact_sums.ExactWords until ``settled()``
    (ShardedPass.reduce settles them; LloydPass.run returns them settled);
    else float64."""
    sums: np.ndarray        # k x d weighted sums; None without update
    weights: np.ndarray     # k cluster weights; None without update
    inertia: float          # sum of the rows' weighted distances to their centres
    n_changed: int
    n_nonfinite: int
    n_rechecked: int = 0    # rows whose near tie was re-checked (fast precisions)


class LloydPass:
    """Runs the Lloyd pass over a DevicePartition into caller-owned labels.

    ``spec``: a LloydSpec of this problem (as candidate_specs makes them,
    for the partition's dtype, d, weights and *k*, *update*) offered alone
    instead of the candidates: still checked against the device and built
    as the planner's pick would be (a harness runs every variant).
    ``precision``: lloyd_mma.PRECISIONS, read by the mma variant alone (a
    fast mode's pass counts its re-checked rows: n_rechecked).

    Split-free (exact_sums.exact_device: fp64, not disabled), the sums'
    partials are one slab per fixed block of ``block_rows`` rows: the fused
    variants' groups (or work-items) take whole blocks, a slab each; the
    gemm and mma variants' accumulation a segment a block.  The slabs are
    folded exactly on the device (exact_fold.Fold) and the inertia is the
    exact sum of min_dist's weighted block sums (exact_fold.BlockSums,
    the same for every variant); collect() gives them as ExactWords.  Else
    (Kahan sums, or exact sums disabled) a slab per persistent group, reduced
    in float64 on the device.  The layout is fixed at construction: a
    pooled pass (lloyd_shards) is keyed by the partition's block_rows."""

    def __init__(self, part, k, update=True, spec=None, precision="float32"):
        self.part, self.k, self.update = part, k, update
        self._pinned = None   # page-locked host arrays (_host), made on first use
        self._staging = None  # ... and the pooled staging they come from
        self._writes = []     # the copies of the last upload, not yet waited on
        self._grids_of = None   # the magnitudes the folds' grids were set from
        self.spec, self.kernel = plan(part.profile, part.queue, part.dtype, part.d, k, update,
                                       part.weighted, spec, precision)
        gemm = self.spec.labels_first
        rows = self.spec.tm if gemm else self.spec.wg * self.spec.ppi
        per_unit = items_per_unit(part.profile, self.spec)   # 0: groups_per_compute_unit
        self.groups, self.tiles = part.groups(self.spec.wg, rows, per_unit)
        # the rows a fused group takes, whole blocks (split-free) or its tiles
        self.group_rows = max(self.tiles, 1) * rows
        self.exact = exact_sums.exact_device(part)
        self.block_rows = self.blocks = None
        if self.exact:
            self.block_rows = exact_sums.block_rows_of(part, stat_values(k, part.d))
            self.blocks = max(1, exact_sums.blocks_of(part.n, self.block_rows))
            if not gemm:   # the persistent groups' rows rounded up to whole blocks
                per_group = max(1, -(-self.group_rows // self.block_rows))
                self.groups = -(-self.blocks // per_group)
                self.group_rows = per_group * self.block_rows
        q, acc = part.queue, part.acc_double
        self.part_inertia = partial_buffer(q, self.groups, 1, acc)
        self.part_flags = cla.empty(q, 2 * self.groups, np.int32)
        self.part_rechecked = (cla.empty(q, self.groups, np.int32) if self.spec.rechecks
                               else None)
        # a fast mode's ||c~_j||, ||c_j - c~_j|| (lloyd_mma.split_args)
        self.center_rounding = (cla.empty(q, 2 * self.spec.kp, np.float32)
                                if self.spec.rechecks else None)
        self.min_dist = cla.empty(q, part.n, part.dtype)
        self.norms = cla.empty(q, self.spec.kp, part.dtype)
        self.center_rows = (cla.empty(q, k * part.d, part.dtype) if self.spec.reads_rows
                            else None)
        if gemm:   # mma: the centres split in its fragments' order (lloyd_mma.split_centers)
            self.centers = (cla.empty(q, tile_words(self.spec), np.uint32)
                            if self.spec.variant == "mma" else
                            cla.empty(q, self.spec.dp * self.spec.kp, part.dtype))
            self.slices = -(-k // self.spec.slice)
            if self.exact and update:   # a segment a block
                self.segments, self.rows_per_segment = self.blocks, self.block_rows
            else:
                self.segments = segments(part, k, self.spec.accumulate_spec()) if update else 1
                self.rows_per_segment = -(-part.n // self.segments)
            partials = self.segments
        else:
            self.centers = cla.empty(q, self.spec.kp * part.d, part.dtype)
            partials = self.blocks if self.exact else self.groups
        self.partials = partials
        self.part_sums = partial_buffer(q, partials, k * part.d if update else 1, acc)
        self.part_weights = partial_buffer(q, partials, k if update else 1, acc)
        if self.exact:   # the exact folds of the slabs; the inertia's block sums
            self.folds = ({"sums": exact_fold.Fold(q, (k, part.d)),
                           "weights": exact_fold.Fold(q, (k,))} if update else {})
            self.block_inertia = cla.empty(q, self.blocks, np.float64)
            self._block_sums = None   # its kernel and arguments (enqueue_exact)

    def upload(self, centers, norms=None):
        """*centers* (k x d) as the pass reads them, copied from the pass's
        page-locked arrays and not waited on: the pass after them on the
        queue reads them, and the next upload waits for them before
        refilling the arrays.  *norms*: center_norms(centers, the rows'
        dtype) when the caller has them (the same for every device)."""
        spec, d, dtype = self.spec, self.part.d, self.part.dtype
        host = self._host()
        if self._writes:   # the last upload's copies still read these arrays
            cl.wait_for_events(self._writes)
            self._writes = []
        host["norms"][:] = np.inf
        host["norms"][:self.k] = center_norms(centers, dtype) if norms is None else norms
        self._write(self.norms, host["norms"])
        if spec.reads_rows:
            host["center_rows"][:] = centers.reshape(-1)
            self._write(self.center_rows, host["center_rows"])
        if spec.variant == "mma":   # split on the device, in its fragments' order
            split_centers(self.part.queue, spec, self.center_rows, self.centers,
                          self.center_rounding)
            return
        padded = host["centers"]
        padded[:] = 0
        if spec.variant == "gemm":   # transposed, zero padding
            padded.reshape(spec.dp, spec.kp)[:d, :self.k] = centers.T
        elif spec.variant == "rowwise":
            padded.reshape(d, spec.kp)[:, :self.k] = centers.T
        elif spec.variant == "blocked":   # panels of cv vectors of centroids
            padded[:] = pack_centers(np.asarray(centers, dtype), spec)
        else:
            padded.reshape(spec.kp, d)[:self.k] = centers
        self._write(self.centers, padded)

    def _host(self):
        """The pass's page-locked host arrays (made on first use): the
        centres' layouts going up, the statistics coming back.  A blocking
        copy from pageable memory holds its queue and, with several devices
        driven at once, NVIDIA's driver."""
        if self._pinned is None:
            q, spec, d, k = self.part.queue, self.spec, self.part.d, self.k
            dtype, acc = self.part.dtype, self.part.acc_double
            words = 1 if acc else 2   # Kahan: the sums, then their compensations
            inertia = self.block_inertia if self.exact else self.part_inertia
            shapes = {"norms": (spec.kp, dtype),
                      "inertia": (inertia.size, inertia.dtype),
                      "flags": (self.part_flags.size, np.int32)}
            if spec.reads_rows:
                shapes["center_rows"] = (k * d, dtype)
            if spec.variant != "mma":
                shapes["centers"] = (self.centers.size, dtype)
            if self.update and self.exact:   # the folds' words
                shapes.update({name: (fold.out.size, np.float64)
                               for name, fold in self.folds.items()})
            elif self.update:
                shapes.update(sums=(words * k * d, acc_dtype(acc)),
                              weights=(words * k, acc_dtype(acc)))
                self.reduced = {name: cla.empty(q, size, t) for name, (size, t) in
                                shapes.items() if name in ("sums", "weights")}
            # from the process's pool: a pass over more rows than lloyd_shards
            # pools is made anew each fit, and page-locking is slow on NVIDIA's
            staging = self._staging = PinnedStaging(q)
            self._pinned = {name: staging.host(name, size, t)
                            for name, (size, t) in shapes.items()}
        return self._pinned

    def _write(self, dst, host):
        """*host* (page-locked) into device array *dst*, not waited on: the
        pass that follows on the queue reads it (the next upload waits for
        it before refilling *host*)."""
        self._writes.append(cl.enqueue_copy(self.part.queue, dst.data, host,
                                            is_blocking=False))

    def launches(self, labels):
        """The pass's kernel launches into *labels*, in order: (spec, kernel
        name, global size, local size, arguments)."""
        part, spec = self.part, self.spec
        data = (part.x.data, np.int64(part.n), np.int64(part.stride), part.weights_arg())
        if not spec.labels_first:
            rows = (self.center_rows.data,) if spec.reads_rows else ()
            return [(spec, spec.kernel_name, (self.groups * spec.wg,), (spec.wg,), (
                *data, self.centers.data, *rows, self.norms.data, labels.data,
                self.min_dist.data, self.part_sums.data, self.part_weights.data,
                self.part_inertia.data, self.part_flags.data, np.int64(self.group_rows),
                np.int64(self.block_rows or self.group_rows)))]
        rechecked = (self.part_rechecked.data,) if spec.rechecks else ()
        rounding = (self.center_rounding.data,) if spec.rechecks else ()
        out = [(spec, spec.kernel_name, (self.groups * spec.wg,), (spec.wg,), (
            *data, self.centers.data, self.center_rows.data, self.norms.data, *rounding,
            labels.data,
            self.min_dist.data, self.part_inertia.data, self.part_flags.data,
            *rechecked, np.int64(self.tiles)))]
        if self.update:
            out.append((spec.accumulate_spec(), "accumulate_sums",
                        (self.segments * self.slices * spec.acc_wg,), (spec.acc_wg,), (
                            *data, labels.data, self.part_sums.data, self.part_weights.data,
                            np.int64(self.rows_per_segment), np.int32(self.slices))))
        return out

    def kernel_specs(self):
        """The specs of the kernels the pass launches (launches' specs)."""
        if self.update and self.spec.labels_first:
            return (self.spec, self.spec.accumulate_spec())
        return (self.spec,)

    def enqueue(self, labels):
        q = self.part.queue
        for spec, name, global_size, local_size, args in self.launches(labels):
            kern = self.kernel if spec is self.spec else kernel(q.context, spec, name)
            kern(q, global_size, local_size, *args)

    def run(self, centers, labels, norms=None):
        """Assign every row to its nearest centre of *centers* (k x d), writing
        *labels* (a device int32 array holding the previous labels); *norms*:
        see upload.  The statistics settled (float64: this partition's alone)."""
        return self.collect(self.launch(centers, labels, norms)).settled()

    def launch(self, centers, labels, norms=None):
        """run's device work enqueued, its results' reads too, not waited
        on (flushed: it starts now): what collect() waits for.  *centers*
        None: the pass's centre buffers hold them already (written on the
        device: lloyd_update)."""
        part, q = self.part, self.part.queue
        if centers is not None:
            self.upload(centers, norms)
        self.enqueue(labels)
        host = self._host()
        if self.exact:
            return self._launch_exact(host)
        reads = [("inertia", self.part_inertia), ("flags", self.part_flags)]
        if self.update:   # the slabs summed on the device (fixed order), the totals read
            for name, part_buf, size in (("sums", self.part_sums, self.k * part.d),
                                         ("weights", self.part_weights, self.k)):
                enqueue_reduce(q, part_buf, self.partials, size, part.dtype,
                               part.acc_double, self.reduced[name])
                reads.append((name, self.reduced[name]))
        events = [cl.enqueue_copy(q, host[name], src.data, is_blocking=False)
                  for name, src in reads]
        q.flush()
        return events

    def enqueue_exact(self, inertia=None):
        """Enqueue the split-free statistics of the pass enqueued last: the
        slabs' exact folds (into the folds' ``out``) on the grids of the
        fit's magnitudes (set here: a pooled pass's partition changes),
        and min_dist's weighted block sums (into *inertia*, a device array
        of ``blocks`` doubles; default ``block_inertia``)."""
        part, q = self.part, self.part.queue
        self.set_grids()
        if self.update:   # both in one launch
            self.folds["sums"].enqueue(self.part_sums, self.partials,
                                       paired=(self.folds["weights"], self.part_weights))
        sums = self._block_sums
        if sums is None or not sums.of(self.min_dist, part.weights, part.n):
            sums = self._block_sums = exact_fold.BlockSums(q, self.min_dist, part.weights,
                                                           part.n, self.block_rows)
        sums.enqueue(self.block_inertia if inertia is None else inertia)

    def set_grids(self):
        """The folds' grids from the fit's magnitudes (set where they change:
        a pooled pass's partition does)."""
        magnitudes = exact_fold.magnitudes_of(self.part)
        if self.update and self._grids_of is not magnitudes:   # (k x d bounds compared)
            absmax, wmax = magnitudes
            bound = self.block_rows * wmax
            for name, fold in self.folds.items():
                fold.set_bounds(bound * absmax[None, :] if name == "sums" else bound)
            self._grids_of = magnitudes

    def _launch_exact(self, host):
        """launch()'s split-free statistics enqueued and their reads."""
        q = self.part.queue
        self.enqueue_exact()
        reads = [("inertia", self.block_inertia), ("flags", self.part_flags)]
        reads += [(name, fold.out) for name, fold in self.folds.items()]
        events = [cl.enqueue_copy(q, host[name], src.data, is_blocking=False)
                  for name, src in reads]
        q.flush()
        return events

    def collect(self, events):
        """The LloydStats of the pass launch() enqueued (*events*: its reads)."""
        part, host = self.part, self._host()
        cl.wait_for_events(events)   # one wait for all of them
        sums = weights = None
        if self.exact:
            if self.update:   # views of the reused page-locked reads: every caller
                # totals or settles them before the next launch reads into them
                sums, weights = (fold.words(host[name], copy=False)
                                 for name, fold in self.folds.items())
            blocks = exact_sums.blocks_of(part.n, self.block_rows)
            inertia = exact_sums.ExactWords.of_values(host["inertia"][:blocks])
            flags = host["flags"].reshape(-1, 2)
            return LloydStats(sums, weights, inertia, int(flags[:, 0].sum()),
                              int(flags[:, 1].sum()), self.rechecked())
        if self.update:
            sums = self._read("sums", self.k * part.d).reshape(self.k, part.d)
            weights = self._read("weights", self.k)
        flags = host["flags"].reshape(-1, 2)
        inertia = float(np.sum(host["inertia"][:self.groups], dtype=np.float64))
        return LloydStats(sums, weights, inertia, int(flags[:, 0].sum()),
                          int(flags[:, 1].sum()), self.rechecked())

    def _read(self, name, size):
        """The *size* totals *name* launch() read, in float64 (Kahan
        sums: the totals plus their compensations)."""
        got = self._host()[name].astype(np.float64)
        return got if self.part.acc_double else got[:size] + got[size:]

    def rechecked(self):
        """The rows the last pass re-checked (0 without a fast mode's pass)."""
        if not self.spec.rechecks:
            return 0
        return int(self.part_rechecked.get(self.part.queue).sum())
