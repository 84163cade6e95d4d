"""Ward, centroid and median linkage on the rows (passes/linkage_rows.py):
scipy's merges, its heights to rounding, where the condensed matrix does not
fit the device; centroid and median against fastcluster's linkage_vector
too (the same direct centroid distances) where it is installed."""
import numpy as np
import pytest
from scipy.cluster import hierarchy

import oclclust as oc
from oclclust.cluster import hierarchical as hier
from oclclust.passes.linkage_generic import Heap
from oclclust.passes.linkage_rows import _distance, generic_rows, ward_rows


def rows(kind, n, d, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "blobs":
        return rng.normal(size=(n, d)) + rng.integers(0, 4, (n, 1)) * 5
    if kind == "duplicates":      # every row twice: zero-height merges, ties to the lower index
        half = rng.normal(size=(n // 2, d))
        return np.concatenate([half, half])[rng.permutation(2 * (n // 2))]
    return rng.uniform(size=(n, d))


def assert_scipys(Z, X, method="ward", rtol=1e-12):
    want = hierarchy.linkage(X, method)
    np.testing.assert_array_equal(Z[:, [0, 1, 3]], want[:, [0, 1, 3]])
    np.testing.assert_allclose(Z[:, 2], want[:, 2], rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("kind", ["blobs", "uniform", "duplicates"])
@pytest.mark.parametrize("n,d", [(2, 1), (3, 2), (64, 3), (301, 7)])
def test_ward_rows_give_scipys_tree(devices, kind, n, d):
    X = rows(kind, n, d)
    plan = hier._plan(devices)
    Z = hier._sorted_linkage(*ward_rows(plan, X), len(X))
    assert_scipys(Z, X)


@pytest.fixture
def small_budget(devices):
    """Devices whose budget holds no condensed matrix of 40 points."""
    return [p.replace(global_mem_size=2**20, memory_fraction=0.002, linkage_memory_fraction=0)
            for p in devices]


def test_past_the_budget_ward_runs_on_the_rows(small_budget, monkeypatch):
    calls = []
    real = hier.ward_rows
    monkeypatch.setattr(hier, "ward_rows", lambda *a: calls.append(1) or real(*a))
    X = rows("blobs", 120, 4)
    assert_scipys(oc.linkage(X, "ward", devices=small_budget), X)
    from sklearn.cluster import AgglomerativeClustering as SK
    ours = oc.AgglomerativeClustering(4, linkage="ward", devices=small_budget).fit(X)
    assert np.array_equal(ours.labels_, SK(4, linkage="ward").fit(X).labels_)
    assert len(calls) == 2
    with pytest.raises(MemoryError, match="single, ward, centroid and median linkage of "
                                          "observations run past it on the rows"):
        oc.linkage(X, "average", devices=small_budget)


# ------------------------------------------------ centroid and median linkage
@pytest.mark.parametrize("method", ["centroid", "median"])
@pytest.mark.parametrize("kind", ["blobs", "uniform", "duplicates"])
@pytest.mark.parametrize("n,d", [(2, 1), (3, 2), (64, 3), (301, 7)])
def test_generic_rows_give_scipys_tree(devices, kind, n, d, method):
    """The same merges as scipy's generic algorithm on the matrix (ties and
    duplicates included), the heights within 1e-13 relative: scipy updates
    distances by Lance-Williams, the rows measure them between centroids
    (generic_rows' docstring; about 3e-15 at most measured on these sets)."""
    X = rows(kind, n, d)
    Z = generic_rows(hier._plan(devices), X, method)
    assert Z.shape == (len(X) - 1, 4) and Z.dtype == np.float64
    assert_scipys(Z, X, method, rtol=1e-13)


@pytest.mark.parametrize("method", ["centroid", "median"])
@pytest.mark.parametrize("kind", ["blobs", "uniform"])
def test_generic_rows_give_fastclusters_tree(devices, kind, method):
    """fastcluster's linkage_vector computes the same centroid distances (a
    sequential sum of squares, then the root): the same merges on data
    without ties, the heights to the last ulp."""
    fastcluster = pytest.importorskip("fastcluster")
    X = rows(kind, 257, 5, seed=1)
    Z = generic_rows(hier._plan(devices), X, method)
    want = fastcluster.linkage_vector(X, method)
    np.testing.assert_array_equal(Z[:, [0, 1, 3]], want[:, [0, 1, 3]])
    np.testing.assert_allclose(Z[:, 2], want[:, 2], rtol=1e-15, atol=0)


def test_generic_rows_ties_go_to_the_lower_index(devices):
    """An integer grid: many equal distances, equal heights of merges that
    scipy takes in its heap's order; the rows take them in the same one."""
    X = np.random.default_rng(5).integers(0, 3, (40, 2)).astype(np.float64)
    for method in ("centroid", "median"):
        assert_scipys(generic_rows(hier._plan(devices), X, method), X, method, rtol=1e-13)


def host_generic_rows(X, method):
    """scipy's fast_linkage step for step on the host, its matrix entries
    replaced by the squared centroid distances generic_rows computes
    (_distance; the heights their roots): the reference for the device's
    scans, ties included."""
    n = len(X)
    C, size, cluster_id = X.astype(np.float64).copy(), np.ones(n, np.int64), np.arange(n)

    def find_min_dist(x):
        best, y = np.inf, -1
        for i in range(x + 1, n):
            if size[i]:
                d = float(_distance(C[x], C[i]))
                if d < best:
                    best, y = d, i
        return y, best
    neighbor, min_dist = map(list, zip(*[find_min_dist(x) for x in range(n - 1)]))
    heap = Heap(min_dist)
    Z = np.empty((n - 1, 4))
    for k in range(n - 1):
        for _ in range(n - k):
            x, dist = heap.get_min()
            y = neighbor[x]
            if dist == float(_distance(C[x], C[y])):
                break
            y, dist = find_min_dist(x)
            neighbor[x], min_dist[x] = y, dist
            heap.change_value(x, dist)
        heap.remove_min()
        nx, ny = size[x], size[y]
        Z[k] = (min(cluster_id[x], cluster_id[y]), max(cluster_id[x], cluster_id[y]),
                np.sqrt(dist), nx + ny)
        C[y] = (nx * C[x] + ny * C[y]) / float(nx + ny) if method == "centroid" else \
            (C[x] + C[y]) * 0.5
        size[x], size[y], cluster_id[y] = 0, nx + ny, n + k
        for z in range(x):
            if size[z] and neighbor[z] == x:
                neighbor[z] = y
        for z in range(y):
            if size[z]:
                d = float(_distance(C[z], C[y]))
                if d < min_dist[z]:
                    neighbor[z], min_dist[z] = y, d
                    heap.change_value(z, d)
        if y < n - 1:
            z, d = find_min_dist(y)
            neighbor[y], min_dist[y] = z, d
            heap.change_value(y, d)
    return Z


@pytest.mark.parametrize("method", ["centroid", "median"])
@pytest.mark.parametrize("seed", [2, 3])
def test_generic_rows_exact_ties_follow_scipys_rules(devices, method, seed):
    """A 3-D grid of 27 places: many distances exactly equal between the
    centroids (dyadic coordinates, exact sums), resolved by scipy's rules --
    its heap, the first strict minimum of a scan -- on those exact values:
    the host reference bit for bit.  scipy's own Lance-Williams values of
    equal distances can differ in their last bits, and where they do its
    tree resolves those ties in another order (median on these grids)."""
    X = np.random.default_rng(seed).integers(0, 3, (150, 3)).astype(np.float64)
    Z = generic_rows(hier._plan(devices), X, method)
    np.testing.assert_array_equal(Z, host_generic_rows(X, method))


@pytest.mark.parametrize("method", ["centroid", "median"])
def test_past_the_budget_centroid_and_median_run_on_the_rows(small_budget, monkeypatch,
                                                             method):
    calls = []
    real = hier.generic_rows
    monkeypatch.setattr(hier, "generic_rows", lambda *a: calls.append(a[2]) or real(*a))
    X = rows("blobs", 120, 4)
    assert_scipys(oc.linkage(X, method, devices=small_budget), X, method, rtol=1e-13)
    assert calls == [method]
    with pytest.raises(ValueError, match=f"the {method} linkage's merge heights overflow"):
        oc.linkage(X * 1e200, method, devices=small_budget)
