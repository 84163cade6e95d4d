"""Ward, centroid and median linkage on the rows (passes/linkage_rows.py):
scipy's merges, its heights to rounding, where the condensed matrix does not
fit the device; centroid and median against fastcluster's linkage_vector
too (the same direct centroid distances) where it is installed."""
import numpy as np
import pytest
from scipy.cluster import hierarchy

import oclclust as oc
from oclclust.cluster.hierarchy import linkage_matrix as hier
from oclclust.passes.linkage_generic import Heap
from oclclust.passes import linkage_rows
from oclclust.passes.linkage_rows import (
    _distance,
    generic_rows,
    ward_chain,
    ward_rounds,
    ward_rows,
)


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


@pytest.mark.parametrize("engine", [ward_rows, ward_chain])
@pytest.mark.parametrize("kind", ["blobs", "uniform", "duplicates"])
@pytest.mark.parametrize("n,d", [(2, 1), (3, 2), (64, 3), (301, 7)])
@pytest.mark.covering(2)
def test_ward_rows_give_scipys_tree(devices, kind, n, d, engine):
    X = rows(kind, n, d)
    plan = hier.plan_for(devices)
    Z = hier._sorted_linkage(*engine(plan, X), len(X))
    assert_scipys(Z, X)


@pytest.mark.parametrize("kind", ["blobs", "uniform"])
@pytest.mark.parametrize("n,d", [(2, 1), (3, 2), (5, 1), (64, 3), (301, 7), (700, 1),
                                 (1500, 12)])
def test_ward_rounds_give_scipys_tree(devices, kind, n, d):
    """Without ties the rounds of reciprocal pairs run to the end (no
    fallback) and make scipy's tree, heights to rounding."""
    X = rows(kind, n, d, seed=n)
    found = ward_rounds(hier.plan_for(devices), X)
    assert found is not None
    assert_scipys(hier._sorted_linkage(*found, n), X)


def test_ward_rounds_heights_are_fastclusters(devices):
    """fastcluster's linkage_vector measures the same centroid distances
    (sqrt(2 |c_i - c_j|^2 n_i n_j / (n_i + n_j)), its centroids merged as
    here): the same merges, the heights equal or within an ulp or two (it
    multiplies the squared distance by one size, then the other, in its
    chain's order; here by their exact product: 1959 of 1999 equal, 39 an
    ulp apart, one 2)."""
    fastcluster = pytest.importorskip("fastcluster")
    X = rows("blobs", 2000, 8, seed=7)
    found = ward_rounds(hier.plan_for(devices), X)
    assert found is not None
    Z = hier._sorted_linkage(*found, len(X))
    want = fastcluster.linkage_vector(X, "ward")
    np.testing.assert_array_equal(Z[:, [0, 1, 3]], want[:, [0, 1, 3]])
    np.testing.assert_array_max_ulp(Z[:, 2], want[:, 2], maxulp=3)


TIES = {
    # 1's nearest ties between 2 and 3... the chain comes from 0 -> 3 -> 2
    # and keeps its previous link: it merges (2, 3), where rounds taking the
    # lowest index among equals would merge (1, 2) -- a different tree
    "chain order": np.array([[3.5], [0.], [1.], [2.]]),
    # two strict pairs of equal height: their order in Z is the chain's
    "equal heights": np.array([[0., 0], [1, 0], [10, 0], [11, 0]]),
    "duplicates": rows("duplicates", 120, 3),
    "triplicates": np.repeat(rows("uniform", 30, 2), 3, axis=0)[
        np.random.default_rng(1).permutation(90)],
    "line": np.arange(40, dtype=np.float64)[:, None],
    # a lattice: many equal distances (on some lattices scipy's
    # Lance-Williams values of equal distances differ in their last bits and
    # its tree from the chain on the centroids, as for centroid and median)
    "grid": np.random.default_rng(1).integers(0, 5, (30, 2)).astype(np.float64),
}


@pytest.mark.parametrize("name", sorted(TIES))
def test_ward_ties_run_scipys_chain(devices, name, monkeypatch):
    """Exact ties of nearest neighbours (or of heights) are not replayed by
    rounds: ward_rounds gives up (None) and ward_rows runs scipy's chain,
    whose Z is scipy's, ties included."""
    X = TIES[name]
    plan = hier.plan_for(devices)
    assert ward_rounds(plan, X) is None
    calls = []
    real = linkage_rows.ward_chain
    monkeypatch.setattr(linkage_rows, "ward_chain", lambda *a: calls.append(1) or real(*a))
    Z = hier._sorted_linkage(*ward_rows(plan, X), len(X))
    assert calls == [1]
    assert_scipys(Z, X)


