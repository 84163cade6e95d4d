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
s each pass (operands): kp x dp + kp + dp values.
"""
import numpy as np

from .lloyd_mma import tensor_cores

MAX_D = 128       # a warp's x' fragments stay in registers: 2 x dp / 2 a row tile
MAX_SLOTS = 8     # (m16, n8) statistics tiles a warp keeps: 4 acc_t each, in registers
ROW_TILES = (4, 2, 1)   # m16 row tiles of a work-group tile (P = 16, 32, 64 rows)


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
