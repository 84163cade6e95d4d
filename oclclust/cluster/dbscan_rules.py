"""DBSCAN's rules over an explicit eps-neighbourhood graph (the host paths:
precomputed distances, scipy metrics, callables, sparse rows).

The same rules as the device path (cluster/dbscan.py): a core row has a
weighted neighbour count >= min_samples; the core rows' components are
numbered by their least core row (scikit-learn's numbering: its expansion
starts a cluster at each unlabelled core row in index order); a border row
takes the lowest numbered cluster among the core rows that have it as a
neighbour (the first cluster whose expansion reaches it).
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
    # components of the core rows (a symmetric graph: weak components are its components)
    _, comp = connected_components(hood[rows][:, rows], directed=True, connection="weak")
    _, first = np.unique(comp, return_index=True)     # each component's least core row
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
