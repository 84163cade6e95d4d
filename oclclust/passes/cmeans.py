"""The device side of fuzzy c-means: the fused pass of templates/cmeans/cmeans_pass.cl.mako
(distances, s_i once per row, memberships, per-work-group partial numerators
and denominators), its specs and their plans, over one DevicePartition.
cluster/mixture/cmeans_shards.py's CMeansShards runs it over a fit's rows (statistics in
float64, in row order, then over MPI ranks).  templates/cmeans/cmeans_labels.cl.mako
takes each row's largest membership on the device (row_labels).
"""
import dataclasses

import numpy as np
import pyopencl.array as cla

from ..runtime.codegen import EmulatedBuild, Spec, first_fitting
from ..runtime import codegen, exact_fold, exact_sums
from ..runtime.profiles import declare_terms, term
from .cmeans_mma import (MAX_SLOTS, operand_size, operands, precision_of, recheck_ratio,
                         shape_fields, stats_slots)
from .distance_tile import TileFields, TileTerms, chunk_depth, power_of_two_at_least
from ..runtime.reduce import acc_dtype, enqueue_reduce, partial_buffer, totals_of
from ..runtime.transfer import PinnedStaging, wait


@declare_terms
@dataclasses.dataclass(frozen=True)
class CMeansTerms:
    """distance_tiles 1: the distances as register tiles (TileTerms) first;
    mma 1: on NVIDIA tensor cores (cmeans_mma.py) before all where the
    device has them."""
    distance_tiles: int = term("cmeans_distance_tiles", 0, 1)
    mma: int = term("cmeans_mma", 0, 1)


@dataclasses.dataclass(frozen=True)
class CMeansSpec(TileFields, Spec):
    """tiled: the distances as register tiles (distance_tile.cl.mako), tm = p."""
    template = "cmeans/cmeans_pass.cl.mako"
    d: int = 1
    c: int = 1
    wg: int = 1
    p: int = 1
    xs: int = 1
    ps: int = 1
    stage_centers: bool = True
    cchunk: int = 1
    local_u: bool = True
    stage_point: bool = True
    acc_private: bool = True
    kb: int = 1
    kw: int = 1
    qs: int = 1
    update: bool = True
    write_u: bool = False
    weighted: bool = False
    m_two: bool = True
    row_major: bool = False

    def dt_size(self):
        """Reals of a tile's memberships."""
        return self.p * self.ps if self.row_major else self.c * self.ps

    def local_bytes(self):
        item, acc = np.dtype(self.dtype).itemsize, 8 if self.acc_double else 4
        reals = self.p * self.xs + self.p + 2 * self.wg
        reals += self.dt_size() if self.local_u else 0
        reals += self.cchunk * self.d if self.stage_centers else 0
        reals += self.kc * (self.tm + self.tn + 2 * self.vw) if self.tiled else 0
        return reals * item + self.wg * acc


@dataclasses.dataclass(frozen=True)
class MmaCMeansSpec(EmulatedBuild, CMeansSpec):
    """The tensor-core pass (cmeans_mma.py): the portable kernel's fields
    with its distances as 3xTF32 GEMM tiles (precision "float32"; "tf32",
    "bf16": one TF32 or BF16 product a step); dp, kp: d and c padded to 8; emulate: the
    products in plain OpenCL (tests on CPUs); truncate: emulate's sums as
    the tensor cores' truncating accumulation (mma_fragments.cl.mako);
    stats_mma: the statistics (update) on the tensor cores too.  Distances
    within cmeans_mma.recheck_ratio of 0 against ||x'||^2 + ||c'||^2 are
    re-checked exactly (the template's doc)."""
    template = "cmeans_mma/cmeans_mma_pass.cl.mako"
    dp: int = 8
    kp: int = 8
    emulate: bool = False
    truncate: bool = False
    stats_mma: bool = False
    precision: str = "float32"

    def local_bytes(self):
        return super().local_bytes() + self.p * 4 + (self.wg * 24 if self.emulate else 0)

    def template_args(self):
        ratio = recheck_ratio(self.precision, self.d, self.dp)
        return dict(super().template_args(), recheck=f"{ratio:.9e}f")


