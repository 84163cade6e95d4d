"""A data partition resident on one device: rows, weights and their moments.

The rows are copied to the device once, through page-locked staging
(runtime.transfer), or used in place when they already are a pyopencl array
there, and every kernel pass reads them from there.
"""
import dataclasses

import numpy as np
import pyopencl.array as cla

from .codegen import Spec, kernel
from .reduce import partial_buffer, reduce_partials
from .transfer import upload


MOMENT_ROWS = 4096   # rows a work-group of block_moments sums (a power of two)


@dataclasses.dataclass(frozen=True)
class MomentsSpec(Spec):
    template = "runtime/partition_moments.cl.mako"
    d: int = 1
    wg: int = 1


class DevicePartition:
    """Rows ``x`` (n x d, C order, on *profile*'s device) and optional weights;
    ``offset`` is the first row's index in the whole data set.  Host rows
    (any layout or dtype, a memmap too) are converted to *dtype* (default
    theirs) a piece at a time on their way to the device."""

    def __init__(self, profile, X, sample_weight=None, offset=0, dtype=None, block_rows=None):
        self.profile = profile
        self.offset = offset
        # the blocks of the passes' split-free sums (runtime.exact_sums); None:
        # a partition of its own, each pass picks them for its statistics
        self.block_rows = block_rows
        # (max |x| a column, max weight) of the whole fit: exact_fold.magnitudes_of
        self.magnitudes = None
        if isinstance(X, cla.Array):
            # the caller's own queue and context: kernels are built there, so
            # a program that keeps its data on the device can embed oclclust
            self.queue = X.queue
            self.x = X
        else:
            self.queue = profile.queue()
            self.x = upload(self.queue, X, dtype)
        self.n, self.d = self.x.shape
        self.dtype = self.x.dtype
        self.stride = self.x.strides[0] // self.x.dtype.itemsize
        self.acc_double = profile.fp64
        self.weights = (None if sample_weight is None
                        else upload(self.queue, sample_weight, self.dtype))

    @property
    def weighted(self):
        return self.weights is not None

    def weights_arg(self):
        return (self.weights if self.weighted else self.x).data

    def groups(self, work_group_size, rows_per_step, per_unit=0):
        """Persistent work-groups for this device and the steps each takes
        (*per_unit* groups a compute unit; 0: the profile's)."""
        steps = -(-self.n // rows_per_step)
        groups = max(1, min(steps, self.profile.compute_units *
                            (per_unit or self.profile.groups_per_compute_unit)))
        return groups, -(-steps // groups)

    def row(self, i):
        return self.x[int(i)].get(self.queue)

    def block_moments(self, shift, block_rows):
        """Each block of *block_rows* rows' column sums and sums of squares
        about *shift* (d values, rounded to the rows' dtype), float64
        (blocks x 2d): the same blocks give the same bits on any split
        (parallel.sharded_data.combined_mean_var_finite).  A block is summed
        a piece of MOMENT_ROWS rows at a time, each in row order by a
        work-group, the pieces then added in order: a block in one
        work-group gave a 1M-row, 8-block GMM's two moment passes eight
        work-groups (28 ms on an H200)."""
        blocks = -(-self.n // block_rows)
        if blocks == 0:
            return np.zeros((0, 2 * self.d))
        piece = min(block_rows, MOMENT_ROWS)   # powers of two: a block is whole pieces
        pieces = -(-self.n // piece)
        wg = 1 << min(6, max(self.d - 1, 0).bit_length())
        spec = MomentsSpec(dtype=self.dtype.name, acc_double=self.acc_double, d=self.d, wg=wg)
        moments = kernel(self.queue.context, spec, "partition_moments")
        part = partial_buffer(self.queue, pieces, 2 * self.d, self.acc_double)
        shift = cla.to_device(self.queue, np.asarray(shift, self.dtype))
        moments(self.queue, (pieces * wg,), (wg,), self.x.data, np.int64(self.n),
                np.int64(self.stride), shift.data, part.data, np.int64(piece))
        got = part.get(self.queue).astype(np.float64).reshape(-1, pieces, 2 * self.d)
        got = got[0] if self.acc_double else got[0] - got[1]   # Kahan: sum - compensation
        per = block_rows // piece
        if per == 1:
            return got
        padded = np.zeros((blocks * per, 2 * self.d))   # the last block's missing pieces: 0
        padded[:pieces] = got
        padded = padded.reshape(blocks, per, 2 * self.d)
        total = padded[:, 0].copy()
        for i in range(1, per):   # in piece order, every block at once
            total += padded[:, i]
        return total

    def mean_var_finite(self):
        """(column means, column variances, all finite) in float64, one data pass."""
        wg = 1 << min(6, max(self.d - 1, 0).bit_length())
        spec = MomentsSpec(dtype=self.dtype.name, acc_double=self.acc_double, d=self.d, wg=wg)
        moments = kernel(self.queue.context, spec, "partition_moments")
        groups, steps = self.groups(1, 4096)
        part = partial_buffer(self.queue, groups, 2 * self.d, self.acc_double)
        shift_host = self.row(0).astype(np.float64)
        shift = cla.to_device(self.queue, shift_host.astype(self.dtype))
        moments(self.queue, (groups * wg,), (wg,), self.x.data,
                              np.int64(self.n), np.int64(self.stride), shift.data, part.data,
                              np.int64(steps * 4096))
        total = reduce_partials(self.queue, part, groups, 2 * self.d, self.dtype,
                                self.acc_double)
        finite = bool(np.all(np.isfinite(total)))
        finite = finite and bool(np.all(np.isfinite(shift_host)))
        if not finite:   # no moments, NaN: no arithmetic on infinities warns (here or in
            nan = np.full(self.d, np.nan)   # the callers' combining) before their error
            return nan, nan, False
        s1, s2 = total[:self.d] / self.n, total[self.d:] / self.n
        return s1 + shift_host, np.maximum(s2 - s1 * s1, 0.0), finite
