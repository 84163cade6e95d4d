"""The host's graph work on a minimum spanning tree's edges (passes/mst.py):
the components a Boruvka round joins, the tree's edges in the order
ties="any" returns them, and each edge's end nearer node 0.  O(n) passes
of numpy over the rows, no graph search where one is not needed.
"""
import numpy as np


def joined(ncomp, chooser, chosen):
    """The components after a Boruvka round, as scipy's connected_components
    (undirected) labels them: (count, label of each of the *ncomp*), numbered
    by their least member.  Each component *chooser* chose an edge to
    *chosen*: a forest of pointers but for pairs that chose each other
    (the edges compare by a total order: no longer cycle), so pointer
    jumping finds each one's root in a few passes over the components
    (scipy's graph search over them took three times as long at 1M rows);
    scipy's search where the pointers do not settle (no such round seen)."""
    up = np.arange(ncomp, dtype=np.int32)
    up[chooser] = chosen
    me = np.arange(ncomp, dtype=np.int32)
    mutual = (up[up] == me) & (me < up)          # the lower of each pair its root
    up[mutual] = me[mutual]
    for _ in range(64):
        top = up[up]
        if np.array_equal(top, up):
            break
        up = top
    else:
        from scipy.sparse import coo_matrix      # here: a fast `import oclclust`
        from scipy.sparse.csgraph import connected_components
        graph = coo_matrix((np.ones(chooser.size, np.int8), (chooser, chosen)),
                           shape=(ncomp, ncomp))
        count, label = connected_components(graph, directed=False)
        return count, label.astype(np.int32, copy=False)
    least = np.full(ncomp, ncomp, np.int32)      # each root's least member
    np.minimum.at(least, up, me)
    head = least[up] == me                       # the least member of its own
    number = np.cumsum(head, dtype=np.int32) - 1
    return int(number[-1]) + 1, number[least[up]]


def edge_order(n, lo, hi, w):
    """The order of the edges by (w, lo, hi), lexsort's: one sort by w,
    then only the runs of tied weights sorted by (w, lo, hi) in their
    places (a tenth of HDBSCAN's edges at 1M rows; two stable sorts of
    every edge took twice as long)."""
    order = np.argsort(w)
    ws = w[order]
    tie = np.zeros(len(ws), bool)
    tie[1:] = ws[1:] == ws[:-1]
    tie[:-1] |= tie[1:]
    at = np.flatnonzero(tie)
    if at.size:
        sub = order[at]
        order[at] = sub[np.lexsort((lo[sub] * n + hi[sub], w[sub]))]
    return order


def toward_root(n, lo, hi):
    """Each tree edge as (a, b), a the end nearer node 0: the end Prim's
    algorithm from node 0 reaches first."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import breadth_first_order
    # both directions in one CSR, searched as directed: no transpose (an
    # undirected search's); float64 ones, the search's type: no copy.  A
    # tree's edges hold no duplicates and the search needs no sorted rows:
    # tocsr's sum_duplicates (a sort of every row) is skipped.  At 1M
    # edges 0.12-0.15 -> 0.08 s
    ends = np.concatenate([lo, hi]).astype(np.int32)
    graph = coo_matrix((np.ones(ends.size), (ends, np.roll(ends, lo.size))), shape=(n, n))
    graph.has_canonical_format = True
    _, parent = breadth_first_order(graph.tocsr(), 0, directed=True, return_predecessors=True)
    flip = parent[lo] == hi
    return np.where(flip, hi, lo), np.where(flip, lo, hi)