def mma_specs(profile, dtype, d, c, update, write_u, weighted, m_two, emulate=False,
              precision="float32"):
    """The tensor-core specs where cmeans_mma.shape_fields allows them
    (memberships in local memory first, as candidate_specs); *precision*:
    the estimator's (cmeans_mma.precision_of)."""
    shape = shape_fields(profile, dtype, d, c, emulate)
    if shape is None:
        return
    dp, kp, shapes = shape
    for local_u in (True, False):
        for wg, p in shapes:
            stats_mma = update and stats_slots(d, c, wg) <= MAX_SLOTS
            spec = MmaCMeansSpec(dtype="float32", acc_double=profile.fp64, d=d, c=c, wg=wg,
                                 stats_mma=stats_mma, p=p, ps=_odd(p), local_u=local_u,
                                 stage_centers=False, cchunk=c, update=update,
                                 write_u=write_u, weighted=weighted, m_two=m_two, dp=dp,
                                 kp=kp, emulate=emulate, precision=precision_of(precision),
                                 **dict(_layout(profile, d, c, wg, False, update),
                                        stage_point=False))
            if spec.local_bytes() <= profile.local_memory_budget:
                yield spec


def _odd(v):
    return v if v % 2 else v + 1


def column_blocks(c, d, wg):
    """(kb, kw, qs): the d + 1 statistics of a centre in kb blocks of kw
    columns, so that the c * kb (centre, block) slots keep the wg work-items
    evenly busy with the fewest accumulators each (qs slots, qs * kw sums)."""
    best = None
    for kw in range(1, d + 2):
        kb = -(-(d + 1) // kw)
        qs = -(-c * kb // wg)
        cost = (qs * kw, kb)         # work per item, then fewer blocks
        if best is None or cost < best[0]:
            best = cost, (kb, kw, qs)
    return best[1]


def row_major_blocks(c, d, wg):
    """(kb, kw, qs) of the row-major order: blocks of 4 to 8 columns (a
    work-item's running sums stay in registers), the fewest padded ones."""
    kw = min(range(min(4, d + 1), min(8, d + 1) + 1), key=lambda w: (-(-(d + 1) // w) * w, -w))
    kb = -(-(d + 1) // kw)
    return kb, kw, kb * -(-c // wg)


def _layout(profile, d, c, wg, row_major, update):
    """The spec fields that follow from the statistics' order."""
    kb, kw, qs = (row_major_blocks if row_major else column_blocks)(c, d, wg)
    acc_words = 2 * qs * kw    # a double, or a Kahan pair of floats
    acc_private = update and acc_words <= profile.private_floats // 2
    return dict(kb=kb, kw=kw, qs=qs, xs=_odd(max(d + 1, kb * kw)), row_major=row_major,
                acc_private=acc_private,
                stage_point=d + (acc_words if acc_private else 0) <= profile.private_floats)


def tile_fields(profile, d, c, wg, p):
    """The register tile of a P-row tile's distances (the profile's TileTerms,
    as k-means' gemm): rm rows of P, rn centres, columns shrunk while
    a step would be wider than the centres; None where it does not fit."""
    tile = profile.terms(TileTerms)
    rm = min(tile.reg_rows, p)
    ny = p // rm
    if p % rm or wg % ny:
        return None
    nx, rn = wg // ny, tile.reg_columns
    while rn > 1 and nx * rn // 2 >= power_of_two_at_least(c):
        rn //= 2
    vw = tile.vector_width
    vw = vw if rm % vw == 0 and rn % vw == 0 and vw & (vw - 1) == 0 else 1
    if rm * rn + rm + rn > profile.private_floats:
        return None
    return dict(tiled=True, tm=p, tn=nx * rn, rm=rm, rn=rn, vw=vw,
                kc=chunk_depth(profile, d),
                stage_centers=False, stage_point=False)


def candidate_specs(profile, dtype, d, c, update, write_u, weighted, m_two,
                    precision="float32"):
    """Specs in order of preference; the first that fits the device is used.
    Tile memberships in local memory before a global scratch; all centres
    staged before chunks of them before none; big tiles (several rows per
    statistic update) first; then smaller work-groups.  The tensor-core pass
    (cmeans_mma.py) before all where the profile asks (cmeans_mma) and the
    device, dtype and d allow, at *precision* (the estimator's: only the
    tensor-core pass reads it)."""
    if profile.terms(CMeansTerms).mma:
        yield from mma_specs(profile, dtype, d, c, update, write_u, weighted, m_two,
                             precision=precision)
    item = np.dtype(dtype).itemsize
    wg = 1 << (max(1, min(profile.work_group_size, profile.max_work_group_size)).bit_length() - 1)
    while True:
        base = dict(dtype=np.dtype(dtype).name, acc_double=profile.fp64, d=d, c=c, wg=wg,
                    update=update, write_u=write_u, weighted=weighted, m_two=m_two)
        tiles = [1 << s for s in range(wg.bit_length() - 1, -1, -1)]
        big = min(8, wg)           # rows per tile that amortise a statistics update
        for local_u in (True, False):
            for lo, hi in ((big, wg), (1, big - 1)):
                # register-tiled distances first where the profile says so
                for p in tiles if profile.terms(CMeansTerms).distance_tiles else ():
                    fields = tile_fields(profile, d, c, wg, p) if lo <= p <= hi else None
                    if fields is None:
                        continue
                    row_major = profile.type == "cpu" and p == wg
                    spec = CMeansSpec(p=p, ps=_odd(c if row_major else p), local_u=local_u,
                                      cchunk=c, **base,
                                      **dict(_layout(profile, d, c, wg, row_major, update),
                                             **fields))
                    if spec.local_bytes() <= profile.local_memory_budget:
                        yield spec
                for stage in ("all", "chunk", "none"):
                    for p in tiles:
                        if not lo <= p <= hi:
                            continue
                        row_major = profile.type == "cpu" and p == wg
                        spec = CMeansSpec(p=p, ps=_odd(c if row_major else p), local_u=local_u,
                                          stage_centers=stage != "none", cchunk=c, **base,
                                          **_layout(profile, d, c, wg, row_major, update))
                        if stage == "chunk":
                            spare = profile.local_memory_budget - spec.local_bytes() + \
                                c * d * item
                            chunk = min(c - 1, spare // (d * item))
                            if chunk < 1:
                                continue
                            spec = dataclasses.replace(spec, cchunk=int(chunk))
                        if spec.local_bytes() <= profile.local_memory_budget:
                            yield spec
        if wg == 1:
            return
        wg //= 2


def plan(profile, queue, dtype, d, c, update, write_u, weighted, m_two, spec=None,
         precision="float32"):
    """(spec, kernel) of the first candidate that builds and fits the device;
    *spec*: offered alone instead of the candidates (see CMeansPass)."""
    specs = ([spec] if spec is not None else
             candidate_specs(profile, dtype, d, c, update, write_u, weighted, m_two,
                             precision))
    return codegen.plan("cmeans", queue.context,
                        (profile, np.dtype(dtype).name, d, c, update, write_u, weighted, m_two,
                         spec, precision_of(precision)),
                        lambda: first_fitting(profile, queue, specs, "cmeans_pass", "c-means"))


@dataclasses.dataclass(frozen=True)
class LabelsSpec(Spec):
    template = "cmeans/cmeans_labels.cl.mako"
    wg: int = 1

    def local_bytes(self):
        return 0


def row_labels(profile, queue, u, n, c):
    """Each row's largest membership (the first of equals, numpy's argmax)
    of the n x c memberships *u* (a device array on *queue*, of the device
    *profile* describes): an int32 device array."""
    wg = 1 << (min(profile.work_group_size, profile.max_work_group_size).bit_length() - 1)
    specs = [LabelsSpec(dtype=np.dtype(u.dtype).name, acc_double=profile.fp64, wg=w)
             for w in (wg, 1)]
    spec, kern = codegen.plan("cmeans_labels", queue.context, (profile, specs[0]),
                              lambda: first_fitting(profile, queue, specs, "cmeans_labels",
                                                    "c-means labels"))
    labels = cla.empty(queue, n, np.int32)
    kern(queue, (-(-n // spec.wg) * spec.wg,), (spec.wg,), u.data, np.int64(n), np.int32(c),
         labels.data)
    return labels


class CMeansPass:
    """The fused pass over one DevicePartition.  ``update``: partial
    statistics; ``write_u``: the memberships into ``self.u`` (n x c).
    ``spec``: a CMeansSpec of this problem (as candidate_specs makes them)
    offered alone instead of the candidates: still checked against the
    device and built as the planner's pick would be (a harness runs every
    variant).  ``precision``: the estimator's (the tensor-core pass's mode,
    cmeans_mma.py).  Split-free (runtime.exact_sums.exact_device): a work-group a
    fixed block of rows, its partial statistics folded exactly and its
    objective summed exactly; else persistent groups, reduced in float64."""

    def __init__(self, part, c, m, update=True, write_u=False, spec=None, precision="float32"):
        self.part, self.c, self.m, self.update = part, c, float(m), update
        q = part.queue
        self.spec, self.kernel = plan(part.profile, q, part.dtype, part.d, c, update, write_u,
                                      part.weighted, self.m == 2.0, spec, precision)
        self.size = c * (part.d + 1)
        self.exact = exact_sums.exact_device(part)
        if self.exact:   # a group a block (a partition without rows: one, empty)
            self.block_rows = exact_sums.block_rows_of(part, self.size)
            self.groups = max(1, exact_sums.blocks_of(part.n, self.block_rows))
            self.tiles = -(-self.block_rows // self.spec.p)
            self.fold = exact_fold.Fold(q, (c, part.d + 1)) if update else None
        else:
            self.groups, self.tiles = part.groups(self.spec.wg, self.spec.p)
            self.block_rows = self.tiles * self.spec.p
        self.part_stats = partial_buffer(q, self.groups, self.size if update else 1,
                                         part.acc_double)
        self.part_obj = cla.empty(q, self.groups, acc_dtype(part.acc_double))
        self.part_flags = cla.empty(q, self.groups, np.int32)
        self.scratch = (None if self.spec.local_u else
                        cla.empty(q, self.groups * self.spec.dt_size(), part.dtype))
        self.mma = isinstance(self.spec, MmaCMeansSpec)
        self.centers = cla.empty(q, (operand_size(c, part.d, self.spec.dp,
                                                             self.spec.kp)
                                     if self.mma else c * part.d), part.dtype)
        self.u = cla.empty(q, part.n * c, part.dtype) if write_u else None
        self.reduced = (partial_buffer(q, 1, self.size, part.acc_double)
                        if update and not self.exact else None)
        self.staging = PinnedStaging(q)
        self.values = None          # the settled statistics (launch's *settle*)
        self.settled = False
        self.stats_read = False     # whether the last launch read the statistics
        self._grids_of = None       # the magnitudes the fold's grid was set from

    def run(self, centers):
        """(statistics c x (d+1) float64 or None, objective, non-finite count)."""
        stats, objective, bad = self.sums(centers)
        return (exact_sums.settle(stats), float(exact_sums.settle(objective)), bad)

    def sums(self, centers):
        """run's values as this partition's sums: the statistics and the
        objective as exact_sums.ExactWords when split-free (they add over
        chunks and ranks to the same bits however the rows are split)."""
        return self.collect(self.launch(centers))

    def launch(self, centers, settle=False, read_stats=True):
        """sums()'s device work enqueued, the centres going up and the
        results coming back through page-locked memory, not waited on
        (flushed: it starts now): what collect() waits for.  Several
        devices' passes are launched one after another from one thread,
        then collected (runtime.transfer.PinnedStaging).  *settle*: this
        partition is the fit's only one, so its exact sums are rounded as
        they finish (the statistics on the device: exact_fold.Fold.
        enqueue_value, the bits ExactWords.value() gives; the objective by
        exact_sums.rounded_sum) and collect() gives float64 values.
        *centers* None: the pass reads the centres its buffer holds (an
        update on the device wrote them: passes/cmeans_update.py);
        *read_stats* False: the statistics stay on the device (the caller
        reads the fold's words: cmeans_update.SharedCMeans)."""
        events = [] if centers is None else [self.upload(centers)]
        self.enqueue_sums(settle)
        stage = self.staging
        self.stats_read = self.update and read_stats
        if self.stats_read:
            events.append(stage.get("stats", self.summed()))
        events += [stage.get("obj", self.part_obj), stage.get("flags", self.part_flags)]
        self.part.queue.flush()
        return events

    def upload(self, centers):
        """*centers* (c x d) into the pass's buffer, as it reads them, not
        waited on: the copy's event."""
        return self.staging.put("centers", self.centers,
                                operands(centers, self.spec.dp, self.spec.kp) if self.mma
                                else np.asarray(centers, self.part.dtype))

    def enqueue_sums(self, settle=False):
        """The pass over the centres in its buffer and its statistics'
        reduction (summed(): where they end) enqueued; launch's *settle*."""
        part, q = self.part, self.part.queue
        if self.update and self.exact:   # uploads before the kernels (GmmPass.em_launch)
            magnitudes = exact_fold.magnitudes_of(part)
            if self._grids_of is not magnitudes:   # (a fit's are fixed: once, not each pass)
                # |a block's sum of w u^m x_k| <= B wmax max|x_k|, of w u^m <= B wmax
                absmax, wmax = magnitudes
                self.fold.set_bounds(self.block_rows * wmax * np.append(absmax, 1.0)[None, :])
                self._grids_of = magnitudes
        real = part.dtype.type
        self.kernel(q, (self.groups * self.spec.wg,), (self.spec.wg,),
                    part.x.data, np.int64(part.n), np.int64(part.stride), part.weights_arg(),
                    self.centers.data, real(self.m), real(1.0 / (self.m - 1.0)),
                    (self.u if self.u is not None else part.x).data, self.part_stats.data,
                    self.part_obj.data, self.part_flags.data,
                    (self.scratch if self.scratch is not None else part.x).data,
                    np.int64(self.tiles), np.int64(self.block_rows))
        self.settled = bool(settle and self.exact)
        if self.update and self.exact:
            self.fold.enqueue(self.part_stats, self.groups)
            if self.settled:
                self.fold.enqueue_value(self.summed())
        elif self.update:
            enqueue_reduce(q, self.part_stats, self.groups, self.size, part.dtype,
                           part.acc_double, self.reduced)

    def summed(self):
        """The device array enqueue_sums leaves the statistics in: settled,
        c x (d + 1) float64 values; exact, the fold's words; else the
        reduced partials (with fp64, c x (d + 1) float64 values)."""
        if self.settled:
            if self.values is None:
                self.values = cla.empty(self.part.queue, self.size, np.float64)
            return self.values
        return self.fold.out if self.exact else self.reduced

    def objective_of(self, obj):
        """The objective of the group values *obj* (part_obj, read): as
        collect() gives it."""
        if self.settled:
            return exact_sums.rounded_sum(obj)
        if self.exact:
            return exact_sums.ExactWords.of_values(obj)
        return float(np.sum(obj, dtype=np.float64))

    def collect(self, events):
        """The sums of the pass launch() enqueued (*events*: its copies)."""
        stats, obj, bad = self.collect_parts(events)
        return stats, self.objective_of(obj), bad

    def collect_parts(self, events):
        """collect()'s values with the objective's group values as read (a
        copy: the staging is read into again), for objective_of once the
        caller has time (a shared update: after the next pass is enqueued);
        the statistics None where launch() did not read them (``stats_read``)."""
        part, stage = self.part, self.staging
        wait(events)
        stats = None
        if self.stats_read:
            if self.settled:   # copies: the arrays are read into again
                stats = stage.read("stats", self.size).reshape(self.c, part.d + 1).copy()
            elif self.exact:
                stats = self.fold.words(stage.read("stats", self.fold.out.size))
            else:
                stats = totals_of(stage.read("stats", self.reduced.size), self.size,
                                  part.acc_double).reshape(self.c, part.d + 1)
        return (stats, stage.read("obj", self.groups).copy(),
                int(stage.read("flags", self.groups).sum()))
