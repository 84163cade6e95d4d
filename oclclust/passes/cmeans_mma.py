"""Planning of the tensor-core c-means pass (templates/cmeans_mma/
cmeans_mma_pass.cl.mako): cmeans_pass.cl.mako's fused pass with the
distances of a tile as one 3xTF32 GEMM on NVIDIA tensor cores (the
fragments of lloyd_mma.py and gmm_mma.py, templates/common/
mma_fragments.cl.mako), its memberships as the portable kernel's, and its
statistics (update) as a second GEMM where each warp's share of them fits
its registers (stats_mma, MAX_SLOTS; else the portable kernel's).
cmeans.py plans it first where the profile asks (cmeans_mma) and the device
has tensor cores; the portable specs serve everywhere else.

The distances expand about one shift s (the centres' mean):
    ||x - c_j||^2 = ||x'||^2 + ||c'_j||^2 - 2 x'.c'_j,  x' = x - s, c' = c - s,
so that the expansion cancels digits as the data's spread, not its distance
from the origin; the host makes c', ||c'||^2 (in float64, then float32) and
s each pass (operands): kp x dp + kp + dp values.  The expansion's error is
absolute, beta (||x'||^2 + ||c'||^2) at most (recheck_ratio): the kernel
takes the exact sum of squared differences wherever that is not below
2^-13 of the distance.

``precision`` (the estimator's parameter): "float32" is the 3xTF32 split,
"tf32" one TF32 product a step, "bf16" one BF16 product a step (PRECISIONS;
float32 accumulation), each with the re-check of TARGET: membership_bound
states what each mode keeps of the memberships.
"""
import numpy as np

from .lloyd_mma import MANTISSA_BITS, tensor_cores

MAX_D = 128       # a warp's x' fragments stay in registers: 2 x dp / 2 a row tile
MAX_SLOTS = 8     # (m16, n8) statistics tiles a warp keeps: 4 acc_t each, in registers
ROW_TILES = (4, 2, 1)   # m16 row tiles of a work-group tile (P = 16, 32, 64 rows)
PRECISIONS = ("float32", "tf32", "bf16")
# the relative error of a distance the kernel keeps from the expansion, by
# precision (recheck_ratio); the rest are re-checked exactly.  The fast
# modes' targets sit 2^2 above their operands' product error (2^-10, 2^-7),
# so both re-check about the same pairs (ratio about 2^-2)
TARGET = {"float32": 2.0 ** -13, "tf32": 2.0 ** -8, "bf16": 2.0 ** -5}
# x' = x - s and c' rounded to float32 move a distance kept from the
# expansion (v > ratio (||x'||^2 + ||c'||^2), ratio >= 2^-6) by this much of
# it at most (expansion_bound)
OPERAND_ROUNDING = 2.0 ** -19


def precision_of(precision):
    """The pass's mode for an estimator's *precision* (one of PRECISIONS;
    anything else runs as "float32")."""
    return precision if precision in PRECISIONS else "float32"


def membership_bound(precision, m):
    """e: every membership the pass gives is within e u of float64's u (u
    from the exact distances: the reference of tests/passes/
    test_cmeans_mma.py), to first order, for fuzzifier *m*; the float32
    evaluation of the memberships adds its rounding (about 1e-6 absolute).

    Every distance is exact or within t = TARGET + OPERAND_ROUNDING of
    float64's relatively (recheck_ratio); u_j = 1 / sum_k (v_j / v_k)^(1 /
    (m - 1)), and each ratio v_j / v_k moves by (1 + t)^2 at most, so u_j
    by 2 t / (m - 1) relatively to first order: float32 2^-12 / (m - 1),
    tf32 2^-7 / (m - 1), bf16 2^-4 / (m - 1); rounded up by 5% for the
    second order (t <= 2^-5)."""
    return 1.05 * 2 * (TARGET[precision_of(precision)] + OPERAND_ROUNDING) / (m - 1)


