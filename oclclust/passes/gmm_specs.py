"""The diagonal and full GMM kernels' specs and their planners: the E step
(templates/gmm/gmm_estep.cl.mako, per point or in register tiles; the
tensor-core kernel of gmm_mma.py first where the profile asks), the M
statistics (gmm_mstep.cl.mako on GPUs, gmm_mstep_rowwise.cl.mako on CPUs;
gmm_mma_mstep.cl.mako first where asked) and the one-hot start
(gmm_onehot.cl.mako).  gmm.py's GmmPass runs what ``plan`` gives.
"""
import dataclasses

import numpy as np

from ..runtime.codegen import Spec, first_fitting
from ..runtime import codegen
from ..runtime.profiles import declare_terms, term
from .gmm_mma_full import estep_specs as mma_full_estep_specs
from .gmm_mma import (MmaMStepSpec, estep_specs as mma_estep_specs,
                      mstep_specs as mma_mstep_specs)
from .distance_tile import TileFields, TileTerms, chunk_depth, power_of_two_at_least


@declare_terms
@dataclasses.dataclass(frozen=True)
class GmmTerms:
    """distance_tiles 1: the diagonal E-step's distances as register tiles
    (TileTerms) first.  mma 1: the diagonal E-step on NVIDIA tensor cores
    (gmm_mma.py) first where the device has them; mma_mstep 1: the
    diagonal M-step statistics there too; mma_lane_recheck 1: its
    one-product precisions' re-check made by each row's lanes
    (MmaEStepSpec.lane_recheck); mma_packed_chunks 1: its "bf16"
    coefficients rounded to bfloat16 pairs as each chunk is staged
    (MmaEStepSpec.packed_chunks); mma_one_product_min_dk: the least d K
    at which "tf32"/"bf16" plan its one-product kernel (below, its 3xTF32
    kernel, faster there: each row's re-check costs more than the
    products it saves).  mma_full 1: the full (and tied) E-step there too
    (gmm_mma_full.py) from mma_full_min_d dimensions on (below, no
    faster than the portable kernel: a component's few products a warp
    leave its sums and log-sum-exp the bound).  mstep_upper 1: the full
    covariances' M statistics in symmetric register blocks
    (MStepUpperSpec) first on a GPU with fp64."""
    distance_tiles: int = term("gmm_distance_tiles", 0, 1)
    mma: int = term("gmm_mma", 0, 1)
    mma_mstep: int = term("gmm_mma_mstep", 0, 1)
    mma_lane_recheck: int = term("gmm_mma_lane_recheck", 0, 1)
    mma_packed_chunks: int = term("gmm_mma_packed_chunks", 0, 1)
    mma_one_product_min_dk: int = term("gmm_mma_one_product_min_dk", 0, 2 ** 31)
    mma_full: int = term("gmm_mma_full", 0, 1)
    mma_full_min_d: int = term("gmm_mma_full_min_d", 0, 1 << 20)
    mstep_upper: int = term("gmm_mstep_upper", 0, 1)


# ------------------------------------------------------------ kernel specs
@dataclasses.dataclass(frozen=True)
class EStepSpec(TileFields, Spec):
    """tiled (diag): register tiles (distance_tile.cl.mako) of tm points x tn
    components."""
    template = "gmm/gmm_estep.cl.mako"
    d: int = 1
    wg: int = 1
    ppi: int = 1
    cchunk: int = 1
    stage_params: bool = True
    full: bool = True

    @property
    def rows(self):
        """Points of a work-group tile."""
        return self.tm if self.tiled else self.wg * self.ppi

    def local_bytes(self):
        item = np.dtype(self.dtype).itemsize
        if self.tiled:   # x, mean and precision chunks, the log-density tile
            reals = self.kc * (self.tm + 2 * self.tn + 3 * self.vw) + self.tm * (self.tn + 1)
            return self.wg * 8 + reals * item
        staged = self.cchunk * record_size(self.d, self.full) if self.stage_params else 0
        return self.wg * 8 + staged * item


