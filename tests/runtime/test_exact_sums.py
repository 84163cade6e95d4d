"""Split-free sums (runtime/exact_sums.py): the device fold and the host's
agree word for word, any grouping of the block partials gives the same
total, the totals are the exact sums rounded once, and splits fall on
block boundaries."""
import dataclasses
import math

import numpy as np
import pyopencl.array as cla
import pytest

from oclclust.parallel.shares import split_rows
from oclclust.runtime import exact_fold, exact_sums
from oclclust.runtime.exact_fold import Fold
from oclclust.runtime.exact_sums import ExactWords, lsb_for_bounds
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


@pytest.mark.one_runtime   # host code alone: the same on any runtime
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


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("bounds", [
    np.float64(3.0), 5e-324, [1e-310, 2.2250738585072014e-308, 0.5, 1.0, 2.0, 0.75],
    [0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, np.finfo(float).max],
    np.arange(24.0).reshape(2, 3, 4)[:, ::2, 1:], np.zeros((0, 3))])
def test_grid_is_frexps(bounds):
    """lsb_for_bounds: HEADROOM under frexp's exponent of each bound (of 1.0
    where the bound is zero, negative or not finite), subnormals, shapes and
    strides kept."""
    b = np.asarray(bounds, np.float64)
    ok = np.isfinite(b) & (b > 0)
    expected = (np.frexp(np.where(ok, b, 1.0))[1] - exact_sums.HEADROOM).astype(np.int32)
    got = lsb_for_bounds(bounds)
    assert got.shape == expected.shape and got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("blocks", [1, 7, exact_fold.FOLD_ALONE, exact_fold.FOLD_ALONE + 1, 300])
def test_device_fold_matches_the_host_word_for_word(queue, blocks):
    """In one launch (up to FOLD_ALONE blocks) or in parts, the host's words."""
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


@pytest.mark.parametrize("blocks", [1, exact_fold.FOLD_ALONE + 1, 300])
def test_paired_folds_are_each_folds_words(queue, blocks):
    """Two statistics folded in one launch (a pass's sums and weights): each
    the host's words on its own grid, in one part or several."""
    sums = partials(blocks, SCALES, seed=blocks)
    weights = partials(blocks, SCALES[:3], seed=blocks + 1) * 1e3
    folds = [Fold(queue, (len(SCALES),)), Fold(queue, (3,))]
    for fold, part in zip(folds, (sums, weights)):
        fold.set_bounds(np.abs(part).max(axis=0))
    folds[0].enqueue(cla.to_device(queue, sums.ravel()), blocks,
                     paired=(folds[1], cla.to_device(queue, weights.ravel())))
    for fold, part in zip(folds, (sums, weights)):
        host = ExactWords.of_partials(part, fold.lsb, fold.shape)
        assert np.array_equal(fold.words(fold.out.get(queue)).words, host.words)


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("blocks, size, units, parts", [
    (exact_fold.FOLD_ALONE, 512, 132, 1), (98, 512, 132, 10), (66, 100_000, 132, 3),
    (10_000, 4096 * 128, 132, 2), (300, 8, 2, 18), (100_000, 1, 1, 317)])
def test_fold_parts(blocks, size, units, parts):
    """Parts enough to fill the device, at most about the square root of the
    blocks (a part's loop and the parts' sum both short), at most
    FOLD_BLOCKS blocks a part."""
    assert exact_fold.fold_parts(blocks, size, units) == parts


@pytest.mark.one_runtime   # host code alone: the same on any runtime
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


@pytest.mark.one_runtime   # host code alone: the same on any runtime
def test_one_value_a_block_is_summed_over_the_whole_float64_range():
    rng = np.random.default_rng(2)
    values = rng.standard_normal(500) * 10.0 ** rng.integers(-300, 300, 500)
    whole = ExactWords.of_values(values)
    split = ExactWords.of_values(values[:123]) + ExactWords.of_values(values[123:])
    assert whole.value() == split.value() == math.fsum(values)
    assert ExactWords.of_values([1.0, np.nan]).value() != ExactWords.of_values([1.0]).value()


