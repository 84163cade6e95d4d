"""Planning of the "mma" Lloyd variant: the gemm variant's distances on
NVIDIA tensor cores, 3xTF32 (templates/lloyd_mma/lloyd_mma_assign.cl.mako), and the
split of the centres into its fragments' order (lloyd_mma_split.cl.mako).
The sums are the gemm variant's (lloyd_gemm.py); LloydPass (lloyd.py)
runs all three kernels.

``precision`` (the estimators' parameter): "float32" is the 3xTF32 split;
"tf32" and "bf16" one product of that operand format per step, float32
accumulation, with the re-check of near ties that bound_terms sizes.  Only
this variant reads it: every other variant (CPUs, non-NVIDIA devices, d
above MAX_D, float64) runs the fast modes as "float32", the same kernels.
"""
import dataclasses

import numpy as np

from ..runtime.codegen import EmulatedBuild, Spec, kernel
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


def bound_terms(precision, dp, kp):
    """(gamma, quantum): the constants of a fast mode's error bound on a
    score, E_j below (lloyd_mma_assign.cl.mako evaluates it per row and
    candidate, rounding_bound on the host): gamma = 2 dp 2^-23, the
    float32 accumulation's share; quantum = 2^(q - 23), a key's index bits
    q = index_bits(kp) in units of its exponent's power of two.

    A row's scores are s_j = ||c_j||^2 - 2 x.c_j + X (X: ||x||^2 summed in
    float by the row's lanes, the same value in each: a shift of the row's
    scores alike, so s_j is about ||x - c_j||^2 and the argmin is the
    distances'); T_j the exact one, in real arithmetic on the float32 x,
    c_j and X.  The operands are rounded to p mantissa bits (x~, c~_j:
    bf16 to nearest even, tf32 to nearest away); their products are exact
    in float32 (8 + 8 and 11 + 11 significand bits); the accumulators
    start at -X / 2; each of the dp / m fused steps of m products (m = 8
    tf32, 16 bf16) with its accumulator cut to the largest term's grid and
    the result cut to a float (NVIDIA's truncating accumulation, the
    coarser model; rounding does better) loses < (m + 2) 2^-23 of the
    terms' magnitude, and the two accumulator sets' sum 2^-24 more: the
    computed P_j is within gamma (X / 2 + sum |x~_i c~_ji|) <= gamma (X / 2 +
    ||x~|| ||c~_j||) of x~.c~_j - X / 2.  Exactly x~.c~_j - x.c_j =
    (x~ - x).c~_j + x.(c~_j - c_j), so by Cauchy-Schwarz, with rho =
    ||x - x~|| (a row's, on the device), m_j = ||c~_j||, r_j = ||c_j - c~_j||
    (a centre's, split_centers)
        |P_j - (x.c_j - X / 2)| <= rho m_j + ||x|| r_j + gamma ((||x|| + rho) m_j + X / 2).
    The score fma(-2, P_j, n_j) rounds once (2^-24 |s_j|) and n_j, the
    float32 norm, is within 2^-24 n_j of ||c_j||^2.  The key k_j (s_j with
    its low q mantissa bits the index) is within Q_j = quantum 2^e_j of
    s_j, 2^e_j <= |k_j| the power of two of its exponent.  So, X taken as
    ||x||^2 (within 2^-17 of it)
        |k_j - T_j| < E_j = 2 (rho m_j + ||x|| r_j + gamma ((||x|| + rho) m_j + ||x||^2 / 2))
                            + 2^-24 (n_j + |k_j|) + (1 + 2^-24) Q_j,
    Q_j and 2^-24 |k_j| small where the distance is (the shift's point:
    unshifted, |k_j| is about ||x||^2).
    The winner j1 (the least key) is the exact argmin when every other
    centre j has k_j - k_1 >= E_1 + E_j: its T_j exceeds T_1.  The row
    knows its three least keys: for j2 and j3 the test is theirs; every
    other centre has k_j >= k_3 and E_j <= E + c |k_j| (E: the row's E_j
    with the largest m_j, r_j, n_j of the iteration, and |k_j| = 0;
    c = 2^-24 + (1 + 2^-24) quantum < 1), and k - c |k| grows with k, so
    k_3 - k_1 - c |k_3| >= E_1 + E covers them all.  A row failing any of
    the three is re-checked: the exact float32 distances of j1 and of
    each of j2, j3 failing its own test decide, the least wins (the lowest
    index on ties).  The device evaluates every term in float (the sums
    over at most MAX_D dimensions within 2^-17 of their values) and widens
    the bound by 1.001, which covers that and the gap's own rounding."""
    gamma = 2 * dp * 2.0 ** -23
    return gamma, 2.0 ** (index_bits(kp) - 23)


def rounded(precision, v):
    """float32 *v* rounded to *precision*'s operand format, as the kernels
    round it (bf16_pack.cl: nearest, ties to even; tf32_split.cl: nearest,
    ties away), as float32."""
    bits = np.ascontiguousarray(v, np.float32).view(np.uint32).astype(np.uint64)
    if precision == "bf16":
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    else:
        bits = (bits + 0x1000) & 0xFFFFE000
    return bits.astype(np.uint32).view(np.float32)


