"""k nearest distances on the device (passes/neighbours.py) against numpy:
every metric, k from 1 (the row itself) to n, ragged row counts; over the
grid of cells, the same values as every pair's, on clusters, far
outliers (finished by the subset pass), duplicates and lines."""
import numpy as np
import pytest
from scipy.spatial.distance import cdist

import oclclust.passes.neighbours as neighbours
from oclclust.passes.neighbours import (GRID_METRICS, NEIGHBOUR_METRICS, core_distances,
                                        grid_k_nearest_distances, k_nearest_distances,
                                        prim_edges)


@pytest.mark.parametrize("metric", NEIGHBOUR_METRICS)
@pytest.mark.parametrize("n, d, k", [(1, 2, 1), (37, 3, 5), (130, 8, 1), (70, 5, 70)])
def test_k_nearest_vs_numpy(profile, metric, n, d, k):
    X = np.random.RandomState(n + d).randn(n, d) + 0.5
    ref = np.sort(cdist(X, X, metric), axis=1)[:, :k]
    got = k_nearest_distances(profile, X, k, metric)
    rtol = 1e-12 if profile.fp64 else 1e-5
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol)


def _grid_data(kind):
    rng = np.random.default_rng(7)
    if kind == "integers":                    # ties at every distance
        return rng.integers(0, 5, (300, 2)).astype(float)
    if kind == "outliers":                    # rows far from the rest: past the rings
        return np.vstack([rng.normal(0, 1, (600, 5)), rng.normal(0, 1, (4, 5)) * 60])
    if kind == "duplicates":
        return np.repeat(rng.normal(0, 1, (40, 3)), 6, axis=0)
    return rng.normal(0, 1, (500, 1)) + 1e6   # a line far from the origin


