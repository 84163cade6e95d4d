"""oc.DBSCAN against scikit-learn's DBSCAN on the same data: the same labels
(cluster numbers included), core samples and components."""
import numpy as np
import pytest
from scipy import sparse
from sklearn.cluster import DBSCAN as SKDBSCAN
from sklearn.datasets import make_blobs
from sklearn.metrics import pairwise_distances
from sklearn.neighbors import NearestNeighbors, kneighbors_graph

import oclclust as oc
from oclclust.cluster.density.dbscan.graph import metric_graph
from oclclust.cluster.density.dbscan.rules import _least_reaching, graph_labels
from conftest import sklearn_checks


def blobs(n=500, d=2, seed=0):
    return make_blobs(n, n_features=d, centers=5, cluster_std=1.0, random_state=seed)[0]


def grid():
    """Integer points: many distances exactly eps (1.0)."""
    return np.array([[i, j] for i in range(9) for j in range(7)], float)


@pytest.mark.parametrize("data", ["blobs", "blobs3d", "grid", "blobs5d"])
@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "chebyshev"])
@pytest.mark.parametrize("eps,min_samples", [(0.5, 5), (1.0, 4), (3.0, 30), (0.05, 2)])
@pytest.mark.parametrize("algorithm", ["brute", "grid"])
@pytest.mark.covering(1)
def test_labels_equal_sklearns(devices, data, metric, eps, min_samples, algorithm):
    X = {"blobs": blobs(), "blobs3d": blobs(301, 3, seed=2), "grid": grid(),
         "blobs5d": blobs(257, 5, seed=3)}[data]
    ours = oc.DBSCAN(eps, min_samples=min_samples, metric=metric, algorithm=algorithm,
                     devices=devices).fit(X)
    ref = SKDBSCAN(eps=eps, min_samples=min_samples, metric=metric).fit(X)
    assert np.array_equal(ours.labels_, ref.labels_)
    assert np.array_equal(ours.core_sample_indices_, ref.core_sample_indices_)
    assert np.array_equal(ours.components_, ref.components_)


@pytest.mark.parametrize("eps", [0.4, 1.0])
@pytest.mark.parametrize("algorithm", ["brute", "grid"])
@pytest.mark.parametrize("low", [0, -2])
def test_sample_weight_counts_as_sklearns(devices, eps, algorithm, low):
    X = blobs(400)
    w = np.random.default_rng(1).integers(low, 4, len(X)).astype(float)
    ours = oc.DBSCAN(eps, min_samples=6, algorithm=algorithm, devices=devices).fit(
        X, sample_weight=w)
    ref = SKDBSCAN(eps=eps, min_samples=6).fit(X, sample_weight=w)
    assert np.array_equal(ours.labels_, ref.labels_)
    assert np.array_equal(ours.fit_predict(X, sample_weight=w), ref.labels_)


@pytest.mark.parametrize("algorithm", ["brute", "grid"])
def test_duplicates_all_noise_and_one_cluster(devices, algorithm):
    X = np.repeat(blobs(60), 3, axis=0)
    for eps, ms in ((1e-9, 3), (1e-9, 4), (100.0, 2)):
        ours = oc.DBSCAN(eps, min_samples=ms, algorithm=algorithm, devices=devices).fit(X)
        assert np.array_equal(ours.labels_, SKDBSCAN(eps=eps, min_samples=ms).fit(X).labels_)


@pytest.mark.parametrize("eps,expected", [(0.3, "dbscan/dbscan_grid_counts.cl.mako"),
                                          (50.0, "dbscan/dbscan_counts.cl.mako")])
def test_auto_takes_the_grid_where_it_compares_fewer_pairs(devices, eps, expected):
    """Spread rows: the grid; every row within eps of every other: every pair."""
    X = blobs(2000)
    ours = oc.DBSCAN(eps, devices=devices).fit(X)
    assert expected in {record["template"] for record in ours.kernels_}
    assert np.array_equal(ours.labels_, SKDBSCAN(eps=eps).fit(X).labels_)


