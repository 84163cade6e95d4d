"""Planning of the "mma" Lloyd variant: the gemm variant's distances on
NVIDIA tensor cores, 3xTF32 (templates/lloyd_mma/lloyd_mma_assign.cl.mako), and the
split of the centres into its fragments' order (lloyd_mma_split.cl.mako).
The sums are the gemm variant's (lloyd_gemm.py); LloydPass (lloyd.py)
runs all three kernels.

``precision`` (the estimators' parameter): "float32" is the 3xTF32 split;
"tf32" and "bf16" one product of that operand format per step, float32
accumulation, with the re-check of near ties that tie_bound sizes.  Only
this variant reads it: every other variant (CPUs, non-NVIDIA devices, d
above MAX_D, float64) runs the fast modes as "float32", the same kernels.
"""
import dataclasses


from ..runtime.codegen import Spec, kernel
from .lloyd_gemm import sums_plan

MAX_D = 128           # a warp's rows live in registers: 8 a k8 step and m16 tile
CHUNK_CENTROIDS = 16  # two copies of a 16-centroid chunk at d=128: 32 KB of local memory
PRECISIONS = ("float32", "tf32", "bf16")
# the operand formats' explicit mantissa bits: tf32 10, bf16 7
MANTISSA_BITS = {"tf32": 10, "bf16": 7}


MAX_INDEX_BITS = 16   # a fast mode's keys keep 23 - 16 bits of the score at least


def index_bits(kp):
    """The low mantissa bits of a fast mode's key that hold the centroid."""
    return max(1, (kp - 1).bit_length())


def tie_bound(precision, d, kp):
    """(a, b): a fast mode's bound on the gap between a row's two best
    keys below which the row is re-checked, gap <= a ||x|| max||c|| +
    b max||c||^2 (lloyd_mma_assign.cl.mako takes max||c|| on the device);
    kp centroids (padded).

    A score is ||c||^2 - 2 x.c.  The operands are rounded to nearest: with
    p mantissa bits, x~ = x (1 + e), |e| <= u = 2^-(p+1) (tf32 2^-11, bf16
    2^-8), so |x~_i c~_i - x_i c_i| <= (2u + u^2) |x_i c_i|; the products
    are exact in float32 (11 + 11 and 8 + 8 significand bits) and their d
    float32 sums (the tensor cores may truncate: 2^-23 a step) add at most
    d 2^-23 (1 + 2u + u^2) sum |x_i c_i| <= (..) ||x|| ||c||.  So x.c is off
    by at most g ||x|| ||c||, g = 2u + u^2 + 2 d 2^-23, and the score by
    2 g ||x|| ||c|| plus its last rounding, 2^-23 (||c||^2 + 2 ||x|| ||c||)
    (the 3xTF32 float32 model rounds there too).  The key (the score with
    its low q = index_bits(kp) mantissa bits replaced by the index) is off
    by less than 2^(q-23) |score| <= 2^(q-23) (||c||^2 + 2 ||x|| ||c||).
    Two keys each that far off cross only if their gap is within twice the
    sum: the row's winner is exact when its gap to the second best exceeds
        (8 g + 4 (2^-23 + 2^(q-23))) ||x|| max||c|| + 2 (2^-23 + 2^(q-23)) max||c||^2.
    Both are rounded up; the kernel adds 1e-4 for its float evaluation."""
    u = 2.0 ** -(MANTISSA_BITS[precision] + 1)
    g = 2 * u + u * u + 2 * d * 2.0 ** -23
    last = 2.0 ** -23 + 2.0 ** (index_bits(kp) - 23)
    return (8 * g + 4 * last) * (1 + 2.0 ** -20), 2 * last * (1 + 2.0 ** -20)


@dataclasses.dataclass(frozen=True)
class SplitSpec(Spec):
    template = "lloyd_mma/lloyd_mma_split.cl.mako"
    d: int = 1
    k: int = 1
    dp: int = 8
    kp: int = 1
    precision: str = "float32"


def tensor_cores(profile):
    """Whether the device runs the variant's PTX: an NVIDIA GPU of compute
    capability 8 (Ampere) or more, as its runtime reports it."""
    dev = profile.cl_device()
    return ("cl_nv_device_attribute_query" in dev.extensions
            and dev.compute_capability_major_nv >= 8)


def mma_specs(profile, base, spec_class, precision="float32"):
    """The tensor-core variant for float32 data of at most MAX_D dimensions on
    a device with tensor cores: warps of 8 then 4, each owning as many m16
    row tiles as its registers hold (3xTF32: one at d=128, four at d <= 32;
    the fast modes' rows take half the registers or less: two at d=128).
    The sums are the gemm variant's.  *precision*: PRECISIONS ("bf16" pads
    d to 32, the m16n8k16 steps in pairs); a fast mode's keys hold the
    centroid in MAX_INDEX_BITS bits at most: past 65536 centroids it runs
    as "float32"."""
    d, k = base["d"], base["k"]
    if base["dtype"] != "float32" or d > MAX_D or not tensor_cores(profile):
        return
    slice_, acc_wg = sums_plan(profile, d, k)
    if slice_ < 1:
        return
    tn = CHUNK_CENTROIDS
    if index_bits(-(-k // tn) * tn) > MAX_INDEX_BITS:
        precision = "float32"
    pad = 32 if precision == "bf16" else 8
    dp = -(-d // pad) * pad
    mt = max(1, min(4, (128 if precision == "float32" else 256) // dp))
    tn = CHUNK_CENTROIDS
    # the fast modes' pass ran faster in work-groups of 128, 3xTF32's in 256
    # (NVIDIA tensor cores, a large fit)
    for wg in (256, 128) if precision == "float32" else (128, 256):
        if wg <= profile.max_work_group_size:
            yield spec_class(variant="mma", kp=-(-k // tn) * tn, wg=wg, tn=tn, mt=mt,
                             tm=wg // 32 * 16 * mt, dp=dp, kpar=2, precision=precision,
                             slice=slice_, acc_wg=acc_wg, **base)


def split_plan(spec):
    """(SplitSpec, global size, local size) of split_centers' launch."""
    split = SplitSpec(dtype=spec.dtype, acc_double=spec.acc_double, d=spec.d, k=spec.k,
                      dp=spec.dp, kp=spec.kp, precision=spec.precision)
    size = tile_words(spec) // 4
    wg = 64
    return split, (-(-size // wg) * wg,), (wg,)


def split_centers(queue, spec, center_rows, center_tiles):
    """Enqueue the split of *center_rows* (k x d float32) into *center_tiles*
    (kp x dp / 2 uint4, bf16 kp x dp / 8: the layout of lloyd_mma_split.cl.mako)."""
    split, global_size, local_size = split_plan(spec)
    kernel(queue.context, split, "split_centers")(
        queue, global_size, local_size, center_rows.data, center_tiles.data)


def tile_words(spec):
    """The uint32 words of center_tiles."""
    return spec.kp * spec.dp // 2 if spec.precision == "bf16" else spec.kp * spec.dp * 2
