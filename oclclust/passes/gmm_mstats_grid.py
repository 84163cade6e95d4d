"""The exact fold's grid of a GmmPass's M statistics (passes/gmm.py): each
statistic's least significant bit (runtime/exact_sums.lsb_for_bounds) from a
bound on one block's sum, made from the rows' column magnitudes
(exact_fold.magnitudes_of) and the means or shift the kernels sum about."""
import numpy as np
import pyopencl.array as cla

from ..runtime import exact_fold, exact_sums


class MStatsGrid:
    """The grids of one partition's M statistics, a block of *block_rows*
    rows at a time (*full*: full covariances' second moments); the
    magnitudes' columns go up on *queue* (the pass's uploads queue)."""

    def __init__(self, part, block_rows, full, queue):
        self.part, self.block_rows, self.full, self.queue = part, block_rows, full, queue
        self._bounds = None   # (portable's scratch: fresh arrays page-fault)
        self._absmax = None   # (the fit's magnitudes, their columns on the device)

    def portable(self, means):
        """The grid (k x SZ) of one block's M statistics about *means* (the
        portable kernels'): a responsibility is at most 1, so N <= B wmax, a
        first moment about m <= B wmax (max|x| + |m|), a second moment the
        product of two such."""
        absmax, wmax = exact_fold.magnitudes_of(self.part)
        scale = self.block_rows * wmax
        means = np.asarray(means, np.float64)
        k, d = means.shape
        about = absmax + np.abs(means)                               # k x d
        # [1, about, about about' or about^2] x scale
        size = 1 + d + (d * d if self.full else d)
        if self._bounds is None or self._bounds.shape != (k, size):
            self._bounds = np.empty((k, size))
        bounds = self._bounds
        bounds[:, 0] = scale
        np.multiply(scale, about, out=bounds[:, 1:1 + d])
        second = np.ndarray((k, d, d if self.full else 1), np.float64, bounds,
                            (1 + d) * 8, (size * 8, (d if self.full else 1) * 8, 8))
        np.multiply(about[:, :, None], about[:, None, :] if self.full else about[:, :, None],
                    out=second)
        second *= scale
        return exact_sums.lsb_for_bounds(bounds)

    def scale(self):
        """(the rows' column magnitudes on the device, B wmax): the bounds'
        parts of the tensor-core M statistics' grid that a fit keeps."""
        magnitudes = exact_fold.magnitudes_of(self.part)
        if self._absmax is None or self._absmax[0] is not magnitudes:
            self._absmax = magnitudes, cla.to_device(
                self.queue, np.ascontiguousarray(magnitudes[0], np.float64))
        return self._absmax[1], self.block_rows * magnitudes[1]

    def head(self, shift):
        """The grid's first 2 + 2d columns of the tensor-core M statistics,
        alike for every component: [N other, N own] (N <= B wmax), the other
        rows' sums about the *shift* (float32, dp) and their squares (B wmax
        (max|x| + |s|), its square); the own sums' columns are made on the
        device from the means (gmm_mma.enqueue_grid)."""
        absmax, scale = exact_fold.magnitudes_of(self.part)[0], self.scale()[1]
        spread = absmax + np.abs(shift[:self.part.d])
        return np.concatenate([exact_sums.lsb_for_bounds(np.full(2, scale)),
                               exact_sums.lsb_for_bounds(scale * spread),
                               exact_sums.lsb_for_bounds(scale * (spread * spread))])
