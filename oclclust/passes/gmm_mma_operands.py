"""The tensor-core diagonal E kernel's operands (gmm_mma.py's GEMM form of
the log-densities): made on the device from the double records each
iteration (templates/gmm_mma/gmm_mma_operands.cl.mako, enqueue_operands),
the host's form of them (operands) the tests' reference."""
import dataclasses

import numpy as np

from ..runtime.codegen import Spec, kernel


def operands(records, d, dp, kp):
    """(coefs kp x 2dp, consts kp, shift dp), float32, from the k x (1 + 2d)
    diagonal *records* (gmm.record_size: c_j, mu_j, u_j): coefficient rows
    [P_j | -2 mu'_j P_j] (zero past d and past k), consts c_j - 1/2 sum
    mu'_j^2 P_j, the shift s the mean of the means (zero past d)."""
    records = np.asarray(records, np.float64)
    k = records.shape[0]
    c, mu, u = records[:, 0], records[:, 1:1 + d], records[:, 1 + d:1 + 2 * d]
    coefs, consts, padded = (np.zeros((kp, 2 * dp), np.float32), np.zeros(kp, np.float32),
                             np.zeros(dp, np.float32))
    prec = u * u
    shift = mu.mean(axis=0)
    centred = mu - shift
    coefs[:k, :d] = prec
    term = np.multiply(-2.0, centred)            # -2 mu' P, then mu'^2 P
    term *= prec
    coefs[:k, dp:dp + d] = term
    np.multiply(centred, centred, out=term)
    term *= prec
    consts[:k] = c - 0.5 * term.sum(axis=1)
    padded[:d] = shift
    return coefs, consts, padded


@dataclasses.dataclass(frozen=True)
class MmaOperandsSpec(Spec):
    """operands on the device (gmm_mma_operands.cl.mako), from the records:
    the diagonal E kernel's, or (*full*) the full one's (gmm_mma_full.py)."""
    template = "gmm_mma/gmm_mma_operands.cl.mako"
    build_options = ()
    dtype: str = "float64"
    d: int = 1
    dp: int = 8
    full: bool = False

    def template_args(self):
        args = super().template_args()
        args["ws"], args["cw"] = full_layout(self.dp)
        args["items"] = full_items(self.dp)
        return args


def full_layout(dp):
    """(ws, cw) of the full E kernel's component records (gmm_mma_full.py),
    in global memory as in its local chunks: the factor's dp rows of ws
    words (ws % 32 == 8: a warp's B reads, rows tq and columns gq, fall in
    32 banks), then the dp offsets and the constant, cw words in all (a
    multiple of 4: float4 copies)."""
    ws = dp + (8 - dp) % 32
    return ws, -(-(dp * ws + dp + 1) // 4) * 4


def full_items(dp):
    """Work-items of gmm_mma_full_operands a component: its factor's ws
    columns, and as many of its tail's words (offsets, constant, padding:
    fewer than dp + 5 <= ws + 8)."""
    return full_layout(dp)[0] + 8


def enqueue_operands(queue, records, k, d, dp, kp, shift64, out, scales=None):
    """Enqueue operands of the k diagonal *records* (device, k x (1 + 2d)
    doubles) into *out* (device coefs kp x 2dp, consts kp and shift dp,
    float32), the shift in double into *shift64* (device, dp), and where
    *scales* (device, kp x 2 float32) is given, the re-check scales of the
    coefficient rows (gmm_mma_bound.recheck_scales) into it: the last kernel's
    event."""
    spec, (coefs, consts, shift) = MmaOperandsSpec(d=d, dp=dp), out
    groups = (-(-kp // 64) * 64,)
    kernel(queue.context, spec, "gmm_mma_shift")(
        queue, (-(-dp // 32) * 32,), (32,), records.data, np.int32(k), shift64.data, shift.data)
    made = kernel(queue.context, spec, "gmm_mma_operands")(
        queue, groups, (64,), records.data, np.int32(k), np.int32(kp),
        shift64.data, coefs.data, consts.data)
    if scales is None:
        return made
    return kernel(queue.context, spec, "gmm_mma_scales")(
        queue, groups, (64,), coefs.data, np.int32(kp), scales.data)
