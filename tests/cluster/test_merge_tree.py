"""merge_tree.merged_clusters (the vectorised union-find that labels
merges of points: scipy's Z from single linkage's sorted MST edges, scikit-
learn's children, HDBSCAN's single-linkage tree) against a plain union-find
and, through hierarchy.linkage_matrix.label, against scipy.cluster.hierarchy.linkage.

Host code only (no device): scipy's own Prim rows (mst_single_linkage,
rewritten here from its definition) of continuous data, integer grids (ties),
duplicate points (zero heights), chains (each merge absorbs one point: deep
trees, the binary lifting's many levels) and stars; random merge sequences
in every orientation (rooted trees, reversed pairs, mixed: a traversal).
"""
import numpy as np
import pytest
from scipy.cluster import hierarchy
from scipy.spatial.distance import pdist, squareform

from oclclust.cluster.hierarchy.linkage_matrix import label
from oclclust.cluster.merge_tree import merged_clusters

pytestmark = pytest.mark.one_runtime   # host code only: one runtime runs it


def union_find(xs, ys, n):
    """The definition: each merge's two current clusters and its size."""
    parent, size = list(range(2 * n - 1)), [1] * (2 * n - 1)

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x
    left, right, sizes = [], [], []
    for k, (x, y) in enumerate(zip(xs, ys)):
        a, b = find(x), find(y)
        left.append(a)
        right.append(b)
        parent[a] = parent[b] = n + k
        size[n + k] = size[a] + size[b]
        sizes.append(size[n + k])
    return left, right, sizes


def prim_rows(X, metric):
    """scipy's mst_single_linkage: from point 0, each step the unmerged point
    nearest the tree (the lowest index among equals), paired with the point
    added the step before."""
    D = squareform(pdist(X, metric))
    n = len(X)
    merged, best = np.zeros(n, bool), np.full(n, np.inf)
    x, rows = 0, []
    merged[0] = True
    for _ in range(n - 1):
        best = np.where(merged, best, np.minimum(best, D[x]))
        y = int(np.argmin(np.where(merged, np.inf, best)))
        rows.append((x, y, best[y]))
        merged[y] = True
        x = y
    Z = np.zeros((n - 1, 4))
    Z[:, :3] = rows
    return Z[np.argsort(Z[:, 2], kind="mergesort")]


def points(kind, n, seed):
    rng = np.random.RandomState(seed)
    if kind == "random":
        return rng.randn(n, 3)
    if kind == "grid":                              # many equal distances
        return rng.randint(0, 4, (n, 2)).astype(np.float64)
    if kind == "duplicates":                        # zero distances
        return rng.randn(n // 4 + 1, 2)[rng.randint(0, n // 4 + 1, n)]
    if kind == "chain":                             # rising gaps: one absorbing cluster
        return np.cumsum(np.linspace(1, 2, n) + rng.rand(n) * 1e-3)[:, None]
    if kind == "chain_ties":                        # equal gaps
        return np.arange(n, dtype=np.float64)[rng.permutation(n), None]
    if kind == "star":                              # one centre, points on a circle
        t = np.linspace(0, 2 * np.pi, n - 1, endpoint=False)
        return np.r_[[[0.0, 0.0]], np.c_[np.cos(t), np.sin(t)] * (1 + np.arange(n - 1))[:, None]]
    raise ValueError(kind)


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev"])
@pytest.mark.parametrize("kind", ["random", "grid", "duplicates", "chain", "chain_ties", "star"])
@pytest.mark.parametrize("n", [2, 3, 17, 200])
def test_label_of_prim_rows_is_scipys_z(kind, n, metric):
    X = points(kind, n, seed=n)
    np.testing.assert_array_equal(label(prim_rows(X, metric), n),
                                  hierarchy.linkage(X, "single", metric))


def random_merges(n, rng, orient):
    """A random spanning tree's edges in a random order: (xs, ys)."""
    perm = rng.permutation(n)
    earlier = perm[(rng.rand(n - 1) * np.arange(1, n)).astype(np.int64)]
    xs, ys = earlier, perm[1:]                      # xs the parent: a rooted tree
    order = rng.permutation(n - 1)
    xs, ys = xs[order], ys[order]
    if orient == "reversed":
        xs, ys = ys, xs
    elif orient == "mixed":
        swap = rng.rand(n - 1) < 0.5
        xs, ys = np.where(swap, ys, xs), np.where(swap, xs, ys)
    return xs, ys


@pytest.mark.parametrize("orient", ["rooted", "reversed", "mixed"])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 40, 3000])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_merge_sequences(n, seed, orient):
    xs, ys = random_merges(n, np.random.RandomState(seed), orient)
    got = merged_clusters(xs, ys, n)
    for g, r in zip(got, union_find(xs.tolist(), ys.tolist(), n)):
        assert g.dtype == np.int64
        np.testing.assert_array_equal(g, r)


@pytest.mark.parametrize("direction", ["towards_root", "away_from_root", "zigzag"])
def test_deep_chains(direction):
    """A path of 5000 points merged in an order that makes the walks up the
    rooted tree long (towards the root: every merge's top is the far end)."""
    n = 5000
    xs, ys = np.arange(n - 1), np.arange(1, n)        # xs the parent
    if direction == "towards_root":
        order = np.arange(n - 1)[::-1]
    elif direction == "away_from_root":
        order = np.arange(n - 1)
    else:
        order = np.argsort(np.abs(np.arange(n - 1) - n // 2), kind="stable")
    xs, ys = xs[order], ys[order]
    got = merged_clusters(xs, ys, n)
    for g, r in zip(got, union_find(xs.tolist(), ys.tolist(), n)):
        np.testing.assert_array_equal(g, r)


def test_not_a_merge_sequence():
    """Pairs that are no spanning tree: a ValueError, not a wrong tree or a
    loop that never ends (a cycle of 11 points, point 11 apart; pairs that
    leave points 2..4 apart from 0)."""
    k = np.arange(11)
    with pytest.raises(ValueError, match="cycle: not a merge sequence"):
        merged_clusters((k + 1) % 11, k, 12)
    with pytest.raises(ValueError, match="do not join all points: not a merge sequence"):
        merged_clusters(np.array([0, 0, 2, 2]), np.array([1, 1, 3, 4]), 5)
