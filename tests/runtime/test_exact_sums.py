"""Split-free sums (runtime/exact_sums.py): the device fold and the host's
agree word for word, any grouping of the block partials gives the same
total, the totals are the exact sums rounded once, and splits fall on
block boundaries."""
import math

import numpy as np
import pyopencl.array as cla
import pytest

from oclclust.parallel.shares import split_rows
from oclclust.runtime import exact_sums
from oclclust.runtime.exact_sums import ExactWords, Fold, lsb_for_bounds
from oclclust.runtime.partition import DevicePartition


def partials(blocks, scales, seed=0):
    """blocks x len(scales) partials of mixed signs and magnitudes, zeros too."""
    rng = np.random.default_rng(seed)
    part = rng.standard_normal((blocks, len(scales))) * np.asarray(scales)
    part[rng.random(part.shape) < 0.1] = 0.0
    return part


SCALES = [1e-10, 1.0, 1e6, 3.0, 1e-300, 0.0, 1e200]


def fsums(part):
    return np.array([math.fsum(column) for column in part.T])


def test_fold_is_the_exact_sum_rounded_once_whatever_the_grouping():
    part = partials(200, SCALES)
    lsb = lsb_for_bounds(np.abs(part).max(axis=0))
    whole = ExactWords.of_partials(part, lsb, (len(SCALES),))
    rng = np.random.default_rng(1)
    order = rng.permutation(len(part))
    cuts = np.sort(rng.choice(np.arange(1, len(part)), 9, replace=False))
    grouped = sum(ExactWords.of_partials(part[piece], lsb, (len(SCALES),))
                  for piece in np.split(order, cuts))
    assert np.array_equal(whole.words, grouped.words)
    assert np.array_equal(whole.value(), fsums(part))   # 100 grid bits: nothing lost here


@pytest.mark.parametrize("blocks", [1, 7, 300])
def test_device_fold_matches_the_host_word_for_word(queue, blocks):
    part = partials(blocks, SCALES, seed=blocks)
    part[0, 3] = np.inf   # a non-finite partial is summed apart
    fold = Fold(queue, (len(SCALES),))
    fold.set_bounds(np.nan_to_num(np.abs(part), posinf=0).max(axis=0))
    fold.enqueue(cla.to_device(queue, part.ravel()), blocks)
    device = fold.words(fold.out.get(queue))
    host = ExactWords.of_partials(part, fold.lsb, (len(SCALES),))
    assert np.array_equal(device.words, host.words)
    assert np.array_equal(device.value(), host.value(), equal_nan=True)
    assert device.value()[3] == np.inf


def test_ranks_sum_the_flat_words_exactly():
    """The words cross ranks as float64 vectors: any order of adding them
    (an MPI reduction tree) gives the same total."""
    part = partials(64, SCALES)
    lsb = lsb_for_bounds(np.abs(part).max(axis=0))
    ranks = [ExactWords.of_partials(p, lsb, (len(SCALES),)) for p in np.split(part, 4)]
    forward = ranks[0].from_flat(sum(r.flat() for r in ranks))
    backward = ranks[0].from_flat(sum(r.flat() for r in ranks[::-1]))
    assert np.array_equal(forward.value(), backward.value())
    assert np.array_equal(forward.value(), fsums(part))


def test_one_value_a_block_is_summed_over_the_whole_float64_range():
    rng = np.random.default_rng(2)
    values = rng.standard_normal(500) * 10.0 ** rng.integers(-300, 300, 500)
    whole = ExactWords.of_values(values)
    split = ExactWords.of_values(values[:123]) + ExactWords.of_values(values[123:])
    assert whole.value() == split.value() == math.fsum(values)
    assert ExactWords.of_values([1.0, np.nan]).value() != ExactWords.of_values([1.0]).value()


@pytest.mark.parametrize("weighted", [False, True])
def test_block_sums(queue, weighted):
    rng = np.random.default_rng(3)
    n, block = 5000, 512
    values = rng.random(n).astype(np.float32)
    weights = rng.random(n).astype(np.float32) if weighted else None
    out = cla.empty(queue, exact_sums.blocks_of(n, block), np.float64)
    exact_sums.enqueue_block_sums(queue, cla.to_device(queue, values),
                                  None if weights is None else cla.to_device(queue, weights),
                                  n, block, out)
    terms = values.astype(np.float64) * (1.0 if weights is None else weights)
    expected = [terms[i:i + block].sum() for i in range(0, n, block)]
    np.testing.assert_allclose(out.get(queue), expected, rtol=1e-12)


def test_magnitudes_of_a_partition(profile):
    rng = np.random.default_rng(4)
    X = rng.standard_normal((3000, 5)) * [1, 1e3, 1e-3, 0, 7]
    w = rng.random(3000) * 4
    part = DevicePartition(profile, X, w)
    absmax, wmax = exact_sums.magnitudes_of(part)
    assert np.array_equal(absmax, np.abs(X).max(axis=0))
    assert wmax == w.max()


@pytest.mark.parametrize("n, weights", [(10_000, [1, 1]), (10_000, [3, 1, 2]),
                                        (1_000, [1, 1, 1]), (513, [1, 5])])
def test_splits_hold_whole_blocks(n, weights):
    counts = split_rows(n, weights, 512)
    assert counts.sum() == n
    starts = np.cumsum(counts)[:-1]
    assert all(s % 512 == 0 for s in starts if s < n)   # (a device without rows: at n)
    assert np.array_equal(split_rows(n, weights), split_rows(n, weights, 1))


@pytest.mark.parametrize("d, itemsize, stats", [(2, 8, 9), (128, 4, 1024 * 129),
                                                (24, 4, 100 * 601)])
def test_block_rows_bound_the_partials(d, itemsize, stats):
    rows = exact_sums.block_rows_for(d, itemsize, stats)
    assert rows & (rows - 1) == 0 and rows >= exact_sums.MIN_BLOCK_ROWS
    assert stats * 8 * exact_sums.PARTIALS_SHARE <= max(rows, exact_sums.MIN_BLOCK_ROWS) * d \
        * itemsize or rows == exact_sums.MAX_BLOCK_ROWS
