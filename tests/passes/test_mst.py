"""The MST engine (passes/mst.py) against scipy: single linkage's Z exactly
(merges, sizes and float64 heights, ties included), mutual-reachability
trees against scipy's single linkage of the mutual-reachability matrix, tree
weights against scipy.sparse.csgraph.minimum_spanning_tree; and
oclclust.linkage / AgglomerativeClustering on the rows where the condensed
matrix does not fit the device's budget.

Ragged sizes (rows not a multiple of the work-group or of the staged
block), continuous data (distinct weights: Boruvka's tree alone), integer
grids and duplicates (tied weights: scipy's Prim order on the rows).
"""
import numpy as np
import pytest
from scipy.cluster import hierarchy
from scipy.sparse.csgraph import minimum_spanning_tree as csgraph_mst
from scipy.spatial.distance import cdist, pdist, squareform

import oclclust as oc
import oclclust.cluster.hierarchy.agglomerative as agglomerative
import oclclust.cluster.hierarchy.linkage_matrix as hier
import oclclust.passes.mst as mst
from oclclust.cluster.hierarchy.linkage_matrix import METRICS, label
from oclclust.passes.linkage import Plan

sklearn = pytest.importorskip("sklearn")
from sklearn.cluster import AgglomerativeClustering as SkAgglomerative