@pytest.mark.parametrize("d", [3, 12])
def test_ward_rows_overflow(devices, d):
    """Distances past float64: scipy's find_min_dist error (the k-d order
    of more than 8 features fits its axes to the rows scaled down)."""
    X = rows("blobs", 50, d) * 1e200
    with pytest.raises(ValueError, match=linkage_rows.NO_NEIGHBOUR[:20]):
        ward_rounds(hier.plan_for(devices), X)


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
    with pytest.raises(ValueError, match="the ward linkage's merge heights overflow"):
        oc.linkage(X * 1e200, "ward", devices=small_budget)


@pytest.mark.parametrize("rows_from,on_rows", [(100, True), (121, False)])
def test_ward_rows_from_the_profiles_term(devices, monkeypatch, rows_from, on_rows):
    """linkage_ward_rows_from picks the rows' rounds where the matrix would
    fit (the chain on the rows runs only past the matrix)."""
    calls, rounds, matrix = [], [], []
    for name, seen in (("ward_rows", calls), ("ward_rounds", rounds), ("nn_chain", matrix)):
        real = getattr(hier, name)
        monkeypatch.setattr(hier, name, lambda *a, real=real, seen=seen: seen.append(1)
                            or real(*a))
    X = rows("blobs", 120, 4, seed=3)
    near = [p.replace(linkage_ward_rows_from=rows_from) for p in devices]
    assert_scipys(oc.linkage(X, "ward", devices=near), X)
    assert len(calls) == 0
    assert len(rounds) == on_rows and len(matrix) == (not on_rows)


def test_ward_ties_where_the_matrix_fits_run_its_chain(devices, monkeypatch):
    """Past linkage_ward_rows_from, where the rounds give up (ties) and the
    matrix fits, the matrix's chain runs (scipy's Z bit for bit), not the
    chain on the rows (n launches)."""
    calls = {name: [] for name in ("ward_rounds", "nn_chain", "ward_rows")}
    for name, seen in calls.items():
        real = getattr(hier, name)
        monkeypatch.setattr(hier, name, lambda *a, real=real, seen=seen: seen.append(1)
                            or real(*a))
    X = TIES["duplicates"]
    near = [p.replace(linkage_ward_rows_from=100) for p in devices]
    np.testing.assert_array_equal(oc.linkage(X, "ward", devices=near),
                                  hierarchy.linkage(X, "ward"))
    assert {name: len(seen) for name, seen in calls.items()} == dict(
        ward_rounds=1, nn_chain=1, ward_rows=0)


# ------------------------------------------------ centroid and median linkage
@pytest.mark.parametrize("method", ["centroid", "median"])
@pytest.mark.parametrize("kind", ["blobs", "uniform", "duplicates"])
@pytest.mark.parametrize("n,d", [(2, 1), (3, 2), (64, 3), (301, 7)])
@pytest.mark.covering(2)
def test_generic_rows_give_scipys_tree(devices, kind, n, d, method):
    """The same merges as scipy's generic algorithm on the matrix (ties and
    duplicates included), the heights within 1e-13 relative: scipy updates
    distances by Lance-Williams, the rows measure them between centroids
    (generic_rows' docstring; about 3e-15 at most measured on these sets)."""
    X = rows(kind, n, d)
    Z = generic_rows(hier.plan_for(devices), X, method)
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
    Z = generic_rows(hier.plan_for(devices), X, method)
    want = fastcluster.linkage_vector(X, method)
    np.testing.assert_array_equal(Z[:, [0, 1, 3]], want[:, [0, 1, 3]])
    np.testing.assert_allclose(Z[:, 2], want[:, 2], rtol=1e-15, atol=0)


def test_generic_rows_ties_go_to_the_lower_index(devices):
    """An integer grid: many equal distances, equal heights of merges that
    scipy takes in its heap's order; the rows take them in the same one."""
    X = np.random.default_rng(5).integers(0, 3, (40, 2)).astype(np.float64)
    for method in ("centroid", "median"):
        assert_scipys(generic_rows(hier.plan_for(devices), X, method), X, method, rtol=1e-13)


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
    Z = generic_rows(hier.plan_for(devices), X, method)
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
