"""oclclust.linkage against scipy and AgglomerativeClustering against scikit-learn.

Random sets of 5..60 points: continuous ones, integer grids (many equal
distances, so scipy's tie rules are what is tested) and sets with duplicate
points; every method x metric, float32 and float64 input, observations and
condensed input.  Merges and sizes must be equal, heights equal to rounding.
"""
import dataclasses
import warnings

import numpy as np
import pytest
from scipy.cluster import hierarchy
from scipy.spatial.distance import pdist, squareform

import oclclust as oc
from conftest import sklearn_checks
from oclclust.cluster.hierarchy.linkage_matrix import EUCLIDEAN_METHODS, METHODS, METRICS
from oclclust.passes.linkage import Plan, _distance_plan, condensed_distances

sklearn = pytest.importorskip("sklearn")
from sklearn.cluster import AgglomerativeClustering as SkAgglomerative

PAIRS = [(m, d) for m in METHODS for d in METRICS
         if m not in EUCLIDEAN_METHODS or d == "euclidean"]


def point_sets(seed):
    """(name, X): continuous, an integer grid (ties), duplicates."""
    rng = np.random.RandomState(seed)
    n = rng.randint(5, 61)
    grid = rng.randint(0, 2 + seed % 3, (n, 2 + seed % 2)).astype(np.float64) + 1
    dup = rng.randn(n // 2 + 2, 3)
    dup = dup[rng.randint(0, len(dup), n)]
    return [("random", rng.randn(n, 1 + seed % 4) * 3), ("grid", grid), ("duplicates", dup)]


def assert_same_linkage(Z, ref):
    assert Z.shape == ref.shape and Z.dtype == np.float64
    np.testing.assert_array_equal(Z[:, [0, 1, 3]], ref[:, [0, 1, 3]])
    np.testing.assert_allclose(Z[:, 2], ref[:, 2], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method, metric", PAIRS)
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.covering(1)
def test_linkage_equals_scipy(devices, linkage_strategy, method, metric, seed):
    for name, X in point_sets(seed):
        for dtype in (np.float64, np.float32):
            Xd = X.astype(dtype)
            try:
                ref = hierarchy.linkage(Xd, method, metric)
            except ValueError:           # cosine of a zero vector: scipy refuses
                with pytest.raises(ValueError, match="finite"):
                    oc.linkage(Xd, method, metric, devices=devices)
                continue
            Z = oc.linkage(Xd, method, metric, devices=devices)
            assert_same_linkage(Z, ref)
        if method in ("single", "average", "centroid") or metric == "cityblock":
            y = pdist(X, metric)
            if np.isfinite(y).all():     # precomputed: a condensed vector
                assert_same_linkage(oc.linkage(y, method, devices=devices),
                                    hierarchy.linkage(y, method))


@pytest.mark.parametrize("method", METHODS)
def test_tiny_sets_and_all_duplicates(devices, linkage_strategy, method):
    for n in (2, 3, 4):
        X = np.arange(2 * n, dtype=np.float64).reshape(n, 2) ** 1.5
        assert_same_linkage(oc.linkage(X, method, devices=devices), hierarchy.linkage(X, method))
        same = np.zeros((n, 3))       # every distance 0: every choice a tie
        assert_same_linkage(oc.linkage(same, method, devices=devices),
                            hierarchy.linkage(same, method))
    assert_same_linkage(oc.linkage(np.array([3.0]), method, devices=devices),
                        hierarchy.linkage(np.array([3.0]), method))


@pytest.mark.parametrize("method", ["centroid", "median"])
def test_generic_many_lowered_bounds(devices, method, monkeypatch):
    """A merge that lowers more bounds than travel with its first read."""
    from oclclust.passes import linkage_generic
    monkeypatch.setattr(linkage_generic._Rows, "HEAD", 1)
    for _, X in point_sets(4):
        assert_same_linkage(oc.linkage(X, method, devices=devices),
                            hierarchy.linkage(X, method))


@pytest.mark.parametrize("method", METHODS)
def test_scipy_accepts_z(devices, method):
    X = np.random.RandomState(3).randn(40, 4)
    Z = oc.linkage(X, method, devices=devices)
    assert hierarchy.is_valid_linkage(Z)
    labels = hierarchy.fcluster(Z, 3, criterion="maxclust")
    np.testing.assert_array_equal(labels, hierarchy.fcluster(hierarchy.linkage(X, method), 3,
                                                             criterion="maxclust"))
    leaves = hierarchy.dendrogram(Z, no_plot=True)["leaves"]
    assert sorted(leaves) == list(range(40))


def test_optimal_ordering(devices):
    X = np.random.RandomState(5).randn(25, 3)
    assert_same_linkage(oc.linkage(X, "average", optimal_ordering=True, devices=devices),
                        hierarchy.linkage(X, "average", optimal_ordering=True))


@pytest.mark.parametrize("y, method, metric, match", [
    (np.array([[0.0, 1.0], [np.nan, 2.0], [3.0, 1.0]]), "single", "euclidean", "NaN"),
    (np.array([[0.0, np.inf], [1.0, 2.0]]), "ward", "euclidean", "NaN"),
    (np.array([[1.0, 2.0]]), "single", "euclidean", "minimum of 2"),
    (np.ones((4, 2)), "bogus", "euclidean", "Invalid method"),
    (np.ones((4, 2)), "single", "minkowskiish", "metric"),
    (np.ones((4, 2)), "ward", "cityblock", "Euclidean"),
    (np.ones(4), "single", "euclidean", "binomial"),
    (np.array([1.0, np.nan, 2.0]), "average", "euclidean", "finite"),
    (np.array([[[1.0]]]), "single", "euclidean", "1 or 2 dimensional"),
    (np.array([["a", "b"], ["c", "d"]]), "single", "euclidean", "numeric"),
    (np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]), "single", "cosine", "finite"),
])
def test_bad_input(devices, y, method, metric, match):
    with pytest.raises(ValueError, match=match):
        oc.linkage(y, method, metric, devices=devices)