def expansion_bound(precision, d, dp):
    """beta: |v~ - v| <= beta (||x'||^2 + ||c'||^2) for the kernel's squared
    distance v~ = ||x'||^2 + ||c'||^2 - 2 x'.c' (cmeans_mma_pass.cl.mako);
    d dimensions, dp padded to 8.  In units of u = 2^-24, with P =
    sum_k |x'_k c'_k| <= (||x'||^2 + ||c'||^2) / 2:

    * the operands: 3xTF32 (x = xb + xs + r, |r| <= 2^-22 |x|, the small
      x small product dropped) is off by 3 2^-22 |x'_k c'_k| <= 16 u a
      product; "tf32" and "bf16" round both to their format (nearest:
      q = 2^-11, 2^-8; lloyd_mma.MANTISSA_BITS): (2 q + q^2) |x'_k c'_k|
      (TF32 x TF32 and BF16 x BF16 products are exact in float);
    * a k8 step's big product, from zero: its 8 exact products aligned to
      the largest and cut toward zero, the sum cut to float (NVIDIA's
      accumulation; two k4 halves at worst): under 16 2^-23 = 32 u of the
      step's sum of |products|;
    * the float32 running sum of the dp / 8 steps: dp / 8 u P; the 3xTF32
      small products (below 2^-10 P) and big + small: 2 u P;

    so |x'.c'~ - x'.c'| <= g P, and 2 x'.c' off by g (||x'||^2 +
    ||c'||^2).  Then ||x'||^2 (an in-order fma sum of d squares: (d + 1) u),
    ||c'||^2 (rounded from float64: u) and the two roundings of the
    expansion (v <= 2 (||x'||^2 + ||c'||^2): 3 u) add (d + 5) u.  The
    operands x' = x - s and c' themselves are rounded to float32, which
    moves the distance by at most 2^-23 sqrt(2 / ratio) of it where v >=
    ratio (||x'||^2 + ||c'||^2): 2^-19 for ratio >= 2^-6."""
    u = 2.0 ** -24
    if precision in MANTISSA_BITS:
        q = 2.0 ** -(MANTISSA_BITS[precision] + 1)
        g = 2 * q + q * q + (32 + dp // 8 + 1) * u
    else:
        g = (16 + 32 + dp // 8 + 2) * u
    return g + (d + 5) * u


def recheck_ratio(precision, d, dp):
    """The kernel's re-check: a distance v <= ratio (||x'||^2 + ||c'||^2)
    is the exact sum of squared differences (the portable pass's bits),
    ratio = expansion_bound / TARGET, so that every other distance is within
    TARGET (+ OPERAND_ROUNDING) of v relatively: float32 (d + dp/8 + 55)
    2^-11, 0.028 (d=1) to 0.095 (d=128); tf32 and bf16 about 2^-2.  What
    that keeps of the memberships: membership_bound.  Rounded up by 2^-10
    (the kernel's float evaluation of the threshold)."""
    return expansion_bound(precision, d, dp) / TARGET[precision] * (1 + 2.0 ** -10)


def shape_fields(profile, dtype, d, c, emulate=False):
    """(dp, kp, [(wg, p), ...] in order of preference) of the tensor-core
    pass for float32 data of at most MAX_D dimensions on a device with
    tensor cores (*emulate*: the products in plain OpenCL, any device), else
    None.  Work-groups of 8 warps, then 4; tiles of 64 rows, then fewer."""
    if np.dtype(dtype) != np.float32 or d > MAX_D or not (emulate or tensor_cores(profile)):
        return None
    shapes = [(wg, 16 * rt) for wg in (256, 128) if wg <= profile.max_work_group_size
              for rt in ROW_TILES if (wg // 32) % rt == 0]
    return -(-d // 8) * 8, -(-c // 8) * 8, shapes


def stats_slots(d, c, wg):
    """(m16 centres, n8 columns of [x | 1]) statistics tiles of each warp."""
    tiles = -(-c // 16) * -(-(d + 1) // 8)
    return -(-tiles // (wg // 32))


def operand_size(c, d, dp, kp):
    return kp * dp + kp + dp + c * d


def operands(centers, dp, kp):
    """The pass's ``centers`` buffer, float32: c' = c - s (kp x dp, zero
    padded), ||c'||^2 (kp: float64 sums, then float32), s (dp), s the
    centres' mean (zero past d), then the centres (c x d: the re-check near
    0); all from the centres made float32, as the portable pass reads them."""
    # from the float32 centres, as the portable pass reads them: a pass at
    # float64 centres equals one at the same centres made float32 (the
    # fit's final pass and predict_proba / score at cluster_centers_)
    centers = np.asarray(centers, np.float32).astype(np.float64)
    c, d = centers.shape
    shift = centers.mean(axis=0)
    centred = centers - shift
    out = np.zeros(operand_size(c, d, dp, kp), np.float32)
    out[:kp * dp].reshape(kp, dp)[:c, :d] = centred
    out[kp * dp:kp * dp + c] = (centred * centred).sum(axis=1)
    out[kp * dp + kp:kp * dp + kp + d] = shift
    out[kp * dp + kp + dp:] = centers.astype(np.float32).ravel()
    return out