@dataclasses.dataclass(frozen=True)
class MStepSpec(Spec):
    """``variant`` "tiled": a work-group per (component, chunk), register
    blocks of the scatter per work-item (GPUs); "rowwise": a work-item per
    component (CPUs, which vectorise across work-items; d <= 32 full, 64 diag)."""
    variant: str = "tiled"
    d: int = 1
    wg: int = 1
    tb: int = 1
    nb: int = 1
    reps: int = 1
    tile: int = 1
    full: bool = True

    @property
    def template(self):
        return {"tiled": "gmm/gmm_mstep.cl.mako", "rowwise": "gmm/gmm_mstep_rowwise.cl.mako"}[
            self.variant]

    def local_bytes(self):
        if self.variant == "rowwise":
            return 0
        return (2 * self.tile * self.nb * self.tb + self.tile) * np.dtype(self.dtype).itemsize

    def groups_per_chunk(self, k):
        return k if self.variant == "tiled" else -(-k // self.wg)


@dataclasses.dataclass(frozen=True)
class MStepUpperSpec(Spec):
    """The full covariances' M statistics in symmetric register blocks
    (gmm_mstep_upper.cl.mako): a work-group of wg work-items per
    (component, chunk), the nb (nb + 1) / 2 tb x tb blocks on and above
    S2's diagonal each shared by *replicas* work-items, stages of *tile*
    rows.  Float64 sums (acc_double) alone."""
    template = "gmm/gmm_mstep_upper.cl.mako"
    reps = 1      # slabs a chunk: the replicas are added in the work-group
    d: int = 1
    wg: int = 1
    tb: int = 4
    nb: int = 1
    replicas: int = 1
    tile: int = 64

    @property
    def blocks(self):
        return self.nb * (self.nb + 1) // 2

    @property
    def stagers(self):
        """Rows staged at once (a work-item a row's vector column)."""
        return min(self.wg // self.nb, self.tile)

    def pool_vectors(self):
        """The kernel's local memory in tb-vectors: the stage (z and r z of
        its rows), whose memory the replicas' blocks and the staging items'
        N and S1 (doubles) take after."""
        vector = self.tb * np.dtype(self.dtype).itemsize
        sums = self.blocks * self.tb * self.tb + self.stagers * self.nb * (self.tb + 1)
        return max(2 * self.tile * self.nb, -(-sums * 8 // vector))

    def local_bytes(self):
        return self.pool_vectors() * self.tb * np.dtype(self.dtype).itemsize

    def template_args(self):
        return dict(super().template_args(), stagers=self.stagers, pool=self.pool_vectors())

    def groups_per_chunk(self, k):
        return k


@dataclasses.dataclass(frozen=True)
class OneHotSpec(Spec):
    template = "gmm/gmm_onehot.cl.mako"
    wg: int = 1

    def local_bytes(self):
        return 0


def _onehot_specs(profile, dtype):
    wg = 1 << (min(profile.work_group_size, profile.max_work_group_size).bit_length() - 1)
    for w in (wg, 1):
        yield OneHotSpec(dtype=np.dtype(dtype).name, acc_double=profile.fp64, wg=w)


def record_size(d, full):
    """Reals per component record: c_k, mean, precision Cholesky factor."""
    return 1 + d + (d * (d + 1) // 2 if full else d)


def stats_size(d, full):
    return 1 + d + (d * d if full else d)


def _tiled_estep_specs(profile, dtype, d, k):
    """Diagonal covariances where the profile says so (gmm_distance_tiles):
    k-means' gemm tiles, the component tile no wider than k needs,
    then halved (larger side first) until the work-group and local memory fit."""
    tile = profile.terms(TileTerms)
    rm, rn = tile.reg_rows, tile.reg_columns
    tm, tn = tile.rows, tile.columns
    while tn // 2 >= max(rn, power_of_two_at_least(k)):
        tn //= 2
    kc = chunk_depth(profile, d)
    if rm * rn + rm + rn > profile.private_floats:
        return
    while tm >= rm and tn >= rn:
        wg = (tm // rm) * (tn // rn)
        if tm % rm == 0 and tn % rn == 0 and wg <= profile.max_work_group_size:
            for vw in sorted({tile.vector_width, 1}, reverse=True):
                if rm % vw or rn % vw or vw & (vw - 1):
                    continue
                spec = EStepSpec(dtype=np.dtype(dtype).name, acc_double=profile.fp64, d=d,
                                 wg=wg, full=False, stage_params=False, tiled=True, tm=tm,
                                 tn=tn, rm=rm, rn=rn, kc=kc, vw=vw)
                if spec.local_bytes() <= profile.local_memory_budget:
                    yield spec
        if tn > rn and tn >= tm:
            tn //= 2
        else:
            tm //= 2


def _estep_specs(profile, dtype, d, full, k=1, precision="float32"):
    """Diagonal covariances where the profile asks for distance tiles: the
    tiled kernel first.  GPUs: records staged in local memory, two points
    per work-item.  CPUs: small groups reading the records from memory (their
    caches serve: faster than the staged kernel on both CPU runtimes).
    The tensor-core kernel (gmm_mma.py) before all where the profile asks
    (gmm_mma) and the device, dtype and d allow, its products at
    *precision* (gmm_mma.estep_specs), or 3xTF32 where d K is below the
    profile's gmm_mma_one_product_min_dk; for full (and tied) covariances
    the tensor-core full kernel (gmm_mma_full.py, 3xTF32 at every
    precision) where the profile asks (gmm_mma_full, from
    gmm_mma_full_min_d dimensions on)."""
    terms = profile.terms(GmmTerms)
    if full and terms.mma_full and d >= terms.mma_full_min_d:
        yield from mma_full_estep_specs(profile, dtype, d, k)
    if not full and terms.mma:
        if d * k < terms.mma_one_product_min_dk:
            precision = "float32"
        yield from mma_estep_specs(profile, dtype, d, k, precision=precision,
                                   lane_recheck=bool(terms.mma_lane_recheck),
                                   packed_chunks=bool(terms.mma_packed_chunks))
    if not full and terms.distance_tiles:
        yield from _tiled_estep_specs(profile, dtype, d, k)
    item = np.dtype(dtype).itemsize
    wg = 1 << (min(profile.work_group_size, profile.max_work_group_size).bit_length() - 1)
    if profile.type == "cpu" and profile.max_work_group_size >= 8:
        yield EStepSpec(dtype=np.dtype(dtype).name, acc_double=profile.fp64, d=d, wg=8,
                        ppi=1, full=full, cchunk=1 << 20, stage_params=False)
    for ppi in ((2, 1) if profile.type == "gpu" else (1,)):
        for w in (wg, max(1, wg // 4), 1):
            most = (profile.local_memory_budget - w * 8) // (record_size(d, full) * item)
            base = dict(dtype=np.dtype(dtype).name, acc_double=profile.fp64, d=d, wg=w,
                        ppi=ppi, full=full)
            if most >= 1:
                yield EStepSpec(cchunk=int(min(most, 256)), stage_params=True, **base)
            yield EStepSpec(cchunk=1 << 20, stage_params=False, **base)


def mma_mstep_planned(profile, dtype, d, full):
    """Whether the M pass on *profile* plans the tensor-core kernel first
    (its statistics are raw sums, central_stats': every chunk of a fit
    must run the same kind for its exact sums to add)."""
    return isinstance(next(_mstep_specs(profile, dtype, d, full), None), MmaMStepSpec)


def _mstep_specs(profile, dtype, d, full, precision="float32", mma=True):
    """GPUs: ~64 work-items, each a small register block (2 tb local reads
    feed tb^2 fmas).  CPUs: a work-item per component (far faster than the
    tiled kernel there), else (larger d) few work-items with large blocks
    and long tiles (faster than the GPU shape there).  The
    tensor-core kernel (gmm_mma.py) before all where the profile asks
    (gmm_mma_mstep) and the device, dtype and d allow; full covariances on
    a GPU with fp64 whose profile asks (gmm_mstep_upper): the symmetric
    blocks (MStepUpperSpec) first."""
    if mma and not full and profile.terms(GmmTerms).mma_mstep:
        yield from mma_mstep_specs(profile, dtype, d, precision=precision)
    limit = min(profile.max_work_group_size, 256)
    cpu = profile.type == "cpu"
    if full and not cpu and profile.fp64 and profile.terms(GmmTerms).mstep_upper:
        yield from _upper_mstep_specs(profile, dtype, d, limit)
    if cpu and d <= (32 if full else 64) and limit >= 16:
        yield MStepSpec(variant="rowwise", dtype=np.dtype(dtype).name,
                        acc_double=profile.fp64, d=d, wg=16, tile=64, full=full)
    target = 4 if cpu else min(64, limit)
    if full:
        tb = min(d, 8) if cpu else max(1, -(-d // 8))
        while -(-d // tb) ** 2 > limit:
            tb += 1
        nb = -(-d // tb)
        nblk = nb * nb
    else:
        tb = min(d, 8) if cpu else max(1, -(-d // target))
        nb = -(-d // tb)
        nblk = nb
    reps = max(1, target // nblk)
    for tile in ((256, 64, 16, 4, 1) if cpu else (64, 16, 4, 1)):
        spec = MStepSpec(dtype=np.dtype(dtype).name, acc_double=profile.fp64, d=d,
                         wg=reps * nblk, tb=tb, nb=nb, reps=reps, tile=tile, full=full)
        if spec.local_bytes() <= profile.local_memory_budget:
            yield spec


UPPER_ITEMS = 128   # the symmetric-block M kernel's work-items, where its blocks allow


def _upper_mstep_specs(profile, dtype, d, limit):
    """MStepUpperSpec: blocks of 4 x 4 (2 x 2 up to d = 4), as many replicas
    of them as fill UPPER_ITEMS work-items (at least the blocks, rounded up
    to a warp; none past the work-group limit), stages of 128 rows, else
    fewer where local memory is short."""
    tb = 2 if d <= 4 else 4
    nb = -(-d // tb)
    blocks = nb * (nb + 1) // 2
    wg = min(limit, -(-max(UPPER_ITEMS, blocks) // 32) * 32)
    if blocks > wg:
        return
    for tile in (128, 64, 32, 16):
        spec = MStepUpperSpec(dtype=np.dtype(dtype).name, acc_double=True, d=d, wg=wg,
                              tb=tb, nb=nb, replicas=wg // blocks, tile=tile)
        if spec.local_bytes() <= profile.local_memory_budget:
            yield spec


def plan(profile, queue, specs, name):
    """The first spec of *specs* that fits the device, built, with its kernel."""
    specs = list(specs)
    return codegen.plan("gmm", queue.context, (profile, specs[0] if specs else None, name),
                        lambda: first_fitting(profile, queue, specs, name, name))
