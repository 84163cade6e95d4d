"""scikit-learn's remaining KMeans / MiniBatchKMeans surface: callable
init, sparse mini-batches, algorithm / copy_x, get_feature_names_out,
verbose lines and warnings, each against scikit-learn from the same
random_state."""
import re

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans as SKKMeans
from sklearn.cluster import MiniBatchKMeans as SKMiniBatchKMeans
from sklearn.datasets import make_blobs

import oclclust as oc
from oclclust.runtime.validation import NotFittedError

ESTIMATORS = [(oc.KMeans, SKKMeans), (oc.MiniBatchKMeans, SKMiniBatchKMeans)]


def blobs(n=600, d=6, seed=0):
    return make_blobs(n, n_features=d, centers=5, random_state=seed)[0]


def sparse_blobs(n=400, d=30, seed=0, density=0.2):
    return sp.random(n, d, density=density, format="csr", random_state=seed,
                     data_rvs=np.random.default_rng(seed).standard_normal)


def first_rows_init(X, n_clusters, random_state):
    """A callable init that draws from the random state it is given."""
    rows = random_state.choice(X.shape[0], n_clusters, replace=False)
    return X[rows].toarray() if sp.issparse(X) else X[rows]


def fitted_pair(ours, ref, kw, X, devices):
    return ours(devices=devices, **kw).fit(X), ref(**kw).fit(X)


@pytest.mark.parametrize("ours,ref", ESTIMATORS, ids=["KMeans", "MiniBatchKMeans"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("n_init", ["auto", 2])
def test_callable_init_as_sklearn(devices, ours, ref, sparse, n_init):
    X = sparse_blobs() if sparse else blobs()
    kw = dict(n_clusters=5, init=first_rows_init, n_init=n_init, random_state=4, max_iter=30)
    if ref is SKMiniBatchKMeans:
        kw["batch_size"] = 100
    a, b = fitted_pair(ours, ref, kw, X, devices)
    assert a._n_init == b._n_init
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-9, atol=1e-12)
    assert np.array_equal(a.labels_, b.labels_)


@pytest.mark.parametrize("ours", [oc.KMeans, oc.MiniBatchKMeans])
@pytest.mark.parametrize("bad,match", [
    (lambda X, k, random_state: X[:k - 1], "does not match the number of clusters"),
    (lambda X, k, random_state: X[:k, :-1], "does not match the number of features"),
    (lambda X, k, random_state: np.full((k, X.shape[1]), np.nan), "NaN or infinity")])
def test_a_bad_callable_init_is_refused(devices, ours, bad, match):
    with pytest.raises(ValueError, match=match):
        ours(n_clusters=4, init=bad, devices=devices).fit(blobs())


@pytest.mark.parametrize("init", ["k-means++", "random", "array"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("params", [dict(), dict(reassignment_ratio=0.3, tol=1e-3)])
def test_sparse_minibatch_as_sklearn(devices, init, dtype, params):
    X = sparse_blobs().astype(dtype)
    init = X[:5].toarray() if init == "array" else init
    kw = dict(n_clusters=5, init=init, batch_size=64, random_state=2, max_iter=10, **params)
    a, b = fitted_pair(oc.MiniBatchKMeans, SKMiniBatchKMeans, kw, X, devices)
    assert a.n_steps_ == b.n_steps_
    rtol = 1e-9 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=rtol, atol=rtol)
    assert a.cluster_centers_.dtype == b.cluster_centers_.dtype
    assert np.array_equal(a.labels_, b.labels_)
    assert np.array_equal(a.predict(X), b.predict(X))
    np.testing.assert_allclose(a.transform(X[:10]), b.transform(X[:10]), rtol=rtol)
    assert a.score(X) == pytest.approx(b.score(X), rel=rtol)


def test_sparse_partial_fit_as_sklearn(devices):
    X = sparse_blobs(600)
    a = oc.MiniBatchKMeans(5, random_state=0, devices=devices)
    b = SKMiniBatchKMeans(5, random_state=0)
    for start in range(0, 600, 200):
        a.partial_fit(X[start:start + 200])
        b.partial_fit(X[start:start + 200])
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("ours", [oc.KMeans, oc.MiniBatchKMeans])
def test_k_means_parallel_on_sparse_rows_is_refused(devices, ours):
    with pytest.raises(ValueError, match="k-means\\|\\|"):
        ours(n_clusters=3, init="k-means||", devices=devices).fit(sparse_blobs())


def test_elkan_is_lloyd(devices):
    X = blobs()
    lloyd = oc.KMeans(5, random_state=1, devices=devices).fit(X)
    elkan = oc.KMeans(5, random_state=1, algorithm="elkan", copy_x=False,
                      devices=devices).fit(X)
    assert np.array_equal(lloyd.cluster_centers_, elkan.cluster_centers_)
    with pytest.warns(RuntimeWarning, match="elkan.*single cluster"):
        oc.KMeans(1, algorithm="elkan", devices=devices).fit(X)
    with pytest.raises(ValueError, match="'algorithm' parameter"):
        oc.KMeans(2, algorithm="full", devices=devices).fit(X)


@pytest.mark.parametrize("ours,ref", ESTIMATORS, ids=["KMeans", "MiniBatchKMeans"])
def test_feature_names_out_as_sklearn(devices, ours, ref):
    X = blobs()
    a, b = fitted_pair(ours, ref, dict(n_clusters=3, random_state=0), X, devices)
    assert np.array_equal(a.get_feature_names_out(), b.get_feature_names_out())
    assert a.get_feature_names_out().dtype == object
    with pytest.raises(ValueError, match="input_features"):
        a.get_feature_names_out(["x"])
    with pytest.raises(NotFittedError):
        ours(n_clusters=3, devices=devices).get_feature_names_out()


@pytest.mark.parametrize("tol,line", [(0, "strict convergence"),
                                      (1e-2, "center shift .* within tolerance")])
def test_kmeans_verbose_lines_as_sklearn(devices, capsys, tol, line):
    oc.KMeans(4, init="random", n_init=1, tol=tol, random_state=0, verbose=1,
              devices=devices).fit(blobs())
    out = capsys.readouterr().out
    for expected in ("Initialization complete", r"Iteration [0-9]+, inertia", line):
        assert re.search(expected, out)


@pytest.mark.parametrize("params,line", [
    (dict(tol=1e-4, max_no_improvement=None), "Converged \\(small centers change\\)"),
    (dict(tol=0, max_no_improvement=2), "Converged \\(lack of improvement in inertia\\)")])
def test_minibatch_verbose_lines_as_sklearn(devices, capsys, params, line):
    oc.MiniBatchKMeans(4, batch_size=50, max_iter=50, random_state=0, verbose=1,
                       devices=devices, **params).fit(blobs())
    assert re.search(line, capsys.readouterr().out)


def test_small_init_size_warns_as_sklearn(devices):
    with pytest.warns(RuntimeWarning, match="init_size=3 should be larger than n_clusters=5"):
        km = oc.MiniBatchKMeans(5, init_size=3, devices=devices).fit(blobs())
    assert km._init_size == 15