@pytest.mark.parametrize("params,X,error,match", [
    (dict(eps=0.0), blobs(20), ValueError, "eps"),
    (dict(eps=-1.0), blobs(20), ValueError, "eps"),
    (dict(min_samples=0), blobs(20), ValueError, "min_samples"),
    (dict(metric="no-such-metric"), blobs(20), ValueError, "metric"),
    (dict(metric="minkowski", p=0), blobs(20), ValueError, "p"),
    (dict(metric="precomputed"), np.ones((4, 5)), ValueError, "square"),
    (dict(metric="precomputed"), -np.ones((4, 4)), ValueError, "Negative"),
    (dict(metric="precomputed"), np.full((4, 4), np.nan), ValueError, "NaN"),
    (dict(), np.array([[np.nan, 1.0]] * 5), ValueError, "NaN"),
    (dict(), np.zeros((0, 2)), ValueError, "0 sample"),
    (dict(), np.zeros(5), ValueError, "2D"),
])
def test_bad_input_is_refused(devices, params, X, error, match):
    with pytest.raises(error, match=match):
        oc.DBSCAN(devices=devices, **params).fit(X)


def test_bad_sample_weight_is_refused(devices):
    with pytest.raises(ValueError, match="sample_weight"):
        oc.DBSCAN(devices=devices).fit(blobs(20), sample_weight=np.ones(3))


@pytest.mark.parametrize("estimator, check", list(sklearn_checks(
    lambda name: oc.DBSCAN(devices=name))))
def test_sklearn_check_estimator(estimator, check):
    check(estimator)


# ---- the graph paths: precomputed distances, host metrics, sparse rows ----

def assert_same_as_sklearns(ours, ref):
    assert np.array_equal(ours.labels_, ref.labels_)
    assert np.array_equal(ours.core_sample_indices_, ref.core_sample_indices_)
    dense = [c.toarray() if sparse.issparse(c) else c for c in (ours.components_,
                                                                ref.components_)]
    assert np.array_equal(*dense)


def precomputed(kind):
    """Distance matrices of blobs(200): dense, a radius graph with and
    without its rows' own entries, a k-neighbours graph with unsorted rows."""
    X = blobs(200)
    if kind == "dense":
        return pairwise_distances(X)
    if kind == "kneighbors":   # made symmetric (a distance), rows reversed (unsorted)
        g = kneighbors_graph(X, n_neighbors=12, mode="distance")
        g = g.maximum(g.T).tocsr()
        for i in range(g.shape[0]):
            s = slice(g.indptr[i], g.indptr[i + 1])
            g.data[s], g.indices[s] = g.data[s][::-1].copy(), g.indices[s][::-1].copy()
        return g
    nn = NearestNeighbors(radius=1.2).fit(X)
    return nn.radius_neighbors_graph(X if kind == "radius_self" else None, mode="distance")


@pytest.mark.parametrize("kind", ["dense", "radius_self", "radius_no_self", "kneighbors"])
@pytest.mark.parametrize("eps,min_samples", [(0.5, 5), (1.0, 10)])
@pytest.mark.parametrize("weighted", [False, True])
def test_precomputed_equals_sklearns(kind, eps, min_samples, weighted):
    D = precomputed(kind)
    before = D.copy()
    w = np.random.default_rng(3).integers(-1, 4, D.shape[0]).astype(float) if weighted else None
    ours = oc.DBSCAN(eps, min_samples=min_samples, metric="precomputed").fit(D, sample_weight=w)
    assert_same_as_sklearns(ours, SKDBSCAN(eps=eps, min_samples=min_samples,
                                           metric="precomputed").fit(D, sample_weight=w))
    if sparse.issparse(D):   # the caller's matrix untouched (no diagonal stored into it)
        assert D.nnz == before.nnz and np.array_equal(D.toarray(), before.toarray())
    else:
        assert np.array_equal(D, before)


@pytest.mark.parametrize("p", [None, 1, 1.5, 2, 3, np.inf])
def test_minkowski_p_equals_sklearns(devices, p):
    X = blobs(200, 3, seed=4)
    ours = oc.DBSCAN(0.9, min_samples=6, metric="minkowski", p=p, devices=devices).fit(X)
    # scikit-learn's DBSCAN takes p=None only with p in metric_params, and
    # not p=inf: its chebyshev is the same distance
    ref = (SKDBSCAN(eps=0.9, min_samples=6, metric="minkowski", metric_params={"p": 2})
           if p is None else SKDBSCAN(eps=0.9, min_samples=6, metric="chebyshev")
           if p == np.inf else SKDBSCAN(eps=0.9, min_samples=6, metric="minkowski", p=p))
    assert_same_as_sklearns(ours, ref.fit(X))


