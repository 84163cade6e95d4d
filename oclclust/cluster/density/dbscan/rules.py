"""DBSCAN's rules over an explicit eps-neighbourhood graph (the host paths:
precomputed distances, scipy metrics, callables, sparse rows).

The same rules as the device path (dbscan.py): a core row has a
weighted neighbour count >= min_samples; the core rows' components are
numbered by their least core row (scikit-learn's numbering: its expansion
starts a cluster at each unlabelled core row in index order); a border row
takes the lowest numbered cluster among the core rows that have it as a
neighbour (the first cluster whose expansion reaches it).

A precomputed sparse matrix may be asymmetric (a k-neighbours graph):
scikit-learn's expansion then follows its rows' directions, and a core row
belongs to the cluster of the least core row that reaches it (that row was a
seed: a lesser one reaching it would reach the row too); the least reaching
row is found by rounds of the least label over the core rows' edges, with
pointer jumping, as the device path's rounds.  A symmetric graph's clusters
are its components (scipy's connected_components).
"""
import numpy as np
from scipy.sparse.csgraph import connected_components


def graph_labels(graph, min_samples, sample_weight=None):
    """(labels, core mask) of the rows of *graph*, an n x n CSR matrix whose
    row i stores i's eps-neighbours (values unused)."""
    n = graph.shape[0]
    hood = graph.astype(bool).astype(np.float64)   # explicit zeros are neighbours too
    counts = hood @ (np.ones(n) if sample_weight is None else sample_weight)
    core = counts >= min_samples
    labels = np.full(n, -1, dtype=np.intp)
    rows = np.flatnonzero(core)
    if not len(rows):
        return labels, core
    inner = hood[rows][:, rows]
    if (inner != inner.T).nnz:
        comp = _least_reaching(inner)
    else:
        _, comp = connected_components(inner, directed=False)
    # each cluster's least core row; comp as 0 .. clusters - 1
    _, first, comp = np.unique(comp, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.intp)
    rank[np.argsort(first)] = np.arange(len(first))
    labels[rows] = rank[comp]
    # border rows: the least number among the core rows that reach them
    reach = hood[rows].tocoo()
    border = ~core[reach.col]
    best = np.full(n, np.iinfo(np.intp).max)
    np.minimum.at(best, reach.col[border], labels[rows][reach.row[border]])
    labels[~core] = np.where(best[~core] < np.iinfo(np.intp).max, best[~core], -1)
    return labels, core


def _least_reaching(graph):
    """For each node of a directed *graph* (CSR, edge i -> j where row i
    stores j), the least node with a path to it (itself included)."""
    edges = graph.tocoo()
    least = np.arange(graph.shape[0])
    while True:
        lowered = least.copy()
        np.minimum.at(lowered, edges.col, least[edges.row])
        while True:       # pointer jumping: what reaches a node's least also reaches it
            jumped = lowered[lowered]
            if np.array_equal(jumped, lowered):
                break
            lowered = jumped
        if np.array_equal(lowered, least):
            return least
        least = lowered
