"""Rows moved between two orders on the device (passes/permute.py) against
numpy: gathers and scatters of every value size the kernels move (1, 2, 4,
8 bytes), rows of one value and of several, row counts below, at and past
a work-group (the last group's padding), none; positions scattered as rows."""
import numpy as np
import pyopencl.array as cla
import pytest

from oclclust.passes.permute import WG, gather, scatter, scatter_positions

SIZES = [0, 1, WG - 1, WG, 3 * WG + 5]


def _values(rng, n, shape, dtype):
    return rng.integers(-100, 100, (n, *shape)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.float32, np.float64,
                                   np.int64])
@pytest.mark.parametrize("shape", [(), (3,), (2, 2)], ids=str)
@pytest.mark.parametrize("n", SIZES)
def test_gather_and_scatter_equal_numpy(queue, dtype, shape, n):
    rng = np.random.default_rng(n)
    order = rng.permutation(n).astype(np.int32)
    values = _values(rng, n, shape, dtype)
    dev_order = cla.to_device(queue, order)
    gathered = gather(queue, dev_order, cla.to_device(queue, values))
    assert gathered.dtype == dtype and gathered.shape == values.shape
    np.testing.assert_array_equal(gathered.get(), values[order])
    back = scatter(queue, dev_order, gathered)
    np.testing.assert_array_equal(back.get(), values)   # the gather's inverse


def test_gather_takes_rows_from_a_longer_array(queue):
    rng = np.random.default_rng(1)
    values = _values(rng, 40, (3,), np.float64)
    order = rng.choice(40, 9, replace=False).astype(np.int32)
    got = gather(queue, cla.to_device(queue, order), cla.to_device(queue, values))
    np.testing.assert_array_equal(got.get(), values[order])


@pytest.mark.parametrize("n", SIZES)
def test_scatter_positions_gives_rows(queue, n):
    rng = np.random.default_rng(n)
    order = rng.permutation(n).astype(np.int32)
    positions = rng.integers(0, max(n, 1), n).astype(np.int32)
    got = scatter_positions(queue, cla.to_device(queue, order),
                            cla.to_device(queue, positions)).get()
    want = np.empty(n, np.int32)
    want[order] = order[positions]
    np.testing.assert_array_equal(got, want)


def test_scatter_positions_takes_int32_only(queue):
    order = cla.to_device(queue, np.arange(4, dtype=np.int32))
    with pytest.raises(TypeError, match="int32"):
        scatter_positions(queue, order, cla.to_device(queue, np.arange(4)))
