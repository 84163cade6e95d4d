"""oc.HDBSCAN against sklearn.cluster.HDBSCAN: labels (scikit-learn's
numbering) and probabilities exactly, over metrics, min_samples, selection
method, epsilon, allow_single_cluster and max_cluster_size, on scikit-learn's
own test data (make_blobs as its test_hdbscan.py makes them) and on tied
integer grids; NaN / inf rows; bad input gets scikit-learn's errors; the
host's tree (cluster/density/hdbscan/tree.py) on scikit-learn's own single-linkage
tree.  The host's paths too: precomputed distances (dense, sparse), sparse
rows, scipy's metrics and callables; store_centers and dbscan_clustering."""
import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial import distance

import oclclust as oc
from conftest import sklearn_checks
from oclclust.cluster.density.hdbscan import tree as hdbscan_tree

sklearn = pytest.importorskip("sklearn")
from sklearn.cluster import HDBSCAN as SkHDBSCAN
from sklearn.datasets import make_blobs


def sk_blobs(n=200):
    # test_hdbscan.py's data: three blobs of unequal spread
    X, _ = make_blobs(n_samples=n, random_state=10, cluster_std=[1.0, 2.5, 0.5], centers=3)
    return X


def sk_fit(X, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", RuntimeWarning)   # its sums of inf rows
        return SkHDBSCAN(copy=False, **params).fit(X)


def assert_same(ours, theirs, exact=True):
    """Exact: labels and probabilities equal.  Not exact (KNOWN GAP): where
    mutual-reachability weights tie, scikit-learn orders the tied MST edges
    by np.argsort of its Prim sequence and orients them (source, new); the
    engine's edges (passes/mst.py, ties="scipy") are scipy's (previous,
    new), stably sorted, so the same clusters at every height can condense
    differently at a tied height: the partitions then agree to a few points."""
    if exact:
        np.testing.assert_array_equal(ours.labels_, theirs.labels_)
        np.testing.assert_array_equal(ours.probabilities_, theirs.probabilities_)
    else:
        from sklearn.metrics import adjusted_rand_score
        assert adjusted_rand_score(ours.labels_, theirs.labels_) > 0.9
        assert np.mean(ours.labels_ == theirs.labels_) > 0.9


@pytest.mark.parametrize("metric, algorithm", [
    ("euclidean", "brute"), ("manhattan", "brute"), ("chebyshev", "brute"),
    ("sqeuclidean", "brute"), ("euclidean", "kd_tree"), ("manhattan", "kd_tree"),
    ("chebyshev", "ball_tree")])
@pytest.mark.parametrize("min_samples", [None, 3])
@pytest.mark.covering(1)
def test_metrics_match_sklearn(devices, metric, min_samples, algorithm):
    """kd_tree, ball_tree: the core distances over the grid of cells."""
    X = sk_blobs()
    ours = oc.HDBSCAN(metric=metric, min_samples=min_samples, algorithm=algorithm,
                      devices=devices).fit(X)
    assert_same(ours, sk_fit(X, metric=metric, min_samples=min_samples))


@pytest.mark.parametrize("method, single, epsilon, largest, exact", [
    ("eom", False, 0.0, None, True), ("eom", True, 0.0, None, True),
    ("leaf", False, 0.0, None, True), ("leaf", True, 0.0, None, True),
    ("eom", False, 0.0, 40, True), ("eom", True, 0.0, 30, True),
    ("eom", False, 1.5, None, True), ("eom", True, 1.5, None, True)])
def test_selection_matches_sklearn(devices, method, single, epsilon, largest, exact):
    X = sk_blobs()
    params = dict(cluster_selection_method=method, allow_single_cluster=single,
                  cluster_selection_epsilon=epsilon, max_cluster_size=largest,
                  min_cluster_size=8)
    assert_same(oc.HDBSCAN(devices=devices, **params).fit(X), sk_fit(X, **params), exact)


def test_tied_grid_matches_sklearn(devices):
    # integer rows: the mutual-reachability weights tie everywhere
    X = np.random.RandomState(3).randint(0, 6, (150, 2)).astype(np.float64)
    assert_same(oc.HDBSCAN(min_cluster_size=6, devices=devices).fit(X),
                sk_fit(X, min_cluster_size=6))


def test_alpha_and_centers(devices):
    X = sk_blobs(150)
    params = dict(alpha=1.3, store_centers="both")
    ours, theirs = oc.HDBSCAN(devices=devices, **params).fit(X), sk_fit(X, **params)
    assert_same(ours, theirs, exact=False)     # alpha scales the rows: other rounding
    assert ours.centroids_.shape[1] == ours.medoids_.shape[1] == X.shape[1]
    k = ours.labels_.max() + 1
    for c in range(k):
        m = ours.labels_ == c
        np.testing.assert_allclose(ours.centroids_[c], np.average(
            X[m], weights=ours.probabilities_[m], axis=0), rtol=1e-12)
        assert any(np.array_equal(ours.medoids_[c], row) for row in X[m])


def test_non_finite_rows_labelled_as_sklearn(devices):
    X = sk_blobs()
    X[3, 0], X[7, 1], X[9] = np.inf, np.nan, [np.inf, -np.inf]
    ours, theirs = oc.HDBSCAN(devices=devices).fit(X), sk_fit(X)
    np.testing.assert_array_equal(ours.labels_, theirs.labels_)
    np.testing.assert_array_equal(ours.probabilities_, theirs.probabilities_)
    assert list(ours.labels_[[3, 7, 9]]) == [-2, -3, -3]


@pytest.mark.parametrize("params, X, match", [
    (dict(min_cluster_size=1), None, "min_cluster_size"),
    (dict(min_samples=0), None, "min_samples"),
    (dict(cluster_selection_epsilon=-1.0), None, "cluster_selection_epsilon"),
    (dict(alpha=0.0), None, "alpha"),
    (dict(metric="nope"), None, "metric"),
    (dict(cluster_selection_method="middle"), None, "cluster_selection_method"),
    (dict(min_samples=500), None, "min_samples"),
    ({}, np.zeros((1, 2)), "n_samples=1"),
    ({}, np.zeros((0, 2)), "0 sample"),
    ({}, np.zeros(5), "2D"),
])
def test_bad_input_errors(devices, params, X, match):
    X = sk_blobs() if X is None else X
    with pytest.raises(ValueError, match=match):
        oc.HDBSCAN(devices=devices, **params).fit(X)
    with pytest.raises(ValueError):
        sk_fit(X, **params)


def test_host_tree_on_sklearns_own_tree():
    """The condensed tree and selection alone, on scikit-learn's single
    linkage tree, over every selection rule (where scikit-learn runs: its
    epsilon search fails on some trees of this numpy)."""
    X = sk_blobs(300)
    checked = 0
    for mcs, method, single, eps, largest in itertools.product(
            [3, 15], ["eom", "leaf"], [False, True], [0.0, 0.5], [None, 40]):
        try:
            h = sk_fit(X, min_cluster_size=mcs, cluster_selection_method=method,
                       allow_single_cluster=single, cluster_selection_epsilon=eps,
                       max_cluster_size=largest)
        except TypeError:
            continue
        slt = h._single_linkage_tree_
        tree = (slt["left_node"], slt["right_node"], slt["value"], slt["cluster_size"])
        condensed = hdbscan_tree.condense(tree, mcs)
        chosen = hdbscan_tree.select(condensed, hdbscan_tree.stability(condensed), method,
                                     single, eps, largest)
        labels, probs = hdbscan_tree.labels_and_probabilities(condensed, chosen, single, eps)
        np.testing.assert_array_equal(labels, h.labels_)
        np.testing.assert_array_equal(probs, h.probabilities_)
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("estimator, check", list(sklearn_checks(
    lambda name: oc.HDBSCAN(devices=name))))
def test_sklearn_check_estimator(estimator, check):
    check(estimator)


def test_boruvka_tree_past_prim_limit(devices, monkeypatch):
    """Past PRIM_TIES_UP_TO rows the tree is Boruvka's (tied heights in the
    engine's order): on continuous blobs, where ties are only core distances
    shared by a row's edges, still scikit-learn's labels and probabilities."""
    import oclclust.cluster.density.hdbscan.hdbscan as hdbscan_module
    monkeypatch.setattr(hdbscan_module, "PRIM_TIES_UP_TO", 0)
    X = sk_blobs(300)
    params = dict(min_cluster_size=10, min_samples=4)
    assert_same(oc.HDBSCAN(devices=devices, **params).fit(X), sk_fit(X, **params))


def index_rows(kind, d, n=500):
    """Blobs far apart (empty regions between them), integer points (ties,
    grid-aligned) and duplicated rows, in d features."""
    rng = np.random.RandomState(d)
    if kind == "far blobs":
        centres = rng.uniform(-1, 1, (3, d)) * 500
        return centres[rng.randint(0, 3, n)] + rng.randn(n, d)
    if kind == "grid":
        return rng.randint(0, 6, (n, d)).astype(np.float64)
    return (rng.randn(n // 3, d) * 3)[rng.randint(0, n // 3, n)]


@pytest.mark.parametrize("kind", ["far blobs", "grid", "duplicates"])
@pytest.mark.parametrize("d", [2, 3, 8])
@pytest.mark.parametrize("prim", [True, False])
def test_spatial_index_mst_is_brutes(devices, monkeypatch, kind, d, prim):
    """algorithm="kd_tree": the MST's scans over the tiles' hierarchy, the
    brute walk's labels and probabilities exactly; scikit-learn's where
    tied heights take Prim's order (prim) or barely tie (far blobs); with
    Boruvka's tree of heavily tied heights (past PRIM_TIES_UP_TO, as at
    20,000 rows and more) scikit-learn's may condense otherwise
    (assert_same's KNOWN GAP), so there the brute walk is the reference."""
    import oclclust.cluster.density.hdbscan.hdbscan as hdbscan_module
    import oclclust.passes.mst as mst
    if not prim:
        monkeypatch.setattr(hdbscan_module, "PRIM_TIES_UP_TO", 0)
    indexed, spanning = [], hdbscan_module.minimum_spanning_tree
    monkeypatch.setattr(hdbscan_module, "minimum_spanning_tree", lambda *a, **k: (
        indexed.append(k["index"]), spanning(*a, **k))[1])
    X = index_rows(kind, d)
    params = dict(min_cluster_size=8, min_samples=4)
    ours = oc.HDBSCAN(algorithm="kd_tree", devices=devices, **params).fit(X)
    brute = oc.HDBSCAN(algorithm="brute", devices=devices, **params).fit(X)
    assert indexed == [True, False]
    assert_same(ours, brute)
    if prim or kind == "far blobs":
        assert_same(ours, sk_fit(X, **params))


def test_auto_indexes_the_mst_from_grid_from_rows(devices, monkeypatch):
    """From GRID_FROM rows, every device metric (sqeuclidean: no grid of
    cells, still the tiles' hierarchy); scikit-learn's labels."""
    import oclclust.cluster.density.hdbscan.hdbscan as hdbscan_module
    indexed, spanning = [], hdbscan_module.minimum_spanning_tree
    monkeypatch.setattr(hdbscan_module, "minimum_spanning_tree", lambda *a, **k: (
        indexed.append(k["index"]), spanning(*a, **k))[1])
    monkeypatch.setattr(hdbscan_module, "GRID_FROM", 300)
    for n, metric in ((299, "euclidean"), (300, "euclidean"), (300, "sqeuclidean")):
        X = sk_blobs(n)
        ours = oc.HDBSCAN(metric=metric, devices=devices).fit(X)
        assert_same(ours, sk_fit(X, metric=metric))
    assert indexed == [False, True, True]


def grid():
    # integer rows: mutual-reachability weights tie everywhere
    return np.random.RandomState(3).randint(0, 6, (150, 2)).astype(np.float64)


def sparse_distances(X, container):
    # test_hdbscan.py's sparse matrix: the larger half of the distances dropped
    D = distance.squareform(distance.pdist(X))
    D[D >= np.percentile(D, 50)] = 0.0
    D = container(D)
    D.eliminate_zeros()
    return D


@pytest.mark.parametrize("form", ["dense", "csr", "csc"])
@pytest.mark.parametrize("data, params", [
    (sk_blobs, {}), (sk_blobs, dict(min_samples=3, alpha=1.5)),
    (grid, dict(min_cluster_size=6)), (grid, dict(min_samples=2, cluster_selection_method="leaf"))])
def test_precomputed_matches_sklearn(devices, form, data, params):
    X = data()
    D = (distance.squareform(distance.pdist(X)) if form == "dense" else
         sparse_distances(X, {"csr": sp.csr_matrix, "csc": sp.csc_matrix}[form]))
    kept = D.copy()
    ours = oc.HDBSCAN(metric="precomputed", devices=devices, **params).fit(D)
    assert_same(ours, sk_fit(D.copy(), metric="precomputed", **params))
    assert (abs(D - kept)).max() == 0       # the caller's matrix is never written to


@pytest.mark.parametrize("metric, metric_params, algorithm", [
    ("canberra", None, "auto"), ("braycurtis", None, "ball_tree"),
    ("braycurtis", None, "brute"), ("seuclidean", {"V": [2.0, 0.5]}, "auto"),
    ("cosine", None, "auto"), ("hamming", None, "ball_tree"),
    ("minkowski", {"p": 1}, "brute"), ("minkowski", {"p": 1.5, "w": [1.0, 3.0]}, "brute"),
    (distance.cityblock, None, "auto"), (lambda u, v: np.abs(u - v).max(), None, "brute")])
@pytest.mark.parametrize("data, params", [
    (sk_blobs, dict(min_samples=4)), (grid, dict(min_cluster_size=6, alpha=1.3))])
def test_host_metrics_match_sklearn(devices, metric, metric_params, algorithm, data, params):
    """Metrics the devices lack: the host's distances, scikit-learn's Prim's
    orders (its trees' on the rows, its matrix's for brute), exactly."""
    X = data()
    kw = dict(metric=metric, metric_params=metric_params, algorithm=algorithm, **params)
    assert_same(oc.HDBSCAN(devices=devices, **kw).fit(X), sk_fit(X, **kw))


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "manhattan"])
@pytest.mark.parametrize("container", [sp.csr_matrix, sp.csr_array, sp.coo_matrix])
def test_sparse_rows_match_sklearn(devices, metric, container):
    X = sk_blobs()
    X[::7, 1] = 0.0
    X[5, 0], X[8, 1] = np.inf, np.nan
    ours = oc.HDBSCAN(metric=metric, devices=devices).fit(container(X))
    theirs = sk_fit(sp.csr_matrix(X), metric=metric)
    np.testing.assert_array_equal(ours.labels_, theirs.labels_)
    np.testing.assert_array_equal(ours.probabilities_, theirs.probabilities_)
    finite = np.isfinite(X).all(axis=1)   # as the dense rows (the device's), exactly
    dense = oc.HDBSCAN(metric=metric, devices=devices).fit(X[finite])
    np.testing.assert_array_equal(ours.labels_[finite], dense.labels_)


@pytest.mark.parametrize("metric, metric_params", [
    ("euclidean", None), ("chebyshev", None), ("canberra", None),
    ("seuclidean", {"V": [2.0, 0.5]}), (distance.braycurtis, None)])
@pytest.mark.parametrize("store", ["centroid", "medoid", "both"])
def test_store_centers_match_sklearn(devices, metric, metric_params, store):
    X = sk_blobs()
    X[4, 1] = np.inf
    kw = dict(metric=metric, metric_params=metric_params, store_centers=store)
    ours = oc.HDBSCAN(devices=devices, **kw).fit(X)
    theirs = sk_fit(X[np.isfinite(X).all(axis=1)], **kw)   # its centres fail on inf rows
    for name in ("centroids_", "medoids_"):
        assert hasattr(ours, name) == hasattr(theirs, name)
        if hasattr(ours, name):
            np.testing.assert_allclose(getattr(ours, name), getattr(theirs, name), rtol=1e-14)


@pytest.mark.parametrize("data, params", [
    (sk_blobs, {}), (sk_blobs, dict(min_samples=3, metric="canberra")),
    (grid, dict(min_cluster_size=6))])
@pytest.mark.parametrize("cut", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("min_cluster_size", [2, 5, 30])
def test_dbscan_clustering_matches_sklearn(devices, data, params, cut, min_cluster_size):
    X = data()
    X[3, 0], X[7] = np.inf, [np.nan, np.inf]
    ours, theirs = oc.HDBSCAN(devices=devices, **params).fit(X), sk_fit(X, **params)
    np.testing.assert_array_equal(ours.dbscan_clustering(cut, min_cluster_size),
                                  theirs.dbscan_clustering(cut, min_cluster_size))
    record = ours._single_linkage_tree_         # scikit-learn's record, rows remapped
    assert record.dtype == theirs._single_linkage_tree_.dtype
    np.testing.assert_array_equal(record, theirs._single_linkage_tree_)


def _disconnected():
    X = np.zeros((20, 20))
    X[:5, :5] = 1
    X[5:, 15:] = 1
    return sp.csr_matrix(X + X.T)


@pytest.mark.parametrize("params, X, match", [
    (dict(metric="precomputed"), np.ones((6, 2)), "expected to be symmetric, however it has"),
    (dict(metric="precomputed"), np.arange(36.0).reshape(6, 6), "appear to be asymmetric"),
    (dict(metric="precomputed"), np.full((6, 6), np.nan), "np.nan values found"),
    (dict(metric="precomputed", store_centers="medoid"), np.zeros((6, 6)), "Cannot store"),
    (dict(metric="precomputed"), sp.csr_matrix(np.zeros((10, 10))), "fewer than 5 neighbors"),
    (dict(metric="precomputed"), _disconnected(), "2 connected components"),
    (dict(metric="precomputed", algorithm="kd_tree"), np.zeros((6, 6)),
     "precomputed is not a valid metric for a KDTree"),
    (dict(metric="cosine", algorithm="ball_tree"), None, "cosine is not a valid metric"),
    (dict(metric="seuclidean", algorithm="kd_tree"), None, "seuclidean is not a valid"),
    (dict(metric=distance.euclidean, algorithm="ball_tree"), None, "BallTree-based"),
    (dict(algorithm="kd_tree"), sp.csr_matrix(sk_blobs()), "only support algorithm `brute`"),
])
def test_host_errors_match_sklearn(devices, params, X, match):
    X = sk_blobs() if X is None else X
    with pytest.raises(ValueError, match=match):
        oc.HDBSCAN(devices=devices, **params).fit(X)
    with pytest.raises(ValueError, match=match):
        sk_fit(X, **params)
