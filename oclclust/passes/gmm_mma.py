"""Planning of the tensor-core diagonal GMM E-step (templates/gmm_mma/
gmm_mma_estep.cl.mako): the log-densities as one GEMM on NVIDIA tensor
cores, 3xTF32 as the "mma" Lloyd variant's (lloyd_mma.py), with the
per-point and tiled E kernels of gmm.py beside it for every other device,
dtype, covariance and shape.

A diagonal component's Mahalanobis term is a GEMM shape (scikit-learn's
_estimate_log_gaussian_prob uses the same expansion):
    sum_c P_jc (x_c - mu_jc)^2 = sum_c x'_c^2 P_jc - 2 sum_c x'_c mu'_jc P_jc
                                 + sum_c mu'_jc^2 P_jc,
P_j = u_j^2 (u the precision Cholesky diagonal), x' = x - s and mu' = mu - s
about one shift s (the components' mean of means): the expansion cancels
digits as |x'| grows against |x' - mu'|, and the shift keeps |x'| at the
data's spread instead of its distance from the origin.  The kp x 2dp
coefficients [P | -2 mu' P] and the constants c_j - 1/2 sum mu'^2 P are
made in float64 (then float32) on the device from the records the host
uploads (gmm_mma_operands.py).

The M-step statistics (gmm_mma_mstep.cl.mako) are GEMMs of the
responsibilities too, split by each row's own component (its label): a
component's own rows summed about its mean, the others about the shift.
Sums about one shift alone cancel: sum r x'^2 - 2 mu' sum r x' + N mu'^2
loses |mu'|^2 / var of float32's digits (a one-hot start, var 0 and
reg_covar 1e-6, came out negative: "ill-defined covariance").  What is left
to cancel is the shared rows' part: a component's mass on rows another one
owns, large only where components overlap far from the shift.
"""
import dataclasses

import numpy as np
import pyopencl.array as cla

from ..runtime import exact_sums
from ..runtime.codegen import EmulatedBuild, Spec, kernel
from .gmm_mma_bound import bound_factor
from .lloyd_mma import tensor_cores

MAX_D = 128       # a warp's rows stay in registers as raw floats: dp / 2 a m16 tile
CHUNK = 16        # components of a local-memory chunk (two copies at d=128: 33 KB)
WIDE_CHUNK = 32   # ... one copy of twice as many, where the rows are split each chunk


@dataclasses.dataclass(frozen=True)
class MmaEStepSpec(EmulatedBuild, Spec):
    """The tensor-core E kernel: wg work-items (wg / 32 warps), each warp mt
    m16 row tiles (tm rows a work-group tile), chunks of tn components in
    local memory (copies 2: double-buffered); resplit: the rows' splits
    made each chunk instead of once a tile (estep_specs); lane_recheck
    (one-product precisions): the re-check's float32 values made by each
    row's four lanes from their registers; packed_chunks ("bf16", packed):
    the chunks' coefficients staged as bfloat16 pairs, the B fragments'
    registers (the profile's gmm_mma_lane_recheck, gmm_mma_packed_chunks)."""
    template = "gmm_mma/gmm_mma_estep.cl.mako"
    d: int = 1
    dp: int = 8
    kp: int = 16
    wg: int = 256
    mt: int = 1
    tn: int = CHUNK
    tm: int = 128
    precision: str = "float32"
    emulate: bool = False
    resplit: bool = False
    copies: int = 2
    lane_recheck: bool = False
    packed_chunks: bool = False
    packed = property(lambda self: self.packed_chunks and self.precision == "bf16")

    @property
    def rows(self):
        """Points of a work-group tile (GmmPass._groups)."""
        return self.tm

    @property
    def rechecks(self):
        """A one-product kernel's values near each row's largest are made
        again in float32 (the template's re-check)."""
        return self.precision != "float32"

    def template_args(self):
        args = super().template_args()
        # the re-check's B_ij / (|x'|^2 Pmax_j + |x'| |L_j|), a little over
        # estep_bound's factor: the kernel's float32 bound is rounded
        args["bound_factor"] = bound_factor(self.dp, self.precision) * (1 + 2.0 ** -10)
        args.update(packed=self.packed, roww=self.chunk_row, local_floats=self.local_floats)
        return args

    @property
    def chunk_row(self):
        """Words of a component's local row: [P | L] (packed: pairs), 4 of pad."""
        return (self.dp if self.packed else 2 * self.dp) + 4

    @property
    def local_floats(self):
        """The chunks, then the lanes' merge (and the lane re-check's)."""
        lanes = 61 if self.lane_recheck and self.rechecks else 28 if self.rechecks else 16
        return max(self.copies * self.tn * self.chunk_row, self.tm * lanes)

    def local_bytes(self):
        rows = self.tm * (3 if self.rechecks else 1)   # row_total (row_best, row_xx)
        return (self.local_floats + rows) * 4 + self.wg * (32 if self.emulate else 8)


