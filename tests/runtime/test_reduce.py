"""runtime.reduce's count_labels: the rows per label, numpy's bincount, for
any number of rows (none, fewer than a work-group, not a multiple of one)."""
import numpy as np
import pyopencl.array as cla
import pytest

from oclclust.runtime.reduce import COUNT_WG, count_labels


@pytest.mark.parametrize("n", [0, 1, COUNT_WG - 1, COUNT_WG, 5 * COUNT_WG + 3, 100_003])
def test_count_labels_is_bincount(queue, n):
    k = 7
    labels = np.random.default_rng(n).integers(0, k, n + 50).astype(np.int32)
    counts = cla.zeros(queue, k, np.int32)
    # rows past the first n are the chunk's padding: never counted
    count_labels(queue, cla.to_device(queue, labels), counts, n)
    np.testing.assert_array_equal(counts.get(queue), np.bincount(labels[:n], minlength=k))
