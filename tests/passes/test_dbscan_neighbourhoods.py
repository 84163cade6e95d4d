"""DBSCAN's device passes (passes/dbscan.py) against numpy: weighted counts
within eps and the least label within eps, on ragged row counts."""
import numpy as np
import pytest
from scipy.spatial.distance import cdist

from oclclust.cluster.hierarchical import _plan
from oclclust.passes.dbscan import Neighbourhoods


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev"])
@pytest.mark.parametrize("n,d", [(1, 1), (63, 2), (130, 5)])
def test_counts_and_least_labels_equal_numpy(devices, metric, n, d):
    rng = np.random.default_rng(n)
    X = rng.integers(0, 4, (n, d)).astype(float)          # distances exactly at eps
    eps = 1.0
    near = cdist(X, X, metric) <= eps
    hoods = Neighbourhoods(_plan(devices), X, eps, metric)
    w = rng.uniform(0, 2, n)
    np.testing.assert_allclose(hoods.counts(w), near @ w, rtol=1e-12)
    assert np.array_equal(hoods.counts(), near.sum(axis=1))
    label = np.where(rng.random(n) < 0.5, rng.integers(0, n, n), -1)
    want = rng.random(n) < 0.7
    masked = np.where(near & (label >= 0)[None, :], label[None, :], np.iinfo(np.int64).max)
    least = np.minimum(masked.min(axis=1), np.where(label >= 0, label, np.iinfo(np.int64).max))
    expected = np.where(want, np.where(least == np.iinfo(np.int64).max, -1, least), label)
    assert np.array_equal(hoods.min_label(label, want), expected)
