"""The Lloyd pass on one device partition: labels, partial sums, inertia.

Pairs with templates/lloyd_*.cl.mako: the fused tiled and row-wise kernels,
and the register-tiled GEMM-style assignment followed by the label-driven
accumulation of sums ("gemm"; "mma" on NVIDIA tensor cores).  The pass is
the *local statistics* step of k-means (parallel/sharded.py's LloydShards
runs it over a fit's rows); the k-means loop (cluster/kmeans.py) only sees
the reduced statistics, never where or how distances are computed.
"""
import dataclasses

import numpy as np
import pyopencl.array as cla

from ..runtime.codegen import Spec, first_fitting, kernel, kernel_work_group_limit
from ..runtime import codegen
from ..runtime.profiles import declare_terms, term
from .distance_tile import power_of_two_at_most
from .lloyd_blocked import blocked_specs, pack_centers
from .lloyd_gemm import AccumulateSpec, gemm_specs, segments
from .lloyd_mma import mma_specs, split_centers, tile_words
from ..runtime.reduce import Stats, partial_buffer, reduce_partials

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
class LloydSpec(Spec):
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
    of ``acc_wg`` work-items (AccumulateSpec).  "mma": the gemm variant's
    outputs from NVIDIA tensor cores (lloyd_mma.py): wg / 32 warps of mt m16
    row tiles, chunks of tn centroids, kpar accumulator sets."""
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
    prefetch: int = 0
    mt: int = 1
    kpar: int = 1

    @property
    def template(self):
        return {"tiled": "lloyd_assign_accumulate.cl.mako",
                "rowwise": "lloyd_assign_accumulate_rowwise.cl.mako",
                "blocked": "lloyd_blocked.cl.mako",
                "gemm": "lloyd_gemm_assign.cl.mako",
                "mma": "lloyd_mma_assign.cl.mako"}[self.variant]

    @property
    def labels_first(self):
        """Whether the pass is two kernels: the labels, then the sums from them."""
        return self.variant in ("gemm", "mma")

    @property
    def kernel_name(self):
        return "assign_gemm" if self.labels_first else "assign_and_accumulate"

    def accumulate_spec(self):
        return AccumulateSpec(dtype=self.dtype, acc_double=self.acc_double, d=self.d, k=self.k,
                              slice=self.slice, acc_wg=self.acc_wg, weighted=self.weighted)

    def local_bytes(self):
        item = np.dtype(self.dtype).itemsize
        acc = 8 if self.acc_double else 4
        if self.variant in ("rowwise", "blocked"):
            return 0
        sums = self.accumulate_spec().local_bytes() if self.update else 0
        if self.variant == "mma":    # as lloyd_mma_assign.cl.mako lays it out
            return max(max(self.tn * self.dp * 4, 8 * self.tm) * 4 + self.wg * acc, sums)
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

    def template_args(self):
        return dict(super().template_args(), copies=self.copies, aliased=self.aliased)

    def private_floats(self):
        if self.variant == "blocked":   # accumulators, a panel's vectors, the winners
            return (self.rb * self.cv + self.cv + 2 * self.rb * self.nb) * self.vw
        return self.ppi * (self.ctile + (self.d if self.stage_point else 0))


def candidate_specs(profile, dtype, d, k, update, weighted):
    """Specs from the profile's choice down to the smallest; the first that
    fits the device is used.  The profile's variant comes first, the other
    after it: the row-wise one needs no local memory, so one always fits."""
    base = dict(dtype=np.dtype(dtype).name, acc_double=profile.fp64, d=d, k=k,
                update=update, weighted=weighted)
    variants = (_rowwise_specs, _tiled_specs)
    variant = profile.terms(LloydTerms).variant
    if variant == "tiled":
        variants = variants[::-1]
    elif variant == "blocked":   # then the row-wise one (it always fits)
        variants = (_blocked_specs, _rowwise_specs)
    elif variant == "gemm":   # then the fused ones
        variants = (_gemm_specs, _tiled_specs, _rowwise_specs)
    elif variant == "mma":    # where tensor cores are; else gemm
        variants = (_mma_specs, _gemm_specs, _tiled_specs, _rowwise_specs)
    for specs in variants:
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


def _mma_specs(profile, base):
    return mma_specs(profile, base, LloydSpec)


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


def plan(profile, queue, dtype, d, k, update, weighted, spec=None):
    """The built kernel and spec of the first candidate that fits the device
    (built in *queue*'s context); *spec*: offered alone instead of the
    candidates (see LloydPass)."""
    def sums_fit(spec):   # the gemm variant's second kernel must fit too
        if not spec.labels_first or not update:
            return True
        sums = kernel(queue.context, spec.accumulate_spec(), "accumulate_sums")
        return kernel_work_group_limit(sums, queue.device) >= spec.acc_wg
    specs = ([spec] if spec is not None else
             candidate_specs(profile, dtype, d, k, update, weighted))
    return codegen.plan("lloyd", queue.context,
                        (profile, np.dtype(dtype).name, d, k, update, weighted, spec),
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


@dataclasses.dataclass
class LloydStats(Stats):
    sums: np.ndarray        # k x d weighted sums (float64); None without update
    weights: np.ndarray     # k cluster weights (float64); None without update
    inertia: float
    n_changed: int
    n_nonfinite: int


class LloydPass:
    """Runs the Lloyd pass over a DevicePartition into caller-owned labels.

    ``spec``: a LloydSpec of this problem (as candidate_specs makes them,
    for the partition's dtype, d, weights and *k*, *update*) offered alone
    instead of the candidates: still checked against the device and built
    as the planner's pick would be (a harness runs every variant)."""

    def __init__(self, part, k, update=True, spec=None):
        self.part, self.k, self.update = part, k, update
        self.spec, self.kernel = plan(part.profile, part.queue, part.dtype, part.d, k, update,
                                       part.weighted, spec)
        gemm = self.spec.labels_first
        rows = self.spec.tm if gemm else self.spec.wg * self.spec.ppi
        self.groups, self.tiles = part.groups(self.spec.wg, rows)
        q, acc = part.queue, part.acc_double
        self.part_inertia = partial_buffer(q, self.groups, 1, acc)
        self.part_flags = cla.empty(q, 2 * self.groups, np.int32)
        self.min_dist = cla.empty(q, part.n, part.dtype)
        self.norms = cla.empty(q, self.spec.kp, part.dtype)
        if gemm:   # mma: the centres split in its fragments' order (lloyd_mma.split_centers)
            self.centers = (cla.empty(q, tile_words(self.spec), np.uint32)
                            if self.spec.variant == "mma" else
                            cla.empty(q, self.spec.dp * self.spec.kp, part.dtype))
            self.center_rows = cla.empty(q, k * part.d, part.dtype)
            self.slices = -(-k // self.spec.slice)
            self.segments = segments(part, k, self.spec.accumulate_spec()) if update else 1
            self.rows_per_segment = -(-part.n // self.segments)
            partials = self.segments
        else:
            self.centers = cla.empty(q, self.spec.kp * part.d, part.dtype)
            partials = self.groups
        self.partials = partials
        self.part_sums = partial_buffer(q, partials, k * part.d if update else 1, acc)
        self.part_weights = partial_buffer(q, partials, k if update else 1, acc)

    def upload(self, centers):
        spec, d, dtype = self.spec, self.part.d, self.part.dtype
        norms = np.full(spec.kp, np.inf, dtype)
        norms[:self.k] = center_norms(centers, dtype)
        q = self.part.queue
        self.norms.set(norms, q)
        if spec.labels_first:
            self.center_rows.set(np.ascontiguousarray(centers, dtype).ravel(), q)
        if spec.variant == "mma":   # split on the device, in its fragments' order
            split_centers(q, spec, self.center_rows, self.centers)
            return
        if spec.variant == "gemm":
            padded = np.zeros((spec.dp, spec.kp), dtype)   # transposed, zero padding
            padded[:d, :self.k] = centers.T
        else:
            padded = np.zeros((spec.kp, d), dtype)
            padded[:self.k] = centers
            if spec.variant == "rowwise":
                padded = np.ascontiguousarray(padded.T)
            elif spec.variant == "blocked":
                padded = pack_centers(np.asarray(centers, dtype), spec)
        self.centers.set(padded.ravel(), q)

    def enqueue(self, labels):
        part, q, spec = self.part, self.part.queue, self.spec
        data = (part.x.data, np.int64(part.n), np.int64(part.stride), part.weights_arg())
        if not spec.labels_first:
            self.kernel(q, (self.groups * spec.wg,), (spec.wg,), *data,
                        self.centers.data, self.norms.data, labels.data, self.min_dist.data,
                        self.part_sums.data, self.part_weights.data, self.part_inertia.data,
                        self.part_flags.data, np.int64(self.tiles))
            return
        self.kernel(q, (self.groups * spec.wg,), (spec.wg,), *data,
                    self.centers.data, self.center_rows.data, self.norms.data, labels.data,
                    self.min_dist.data, self.part_inertia.data, self.part_flags.data,
                    np.int64(self.tiles))
        if self.update:
            sums = kernel(q.context, spec.accumulate_spec(), "accumulate_sums")
            sums(q, (self.segments * self.slices * spec.acc_wg,), (spec.acc_wg,), *data,
                 labels.data, self.part_sums.data, self.part_weights.data,
                 np.int64(self.rows_per_segment), np.int32(self.slices))

    def run(self, centers, labels):
        """Assign every row to its nearest centre of *centers* (k x d), writing
        *labels* (a device int32 array holding the previous labels)."""
        part, q = self.part, self.part.queue
        self.upload(centers)
        self.enqueue(labels)
        sums = weights = None
        if self.update:
            acc = part.acc_double
            sums = reduce_partials(q, self.part_sums, self.partials, self.k * part.d,
                                   part.dtype, acc).reshape(self.k, part.d)
            weights = reduce_partials(q, self.part_weights, self.partials, self.k,
                                      part.dtype, acc)
        flags = self.part_flags.get(q).reshape(-1, 2)
        inertia = float(np.sum(self.part_inertia.get(q)[:self.groups], dtype=np.float64))
        return LloydStats(sums, weights, inertia, int(flags[:, 0].sum()), int(flags[:, 1].sum()))