def rounding_bound(precision, dp, kp, X, C):
    """The n x k bounds E_j of bound_terms on |score error| of each row of
    *X* (n x d float32) against each centre of *C* (k x d float32), in
    float64, with the key's terms taken from the exact score (|k_j| <=
    |T_j| + the rest): a host model of what the device's re-check tests.
    A row whose label l differs from its exact argmin b has
    T_l - T_b <= E_b + max_j E_j + d 2^-22 (||x - c_l||^2 + ||x - c_b||^2)
    (the last: the float32 re-check's own rounding): tie_margin."""
    gamma, quantum = bound_terms(precision, dp, kp)
    X64, C64 = np.asarray(X, np.float64), np.asarray(C, np.float64)
    rho = np.linalg.norm(X64 - rounded(precision, X), axis=1)[:, None]
    norm = np.linalg.norm(X64, axis=1)[:, None]
    m = np.linalg.norm(rounded(precision, C).astype(np.float64), axis=1)[None]
    r = np.linalg.norm(C64 - rounded(precision, C), axis=1)[None]
    n = (C64 * C64).sum(1)[None]
    rest = (2 * (rho * m + norm * r + gamma * ((norm + rho) * m + norm * norm / 2))
            + 2.0 ** -24 * n)
    score = np.abs(norm * norm + n - 2 * X64 @ C64.T) + rest   # |T_j|: the distance
    key = quantum * (1 + 2.0 ** -24) * score
    return (rest + 2.0 ** -24 * (score + key) + key) * 1.001


def tie_margin(precision, dp, kp, X, C, labels, best):
    """(gap, allowed), float64 per row of *X*: how much farther its centre
    *labels* is than its exact nearest *best* (squared distances), and what
    the fast modes' contract allows a label that differs from it,
    E_b + max_j E_j + d 2^-22 (D_l + D_b) (rounding_bound)."""
    X64, C64 = np.asarray(X, np.float64), np.asarray(C, np.float64)
    own = ((X64 - C64[labels]) ** 2).sum(1)
    least = ((X64 - C64[best]) ** 2).sum(1)
    E = rounding_bound(precision, dp, kp, X, C)
    allowed = E[np.arange(len(X64)), best] + E.max(1) + X64.shape[1] * 2.0 ** -22 * (own + least)
    return own - least, allowed


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


def mma_specs(profile, base, spec_class, precision="float32", emulate=False):
    """The tensor-core variant for float32 data of at most MAX_D dimensions on
    a device with tensor cores: warps of 8 then 4, each owning as many m16
    row tiles as its registers hold (3xTF32: one at d=128, four at d <= 32;
    the fast modes' rows take half the registers or less: two at d=128).
    The sums are the gemm variant's.  *precision*: PRECISIONS ("bf16" pads
    d to 32, the m16n8k16 steps in pairs); a fast mode's keys hold the
    centroid in MAX_INDEX_BITS bits at most: past 65536 centroids it runs
    as "float32".  *emulate*: the products in plain OpenCL, on any device
    (tests: the kernel's every other line)."""
    d, k = base["d"], base["k"]
    if base["dtype"] != "float32" or d > MAX_D or not (emulate or tensor_cores(profile)):
        return
    slice_, acc_wg, walk = sums_plan(profile, d, k)
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
                             slice=slice_, acc_wg=acc_wg, walk=walk, emulate=emulate, **base)


def split_plan(spec):
    """(SplitSpec, global size, local size) of split_centers' launch."""
    split = SplitSpec(dtype=spec.dtype, acc_double=spec.acc_double, d=spec.d, k=spec.k,
                      dp=spec.dp, kp=spec.kp, precision=spec.precision)
    size = tile_words(spec) // 4
    wg = 64
    return split, (-(-size // wg) * wg,), (wg,)


def split_centers(queue, spec, center_rows, center_tiles, center_rounding=None):
    """Enqueue the split of *center_rows* (k x d float32) into *center_tiles*
    (kp x dp / 2 uint4, bf16 kp x dp / 8: the layout of lloyd_mma_split.cl.mako);
    a fast mode's *center_rounding* (kp x 2 float32) too: split_args."""
    split, global_size, local_size = split_plan(spec)
    kernel(queue.context, split, "split_centers")(
        queue, global_size, local_size,
        *split_args(spec, center_rows, center_tiles, center_rounding))


def split_args(spec, center_rows, center_tiles, center_rounding):
    """split_centers' kernel arguments (device arrays): the fast modes' also
    write each centre's rounding terms of the re-check's bound
    (bound_terms), kp x 2 float32."""
    rounding = (center_rounding.data,) if spec.precision != "float32" else ()
    return (center_rows.data, center_tiles.data, *rounding)


def tile_words(spec):
    """The uint32 words of center_tiles."""
    return spec.kp * spec.dp // 2 if spec.precision == "bf16" else spec.kp * spec.dp * 2
