"""The host's graph work on the MST's edges (passes/mst_graph.py): the
ties="any" order against lexsort's, a Boruvka round's components against
scipy's connected_components (labels included)."""
import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

import oclclust.passes.mst_graph as mst_graph


@pytest.mark.parametrize("levels", [3, 50, 10**6])
@pytest.mark.parametrize("m", [0, 1, 2, 1000])
def test_edge_order_is_lexsorts(levels, m):
    """ties="any"'s order of the edges: lexsort's by (w, lo, hi), with few
    and many tied weights (-0.0 among the zeros)."""
    rng = np.random.default_rng(m + levels)
    n = 2 * m + 2
    lo = rng.integers(0, n // 2, m)
    hi = lo + 1 + rng.integers(0, n // 2, m)
    w = rng.integers(0, levels, m) / 7.0
    w[rng.random(m) < 0.1] = -0.0
    order = mst_graph.edge_order(n, lo, hi, w)
    # keys lo * n + hi may repeat here, where a tree's cannot: compare keys
    want = np.lexsort((hi, lo, w))
    assert np.array_equal(w[order], w[want])
    assert np.array_equal(lo[order] * n + hi[order], lo[want] * n + hi[want])


@pytest.mark.parametrize("cycle", [False, True])
@pytest.mark.parametrize("ncomp", [2, 3, 50, 5000])
def test_joined_is_connected_components(ncomp, cycle):
    """A Boruvka round's components (pointer jumping over each component's
    choice) numbered as scipy's connected_components numbers them; a
    longer cycle (no round makes one) through scipy's search."""
    rng = np.random.default_rng(ncomp)
    perm = rng.permutation(ncomp).astype(np.int32)
    chosen = np.empty(ncomp, np.int32)         # toward an earlier one: a forest
    chosen[perm[1:]] = perm[(rng.random(ncomp - 1) * np.arange(1, ncomp)).astype(np.int64)]
    chosen[perm[0]] = perm[1]                  # and the pair that chose each other
    if cycle and ncomp >= 3:
        chosen[perm[:3]] = perm[[1, 2, 0]]
    chooser = np.flatnonzero(rng.random(ncomp) < 0.8).astype(np.int32)
    chooser = np.union1d(chooser, perm[:3]).astype(np.int32)
    count, label = mst_graph.joined(ncomp, chooser, chosen[chooser])
    graph = coo_matrix((np.ones(chooser.size), (chooser, chosen[chooser])), shape=(ncomp, ncomp))
    want_count, want = connected_components(graph, directed=False)
    assert count == want_count
    assert np.array_equal(label, want)
