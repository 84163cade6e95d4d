"""The rows' tiles (passes/tiles.py): the k-d tree's leaves as tiles, the
hierarchy of nodes over the tiles against its definition, the least fan
that tops it out, and the nodes' components split (split_hierarchy)
against each node's rows."""
import numpy as np
import pytest

from oclclust.passes.tiles import (hierarchy, hierarchy_fan, leaf_tiles, split_hierarchy,
                                   tile_rows)
import oclclust.passes.tiles as tiles_module

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


@pytest.mark.parametrize("components", [1, 3, 40])
@pytest.mark.parametrize("gather", [True, False])
def test_split_hierarchy_is_each_nodes_rows(monkeypatch, components, gather):
    """pure, major and the rests' reduce over each node's rows not of its
    major component (a tile's exactly where gathered; else, where too many
    tiles are mixed, all a mixed tile's rows; above the tiles a superset)
    against the rows of each node; ragged tiles, 2 levels of fan 4."""
    monkeypatch.setattr(tiles_module, "SPLIT_MIXED_UP_TO", 1.0 if gather else 0.0)
    rng = np.random.RandomState(components)
    n, fan, levels = 300, 4, 2
    starts = np.r_[0, np.sort(rng.choice(np.arange(1, n), 40, replace=False))]
    comp = np.sort(rng.randint(0, components, n)).astype(np.int32)
    comp[rng.rand(n) < 0.05] = rng.randint(0, components)       # strays
    x, core = rng.randn(n, 3), rng.rand(n)
    lo, hi = (np.minimum.reduceat(x, starts), np.maximum.reduceat(x, starts))
    parts = [(core, np.minimum.reduceat(core, starts), np.minimum, np.inf),
             (x, lo, np.minimum, np.inf), (x, hi, np.maximum, -np.inf)]
    pure, major, rest_core, rest_lo, rest_hi = split_hierarchy(
        comp, starts, fan, levels, parts, tile_rows(starts, n))
    # each node's rows: tiles, then fan children a level
    rows = [np.arange(a, b) for a, b in zip(starts, np.r_[starts[1:], n])]
    nodes, level = list(rows), rows
    for _ in range(levels):
        level = [np.concatenate(level[i:i + fan]) for i in range(0, len(level), fan)]
        nodes += level
    assert len(pure) == len(nodes)
    for v, r in enumerate(nodes):
        c = set(comp[r])
        assert pure[v] == (comp[r][0] if len(c) == 1 else -1)
        assert major[v] in c
        other = r[comp[r] != major[v]]
        mixed_tile = v < len(rows) and len(c) > 1
        if other.size == 0:
            assert rest_core[v] == np.inf and np.all(rest_lo[v] == np.inf)
            continue
        # the rows not of the major component, or a superset (not gathered;
        # above the tiles, a child of another major: all its rows)
        assert rest_core[v] <= core[other].min()
        assert np.all(rest_lo[v] <= x[other].min(axis=0))
        assert np.all(rest_hi[v] >= x[other].max(axis=0))
        if v < len(rows) and (gather or not mixed_tile):
            assert rest_core[v] == core[other].min()
            np.testing.assert_array_equal(rest_lo[v], x[other].min(axis=0))
            np.testing.assert_array_equal(rest_hi[v], x[other].max(axis=0))