def _cancelling(rng, n):
    v = rng.standard_normal(n)
    return np.concatenate([v, -v[:n // 2], [2.0 ** 53, 1.0, 1.0]])


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("values", [
    lambda rng: rng.standard_normal(300) * 10.0 ** rng.integers(-30, 30, 300),
    _cancelling,
    lambda rng: np.ldexp(rng.integers(-2 ** 20, 2 ** 20, 200).astype(float),
                         rng.integers(-1074, -1000, 200)),           # subnormals
    lambda rng: np.array([1e308, 1e308, -1e308]),                    # fsum overflows
    lambda rng: np.array([1.0, np.inf, 2.0]),
    lambda rng: np.array([np.inf, -np.inf]),
    lambda rng: np.array([-0.0, 0.0, -0.0]),
    lambda rng: np.vstack([partials(300, [1.0, 1e-20, 1e20, 3.0]),
                           [[0.0, 0.0, 0.0, np.nan]]])])                  # columns
def test_rounded_sum_is_the_words_rounded(values):
    v = values(np.random.default_rng(3), 301) if values is _cancelling else values(
        np.random.default_rng(3))
    want = ExactWords.of_values(v).value()
    got = exact_sums.rounded_sum(v)
    assert np.shape(got) == np.shape(want)
    same = np.asarray(got, np.float64).view(np.int64) == np.asarray(want, np.float64).view(np.int64)
    assert np.all(same | (np.isnan(got) & np.isnan(want)))


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("count", [2, 3, 9])
def test_total_of_parts_is_their_sum_word_for_word(count):
    """ExactWords.total (one carry) gives sum()'s words, specials in order;
    so does AdditiveStats.total over statistics of several fields."""
    from oclclust.passes.lloyd import LloydStats
    part = partials(8 * count, SCALES, seed=count)
    part[1, 2], part[5, 4] = np.inf, -np.inf
    lsb = lsb_for_bounds(np.nan_to_num(np.abs(part), posinf=0).max(axis=0))
    pieces = [ExactWords.of_partials(p, lsb, (len(SCALES),)) for p in np.split(part, count)]
    one_by_one = sum(pieces)
    at_once = ExactWords.total(pieces)
    assert np.array_equal(at_once.words, one_by_one.words)
    assert np.array_equal(at_once.special, one_by_one.special, equal_nan=True)
    stats = [LloydStats(w, ExactWords.of_values(np.arange(i + 2.0)), ExactWords.of_values(
        [0.1 * i, 1e-300]), i, 2 * i, 0) for i, w in enumerate(pieces)]
    a, b = type(stats[0]).total(stats).settled(), sum(stats).settled()
    for x, y in zip(dataclasses.astuple(a), dataclasses.astuple(b)):
        assert np.array_equal(x, y, equal_nan=True) and type(x) is type(y)


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("size", [1, 5])
def test_scattered_values_fold_as_added_one_by_one(size):
    """of_scattered's bincount of 20-bit halves: the words np.add.at adds."""
    rng = np.random.default_rng(size)
    v = rng.standard_normal(3000) * 10.0 ** rng.integers(-300, 300, 3000)
    v[::7] = 2.0 ** 1012 * rng.random(len(v[::7]))   # the widest words, many to a bin
    cols = rng.integers(0, size, len(v))
    got = ExactWords.of_scattered(v, cols, size)
    words = np.zeros((exact_sums.WIDE_WORDS, size), np.int64)
    last = np.frexp(v)[1] - 53
    word = (np.maximum(last, exact_sums.WIDE_LSB) - exact_sums.WIDE_LSB) // exact_sums.WORD_BITS
    s = np.ldexp(v, -(exact_sums.WIDE_LSB + exact_sums.WORD_BITS * word))
    for i, h in enumerate(exact_sums._cut(s)):
        np.add.at(words, (word + i, cols), h.astype(np.int64))
    assert np.array_equal(got.words, exact_sums._carry_int(words))
    assert np.array_equal(got.value(), [math.fsum(v[cols == c]) for c in range(size)])
    assert ExactWords.of_values([2.0 ** 1023] * 3).value() == math.inf   # as float sums overflow


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("count", [1, 5, exact_sums.FEW_VALUES])
@pytest.mark.parametrize("size", [1, 3])
def test_few_values_fold_to_the_bincounts_words(monkeypatch, count, size):
    """Up to FEW_VALUES values are summed as Python integers: the words of
    the bincount path (negative totals, float64's least and greatest bits,
    zeros, cancelling values, the non-finite aside)."""
    rng = np.random.default_rng(count * 10 + size)
    v = rng.standard_normal(count) * 10.0 ** rng.integers(-300, 300, count)
    v[::4] = -np.abs(v[::4])
    if count >= 5:
        v[:5] = [5e-324, -2.0 ** 1012, 0.0, 1.5, -1.5]
    cols = rng.integers(0, size, count)
    few = ExactWords.of_scattered(v, cols, size)
    monkeypatch.setattr(exact_sums, "FEW_VALUES", -1)
    many = ExactWords.of_scattered(v, cols, size)
    assert np.array_equal(few.words, many.words) and np.array_equal(few.lsb, many.lsb)
    assert np.array_equal(few.value(), [math.fsum(v[cols == c]) for c in range(size)])
    with_inf = np.append(v, np.inf)
    assert ExactWords.of_scattered(with_inf, np.append(cols, 0), size).value()[0] == np.inf


def test_a_fold_notes_its_kernels_in_every_fit_that_runs_it(queue):
    """Its kernels fetched once, a fold still tells each recording (a fit's
    kernels_) that it ran them, once however many launches."""
    from oclclust.runtime import kernel_recorder
    fold = Fold(queue, (3,))
    fold.set_bounds(np.ones(3))
    part = cla.to_device(queue, np.ones(6))
    fold.enqueue(part, 2)
    for _ in range(2):
        with kernel_recorder.recording_kernels() as fit:
            fold.enqueue(part, 2)
            fold.enqueue_value(cla.empty(queue, 3, np.float64))
            fold.enqueue(part, 2)
        assert sorted(r["template"] for r in fit.records()) == [
            "runtime/exact_fold.cl.mako", "runtime/exact_value.cl.mako"]
    assert fold.words(fold.out.get(queue)).value().tolist() == [2.0, 2.0, 2.0]


def test_fold_grid_kept_while_its_bounds_stay(queue):
    fold = Fold(queue, (3,))
    fold.set_bounds(np.array([1.0, 2.0, 3.0]))
    device_lsb = fold.lsb_dev
    fold.set_bounds(np.array([1.0, 2.0, 3.0]))
    assert fold.lsb.tolist() == lsb_for_bounds([1.0, 2.0, 3.0]).tolist()
    fold.set_bounds(np.array([1.0, 2.0, 1e9]))
    assert fold.lsb.tolist() == lsb_for_bounds([1.0, 2.0, 1e9]).tolist()
    assert fold.lsb_dev.get(queue).tolist() == fold.lsb.tolist() and fold.lsb_dev is device_lsb


@pytest.mark.parametrize("weighted", [False, True])
def test_block_sums(queue, weighted):
    rng = np.random.default_rng(3)
    n, block = 5000, 512
    values = rng.random(n).astype(np.float32)
    weights = rng.random(n).astype(np.float32) if weighted else None
    out = cla.empty(queue, exact_sums.blocks_of(n, block), np.float64)
    exact_fold.enqueue_block_sums(queue, cla.to_device(queue, values),
                                  None if weights is None else cla.to_device(queue, weights),
                                  n, block, out)
    terms = values.astype(np.float64) * (1.0 if weights is None else weights)
    expected = [terms[i:i + block].sum() for i in range(0, n, block)]
    np.testing.assert_allclose(out.get(queue), expected, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("special", [None, np.nan, -np.inf])
def test_magnitudes_of_a_partition(profile, dtype, special):
    """The device's column maxima are the host's (host_magnitudes: a small
    fit's), of the rows as the device holds them (float32: rounded)."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((3000, 5)) * [1, 1e3, 1e-3, 0, 7]
    if special is not None:
        X[1234, 2] = special
    w = rng.random(3000) * 4
    part = DevicePartition(profile, X, w, dtype=dtype)
    absmax, wmax = exact_fold.magnitudes_of(part)
    host_absmax, host_wmax = exact_fold.host_magnitudes(X, w, np.dtype(dtype))
    np.testing.assert_array_equal(absmax, host_absmax)   # NaN where NaN
    assert wmax == host_wmax == w.astype(dtype).max()
    if special is None:
        assert np.array_equal(absmax, np.abs(X.astype(dtype)).max(axis=0))


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("n, weights", [(10_000, [1, 1]), (10_000, [3, 1, 2]),
                                        (1_000, [1, 1, 1]), (513, [1, 5])])
def test_splits_hold_whole_blocks(n, weights):
    counts = split_rows(n, weights, 512)
    assert counts.sum() == n
    starts = np.cumsum(counts)[:-1]
    assert all(s % 512 == 0 for s in starts if s < n)   # (a device without rows: at n)
    assert np.array_equal(split_rows(n, weights), split_rows(n, weights, 1))


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("d, itemsize, stats", [(2, 8, 9), (128, 4, 1024 * 129),
                                                (24, 4, 100 * 601)])
def test_block_rows_bound_the_partials(d, itemsize, stats):
    rows = exact_sums.block_rows_for(d, itemsize, stats)
    assert rows & (rows - 1) == 0 and rows >= exact_sums.MIN_BLOCK_ROWS
    assert stats * 8 * exact_sums.PARTIALS_SHARE <= max(rows, exact_sums.MIN_BLOCK_ROWS) * d \
        * itemsize or rows == exact_sums.MAX_BLOCK_ROWS
