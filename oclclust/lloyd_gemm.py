"""Planning of the "gemm" Lloyd variant: register-tiled distances
(templates/lloyd_gemm_assign.cl.mako), then per-cluster sums from the labels
(templates/lloyd_accumulate_sums.cl.mako); lloyd.py runs them.
"""
import dataclasses

from .codegen import Spec
from .distance_tile import chunk_depth, power_of_two_at_least, power_of_two_at_most


@dataclasses.dataclass(frozen=True)
class AccumulateSpec(Spec):
    """Per-cluster sums from the labels: ``slice`` clusters' sums in local
    memory per work-group of ``acc_wg`` work-items."""
    template = "lloyd_accumulate_sums.cl.mako"
    d: int = 1
    k: int = 1
    slice: int = 1
    acc_wg: int = 1
    weighted: bool = False

    def local_bytes(self):
        return self.slice * (self.d + 1) * 8 + 3 * self.acc_wg * 4   # Kahan: 2 floats


def gemm_specs(profile, base, spec_class):
    """The profile's tiles, then halved centroid and point tiles (register
    tiles kept), each with the profile's vector width and then scalar reads."""
    d, k = base["d"], base["k"]
    rm, rn = profile.lloyd_reg_rows, profile.lloyd_reg_centroids
    tm, tn = profile.lloyd_tile_rows, profile.lloyd_tile_centroids
    while tn // 2 >= max(rn, power_of_two_at_least(k)):   # small k: no idle tiles
        tn //= 2
    kc = chunk_depth(profile, d)
    acc_wg = min(256, profile.max_work_group_size, max(8, power_of_two_at_least(d + 1)))
    acc_wg = power_of_two_at_most(acc_wg)
    per_cluster = (d + 1) * 8
    slice_ = min(k, (profile.local_memory_budget - 3 * acc_wg * 4) // per_cluster)
    if slice_ < 1 or rm * rn + rm + rn > profile.private_floats:
        return
    while tm >= rm and tn >= rn:
        nx, ny = tn // rn, tm // rm
        pow2 = nx * rn == tn and ny * rm == tm and nx & (nx - 1) == 0 and ny & (ny - 1) == 0
        if pow2 and nx * ny <= profile.max_work_group_size:
            for vw in sorted({profile.lloyd_vector_width, 1}, reverse=True):
                if rm % vw or rn % vw or tm % vw or vw & (vw - 1):
                    continue
                yield spec_class(variant="gemm", vw=vw, kp=-(-k // tn) * tn, wg=nx * ny,
                                 tm=tm, tn=tn, rm=rm, rn=rn, kc=kc, dp=-(-d // kc) * kc,
                                 slice=slice_, acc_wg=acc_wg,
                                 prefetch=profile.lloyd_prefetch, **base)
        if tn > rn and tn >= tm:
            tn //= 2
        else:
            tm //= 2


def segments(part, k, spec):
    """Row segments of the accumulation: enough work-groups to fill the
    device, partial sums within a quarter of the memory budget."""
    prof = part.profile
    want = -(-prof.compute_units * prof.groups_per_compute_unit // -(-k // spec.slice))
    most = max(1, prof.memory_budget // 4 // (k * (part.d + 1) * 8))
    return int(max(1, min(want, most, -(-part.n // spec.acc_wg))))