def test_square_matrix_warns_like_scipy(devices):
    D = squareform(pdist(np.random.RandomState(0).randn(6, 2)))
    with pytest.warns(hierarchy.ClusterWarning):
        oc.linkage(D, "single", devices=devices)


def test_too_large_for_device_names_the_limit(profile):
    """Past one buffer the matrix spans several (tests/passes/test_linkage_buffers.py);
    past the budget for it, a MemoryError."""
    plan = Plan(profile, np.float64)
    n = int(np.sqrt(2 * plan.matrix_budget / 8)) + 10
    assert plan.buffers(int(np.sqrt(2 * profile.max_alloc_size / 8)) + 10) == 2
    with pytest.raises(MemoryError, match="memory budget for it"):
        plan.check_fits(n)


# tiles (t, rm, rn, kc, vw): n = 5..70 and d = 1..37 leave ragged row tiles,
# a partial diagonal tile and ragged feature chunks
DISTANCE_TILES = [(8, 2, 2, 2, 2), (16, 4, 2, 4, 1), (32, 4, 4, 8, 4), (64, 8, 4, 16, 4)]


@pytest.mark.parametrize("tiles", DISTANCE_TILES, ids=lambda t: "x".join(map(str, t)))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.covering(1)
def test_tiled_distances_equal_pdist(profile, tiles, dtype):
    """The register-tiled condensed distances are pdist's exactly (float64)
    and the one-pair-per-work-item kernel's bit for bit, for every tile
    shape, metric and ragged edge.  Each shape (n, d) takes two of the four
    metrics in turn, so every tile shape meets every metric and every shape:
    d is built into the kernels, and every pair would double the builds."""
    t, rm, rn, kc, vw = tiles
    prof = profile.replace(lloyd_tile_rows=t, lloyd_tile_centroids=t,
                           lloyd_reg_rows=rm, lloyd_reg_centroids=rn, lloyd_depth=kc,
                           lloyd_vector_width=vw)
    tiled, pairs = Plan(prof, dtype), Plan(prof, dtype)
    tiled.tiled, pairs.tiled = True, False
    rng = np.random.RandomState(t)
    metrics = ("euclidean", "sqeuclidean", "cityblock", "chebyshev")
    for i, (n, d) in enumerate(((5, 1), (37, 3), (70, 37), (2 * t + 1, kc + 1))):
        X = rng.randn(n, d).astype(dtype) * 3
        X[n // 2] = X[0]                                   # a zero distance
        turn = DISTANCE_TILES.index(tiles) + i
        for metric in (metrics[turn % 4], metrics[(turn + 2) % 4]):
            spec, _ = _distance_plan(tiled, n, d, metric)
            assert spec.tiled and spec.rm == rm and spec.rn == rn and spec.vw == vw
            assert spec.tm <= t and spec.dp % spec.kc == 0
            got = condensed_distances(tiled, X=X, metric=metric)[0].get(tiled.queue)
            ref = condensed_distances(pairs, X=X, metric=metric)[0].get(pairs.queue)
            np.testing.assert_array_equal(got, ref)
            if dtype == np.float64:
                np.testing.assert_array_equal(got, pdist(X, metric))
    assert not _distance_plan(tiled, 9, 3, "cosine")[0].tiled     # cosine keeps its lanes


def test_tiled_distances_shrink_to_fit(profile):
    """Too little local memory or too few work-items for the profile's tile:
    smaller tiles, and the one-pair kernel when none fits."""
    small = profile.replace(lloyd_tile_rows=64, lloyd_tile_centroids=64,
                            lloyd_reg_rows=2, lloyd_reg_centroids=2, lloyd_depth=8,
                            lloyd_vector_width=2, max_work_group_size=64)
    plan = Plan(small, np.float64)
    plan.tiled = True
    spec, _ = _distance_plan(plan, 100, 20, "euclidean")
    assert spec.tiled and spec.wg <= 64 and spec.tm == 16
    X = np.random.RandomState(0).randn(100, 20)
    np.testing.assert_array_equal(condensed_distances(plan, X=X)[0].get(plan.queue), pdist(X))
    cramped = dataclasses.replace(small, private_floats=4)
    plan = Plan(cramped, np.float64)
    plan.tiled = True
    assert not _distance_plan(plan, 100, 20, "euclidean")[0].tiled


# ------------------------------------------------------ AgglomerativeClustering
SK_CASES = [(link, metric) for link in ("ward", "complete", "average", "single")
            for metric in (("euclidean",) if link == "ward" else
                           ("euclidean", "manhattan", "cosine", "chebyshev", "precomputed"))]


@pytest.mark.parametrize("link, metric", SK_CASES)
@pytest.mark.parametrize("seed", range(2))
def test_agglomerative_equals_sklearn(devices, link, metric, seed):
    for name, X in point_sets(seed + 10):
        fit_X = squareform(pdist(X)) if metric == "precomputed" else X
        for kw in (dict(n_clusters=min(4, len(X))),
                   dict(n_clusters=None, distance_threshold=2.0)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    ref = SkAgglomerative(linkage=link, metric=metric, compute_distances=True,
                                          **kw).fit(fit_X)
                except ValueError:        # cosine of a zero vector
                    continue
            got = oc.AgglomerativeClustering(linkage=link, metric=metric, devices=devices,
                                             compute_distances=True, **kw).fit(fit_X)
            np.testing.assert_array_equal(got.children_, ref.children_)
            np.testing.assert_array_equal(got.labels_, ref.labels_)
            np.testing.assert_allclose(got.distances_, ref.distances_, rtol=1e-10, atol=1e-12)
            assert (got.n_clusters_, got.n_leaves_, got.n_connected_components_,
                    got.n_features_in_) == (ref.n_clusters_, ref.n_leaves_,
                                            ref.n_connected_components_, ref.n_features_in_)


def test_agglomerative_rules(devices):
    X = np.random.RandomState(0).randn(20, 3)
    model = oc.AgglomerativeClustering(n_clusters=3, devices=devices)
    assert not hasattr(model.fit(X), "distances_")
    np.testing.assert_array_equal(model.fit_predict(X), model.labels_)
    for bad, match in [(dict(n_clusters=None), "Exactly one"),
                       (dict(linkage="ward", metric="cosine"), "Ward can only"),
                       (dict(linkage="centroid"), "linkage"),
                       (dict(metric="mahalanobis", linkage="average"), "metric"),
                       (dict(n_clusters=0), "n_clusters"),
                       (dict(n_clusters=None, distance_threshold=1.0,
                             compute_full_tree=False), "compute_full_tree"),
                       (dict(n_clusters=30), "more clusters than samples")]:
        with pytest.raises(ValueError, match=match):
            oc.AgglomerativeClustering(devices=devices, **bad).fit(X)
    with pytest.raises(NotImplementedError, match="connectivity"):
        oc.AgglomerativeClustering(connectivity=np.eye(20), devices=devices).fit(X)


def test_agglomerative_memory_caches(devices, tmp_path):
    X = np.random.RandomState(1).randn(15, 2)
    a = oc.AgglomerativeClustering(memory=str(tmp_path), devices=devices).fit(X)
    b = oc.AgglomerativeClustering(memory=str(tmp_path), devices=devices).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)


@pytest.mark.parametrize("estimator, check", list(sklearn_checks(
    lambda name: oc.AgglomerativeClustering(devices=name))))
def test_sklearn_check_estimator(estimator, check):
    check(estimator)


# ------------------------------------------------------------------ plots
def test_plot_dendrogram(devices, monkeypatch):
    from oclclust.io.plots import linkage_matrix, plot_dendrogram
    X = np.random.RandomState(2).randn(12, 2)
    model = oc.AgglomerativeClustering(compute_distances=True, devices=devices).fit(X)
    Z = oc.linkage(X, "ward", devices=devices)
    np.testing.assert_array_equal(linkage_matrix(model), Z)
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    assert plot_dendrogram(model, ax=ax)["ivl"] == plot_dendrogram(Z, ax=ax)["ivl"]
    plt.close(fig)
    with pytest.raises(ValueError, match="compute_distances"):
        plot_dendrogram(oc.AgglomerativeClustering(devices=devices).fit(X))
    monkeypatch.setitem(__import__("sys").modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"plotting requires matplotlib: "
                                          r"pip install 'oclclust\[plot\]'"):
        plot_dendrogram(Z)


@pytest.mark.parametrize("method", ["single", "ward", "complete"])
@pytest.mark.parametrize("n", [2, 7, 300])
def test_hc_cut_is_scikit_learns(method, n):
    """The cut's labels (pointer jumping to the top nodes) equal
    scikit-learn's _hc_cut for every number of clusters."""
    from sklearn.cluster._agglomerative import _hc_cut
    from oclclust.cluster.hierarchy.agglomerative import hc_cut
    X = np.random.default_rng(n).normal(size=(n, 3))
    children = hierarchy.linkage(X, method)[:, :2].astype(np.intp)
    for k in sorted({1, 2, max(1, n // 3), n - 1 or 1, n}):
        np.testing.assert_array_equal(hc_cut(k, children, n), _hc_cut(k, children, n))
