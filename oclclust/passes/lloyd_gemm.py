"""Planning of the "gemm" Lloyd variant: register-tiled distances
(templates/lloyd_gemm/lloyd_gemm_assign.cl.mako), then per-cluster sums from the labels
(templates/lloyd_gemm/lloyd_accumulate_sums.cl.mako, or, for few cells,
lloyd_accumulate_walk.cl.mako: the same bits); LloydPass (lloyd.py) runs them.
"""
import dataclasses

import numpy as np

from ..runtime.codegen import Spec
from ..runtime.profiles import declare_terms, term
from .distance_tile import TileTerms, chunk_depth, power_of_two_at_least, power_of_two_at_most

WALK_CELLS_PER_ITEM = 4       # (cluster, dimension) cells a walk work-item holds in registers
WALK_STAGE_BYTES = 24 << 10   # a walk chunk's staged rows (labels, values, weights) at most


@declare_terms
@dataclasses.dataclass(frozen=True)
class SumsTerms:
    """``walk`` 1: the sums of few cells (at most WALK_CELLS_PER_ITEM a
    work-item of at most 256) by lloyd_accumulate_walk.cl.mako, each
    work-item walking staged rows for its cells in registers, instead of
    the member lists (AccumulateSpec.walk)."""
    walk: int = term("lloyd_sums_walk", 0, 1)


def staged_row_bytes(d, itemsize, weighted):
    """The walk's bytes of a staged row: its label, values and weight."""
    return 4 + (d + weighted) * itemsize