@pytest.mark.one_runtime       # host code alone
@pytest.mark.parametrize("kind", ["integers", "outliers", "duplicates", "line", "blobs"])
@pytest.mark.parametrize("k", [1, 6, 17])
def test_grid_width_of_euclidean_rows_is_cdists(monkeypatch, kind, k):
    """grid_width's euclidean k-th distances (a BLAS product picks the
    row): the width cdist's sorted distances give, over few rows and over
    a sample (blobs: 20,000 rows against 4,000)."""
    if kind == "blobs":
        rng = np.random.default_rng(3)
        X = rng.normal(0, 1, (20000, 8)) + rng.normal(0, 30, (20, 8))[rng.integers(0, 20, 20000)]
        monkeypatch.setattr(neighbours, "WIDTH_SAMPLE", 4000)
    else:
        X = _grid_data(kind)
    n = len(X)
    sample = X[::max(1, n // neighbours.WIDTH_SAMPLE)]
    queries = X[::max(1, n // neighbours.WIDTH_QUERIES)]
    column = int(np.clip(round(k * len(sample) / n), 1, len(sample))) - 1
    kth = np.sort(cdist(queries, sample), axis=1)[:, column]
    positive = kth[kth > 0]      # none: the rows' extent
    want = np.median(positive) / 2 if positive.size else np.ptp(X, axis=0).max()
    assert neighbours.grid_width(X, k, "euclidean") == pytest.approx(want, rel=1e-12)

@pytest.mark.parametrize("metric", GRID_METRICS)
@pytest.mark.parametrize("kind", ["integers", "outliers", "duplicates", "line"])
@pytest.mark.parametrize("k", [1, 6, 17])
@pytest.mark.covering(1)
def test_grid_k_nearest_equal_every_pairs(profile, metric, kind, k):
    X = _grid_data(kind)
    assert np.array_equal(grid_k_nearest_distances(profile, X, k, metric),
                          k_nearest_distances(profile, X, k, metric))


def test_grid_rows_past_the_rings_finish_on_every_pair(profile, monkeypatch):
    """No ring at all: every row's k nearest from the subset pass."""
    monkeypatch.setattr(neighbours, "GRID_RINGS", -1)
    X = _grid_data("outliers")
    assert np.array_equal(grid_k_nearest_distances(profile, X, 5),
                          k_nearest_distances(profile, X, 5))


def _check_ids(X, metric, k, distances, ids):
    """ids: each row's k rows at those distances, every row nearer than
    the k-th among them (ties at the k-th in any order)."""
    D = cdist(X, X, metric)
    assert ids.shape == distances.shape and ids.dtype == np.int32
    np.testing.assert_allclose(np.take_along_axis(D, ids.astype(np.int64), 1), distances,
                               rtol=1e-12, atol=1e-12)
    assert all(len(set(row)) == k for row in ids)
    for i in range(len(X)):
        assert set(np.flatnonzero(D[i] < distances[i, -1] - 1e-12)) <= set(ids[i])


@pytest.mark.parametrize("metric", GRID_METRICS)
@pytest.mark.parametrize("kind", ["integers", "outliers", "duplicates"])
def test_ids_are_the_rows_of_the_distances(profile, monkeypatch, metric, kind):
    """ids=True: the same distances, and their rows (every pair's, the
    grid's, and the grid's with every row finished by the subset pass)."""
    X = _grid_data(kind)
    want = k_nearest_distances(profile, X, 6, metric)
    for nearest in (k_nearest_distances, grid_k_nearest_distances):
        distances, ids = nearest(profile, X, 6, metric, ids=True)
        assert np.array_equal(distances, want)
        _check_ids(X, metric, 6, distances, ids)
    monkeypatch.setattr(neighbours, "GRID_RINGS", -1)
    distances, ids = grid_k_nearest_distances(profile, X, 6, metric, ids=True)
    assert np.array_equal(distances, want)
    _check_ids(X, metric, 6, distances, ids)


@pytest.mark.parametrize("min_samples, kept", [(5, True), (40, False)])
def test_core_distances_with_neighbours(profile, monkeypatch, min_samples, kept):
    """neighbours=True: the same core distances, and min_samples + 1
    nearest rows where that many are at most NEIGHBOURS_KEPT (else None)."""
    monkeypatch.setattr(neighbours, "NEIGHBOURS_KEPT", 33)
    X = _grid_data("outliers")
    core, nearest = core_distances(profile, X, min_samples, neighbours=True)
    assert np.array_equal(core, core_distances(profile, X, min_samples))
    if not kept:
        assert nearest is None
        return
    distances, ids = nearest
    assert distances.shape == (len(X), min_samples + 1)
    _check_ids(X, "euclidean", min_samples + 1, distances, ids)


def test_core_distance_counts_the_row_itself(profile):
    X = np.array([[0.0], [1.0], [3.0], [3.0]])
    np.testing.assert_array_equal(core_distances(profile, X, 1), 0)
    np.testing.assert_array_equal(core_distances(profile, X, 2), [1, 1, 0, 0])


@pytest.mark.parametrize("k", [0, 5])
def test_bad_k(profile, k):
    with pytest.raises(ValueError, match="k must be"):
        k_nearest_distances(profile, np.zeros((4, 2)), k)


def _sklearn_prim(M):
    """scikit-learn's Prim from node 0 over the matrix M: (source, new, height);
    a node's best distance falls only where strictly smaller."""
    n = len(M)
    in_tree, best, src = np.zeros(n, bool), np.full(n, np.inf), np.zeros(n, int)
    node, out = 0, []
    for _ in range(n - 1):
        in_tree[node] = True
        lower = ~in_tree & (M[node] < best)
        best[lower], src[lower] = M[node][lower], node
        node = int(np.argmin(np.where(in_tree, np.inf, best)))
        out.append((src[node], node, best[node]))
    return np.array(out).T


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev"])
@pytest.mark.parametrize("n, seed", [(40, 0), (67, 1)])
def test_prim_edges_are_sklearns(profile, metric, n, seed):
    """Integer rows: heights tie everywhere, the source is the first tree node."""
    if not profile.fp64:
        pytest.skip("exact heights need fp64")
    X = np.random.RandomState(seed).randint(0, 5, (n, 2)).astype(np.float64)
    core = core_distances(profile, X, 4, metric)
    D = cdist(X, X, metric)
    src, new, h = prim_edges(profile, X, metric, core)
    ref_src, ref_new, ref_h = _sklearn_prim(np.maximum(D, np.maximum.outer(core, core)))
    np.testing.assert_array_equal(new, ref_new)
    np.testing.assert_array_equal(src, ref_src)
    np.testing.assert_array_equal(h, ref_h)
