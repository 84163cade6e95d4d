"""The rows' tiles (passes/tiles.py): the hierarchy of nodes over the tiles
against its definition, and the least fan that tops it out."""
import numpy as np
import pytest

from oclclust.passes.tiles import hierarchy, hierarchy_fan


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
