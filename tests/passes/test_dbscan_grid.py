"""DBSCAN's grid passes (passes/dbscan_grid.py) against numpy: weighted
counts within eps (and their early stop), the least label within eps and
the core rows' components, on ragged row counts with distances exactly at
eps, 1 to 5 features (3 of them gridded), far from the origin; on one slab
and on several (the device's plan once a slab: halos, components joined
across slabs, empty slabs)."""
import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import cdist

from oclclust.passes.dbscan_grid import GridNeighbourhoods, joined_roots
from oclclust.passes.grid import CellGrid
from oclclust.passes.linkage import plan_for

BIG = np.iinfo(np.int64).max


SHARES = [None, [1, 1], [2, 1, 3], [1] * 6, [0, 1, 0, 2]]


def _hoods(devices, X, eps, metric, shares=None):
    plan = plan_for(devices)
    grid = CellGrid(X, eps, plan.dtype)
    if shares is None:
        return GridNeighbourhoods(plan, grid, eps, metric)
    return GridNeighbourhoods([plan] * len(shares), grid, eps, metric, shares)


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev"])
@pytest.mark.parametrize("n,d,offset", [(1, 1, 0), (63, 2, 0), (130, 5, 0), (257, 3, 1e5)])
@pytest.mark.parametrize("shares", SHARES, ids=str)
@pytest.mark.covering(2)
def test_counts_labels_and_components_equal_numpy(devices, metric, n, d, offset, shares):
    rng = np.random.default_rng(n)
    X = rng.integers(0, 4, (n, d)).astype(float) + offset     # distances exactly at eps
    eps = 1.0
    near = cdist(X, X, metric) <= eps
    hoods = _hoods(devices, X, eps, metric, shares)
    w = rng.uniform(0, 2, n)
    np.testing.assert_allclose(hoods.counts(w), near @ w, rtol=1e-12)
    assert np.array_equal(hoods.counts(), near.sum(axis=1))
    enough = hoods.counts(enough=3)           # exact below 3, at least 3 above
    full = near.sum(axis=1)
    assert np.array_equal(enough < 3, full < 3) and np.array_equal(enough[full < 3], full[full < 3])
    label = np.where(rng.random(n) < 0.5, rng.integers(0, n, n), -1)
    want = rng.random(n) < 0.7
    masked = np.where(near & (label >= 0)[None, :], label[None, :], BIG)
    least = np.minimum(masked.min(axis=1), np.where(label >= 0, label, BIG))
    expected = np.where(want, np.where(least == BIG, -1, least), label)
    assert np.array_equal(hoods.min_label(label, want), expected)
    core = full >= 4
    _, component = connected_components(near & core[:, None] & core[None, :], directed=False)
    least_core = np.full(component.max() + 1, BIG)
    np.minimum.at(least_core, component[core], np.flatnonzero(core))
    assert np.array_equal(hoods.components(core), np.where(core, least_core[component], -1))


def test_negative_weights_count_every_neighbour(devices):
    X = np.arange(12.0)[:, None]
    w = np.where(np.arange(12) % 3 == 0, -1.0, 2.0)
    near = np.abs(X - X.T) <= 1.5
    np.testing.assert_allclose(_hoods(devices, X, 1.5, "euclidean").counts(w, enough=1),
                               near @ w)


@pytest.mark.parametrize("shares", SHARES, ids=str)
def test_one_long_chain_is_one_component(devices, shares):
    """Rows 0.9 apart on a line, shuffled: every link a different work-item's;
    the component's label is its least row index, 0, across every slab."""
    order = np.random.default_rng(3).permutation(2000)
    X = (0.9 * order)[:, None]
    hoods = _hoods(devices, X, 1.0, "euclidean", shares)
    core = np.ones(2000, bool)
    assert np.array_equal(hoods.components(core), np.zeros(2000))


@pytest.mark.parametrize("shares", SHARES[1:], ids=str)
def test_slabs_answer_for_their_rows(devices, shares):
    """Each slab's device answers for its share of the rows (rows())."""
    X = np.random.default_rng(7).uniform(0, 30, (900, 2))
    hoods = _hoods(devices, X, 1.0, "euclidean", shares)
    assert sum(s.slab.last - s.slab.first for s in hoods.slabs) == len(X)
    assert len(hoods.slabs) == sum(1 for share in shares if share)
    assert sum(hoods.rows().values()) == len(X)


@pytest.mark.parametrize("shares,whole", [(None, True), ([1, 1], False), ([0, 1, 0], True)],
                         ids=str)
def test_one_device_answering_for_every_row_permutes_on_it(devices, shares, whole):
    """The row-index API sorts and puts back per-row values on the device
    (WholeGrid) where one slab answers for every row, whichever share list
    left it alone; the same values as the slabs' host path."""
    X = np.random.default_rng(8).uniform(0, 20, (700, 3))
    hoods = _hoods(devices, X, 1.0, "euclidean", shares)
    assert (hoods.whole is not None) == whole
    host = _hoods(devices, X, 1.0, "euclidean", [1, 2])
    w = np.random.default_rng(9).uniform(-0.5, 2, len(X))
    np.testing.assert_allclose(hoods.counts(w), host.counts(w), rtol=1e-12)
    core = host.counts() >= 4
    assert np.array_equal(hoods.components(core), host.components(core))
    label = np.where(core, np.arange(len(X)), -1)
    assert np.array_equal(hoods.min_label(label, ~core), host.min_label(label, ~core))


def test_rows_numbered_otherwise_keep_the_host_path(devices):
    """A grid whose ids are not its rows' indices (an MPI rank's) has no
    device permutation: its ids are not the order."""
    X = np.random.default_rng(10).uniform(0, 5, (50, 2))
    plan = plan_for(devices)
    grid = CellGrid(X, 1.0, plan.dtype, ids=np.arange(50) + 1000)
    assert GridNeighbourhoods(plan, grid, 1.0, "euclidean").whole is None


@pytest.mark.parametrize("seed", range(6))
def test_joined_roots_is_the_least_row_of_each_joined_component(seed):
    """joined_roots against scipy on the whole graph: rows in groups (a
    slab's components, each under its least row), links between groups
    that name each linked row's own root too (as the slabs' links do)."""
    rng = np.random.default_rng(seed)
    n = 400
    group = rng.integers(0, 60, n)
    roots = np.full(60, n)
    np.minimum.at(roots, group, np.arange(n))
    roots = roots[group]
    linked = rng.choice(n, 40, replace=False)
    ends = np.concatenate([linked, np.unique(roots)])
    other = ends[rng.integers(0, len(ends), len(linked))]   # a linked row or a root
    a = np.concatenate([linked, linked])
    b = np.concatenate([roots[linked], other])
    edges = np.concatenate([np.column_stack([np.arange(n), roots]), np.column_stack([a, b])])
    from scipy.sparse import coo_matrix
    _, part = connected_components(coo_matrix((np.ones(len(edges)), edges.T), shape=(n, n)),
                                   directed=False)
    least = np.full(part.max() + 1, n)
    np.minimum.at(least, part, np.arange(n))
    assert np.array_equal(joined_roots(roots, a, b), least[part])
    assert np.array_equal(joined_roots(roots, a[:0], b[:0]), roots)
