"""Planning of the tensor-core full-covariance GMM E-step
(templates/gmm_mma/gmm_mma_full_estep.cl.mako): each component's whitened
rows (x - s)^T U_j as 3xTF32 products on NVIDIA tensor cores, gmm.py's
kernels beside it for every other device, dtype and shape.  "tied"
mixtures run it too (their passes are the full ones).

Its operands -- the factors U_j (dp x dp), the offsets (mu_j - s)^T U_j and
the constants c_j, float32 -- are made on the device from the double
records each iteration (gmm_mma_operands.cl.mako's gmm_mma_full_operands,
``enqueue_operands``); ``operands`` is the host's form of them, the tests'
reference.  Every ``precision`` runs these 3xTF32 products: the full
passes are float32 at every precision (docs/guide/precision.rst).
"""
import dataclasses

import numpy as np

from ..runtime.codegen import EmulatedBuild, Spec, kernel
from .gmm_mma_operands import MmaOperandsSpec
from .lloyd_mma import tensor_cores

MAX_D = 64      # a warp's split rows take dp registers; a component's factor dp x ws floats
CHUNK = 8       # components of a local-memory chunk at most


def padded(d):
    return -(-d // 8) * 8


@dataclasses.dataclass(frozen=True)
class MmaFullEStepSpec(EmulatedBuild, Spec):
    """The tensor-core full E kernel: wg work-items (wg / 32 warps, an m16
    row tile each), chunks of tn components' factors in local memory (kp:
    components padded to chunks)."""
    template = "gmm_mma/gmm_mma_full_estep.cl.mako"
    d: int = 1
    dp: int = 8
    kp: int = 8
    wg: int = 128
    tn: int = CHUNK
    emulate: bool = False
    rechecks = False   # (every precision: 3xTF32 products)

    @property
    def rows(self):
        """Points of a work-group tile (GmmPass._groups)."""
        return self.wg // 2

    @property
    def ws(self):
        """A factor row's local stride: ws % 32 == 8, so that a warp's B
        reads (rows tq, columns gq) fall in 32 banks."""
        return self.dp + (8 - self.dp) % 32

    @property
    def cw(self):
        """Local words of a component: its factor, offsets and constant."""
        return component_words(self.dp)

    def template_args(self):
        args = super().template_args()
        args.update(ws=self.ws, cw=self.cw)
        return args

    def local_bytes(self):
        return (self.tn * self.cw + (self.wg * 7 if self.emulate else 0)) * 4 + self.wg * 8


def component_words(dp):
    return -(-(dp * (dp + (8 - dp) % 32) + dp + 1) // 4) * 4


def estep_specs(profile, dtype, d, k, emulate=False):
    """The tensor-core full E kernel for float32 data of at most MAX_D
    dimensions on a device with tensor cores and fp64 (its operands are
    made in double), else nothing (gmm.py's kernels serve): chunks of as
    many components as local memory holds (at most CHUNK), work-groups of 4
    then 8 warps.  *emulate*: the same kernel with its products in plain
    OpenCL, on any device (tests on CPUs)."""
    if (np.dtype(dtype) != np.float32 or d > MAX_D or not profile.fp64
            or not (emulate or tensor_cores(profile))):
        return
    dp = padded(d)
    for wg in (128, 256):
        if wg > profile.max_work_group_size:
            continue
        spare = profile.local_memory_budget - wg * (8 + (28 if emulate else 0))
        tn = min(CHUNK, spare // (component_words(dp) * 4))
        if tn >= 1:
            yield MmaFullEStepSpec(dtype="float32", acc_double=profile.fp64, d=d, dp=dp,
                                   kp=-(-k // tn) * tn, wg=wg, tn=int(tn), emulate=emulate)


def operands(records, d, dp, kp):
    """(factors kp x dp x dp, offsets kp x dp, consts kp, shift dp), float32,
    from the k x (1 + d + d (d + 1) / 2) full *records* (mdl.records: c_j,
    mu_j, U_j's upper triangle column by column): U_j, (mu_j - s)^T U_j and
    c_j, zero past d and past k; the shift s the mean of the means."""
    records = np.asarray(records, np.float64)
    k = records.shape[0]
    mu = records[:, 1:1 + d]
    cols = np.concatenate([np.full(c + 1, c) for c in range(d)])
    rows = np.concatenate([np.arange(c + 1) for c in range(d)])
    factor = np.zeros((k, d, d))
    factor[:, rows, cols] = records[:, 1 + d:]
    shift = mu.mean(axis=0)
    factors, offsets = np.zeros((kp, dp, dp), np.float32), np.zeros((kp, dp), np.float32)
    consts, padded_shift = np.zeros(kp, np.float32), np.zeros(dp, np.float32)
    factors[:k, :d, :d] = factor
    offsets[:k, :d] = np.einsum("jc,jce->je", mu - shift, factor)
    consts[:k] = records[:, 0]
    padded_shift[:d] = shift
    return factors, offsets, consts, padded_shift


def enqueue_operands(queue, records, k, d, dp, kp, shift64, out):
    """Enqueue the operands of the k full *records* (device, k x (1 + d +
    d (d + 1) / 2) doubles) into *out* (device factors kp x dp x dp,
    offsets kp x dp, consts kp and shift dp, float32), the shift in double
    into *shift64* (device, dp): the last kernel's event."""
    spec = MmaOperandsSpec(d=d, dp=dp, full=True)
    factors, offsets, consts, shift = out
    kernel(queue.context, spec, "gmm_mma_shift")(
        queue, (-(-dp // 32) * 32,), (32,), records.data, np.int32(k), shift64.data, shift.data)
    return kernel(queue.context, spec, "gmm_mma_full_operands")(
        queue, (-(-kp * dp // 64) * 64,), (64,), records.data, np.int32(k), np.int32(kp),
        shift64.data, factors.data, offsets.data, consts.data)