@dataclasses.dataclass(frozen=True)
class AccumulateSpec(Spec):
    """Per-cluster sums from the labels: ``slice`` clusters' sums in local
    memory per work-group of ``acc_wg`` work-items, each taking
    ``rows_per_item`` consecutive rows of a chunk at a time (0: the default,
    default_rows_per_item).  ``walk``: each work-item holds its cells in
    registers and walks chunks of acc_wg x rows_per_item rows staged in
    local memory (SumsTerms).  The sums are the same, bit for bit, for every
    rows_per_item and either kernel: each cell adds its members in row order."""
    d: int = 1
    k: int = 1
    slice: int = 1
    acc_wg: int = 1
    weighted: bool = False
    rows_per_item: int = 0
    walk: bool = False

    @property
    def template(self):
        return "lloyd_gemm/lloyd_accumulate_" + ("walk" if self.walk else "sums") + ".cl.mako"

    # labels a work-item keeps in registers at most: the fastest on a large fit
    # of an NVIDIA GPU (32 slower, 8 no faster, one a work-item far slower)
    MAX_ROWS_PER_ITEM = 16

    def __post_init__(self):
        if self.rows_per_item == 0:
            object.__setattr__(self, "rows_per_item", self.default_rows_per_item())
        if self.rows_per_item < 1 or (self.chunk_rows << self.slice_bits) >= 1 << 31:
            raise ValueError(f"rows_per_item={self.rows_per_item}: a member (row in the "
                             f"chunk, cluster in the slice) must pack into an int")

    def default_rows_per_item(self):
        """As many rows (a power of two, at most MAX_ROWS_PER_ITEM) as keep a
        chunk's expected members, with uniform labels, within the member
        list's 2 x acc_wg entries (one pass): the scan, whose barriers cost
        the most, then runs once for acc_wg x rows_per_item rows.  walk: as
        many as a chunk of WALK_STAGE_BYTES stages."""
        if self.walk:
            return power_of_two_at_most(max(1, min(
                self.MAX_ROWS_PER_ITEM, WALK_STAGE_BYTES // (self.acc_wg * self.staged_row_bytes))))
        rows = power_of_two_at_most(min(self.MAX_ROWS_PER_ITEM, max(1, 2 * self.k // self.slice)))
        while rows > 1 and (self.acc_wg * rows << self.slice_bits) >= 1 << 31:
            rows //= 2
        return rows

    @property
    def chunk_rows(self):
        return self.acc_wg * self.rows_per_item

    @property
    def slice_bits(self):
        return max(0, self.slice - 1).bit_length()

    def template_args(self):
        return dict(super().template_args(), slice_bits=self.slice_bits,
                    scan_steps=max(0, self.acc_wg - 1).bit_length())

    @property
    def staged_row_bytes(self):
        return staged_row_bytes(self.d, np.dtype(self.dtype).itemsize, self.weighted)

    def local_bytes(self):
        if self.walk:
            return self.chunk_rows * self.staged_row_bytes
        # Kahan: 2 floats a cell; the scan's two buffers and the member list
        # (2 x acc_wg entries, whatever rows_per_item) share 3 x acc_wg ints
        return self.slice * (self.d + 1) * 8 + 3 * self.acc_wg * 4


def sums_plan(profile, d, k, itemsize=4):
    """(slice, acc_wg, walk) of the sums kernel.  walk (the profile's
    SumsTerms): every cluster in one slice, at most WALK_CELLS_PER_ITEM
    cells a work-item of 64 to 256 and a row of each work-item staged
    within WALK_STAGE_BYTES.  Else work-items for the d + 1 cells of a
    cluster, as many clusters as local memory holds (slice < 1: none)."""
    cells, most = k * (d + 1), power_of_two_at_most(min(256, profile.max_work_group_size))
    acc_wg = min(most, max(64, power_of_two_at_least(-(-cells // WALK_CELLS_PER_ITEM))))
    staged = acc_wg * staged_row_bytes(d, itemsize, True)   # a row a work-item, weighted
    if (profile.terms(SumsTerms).walk and cells <= WALK_CELLS_PER_ITEM * acc_wg
            and staged <= min(WALK_STAGE_BYTES, profile.local_memory_budget)):
        return k, acc_wg, True
    acc_wg = min(256, profile.max_work_group_size, max(8, power_of_two_at_least(d + 1)))
    acc_wg = power_of_two_at_most(acc_wg)
    per_cluster = (d + 1) * 8
    return min(k, (profile.local_memory_budget - 3 * acc_wg * 4) // per_cluster), acc_wg, False


def gemm_specs(profile, base, spec_class):
    """The profile's tiles, then halved centroid and point tiles (register
    tiles kept), each with the profile's vector width and then scalar reads
    (*base*: the spec fields they share, the chunks' prefetch included)."""
    d, k = base["d"], base["k"]
    tile = profile.terms(TileTerms)
    rm, rn = tile.reg_rows, tile.reg_columns
    tm, tn = tile.rows, tile.columns
    while tn // 2 >= max(rn, power_of_two_at_least(k)):   # small k: no idle tiles
        tn //= 2
    kc = chunk_depth(profile, d)
    slice_, acc_wg, walk = sums_plan(profile, d, k, np.dtype(base["dtype"]).itemsize)
    if slice_ < 1 or rm * rn + rm + rn > profile.private_floats:
        return
    while tm >= rm and tn >= rn:
        nx, ny = tn // rn, tm // rm
        pow2 = nx * rn == tn and ny * rm == tm and nx & (nx - 1) == 0 and ny & (ny - 1) == 0
        if pow2 and nx * ny <= profile.max_work_group_size:
            for vw in sorted({tile.vector_width, 1}, reverse=True):
                if rm % vw or rn % vw or tm % vw or vw & (vw - 1):
                    continue
                yield spec_class(variant="gemm", vw=vw, kp=-(-k // tn) * tn, wg=nx * ny,
                                 tm=tm, tn=tn, rm=rm, rn=rn, kc=kc, dp=-(-d // kc) * kc,
                                 slice=slice_, acc_wg=acc_wg, walk=walk,
                                 **base)
        if tn > rn and tn >= tm:
            tn //= 2
        else:
            tm //= 2


def segments(part, k, spec):
    """Row segments of the accumulation: enough work-groups to fill the
    device, partial sums within a quarter of the memory budget, at least a
    chunk of rows each (*spec*: the AccumulateSpec)."""
    prof = part.profile
    chunk = spec.chunk_rows
    want = -(-prof.compute_units * prof.groups_per_compute_unit // -(-k // spec.slice))
    most = max(1, prof.memory_budget // 4 // (k * (part.d + 1) * 8))
    return int(max(1, min(want, most, -(-part.n // chunk))))
