"""The one-product tensor-core E kernels' accuracy ("tf32", "bf16":
templates/gmm_mma/gmm_mma_estep.cl.mako): the bound of each log-density's
error against the float32 operands' exact value, and the coefficient rows'
scales by which the kernel's re-check bounds a row's values without their
terms (its T and the float32 recompute are the template's)."""
import numpy as np

# the unit roundoff of the one-product E kernels' operands (round to nearest:
# TF32 11 significant bits, bfloat16 8); 3xTF32's products ("float32") leave
# out the small parts' product and round the small parts, ~3 x 2^-22 of each
OPERAND_ROUNDOFF = {"float32": 2.0 ** -21, "tf32": 2.0 ** -11, "bf16": 2.0 ** -8}


def estep_bound(rows, coefs, dp, precision):
    """What the E kernel at *precision* may add to each log-density beyond
    the float32 operands' exact value: rows x components float64.  *rows*:
    the shifted rows x' (n x d, float32), *coefs*: the kernel's operands
    (components x 2 dp: [P | -2 mu' P], float32).  A product of two rounded
    operands is off by at most (2u + u^2) of its size, u the format's unit
    roundoff; float32 accumulation in dp / 8 + 1 steps (truncating, as
    NVIDIA's tensor cores may) adds at most 2^-22 of the terms' sizes a
    step; the log-density is -1/2 their sum."""
    x = np.asarray(rows, np.float64)
    c = np.asarray(coefs, np.float64)
    d = x.shape[1]
    size = (x * x) @ np.abs(c[:, :d]).T + np.abs(x) @ np.abs(c[:, dp:dp + d]).T
    return bound_factor(dp, precision) * size


def bound_factor(dp, precision):
    """estep_bound's factor of the terms' sizes."""
    u = OPERAND_ROUNDOFF[precision]
    return 0.5 * (2 * u + u * u + (dp // 8 + 1) * 2.0 ** -22)


def recheck_scales(coefs, d, dp):
    """The one-product E kernels' re-check scales of their coefficient rows
    (kp x 2dp [P | L], float32): kp x 2 float32 (Pmax_j, |L_j|), at least the
    largest |P_jc| and L_j's Euclidean norm, so that estep_bound's size of a
    row x' is at most |x'|^2 Pmax_j + |x'| |L_j| (gmm_mma_operands.cl.mako's
    gmm_mma_scales; the tests' reference)."""
    c = np.asarray(coefs, np.float64).reshape(-1, 2 * dp)
    norms = np.sqrt(np.square(c[:, dp:dp + d]).sum(axis=1)) * (1 + 2.0 ** -20)
    return np.stack([np.abs(c[:, :d]).max(axis=1, initial=0.0), norms], axis=1).astype(np.float32)
