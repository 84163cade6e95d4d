"""The grid of cells (passes/grid.py) on the host: keys sorted, a cell's
rows in row order, and every pair within eps (in the device's value type)
in cells adjacent in every gridded feature, where distances fall exactly at
eps, coordinates sit far from the origin, and cells widen past MAX_CELLS."""
import numpy as np
import pytest
from scipy.spatial.distance import cdist

from oclclust.passes import grid as grid_module
from oclclust.passes.grid import CellGrid, grid_features, stable_order

pytestmark = pytest.mark.one_runtime   # host code only: one runtime runs it


def _coords(grid):
    """Each sorted row's cell coordinates (gridded features) from its key."""
    g = grid.g
    multiplier, cells = grid.shape[:g], grid.shape[g:]
    return (grid.keys[:, None] // multiplier[None, :]) % cells[None, :]


def _data(kind, rng):
    if kind == "integers":            # many pairs at exactly eps = 1
        return rng.integers(0, 6, (300, 3)).astype(float)
    if kind == "far":                 # coordinates far from 0, eps small
        return 1e6 + rng.uniform(0, 1, (300, 2))
    if kind == "wide":                # 5 features, 3 gridded
        return rng.normal(0, 1, (300, 5)) * [1, 4, 0.1, 2, 3]
    return rng.uniform(-1, 1, (300, 1))


@pytest.mark.parametrize("kind,eps", [("integers", 1.0), ("far", 0.05), ("wide", 0.7),
                                      ("line", 0.01)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("max_cells", [grid_module.MAX_CELLS, 4])
def test_pairs_within_eps_are_in_adjacent_cells(monkeypatch, kind, eps, dtype, max_cells):
    monkeypatch.setattr(grid_module, "MAX_CELLS", max_cells)
    X = _data(kind, np.random.default_rng(len(kind)))
    grid = CellGrid(X, eps, dtype)
    assert np.all(np.diff(grid.keys) >= 0)
    same_cell = np.diff(grid.keys) == 0
    assert np.all(np.diff(grid.order)[same_cell] > 0)          # stable: row order
    assert np.all(grid.shape[grid.g:] <= max(max_cells, 1))
    assert grid.occupancy.sum() == len(X)
    values = np.asarray(X, dtype)
    near = cdist(values, values, "chebyshev") <= eps * (1 + 1e-6)
    coords = np.empty_like(_coords(grid))
    coords[grid.order] = _coords(grid)
    i, j = np.nonzero(near)
    assert np.all(np.abs(coords[i] - coords[j]) <= 1)


def test_the_widest_features_are_gridded():
    X = np.random.default_rng(0).normal(0, 1, (100, 5)) * [1, 4, 0.1, 2, 3]
    features, lo, extent = grid_features(X)
    assert list(features) == [1, 3, 4]
    assert np.array_equal(lo, X.min(axis=0)) and np.array_equal(extent, np.ptp(X, axis=0))
    assert list(grid_features(X[:, :2])[0]) == [0, 1]


@pytest.mark.parametrize("threads", [1, 2, 5])
@pytest.mark.parametrize("distinct", [3, 1000, 1 << 40])
def test_stable_order_is_numpys(monkeypatch, threads, distinct):
    """Spread over threads or not, with few distinct keys (ranges empty or
    one key wide) or many: numpy's stable argsort."""
    monkeypatch.setattr(grid_module, "SORT_SPLIT", 10)
    keys = np.random.default_rng(distinct).integers(0, distinct, 5000)
    assert np.array_equal(stable_order(keys, threads), np.argsort(keys, kind="stable"))


@pytest.mark.parametrize("kind,eps", [("integers", 1.0), ("far", 0.05), ("wide", 0.7),
                                      ("line", 0.01)])
@pytest.mark.parametrize("shares", [[1], [1, 1], [3, 1, 2], [1] * 7, [0, 2, 0, 1, 0]])
def test_slabs_cover_the_rows_and_their_halos_every_neighbour(kind, eps, shares):
    """Slabs: the answered rows cover the sorted rows in order, cut between
    cells, about their shares; every row within eps of an answered row is in
    its slab's halo or answered rows, and the halo is the rows of keys
    within the multipliers' sum of the slab's."""
    X = _data(kind, np.random.default_rng(len(kind) + len(shares)))
    grid = CellGrid(X, eps, np.float64)
    slabs = grid.slabs(shares)
    assert len(slabs) == len(shares)
    assert slabs[0].first == 0 and slabs[-1].last == len(X)
    assert all(a.last == b.first for a, b in zip(slabs[:-1], slabs[1:]))
    for share, slab in zip(shares, slabs):
        assert slab.lo <= slab.first <= slab.last <= slab.hi
        if share == 0 and slab.first < len(X):
            assert slab.first == slab.last
        if 0 < slab.first < len(X):   # a cut between two cells
            assert grid.keys[slab.first - 1] != grid.keys[slab.first]
    near = cdist(X, X, "chebyshev") <= eps
    place = np.empty(len(X), np.int64)
    place[grid.order] = np.arange(len(X))
    reach = grid.shape[:grid.g].sum()
    for slab in slabs:
        answered = grid.order[slab.first:slab.last]
        held = place[np.flatnonzero(near[answered].any(axis=0))]
        assert held.size == 0 or (held.min() >= slab.lo and held.max() < slab.hi)
        if slab.last > slab.first:
            keys = grid.keys[slab.lo:slab.hi]
            assert keys.min() >= grid.keys[slab.first] - reach
            assert keys.max() <= grid.keys[slab.last - 1] + reach
    # the rows split about as the shares say, within a cell's rows
    counts = np.array([s.last - s.first for s in slabs])
    expected = np.asarray(shares) / np.sum(shares) * len(X)
    assert np.all(np.abs(np.cumsum(counts) - np.cumsum(expected)) <= grid.occupancy.max() + 1)
