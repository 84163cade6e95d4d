"""The rows' tiles (passes/tiles.py): the k-d tree's leaves as tiles, the
hierarchy of nodes over the tiles against its definition, and the least fan
that tops it out."""
import numpy as np
import pytest

from oclclust.passes.tiles import hierarchy, hierarchy_fan, leaf_tiles

pytestmark = pytest.mark.one_runtime   # host code only: one runtime runs it


@pytest.mark.parametrize("tiles, fan, levels", [(1, 2, 2), (75, 5, 2), (16, 4, 1), (17, 4, 2)])
def test_hierarchy_levels_reduce_fan_children(tiles, fan, levels):
    rng = np.random.RandomState(tiles)
    lo = rng.randn(tiles, 3)
    out = hierarchy(lo, fan, levels, np.minimum)
    start, level = 0, lo
    for _ in range(levels + 1):
        np.testing.assert_array_equal(out[start:start + len(level)], level)
        start += len(level)
        level = np.array([level[i:i + fan].min(axis=0) for i in range(0, len(level), fan)])
    assert start == len(out)


@pytest.mark.parametrize("tiles, levels", [(1, 2), (75, 2), (156250, 2), (79, 1), (123, 3),
                                           (1000, 2), (999, 2)])
def test_hierarchy_fan_is_the_least_that_tops_out(tiles, levels):
    def top(fan):
        count = tiles
        for _ in range(levels):
            count = -(-count // fan)
        return count
    fan = hierarchy_fan(tiles, levels)
    assert top(fan) <= fan and (fan == 2 or top(fan - 1) > fan - 1)


@pytest.mark.parametrize("kind", ["blobs", "one point", "overflow"])
def test_leaf_tiles_cover_the_rows_in_tiles_of_at_most_tb(kind):
    """A permutation; tiles of 1..tb rows from 0 on; the leaves' boxes
    tighter than tb consecutive rows' (blobs); a leaf of one point repeated
    (no split) cut in tiles of tb; an overflow: the rows' order."""
    rng = np.random.RandomState(0)
    X = {"blobs": rng.randn(3000, 3) + rng.randint(0, 3, (3000, 1)) * 10,
         "one point": np.ones((100, 2)),
         "overflow": np.r_[rng.randn(50, 2), [[1e308, -1e308]]]}[kind]
    tb = 16
    order, starts = leaf_tiles(X, "euclidean", tb)
    assert np.array_equal(np.sort(order), np.arange(len(X)))
    size = np.diff(np.r_[starts, len(X)])
    assert starts[0] == 0 and np.all((size >= 1) & (size <= tb))
    if kind == "one point":
        np.testing.assert_array_equal(starts, np.arange(0, 100, tb))
    if kind == "blobs":
        xp = X[order]

        def volume(at):
            return np.prod(np.maximum.reduceat(xp, at) - np.minimum.reduceat(xp, at), axis=1)
        assert volume(starts).mean() < volume(np.arange(0, len(X), tb)).mean()
