"""Planning of the "mma" Lloyd variant: the gemm variant's distances on
NVIDIA tensor cores, 3xTF32 (templates/lloyd_mma_assign.cl.mako), and the
split of the centres into its fragments' order (lloyd_mma_split.cl.mako).
The sums are the gemm variant's (lloyd_gemm.py); LloydPass (lloyd.py)
runs all three kernels.
"""
import dataclasses


from ..runtime.codegen import Spec, kernel
from .lloyd_gemm import sums_plan

MAX_D = 128           # a warp's rows live in registers: 8 a k8 step and m16 tile
CHUNK_CENTROIDS = 16  # two copies of a 16-centroid chunk at d=128: 32 KB of local memory


@dataclasses.dataclass(frozen=True)
class SplitSpec(Spec):
    template = "lloyd_mma_split.cl.mako"
    d: int = 1
    k: int = 1
    dp: int = 8
    kp: int = 1


def tensor_cores(profile):
    """Whether the device runs the variant's PTX: an NVIDIA GPU of compute
    capability 8 (Ampere) or more, as its runtime reports it."""
    dev = profile.cl_device()
    return ("cl_nv_device_attribute_query" in dev.extensions
            and dev.compute_capability_major_nv >= 8)


def mma_specs(profile, base, spec_class):
    """The tensor-core variant for float32 data of at most MAX_D dimensions on
    a device with tensor cores: warps of 8 then 4, each owning as many m16
    row tiles as its registers hold (one at d=128, four at d <= 32).  The
    sums are the gemm variant's."""
    d, k = base["d"], base["k"]
    if base["dtype"] != "float32" or d > MAX_D or not tensor_cores(profile):
        return
    slice_, acc_wg = sums_plan(profile, d, k)
    if slice_ < 1:
        return
    dp = -(-d // 8) * 8
    mt = max(1, min(4, 128 // dp))
    tn = CHUNK_CENTROIDS
    for wg in (256, 128):
        if wg <= profile.max_work_group_size:
            yield spec_class(variant="mma", kp=-(-k // tn) * tn, wg=wg, tn=tn, mt=mt,
                             tm=wg // 32 * 16 * mt, dp=dp, kpar=2,
                             slice=slice_, acc_wg=acc_wg, **base)


def split_plan(spec):
    """(SplitSpec, global size, local size) of split_centers' launch."""
    split = SplitSpec(dtype=spec.dtype, acc_double=spec.acc_double, d=spec.d, k=spec.k,
                      dp=spec.dp, kp=spec.kp)
    size = spec.kp * spec.dp // 2
    wg = 64
    return split, (-(-size // wg) * wg,), (wg,)


def split_centers(queue, spec, center_rows, center_tiles):
    """Enqueue the split of *center_rows* (k x d float32) into *center_tiles*
    (kp x dp / 2 uint4, the layout of lloyd_mma_split.cl.mako)."""
    split, global_size, local_size = split_plan(spec)
    kernel(queue.context, split, "split_centers")(
        queue, global_size, local_size, center_rows.data, center_tiles.data)


def tile_words(spec):
    """The uint32 words of center_tiles."""
    return spec.kp * spec.dp * 2
