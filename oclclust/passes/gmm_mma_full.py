"""Planning of the tensor-core full-covariance GMM E-step
(templates/gmm_mma/gmm_mma_full_estep.cl.mako): each component's whitened
rows (x - s)^T U_j as 3xTF32 products on NVIDIA tensor cores, gmm.py's
kernels beside it for every other device, dtype and shape.  "tied"
mixtures run it too (their passes are the full ones).

Its operands -- each component's factor U_j, offsets (mu_j - s)^T U_j and
constant c_j, float32, in the kernel's local layout -- are made on the
device from the double records each iteration (gmm_mma_operands.cl.mako's gmm_mma_full_operands,
``enqueue_operands``); ``operands`` is the host's form of them, the tests'
reference.  Every ``precision`` runs these 3xTF32 products: the full
passes are float32 at every precision (docs/guide/precision.rst).
"""
import dataclasses

import numpy as np

from ..runtime.codegen import EmulatedBuild, Spec, kernel
from .gmm_mma_operands import MmaOperandsSpec, full_items, full_layout
from .lloyd_mma import tensor_cores

MAX_D = 64      # a warp's split rows take mt dp registers; a component's record dp x ws floats
CHUNK = 8       # components of a local-memory chunk at most


def padded(d):
    return -(-d // 8) * 8


@dataclasses.dataclass(frozen=True)
class MmaFullEStepSpec(EmulatedBuild, Spec):
    """The tensor-core full E kernel: wg work-items (wg / 32 warps, mt m16
    row tiles each), chunks of tn components' records (gmm_mma_operands.
    full_layout) in local memory (kp: components padded to chunks)."""
    template = "gmm_mma/gmm_mma_full_estep.cl.mako"
    d: int = 1
    dp: int = 8
    kp: int = 8
    wg: int = 128
    mt: int = 1
    tn: int = CHUNK
    emulate: bool = False
    rechecks = False   # (every precision: 3xTF32 products)

    @property
    def rows(self):
        """Points of a work-group tile (GmmPass._groups)."""
        return self.wg // 32 * 16 * self.mt

    def template_args(self):
        args = super().template_args()
        args["ws"], args["cw"] = full_layout(self.dp)
        return args

    def local_bytes(self):
        return (self.tn * full_layout(self.dp)[1] + (self.wg * 7 if self.emulate else 0)) * 4 \
            + self.wg * 8


def estep_specs(profile, dtype, d, k, emulate=False):
    """The tensor-core full E kernel for float32 data of at most MAX_D
    dimensions on a device with tensor cores and fp64 (its operands are
    made in double), else nothing (gmm.py's kernels serve): chunks of as
    many components as local memory holds (at most CHUNK); two row tiles
    a warp up to 32 dimensions (each staged record and split factor
    serves twice the rows), one past; work-groups of 4 then 8 warps.
    *emulate*: the same kernel with its products in plain OpenCL, on any
    device (tests on CPUs)."""
    if (np.dtype(dtype) != np.float32 or d > MAX_D or not profile.fp64
            or not (emulate or tensor_cores(profile))):
        return
    dp = padded(d)
    mt = 2 if dp <= 32 else 1
    for wg in (128, 256):
        if wg > profile.max_work_group_size:
            continue
        fitting = [spec for spec in (MmaFullEStepSpec(
            dtype="float32", acc_double=profile.fp64, d=d, dp=dp, kp=-(-k // tn) * tn, wg=wg,
            mt=mt, tn=tn, emulate=emulate) for tn in range(CHUNK, 0, -1))
            if spec.local_bytes() <= profile.local_memory_budget]
        if fitting:
            yield fitting[0]


def operands(records, d, dp, kp):
    """(packed kp x cw, shift dp), float32, from the k x (1 + d + d (d +
    1) / 2) full *records* (mdl.records: c_j, mu_j, U_j's upper triangle
    column by column): each component's U_j, (mu_j - s)^T U_j and c_j in
    full_layout's words (zero past d and past k: ``parts`` reads them);
    the shift s the mean of the means."""
    records = np.asarray(records, np.float64)
    k = records.shape[0]
    mu = records[:, 1:1 + d]
    cols = np.concatenate([np.full(c + 1, c) for c in range(d)])
    rows = np.concatenate([np.arange(c + 1) for c in range(d)])
    factor = np.zeros((k, d, d))
    factor[:, rows, cols] = records[:, 1 + d:]
    shift = mu.mean(axis=0)
    packed, padded_shift = np.zeros((kp, full_layout(dp)[1]), np.float32), np.zeros(dp, np.float32)
    factors, offsets, consts = parts(packed, dp)
    factors[:k, :d, :d] = factor
    offsets[:k, :d] = np.einsum("jc,jce->je", mu - shift, factor)
    consts[:k] = records[:, 0]
    padded_shift[:d] = shift
    return packed, padded_shift


def parts(packed, dp):
    """Views of kp x cw *packed* records: (factors kp x dp x dp, offsets kp
    x dp, consts kp)."""
    ws, _ = full_layout(dp)
    factors = packed[:, :dp * ws].reshape(-1, dp, ws)[:, :, :dp]
    return factors, packed[:, dp * ws:dp * ws + dp], packed[:, dp * ws + dp]


def enqueue_operands(queue, records, k, d, dp, kp, shift64, out):
    """Enqueue the operands of the k full *records* (device, k x (1 + d +
    d (d + 1) / 2) doubles) into *out* (device packed kp x cw and shift
    dp, float32), the shift in double into *shift64* (device, dp): the
    last kernel's event."""
    spec = MmaOperandsSpec(d=d, dp=dp, full=True)
    packed, shift = out
    kernel(queue.context, spec, "gmm_mma_shift")(
        queue, (-(-dp // 32) * 32,), (32,), records.data, np.int32(k), shift64.data, shift.data)
    items = kp * full_items(dp)
    return kernel(queue.context, spec, "gmm_mma_full_operands")(
        queue, (-(-items // 64) * 64,), (64,), records.data, np.int32(k), np.int32(kp),
        shift64.data, packed.data)