def estep_specs(profile, dtype, d, k, emulate=False, precision="float32", **variant):
    """The tensor-core E kernel for diagonal float32 data of at most MAX_D
    dimensions on a device with tensor cores and fp64 (its operands are
    made in double: gmm_mma_operands.py; else nothing: gmm.py's kernels
    serve).  Rows: one m16 tile a warp at dp > 64, two below (a warp's
    x' values take dp / 2 registers a tile); work-groups of 8 warps, then 4
    (two tiles a warp: 4, then 8).  Where the rows' splits are made each
    chunk (resplit), chunks of WIDE_CHUNK components in one copy: each
    split serves twice the components.
    *emulate*: the same kernels with the products in plain OpenCL, on any
    device (tests on CPUs).  *precision* (lloyd_mma.PRECISIONS): "float32"
    3xTF32, "tf32" and "bf16" one product of operands rounded to that
    format (gmm_mma_bound.estep_bound); *variant*: lane_recheck,
    packed_chunks (MmaEStepSpec)."""
    if (np.dtype(dtype) != np.float32 or d > MAX_D or not profile.fp64
            or not (emulate or tensor_cores(profile))):
        return
    dp = -(-d // 8) * 8
    mt = 1 if dp > 64 else 2
    # the rows' four split halves (x' and x'^2, big and small) take mt dp * 2
    # registers once hoisted out of the chunk loop: past 128 they are made
    # again each chunk instead (hoisted, they spilled at d=128)
    resplit = mt * dp * 2 > 128
    tn, copies = (WIDE_CHUNK, 1) if resplit else (CHUNK, 2)
    kp = -(-k // tn) * tn
    # two row tiles a warp, their splits hoisted, ran faster in work-groups of
    # 4 warps (H200)
    for wg in (128, 256) if mt == 2 and not resplit else (256, 128):
        if wg <= profile.max_work_group_size:
            yield MmaEStepSpec(dtype="float32", acc_double=profile.fp64, d=d, dp=dp, kp=kp,
                               wg=wg, mt=mt, tn=tn, tm=wg // 32 * 16 * mt,
                               precision=precision, emulate=emulate, resplit=resplit,
                               copies=copies, **variant)


STAGE = 32        # rows of the M kernel's local-memory stage (4 k8 steps)
# the M kernel's n8 column tiles a warp at most (two sets of float and double
# sums each).  H200 (bench/kernels.py gmm-mma): 2 a warp, twice the warps,
# ran 2.60 against 1.61 ms at 1M x 24, K=100 and did not fit at d=128
NTW = 4


@dataclasses.dataclass(frozen=True)
class MmaMStepSpec(EmulatedBuild, Spec):
    """The tensor-core M kernel (gmm_mma_mstep.cl.mako): a work-group per
    (chunk of rows, block of cb = 16 mb components); each warp one m16
    component tile and ntw n8 column tiles of one half (x or x^2), g
    column groups a half.  tile: the fewest rows a chunk is given.
    skip_stages: only the stages MmaStagesSpec's kernel flags are read and
    multiplied (the others' products would all add zero); False every
    stage (the same sums, bit for bit: the tests' reference)."""
    template = "gmm_mma/gmm_mma_mstep.cl.mako"
    d: int = 1
    dp: int = 8
    wg: int = 256
    g: int = 1
    ntw: int = 1
    mb: int = 1
    tile: int = 2048
    stage: int = STAGE
    precision: str = "float32"
    emulate: bool = False
    skip_stages: bool = True
    reps = 1

    @property
    def cb(self):
        return 16 * self.mb

    def groups_per_chunk(self, k):
        return -(-k // self.cb)

    def local_bytes(self):
        """x stage, the responsibilities, own components, the N sums."""
        xs, rs = self.dp + (8 - self.dp) % 32, self.stage + 4
        floats = self.stage * xs + self.cb * rs
        return ((floats + self.stage) * 4 + self.cb * 4 * 8
                + ((self.wg * 6 + self.stage // 8 * self.mb) * 4 if self.emulate else 0))


@dataclasses.dataclass(frozen=True)
class MmaStagesSpec(Spec):
    """The M kernel's stage flags (gmm_mma_stages.cl.mako): a work-group of
    wg work-items per (chunk of rows, block of cb components, word of 32
    stages of *stage* rows), as that kernel's chunks, blocks and stages."""
    template = "gmm_mma/gmm_mma_stages.cl.mako"
    wg: int = 256
    stage: int = STAGE
    cb: int = 16

    def words(self, rows_per_chunk):
        """Flag words a chunk of *rows_per_chunk* rows and block takes."""
        return max(1, -(-rows_per_chunk // (32 * self.stage)))


class StageFlags:
    """The stage flags the tensor-core M kernel of *mspec* (an
    MmaMStepSpec) reads, on *queue*: one device array, grown to the
    largest size asked."""

    def __init__(self, queue, mspec):
        self.queue, self.skip = queue, mspec.skip_stages
        self.spec = MmaStagesSpec(dtype="float32", stage=mspec.stage, cb=mspec.cb)
        self.flags = None

    def enqueue(self, resp, lse, normalize, own, n, k, rows_per_chunk, chunks):
        """The flags of *k* components over *chunks* chunks of
        *rows_per_chunk* of the *n* rows (enqueue_stages' arguments),
        enqueued where the kernel skips stages: (device array, words a
        chunk and block), its stage_flags and words arguments."""
        words = self.spec.words(rows_per_chunk)
        size = chunks * -(-k // self.spec.cb) * words
        if self.flags is None or self.flags.size < size:
            self.flags = cla.empty(self.queue, size, np.uint32)
        if self.skip and n:
            enqueue_stages(self.queue, self.spec, resp, lse, normalize, own, n, k,
                           rows_per_chunk, chunks, self.flags)
        return self.flags, words


def enqueue_stages(queue, spec, resp, lse, normalize, own, n, k, rows_per_chunk, chunks, out):
    """Enqueue the stage flags of *chunks* chunks of *rows_per_chunk* rows
    and every block of the *k* components (device arrays: *resp* k x n,
    its rows' *lse* where *normalize*, their *own* components) into *out*
    (chunks x blocks x spec.words(rows_per_chunk) uint32)."""
    words = spec.words(rows_per_chunk)
    groups = chunks * -(-k // spec.cb) * words
    kernel(queue.context, spec, "gmm_stages")(
        queue, (groups * spec.wg,), (spec.wg,), resp.data, lse.data, np.int32(normalize),
        own.data, np.int64(n), np.int32(k), np.int64(rows_per_chunk), np.int64(words),
        out.data)


# the own kernel's local memory (its block's sums, a scan step's list): at
# most this many bytes, so that several work-groups share a multiprocessor
OWN_LOCAL = 32 * 1024


@dataclasses.dataclass(frozen=True)
class MmaOwnSpec(Spec):
    """The M step's own sums (gmm_mma_own.cl.mako) beside the tensor-core
    M kernel: a work-group of wg work-items in *groups* of a column each
    per (chunk of rows, block of cb components), as that kernel's chunks,
    scanning wg * batch rows a step."""
    template = "gmm_mma/gmm_mma_own.cl.mako"
    d: int = 1
    dp: int = 8
    wg: int = 128
    batch: int = 1
    groups: int = 1
    cb: int = 16
    precision: str = "float32"

    def groups_per_chunk(self, k):
        return -(-k // self.cb)

    def local_bytes(self):
        rows = self.wg * self.batch   # (sums; the step's mask words and components)
        return self.groups * (2 * self.cb * self.dp + self.cb) * 8 + rows // 32 * 4 + rows * 2


OWN_WG = 128      # the own kernel's work-items
# rows a work-item marks a scan step: a step is a few dependent reads long
# (the rows' owners, then the owned rows'), and a block of 16 of 1024
# components owns ~2 of 128 rows: steps of 128 rows took the kernel 2.0 ms
# at 1M x 128 (H200)
OWN_BATCH = 8


def own_spec(d, k, precision="float32"):
    """The own kernel beside the tensor-core M kernel for k components of
    d dimensions (its means' rows dp = d padded to 8 floats, as that
    kernel's): OWN_WG work-items in groups of a column each (columns: dp
    rounded up to 32; several groups where d is small, each taking rows in
    turn), scan steps of OWN_BATCH rows a work-item, blocks of as many
    components as local memory holds within OWN_LOCAL (a power of two, at
    most k's); *precision* the M kernel's."""
    dp = -(-d // 8) * 8
    cols = -(-dp // 32) * 32
    groups = max(1, OWN_WG // cols)
    spec = MmaOwnSpec(dtype="float32", acc_double=True, d=d, dp=dp, wg=groups * cols,
                      batch=OWN_BATCH, groups=groups, cb=1, precision=precision)
    while spec.cb < k and dataclasses.replace(spec, cb=2 * spec.cb).local_bytes() <= OWN_LOCAL:
        spec = dataclasses.replace(spec, cb=2 * spec.cb)
    return spec


def mstep_size(d):
    """Doubles per component of the M kernel's statistics: [N other, N own,
    other sum r x' (d), sum r x'^2 (d), own sum r x'' (d), sum r x''^2 (d)]."""
    return 2 + 4 * d


def mstep_specs(profile, dtype, d, emulate=False, precision="float32"):
    """The tensor-core M kernel for diagonal float32 data of at most MAX_D
    dimensions on a device with tensor cores and fp64 (its partial sums are
    double): per component the sums over the rows it does not own about a
    shift and over the rows it owns about its mean (gmm_mma_mstep.cl.mako),
    made the statistics about the means on the host (central_stats).
    Column groups of at most NTW tiles a warp (its registers hold 2 x 4
    float and 2 x 4 double sums a tile), work-groups of 8 warps, component
    blocks halved until local memory fits.  *emulate*: as estep_specs'.
    *precision*: "float32" the 3xTF32 products; "tf32" and "bf16" the
    responsibilities rounded to TF32 (nearest: within 2^-11 relative) and
    the rows' 3xTF32 split kept, two products a step: the statistics of
    those rounded responsibilities to float32's accuracy, so that the
    variances stay those of a (reweighted) mixture instead of differences
    of cancelling sums (one product of both rounded lost them: negative
    variances at 1M x 128, K=1024 on an H200)."""
    if (np.dtype(dtype) != np.float32 or d > MAX_D or not profile.fp64
            or not (emulate or tensor_cores(profile))):
        return
    dp = -(-d // 8) * 8
    steps = dp // 8
    g = -(-steps // NTW)
    ntw = -(-steps // g)
    mb = max(1, 8 // (2 * g))
    while mb >= 1:
        wg = 32 * 2 * g * mb
        spec = MmaMStepSpec(dtype="float32", acc_double=True, d=d, dp=dp, wg=wg, g=g,
                            ntw=ntw, mb=mb, emulate=emulate,
                            precision="float32" if precision == "float32" else "tf32")
        if wg <= profile.max_work_group_size and spec.local_bytes() <= profile.local_memory_budget:
            yield spec
            return
        mb //= 2


def shift_of(means, dp):
    """The shift the M kernel's other sums are taken about: the means' mean,
    float32, zero past d (as operands' for the E step)."""
    means = np.asarray(means, np.float64)
    out = np.zeros(dp, np.float32)
    out[:means.shape[1]] = means.mean(axis=0)
    return out


def means_of(means, dp):
    """The means the M kernel's own sums are taken about: float32, k x dp,
    zero past d."""
    means = np.asarray(means)
    out = np.zeros((means.shape[0], dp), np.float32)
    out[:, :means.shape[1]] = means
    return out


def central(stats, means, raw):
    """M statistics (k x SZ float64, summed over every chunk and rank) about
    *means*: the tensor-core kernel's raw sums (*raw*) made central
    (central_stats, about the shift and float32 means it took them
    about), the others as they are."""
    if not raw:
        return stats
    dp = -(-means.shape[1] // 8) * 8
    return central_stats(stats, means, shift_of(means, dp), means_of(means, dp))


def central_stats(raw, means, shift, means32=None):
    """[N, S1, S2] about *means* (gmm_mstep.cl.mako's statistics, k x (1 + 2d)
    float64) from the M kernel's reduced sums (mstep_size): the other rows'
    [N, sum r x', sum r x'^2] about the shift made about the means (S1 =
    Sx - N mu', S2 = Sxx - 2 mu' Sx + N mu'^2, mu' = mu - shift), the own
    rows' about *means32* (the float32 means the kernel read; default the
    means) made about the float64 means (dm = mu - mu32: S1 - N dm, S2 -
    2 dm S1 + N dm^2), the two added."""
    means = np.asarray(means, np.float64)
    k, d = means.shape
    m32 = means if means32 is None else np.asarray(means32, np.float64)[:, :d]
    n_other, n_own = raw[:, :1], raw[:, 1:2]
    sx, sxx, s1o, s2o = (raw[:, 2 + q * d:2 + (q + 1) * d] for q in range(4))
    mu = means - shift[:d].astype(np.float64)
    dm = means - m32
    # S1 and S2 as their sums say, in that order, into scratch arrays (k x d:
    # an iteration's dozen fresh temporaries cost more than the arithmetic)
    out = np.empty((k, 1 + 2 * d))
    np.add(n_other[:, 0], n_own[:, 0], out=out[:, 0])
    a, b = np.empty((k, d)), np.empty((k, d))
    s1, s2 = out[:, 1:1 + d], out[:, 1 + d:]
    _moved(s1, sx, n_other, mu, a)
    _moved(b, s1o, n_own, dm, a)
    s1 += b
    _moved_second(s2, sxx, sx, n_other, mu, a)
    _moved_second(b, s2o, s1o, n_own, dm, a)
    s2 += b
    return out


@dataclasses.dataclass(frozen=True)
class MmaCentralSpec(Spec):
    """central_stats on the device (gmm_mma_central.cl.mako): the same IEEE
    operations, uncontracted, so the host's bits."""
    template = "gmm_mma/gmm_mma_central.cl.mako"
    build_options = ()
    dtype: str = "float64"
    d: int = 1
    dp: int = 8


def enqueue_central(queue, raw, k, d, dp, means, shift, means32, out):
    """Enqueue central_stats of the k x mstep_size(d) device values *raw*
    (the exact totals' values) about the float64 *means* (device, k x d),
    their float32 *shift* (dp) and *means32* (k x dp) as the M kernel took
    them, into device array *out* (k x (1 + 2d) doubles)."""
    wg, items = 64, k * d
    kernel(queue.context, MmaCentralSpec(d=d, dp=dp), "gmm_mma_central")(
        queue, (-(-items // wg) * wg,), (wg,), raw.data, np.int32(k), means.data,
        shift.data, means32.data, out.data)


@dataclasses.dataclass(frozen=True)
class MmaGridSpec(Spec):
    """The tensor-core M statistics' exact-fold grid on the device
    (gmm_mma_grid.cl.mako): lsb_for_bounds' bits."""
    template = "gmm_mma/gmm_mma_grid.cl.mako"
    build_options = ()
    dtype: str = "float64"
    d: int = 1
    headroom: int = exact_sums.HEADROOM


def enqueue_grid(queue, means, k, d, absmax, scale, head, lsb):
    """Enqueue the exact-fold grid of the M statistics of *k* components
    (k x mstep_size(d) exponents, into device array *lsb*) about the
    float64 *means* (device, k x d): the first 2 + 2d columns *head*'s
    (device ints, alike for every component), the own sums' from the
    rows' column magnitudes *absmax* (device, d doubles) and *scale* (a
    block's rows times the largest weight): the kernel's event."""
    wg, items = 64, k * mstep_size(d)
    return kernel(queue.context, MmaGridSpec(d=d), "gmm_mma_grid")(
        queue, (-(-items // wg) * wg,), (wg,), means.data, np.int32(k), absmax.data,
        np.float64(scale), head.data, lsb.data)


def _moved(out, first, n, m, scratch):
    """out = first - n m: a first moment about the origin made about m."""
    np.multiply(n, m, out=scratch)
    np.subtract(first, scratch, out=out)


def _moved_second(out, second, first, n, m, scratch):
    """out = (second - 2 m first) + n m m: a second moment made about m."""
    np.multiply(2, m, out=scratch)
    scratch *= first
    np.subtract(second, scratch, out=out)
    np.multiply(n, m, out=scratch)
    scratch *= m
    out += scratch