def data(kind, n, seed):
    rng = np.random.RandomState(seed)
    if kind == "random":
        return rng.randn(n, 3 + seed % 3) * 2
    if kind == "grid":                     # many equal distances
        return rng.randint(0, 4, (n, 2 + seed % 2)).astype(np.float64) + 1
    base = rng.randn(n // 3 + 1, 4)        # duplicate rows
    return base[rng.randint(0, len(base), n)]


def z_of(a, b, w, n):
    Z = np.empty((len(w), 4))
    Z[:, 0], Z[:, 1], Z[:, 2] = a, b, w
    return label(Z, n)


@pytest.fixture(params=["persistent", "launches"])
def plan(request, profile):
    """Both Prim strategies (one launch; a launch a step with many groups)."""
    p = Plan(profile.replace(work_group_size=16), np.float64)
    p.persistent = request.param == "persistent"
    return p


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("kind", ["random", "grid", "duplicates"])
@pytest.mark.parametrize("n", [2, 37, 130])
@pytest.mark.covering(1)
def test_single_linkage_is_scipys(plan, metric, kind, n):
    X = data(kind, n, seed=n)
    a, b, w = mst.minimum_spanning_tree(plan, X, metric)
    assert a.dtype == b.dtype == np.int64 and w.dtype == np.float64 and len(w) == n - 1
    np.testing.assert_array_equal(z_of(a, b, w, n), hierarchy.linkage(X, "single", metric))


@pytest.mark.parametrize("staging", ["local rows", "global rows", "row not in registers"])
@pytest.mark.parametrize("metric", ["euclidean", "cosine", "chebyshev"])
def test_boruvka_variants(profile, monkeypatch, staging, metric):
    """Every way a round reads the rows gives the same tree; ties="any"
    keeps scipy's heights and the csgraph tree's weight whatever the ties."""
    if staging == "global rows":
        profile = profile.replace(local_memory_fraction=0.0)
    if staging == "row not in registers":
        monkeypatch.setattr(mst, "PRIVATE_ROW_FEATURES", 0)
    plan = Plan(profile.replace(work_group_size=8), np.float64)
    for kind in ("random", "grid", "duplicates"):
        X = data(kind, 61, seed=3)
        ref = hierarchy.linkage(X, "single", metric)
        a, b, w = mst.minimum_spanning_tree(plan, X, metric, ties="any")
        np.testing.assert_array_equal(w, ref[:, 2])
        D = squareform(pdist(X, metric))
        assert w.sum() == pytest.approx(csgraph_weight(D), rel=1e-12)
        assert np.all(D[a, b] == w)
        Z = z_of(a, b, w, len(X))                 # a tree: every merge joins two clusters
        assert Z[-1, 3] == len(X)
        if kind == "random":                      # distinct weights: scipy's Z
            np.testing.assert_array_equal(Z, ref)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("core", [False, True])
def test_probes_caps_and_tiles(profile, monkeypatch, metric, core):
    """Blobs in the rows' spatial order: tiles skipped by their component and
    their box, large components probed (PROBE = 2: past 8 rows) and the rest
    scanned capped by the probes' edge: scipy's Z (core: ties, the MST's
    weight and edges)."""
    monkeypatch.setattr(mst, "PROBE", 2)
    probes, pick = [], mst._probes
    monkeypatch.setattr(mst, "_probes", lambda *a: probes.append(pick(*a).size) or pick(*a))
    rng = np.random.RandomState(4)
    X = np.repeat(rng.randn(4, 5) * 8, 30, axis=0) + rng.randn(120, 5)
    X = X[rng.permutation(len(X))] + 0.5
    plan = Plan(profile.replace(work_group_size=8), np.float64)
    if core:                   # tied weights: the tree's weight and edges
        D = squareform(pdist(X, metric))
        M = mutual_reachability(X, metric, np.sort(D, axis=1)[:, 3])
        a, b, w = mst.minimum_spanning_tree(plan, X, metric, core=np.sort(D, axis=1)[:, 3],
                                            ties="any")
        assert np.all(M[a, b] == w) and w.sum() == pytest.approx(csgraph_weight(M), rel=1e-12)
    else:
        a, b, w = mst.minimum_spanning_tree(plan, X, metric)
        np.testing.assert_array_equal(z_of(a, b, w, len(X)),
                                      hierarchy.linkage(X, "single", metric))
    assert max(probes) > 0


def csgraph_weight(D):
    """The weight of csgraph's minimum spanning tree of the dense distances
    D: shifted by 1, as csgraph takes (near-)zero entries for no edge."""
    return csgraph_mst(np.triu(D + 1, 1)).sum() - (len(D) - 1)


def mutual_reachability(X, metric, core):
    D = cdist(X, X, metric)
    M = np.maximum(D, np.maximum.outer(core, core))
    np.fill_diagonal(M, 0)
    return M


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("kind", ["random", "grid"])
@pytest.mark.covering(1)
def test_core_distances_mutual_reachability(plan, metric, kind):
    """core: scipy's single linkage of the mutual-reachability matrix, the
    same Prim order (ties are the rule here: many weights are a core)."""
    X = data(kind, 53, seed=7) + 0.5
    D = squareform(pdist(X, metric))
    core = np.sort(D, axis=1)[:, 4]               # 5th nearest (self included)
    M = mutual_reachability(X, metric, core)
    a, b, w = mst.minimum_spanning_tree(plan, X, metric, core=core)
    np.testing.assert_array_equal(z_of(a, b, w, len(X)),
                                  hierarchy.linkage(squareform(M, checks=False), "single"))
    a, b, w = mst.minimum_spanning_tree(plan, X, metric, core=core, ties="any")
    assert np.all(M[a, b] == w) and np.all(np.diff(w) >= 0)
    assert w.sum() == pytest.approx(csgraph_weight(M), rel=1e-12)


def index_rows(kind, d, n=600):
    """Rows the tiles' hierarchy is tested on: blobs far apart (big empty
    regions between them), a grid of integer points (ties, grid-aligned
    boxes, duplicates) and duplicated continuous rows."""
    rng = np.random.RandomState(d)
    if kind == "far blobs":
        centres = rng.uniform(-1, 1, (4, d)) * 1e3
        return centres[rng.randint(0, 4, n)] + rng.randn(n, d)
    if kind == "grid":
        return rng.randint(0, 5, (n, d)).astype(np.float64) + 1
    return (rng.randn(n // 4, d) + 2)[rng.randint(0, n // 4, n)]


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("kind", ["far blobs", "grid", "duplicates"])
@pytest.mark.parametrize("d", [2, 3, 8])
@pytest.mark.parametrize("core", [False, True])
@pytest.mark.covering(1)
def test_index_is_the_brute_walks_tree(profile, metric, kind, d, core):
    """index=True (the tiles' hierarchy, skipped a node at a time): the
    brute walk's tree edge for edge (ties="any"), scipy's Z (ties="scipy"),
    csgraph's weight; 75 tiles of 8 rows under two levels of fan 5."""
    X = index_rows(kind, d)
    plan = Plan(profile.replace(work_group_size=8), np.float64)
    D = squareform(pdist(X, metric))
    c = np.sort(D, axis=1)[:, 5] if core else None
    M = mutual_reachability(X, metric, c) if core else D
    brute = mst.minimum_spanning_tree(plan, X, metric, core=c, ties="any")
    index = mst.minimum_spanning_tree(plan, X, metric, core=c, ties="any", index=True)
    for ours, theirs in zip(index, brute):
        np.testing.assert_array_equal(ours, theirs)
    a, b, w = index
    assert np.all(M[a, b] == w) and w.sum() == pytest.approx(csgraph_weight(M), rel=1e-12)
    ref = hierarchy.linkage(squareform(M, checks=False), "single")
    np.testing.assert_array_equal(
        z_of(*mst.minimum_spanning_tree(plan, X, metric, core=c, index=True), len(X)), ref)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("kind", ["far blobs", "grid", "duplicates"])
@pytest.mark.parametrize("d", [2, 8])
@pytest.mark.parametrize("index", [False, True])
@pytest.mark.covering(1)
def test_nearest_seed_is_the_same_tree(profile, metric, kind, d, index):
    """nearest (the core distances' pass's nearest rows, Boruvka's first
    candidates): the tree without them edge for edge, ties="any" and
    scipy's; the same rounds, the first scanning fewer rows (stats) where
    distances seldom tie (on the grid the m-th ties the core: none known)."""
    from oclclust.passes.neighbours import GRID_METRICS, core_distances
    X = index_rows(kind, d)
    plan = Plan(profile.replace(work_group_size=8), np.float64)
    core, nearest = core_distances(plan, X, 6, metric, grid=metric in GRID_METRICS,
                                   neighbours=True)
    for ties in ("any", "scipy"):
        ours = mst.minimum_spanning_tree(plan, X, metric, core=core, ties=ties, index=index,
                                         nearest=nearest)
        theirs = mst.minimum_spanning_tree(plan, X, metric, core=core, ties=ties, index=index)
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a, b)
    seeded, scratch = [], []
    Xp = np.ascontiguousarray(X)
    for stats, seed in ((seeded, nearest), (scratch, None)):
        mst.boruvka(plan, Xp, len(X), d, metric, core, index, stats=stats, nearest=seed)
    assert scratch[0]["rows"] == len(X)
    assert seeded[0]["rows"] < (len(X) // 10 if kind == "far blobs" else len(X) + 1)
    assert [s["components"] for s in seeded] == [s["components"] for s in scratch]
    if index and kind == "far blobs" and metric != "cosine" and d == 2:
        # tiles far inside their blob: their rows left out by tile_reach
        assert sum(s["reach"] for s in seeded) > 0


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("index", [False, True])
@pytest.mark.parametrize("core", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.covering(2)
def test_tiles_made_ahead_are_the_same_tree(profile, metric, index, core, dtype):
    """tiles_work's RowTiles, made on another thread from float64 rows (as
    HDBSCAN makes them beside its core distances): the tree the MST makes
    its own tiles for, edge for edge; tiles of another scan or other rows
    refused."""
    from concurrent.futures import ThreadPoolExecutor
    X = index_rows("far blobs", 3)
    plan = Plan(profile.replace(work_group_size=8), dtype)
    c = np.sort(squareform(pdist(X, metric)), axis=1)[:, 5] if core else None
    with ThreadPoolExecutor(1) as pool:
        tiles = pool.submit(mst.tiles_work(plan, X, metric, core=core, index=index)).result()
    assert tiles.rows.dtype == dtype and np.array_equal(tiles.rows, X[tiles.ids].astype(dtype))
    ours = mst.minimum_spanning_tree(plan, X, metric, core=c, ties="any", index=index,
                                     tiles=tiles)
    theirs = mst.minimum_spanning_tree(plan, X, metric, core=c, ties="any", index=index)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="tiles were made for"):
        mst.minimum_spanning_tree(plan, X, metric, core=c, ties="any", index=not index,
                                  tiles=tiles)
    with pytest.raises(ValueError, match="tiles were made for"):
        mst.minimum_spanning_tree(plan, X[:-1], metric, core=None if c is None else c[:-1],
                                  ties="any", index=index, tiles=tiles)


def test_index_tile_rows_caps_the_index_scans_tiles(profile):
    """mst_index_tile_rows: the index scans' tiles (and work-groups) of at
    most that many rows (a power of two), the brute walk's the profile's;
    the same tree."""
    plan = Plan(profile.replace(work_group_size=16, mst_index_tile_rows=6), np.float64)
    assert mst.nearest_kernel(plan, 3, "euclidean", True, index=True)[0].wg == 4
    assert mst.nearest_kernel(plan, 3, "euclidean", True, index=False)[0].wg == 16
    X = index_rows("far blobs", 3, 200)
    c = np.sort(squareform(pdist(X)), axis=1)[:, 3]
    for ours, theirs in zip(mst.minimum_spanning_tree(plan, X, core=c, ties="any", index=True),
                            mst.minimum_spanning_tree(plan, X, core=c, ties="any")):
        np.testing.assert_array_equal(ours, theirs)


def test_bad_input(profile):
    plan = Plan(profile, np.float64)
    X = np.arange(12.0).reshape(6, 2)
    with pytest.raises(ValueError, match="metric"):
        mst.minimum_spanning_tree(plan, X, "minkowski")
    with pytest.raises(ValueError, match="ties"):
        mst.minimum_spanning_tree(plan, X, ties="first")
    with pytest.raises(ValueError, match="core"):
        mst.minimum_spanning_tree(plan, X, core=np.ones(5))
    with pytest.raises(ValueError, match="core"):
        mst.minimum_spanning_tree(plan, X, core=np.full(6, np.nan))
    with pytest.raises(ValueError, match="2-D"):
        mst.minimum_spanning_tree(plan, X[0])
    a, b, w = mst.minimum_spanning_tree(profile, X)    # a profile makes its own plan
    np.testing.assert_array_equal(z_of(a, b, w, 6), hierarchy.linkage(X, "single"))
    X[2] = 0                                       # a zero vector: scipy refuses it too
    with pytest.raises(ValueError, match="finite"):
        mst.minimum_spanning_tree(plan, X, "cosine")


@pytest.fixture
def small_budget(devices, monkeypatch):
    """Devices whose memory budget holds no condensed matrix of 30 points
    (about 3 KiB), and a count of the engine's runs."""
    calls = []
    engine = hier.minimum_spanning_tree

    def counted(*args, **kwargs):
        calls.append(1)
        return engine(*args, **kwargs)
    monkeypatch.setattr(hier, "minimum_spanning_tree", counted)
    monkeypatch.setattr(agglomerative, "minimum_spanning_tree", counted)
    return [p.replace(global_mem_size=2**20, memory_fraction=0.002, linkage_memory_fraction=0)
            for p in devices], calls


@pytest.mark.parametrize("metric", METRICS)
def test_small_budget_runs_on_rows(small_budget, metric):
    devices, calls = small_budget
    for kind in ("random", "grid", "duplicates"):
        X = data(kind, 40, seed=11)
        if metric == "cosine":
            X = X + 0.25
        Z = oc.linkage(X, "single", metric, devices=devices)
        np.testing.assert_array_equal(Z, hierarchy.linkage(X, "single", metric))
    assert len(calls) == 3
    with pytest.raises(MemoryError):               # the matrix methods still say so
        oc.linkage(X, "complete", metric, devices=devices)


@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "chebyshev", "cosine"])
def test_small_budget_agglomerative_is_sklearns(small_budget, metric):
    devices, calls = small_budget
    for kind in ("random", "grid", "duplicates"):
        X = data(kind, 45, seed=5) + 0.25
        ref = SkAgglomerative(linkage="single", metric=metric, n_clusters=4,
                              compute_distances=True).fit(X)
        got = oc.AgglomerativeClustering(linkage="single", metric=metric, n_clusters=4,
                                         compute_distances=True, devices=devices).fit(X)
        np.testing.assert_array_equal(got.children_, ref.children_)
        np.testing.assert_array_equal(got.labels_, ref.labels_)
        np.testing.assert_allclose(got.distances_, ref.distances_, rtol=1e-12)
    assert len(calls) == 3


@pytest.mark.parametrize("kind", ["chain", "ties", "duplicates"])
def test_small_budget_agglomerative_children_shapes(small_budget, kind):
    """The children (merged_clusters' unswapped left/right) equal
    scikit-learn's on a chain (each merge absorbs one point: deep union-find
    paths), integer ties and duplicate rows, on the rows' MST."""
    devices, calls = small_budget
    rng = np.random.RandomState(7)
    if kind == "chain":
        X = np.cumsum(rng.rand(50, 2) + 0.5, axis=0)
    elif kind == "ties":
        X = rng.randint(0, 3, (50, 2)).astype(np.float64)
    else:
        X = rng.randn(10, 3)[rng.randint(0, 10, 50)]
    ref = SkAgglomerative(linkage="single", n_clusters=3).fit(X)
    got = oc.AgglomerativeClustering(linkage="single", n_clusters=3, devices=devices).fit(X)
    np.testing.assert_array_equal(got.children_, ref.children_)
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    assert len(calls) == 1


def test_rows_from_the_profiles_size(devices, monkeypatch):
    """mst_single_rows_from picks the rows where the matrix would fit."""
    calls = []
    engine = hier.minimum_spanning_tree
    monkeypatch.setattr(hier, "minimum_spanning_tree",
                        lambda *a, **k: calls.append(1) or engine(*a, **k))
    X = data("grid", 50, seed=1)
    ref = hierarchy.linkage(X, "single")
    for rows_from, runs in ((51, 0), (50, 1)):
        near = [p.replace(mst_single_rows_from=rows_from) for p in devices]
        np.testing.assert_array_equal(oc.linkage(X, "single", devices=near), ref)
        assert len(calls) == runs