@pytest.mark.parametrize("metric,params,eps", [
    ("cosine", None, 0.002), ("canberra", None, 0.3), ("braycurtis", None, 0.05),
    ("mahalanobis", None, 0.3), ("seuclidean", {"V": np.array([0.5, 2.0])}, 0.5),
    ("minkowski", {"p": 3}, 0.8), ("minkowski", {"p": 1, "w": np.array([1.0, 2.0])}, 1.0),
    (lambda u, v: np.abs(u - v).sum(), None, 1.0),
    (lambda u, v, scale: scale * np.abs(u - v).max(), {"scale": 2.0}, 1.0),
], ids=["cosine", "canberra", "braycurtis", "mahalanobis", "seuclidean", "p3_in_params",
        "weighted_minkowski", "callable", "callable_params"])
def test_host_metrics_equal_sklearns(devices, metric, params, eps):
    X = blobs(150)
    ours = oc.DBSCAN(eps, min_samples=5, metric=metric, metric_params=params,
                     devices=devices).fit(X)
    # brute: scikit-learn's trees want mahalanobis' V or VI; its brute search
    # gets them from scipy, estimated from the rows as ours are
    assert_same_as_sklearns(ours, SKDBSCAN(eps=eps, min_samples=5, metric=metric,
                                           metric_params=params, algorithm="brute").fit(X))


@pytest.mark.parametrize("container", [sparse.csr_matrix, sparse.lil_matrix, sparse.csr_array])
@pytest.mark.parametrize("metric,eps", [("euclidean", 0.6), ("manhattan", 0.6),
                                        ("chebyshev", 0.5), ("cosine", 0.15)])
def test_sparse_rows_equal_sklearns(devices, container, metric, eps):
    X = np.random.default_rng(5).random((120, 6))
    X[X < 0.6] = 0
    S = container(X)
    ours = oc.DBSCAN(eps, min_samples=4, metric=metric, devices=devices).fit(S)
    assert sparse.issparse(ours.components_)
    # scikit-learn refuses chebyshev on sparse rows: its dense rows' result
    ref = SKDBSCAN(eps=eps, min_samples=4, metric=metric).fit(X if metric == "chebyshev" else S)
    assert_same_as_sklearns(ours, ref)
    assert np.array_equal(ours.labels_, oc.DBSCAN(eps, min_samples=4, metric=metric,
                                                  devices=devices).fit(X).labels_)


@pytest.mark.parametrize("data", ["blobs", "grid"])
@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev"])
@pytest.mark.parametrize("eps,min_samples", [(0.5, 5), (1.0, 4), (2.0, 12)])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.covering(2)
def test_graph_rules_equal_device_path(devices, data, metric, eps, min_samples, weighted):
    """The host graph's rules (density/dbscan/rules.graph_labels) give the device
    path's labels on the metrics the device computes."""
    X = {"blobs": blobs(300), "grid": grid()}[data]
    w = np.random.default_rng(6).integers(0, 4, len(X)).astype(float) if weighted else None
    labels, core = graph_labels(metric_graph(X, eps, metric, {}), min_samples, w)
    device = oc.DBSCAN(eps, min_samples=min_samples, metric=metric,
                       devices=devices).fit(X, sample_weight=w)
    assert np.array_equal(labels, device.labels_)
    assert np.array_equal(np.flatnonzero(core), device.core_sample_indices_)


@pytest.mark.parametrize("eps,min_samples", [(0.3, 3), (0.5, 4), (1.0, 5), (2.0, 5)])
@pytest.mark.parametrize("n_neighbors", [4, 8])
def test_asymmetric_precomputed_graph_equals_sklearns(eps, min_samples, n_neighbors):
    """A k-neighbours graph is asymmetric: scikit-learn's expansion follows
    its rows' directions (a row belongs to the least core row reaching it)."""
    D = kneighbors_graph(blobs(300), n_neighbors=n_neighbors, mode="distance")
    assert (D != D.T).nnz
    ours = oc.DBSCAN(eps, min_samples=min_samples, metric="precomputed").fit(D)
    assert_same_as_sklearns(ours, SKDBSCAN(eps=eps, min_samples=min_samples,
                                           metric="precomputed").fit(D))


def test_least_reaching_follows_directions():
    # 0 -> 2 -> 4, 1 <-> 3, 4 -> 5 <- 1: the least node with a path to each
    graph = sparse.csr_matrix((np.ones(6), ([0, 2, 1, 3, 4, 1], [2, 4, 3, 1, 5, 5])),
                              shape=(7, 7))
    assert list(_least_reaching(graph)) == [0, 1, 0, 1, 0, 0, 6]
