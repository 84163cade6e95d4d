"""oc.DBSCAN against scikit-learn's DBSCAN on the same data: the same labels
(cluster numbers included), core samples and components."""
import numpy as np
import pytest
from sklearn.cluster import DBSCAN as SKDBSCAN
from sklearn.datasets import make_blobs

import oclclust as oc
from conftest import sklearn_checks


def blobs(n=500, d=2, seed=0):
    return make_blobs(n, n_features=d, centers=5, cluster_std=1.0, random_state=seed)[0]


def grid():
    """Integer points: many distances exactly eps (1.0)."""
    return np.array([[i, j] for i in range(9) for j in range(7)], float)


@pytest.mark.parametrize("data", ["blobs", "blobs3d", "grid"])
@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "chebyshev"])
@pytest.mark.parametrize("eps,min_samples", [(0.5, 5), (1.0, 4), (3.0, 30), (0.05, 2)])
def test_labels_equal_sklearns(devices, data, metric, eps, min_samples):
    X = {"blobs": blobs(), "blobs3d": blobs(301, 3, seed=2), "grid": grid()}[data]
    ours = oc.DBSCAN(eps, min_samples=min_samples, metric=metric, devices=devices).fit(X)
    ref = SKDBSCAN(eps=eps, min_samples=min_samples, metric=metric).fit(X)
    assert np.array_equal(ours.labels_, ref.labels_)
    assert np.array_equal(ours.core_sample_indices_, ref.core_sample_indices_)
    assert np.array_equal(ours.components_, ref.components_)


@pytest.mark.parametrize("eps", [0.4, 1.0])
def test_sample_weight_counts_as_sklearns(devices, eps):
    X = blobs(400)
    w = np.random.default_rng(1).integers(0, 4, len(X)).astype(float)
    ours = oc.DBSCAN(eps, min_samples=6, devices=devices).fit(X, sample_weight=w)
    ref = SKDBSCAN(eps=eps, min_samples=6).fit(X, sample_weight=w)
    assert np.array_equal(ours.labels_, ref.labels_)
    assert np.array_equal(ours.fit_predict(X, sample_weight=w), ref.labels_)


def test_duplicates_all_noise_and_one_cluster(devices):
    X = np.repeat(blobs(60), 3, axis=0)
    for eps, ms in ((1e-9, 3), (1e-9, 4), (100.0, 2)):
        ours = oc.DBSCAN(eps, min_samples=ms, devices=devices).fit(X)
        assert np.array_equal(ours.labels_, SKDBSCAN(eps=eps, min_samples=ms).fit(X).labels_)


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
