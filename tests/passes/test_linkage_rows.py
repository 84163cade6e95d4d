"""Ward linkage on the rows (passes/linkage_rows.py): scipy's merges, its
heights to rounding, where the condensed matrix does not fit the device."""
import numpy as np
import pytest
from scipy.cluster import hierarchy

import oclclust as oc
from oclclust.cluster import hierarchical as hier
from oclclust.passes.linkage_rows import ward_rows


def rows(kind, n, d, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "blobs":
        return rng.normal(size=(n, d)) + rng.integers(0, 4, (n, 1)) * 5
    if kind == "duplicates":      # every row twice: zero-height merges, ties to the lower index
        half = rng.normal(size=(n // 2, d))
        return np.concatenate([half, half])[rng.permutation(2 * (n // 2))]
    return rng.uniform(size=(n, d))


def assert_scipys(Z, X):
    want = hierarchy.linkage(X, "ward")
    np.testing.assert_array_equal(Z[:, [0, 1, 3]], want[:, [0, 1, 3]])
    np.testing.assert_allclose(Z[:, 2], want[:, 2], rtol=1e-12, atol=1e-12)


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
    return [p.replace(global_mem_size=2**20, memory_fraction=0.002) for p in devices]


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
    with pytest.raises(MemoryError, match="single and ward linkage of observations run"):
        oc.linkage(X, "average", devices=small_budget)
