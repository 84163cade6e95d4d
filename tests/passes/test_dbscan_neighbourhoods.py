"""DBSCAN's device passes (passes/dbscan.py) against numpy: weighted counts
within eps and the least label within eps, on ragged row counts, with the
eps-graph stored and without it."""
import numpy as np
import pytest
from scipy.spatial.distance import cdist

from oclclust.passes.linkage import plan_for
from oclclust.passes.dbscan import Neighbourhoods


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev"])
@pytest.mark.parametrize("n,d", [(1, 1), (63, 2), (130, 5)])
@pytest.mark.parametrize("graph", [True, False], ids=["graph", "no-graph"])
@pytest.mark.covering(1)
def test_counts_and_least_labels_equal_numpy(devices, metric, n, d, graph):
    rng = np.random.default_rng(n)
    X = rng.integers(0, 4, (n, d)).astype(float)          # distances exactly at eps
    eps = 1.0
    near = cdist(X, X, metric) <= eps
    hoods = Neighbourhoods(plan_for(devices), X, eps, metric, graph=graph)
    w = rng.uniform(0, 2, n)
    np.testing.assert_allclose(hoods.counts(w), near @ w, rtol=1e-12)
    assert np.array_equal(hoods.counts(), near.sum(axis=1))
    assert (hoods.graph is not None) == graph
    if graph:   # its rows: each row's neighbours, ascending
        start, nbr = (a.get() for a in hoods.graph)
        assert np.array_equal(nbr[:start[-1]], np.nonzero(near)[1])
        assert np.array_equal(start, np.concatenate([[0], np.cumsum(near.sum(axis=1))]))
    label = np.where(rng.random(n) < 0.5, rng.integers(0, n, n), -1)
    want = rng.random(n) < 0.7
    masked = np.where(near & (label >= 0)[None, :], label[None, :], np.iinfo(np.int64).max)
    least = np.minimum(masked.min(axis=1), np.where(label >= 0, label, np.iinfo(np.int64).max))
    expected = np.where(want, np.where(least == np.iinfo(np.int64).max, -1, least), label)
    assert np.array_equal(hoods.min_label(label, want), expected)


def test_a_graph_past_the_budget_is_not_stored(devices, monkeypatch):
    import oclclust.passes.dbscan as dbscan
    monkeypatch.setattr(dbscan, "GRAPH_SHARE", 0.0)
    X = np.arange(20.0)[:, None]
    hoods = Neighbourhoods(plan_for(devices), X, 1.5, "euclidean")
    assert np.array_equal(hoods.counts(), [2] + [3] * 18 + [2])
    assert hoods.graph is None
    assert np.array_equal(hoods.min_label(np.arange(20), np.ones(20, bool)),
                          np.maximum(np.arange(20) - 1, 0))
