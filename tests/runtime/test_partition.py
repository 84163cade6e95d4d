"""DevicePartition's block moments (runtime/partition.py): each block the
sum of its pieces of MOMENT_ROWS rows in piece order, each piece in row
order, so blocks give the same bits wherever a split puts them."""
import numpy as np
import pytest

from oclclust.runtime.partition import MOMENT_ROWS, DevicePartition


def host_moments(X, shift, block_rows):
    """The blocks' sums of x - shift and (x - shift)^2, as the device adds them."""
    v = X.astype(np.float64) - shift.astype(X.dtype).astype(np.float64)
    piece = min(block_rows, MOMENT_ROWS)
    out = []
    for lo in range(0, len(X), block_rows):
        s = np.zeros(2 * X.shape[1])
        for p in range(lo, min(len(X), lo + block_rows), piece):
            rows = v[p:min(len(X), lo + block_rows, p + piece)]
            s += np.concatenate([np.cumsum(rows, axis=0)[-1],
                                 np.cumsum(rows * rows, axis=0)[-1]])
        out.append(s)
    return np.array(out)


@pytest.mark.parametrize("block_rows", [512, MOMENT_ROWS, 4 * MOMENT_ROWS])
@pytest.mark.parametrize("n", [1, 9_000, 3 * MOMENT_ROWS + 5])
def test_block_moments_add_pieces_in_order(profile, block_rows, n):
    if not profile.fp64:
        pytest.skip("float64 partials need fp64")
    rng = np.random.default_rng(n)
    X = (rng.standard_normal((n, 3)) * [1, 100, 1e-3] + [5, -7, 0]).astype(np.float32)
    shift = X[0].astype(np.float64)
    got = DevicePartition(profile, X).block_moments(shift, block_rows)
    want = host_moments(X, shift, block_rows)
    d = X.shape[1]
    assert got.shape == want.shape == (-(-n // block_rows), 2 * d)
    assert np.array_equal(got[:, :d], want[:, :d])          # sums of differences: exact
    np.testing.assert_allclose(got[:, d:], want[:, d:], rtol=1e-12)   # (fma or not)


def test_blocks_are_the_same_bits_after_a_split(profile):
    """A block's moments do not depend on which partition holds it."""
    if not profile.fp64:
        pytest.skip("float64 partials need fp64")
    block_rows = 2 * MOMENT_ROWS
    X = np.random.default_rng(1).uniform(-3, 9, (5 * block_rows + 77, 4)).astype(np.float32)
    shift = np.full(4, 2.0)
    whole = DevicePartition(profile, X).block_moments(shift, block_rows)
    cut = 3 * block_rows
    parts = np.vstack([DevicePartition(profile, X[:cut]).block_moments(shift, block_rows),
                       DevicePartition(profile, X[cut:], offset=cut
                                       ).block_moments(shift, block_rows)])
    assert np.array_equal(whole, parts)
