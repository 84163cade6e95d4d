"""Walks of merge trees and forests by scipy's traversals (csgraph), for
the host's HDBSCAN tree: a node's children in a given order, each root's
tree in one piece."""
import numpy as np


def successor_graph(counts, indices):
    """The graph whose vertex v has the next counts[v] of *indices* as its
    successors, in that order (scipy's traversals take them so)."""
    from scipy.sparse import csr_matrix
    index = (np.int32 if max(indices.shape[0], counts.shape[0]) < np.iinfo(np.int32).max
             else np.int64)
    indptr = np.zeros(counts.shape[0] + 1, index)
    np.cumsum(counts, out=indptr[1:])
    return csr_matrix((np.ones(indices.shape[0]), indices.astype(index), indptr),
                      shape=(counts.shape[0],) * 2)


def preorder(counts, indices, roots):
    """The vertices below each of *roots* in turn, depth first (preorder),
    in the forest whose vertex v has the next counts[v] of *indices* as its
    children, and for each the number of the root it lies below.  One scipy
    walk: a link vertex leads to root k, then to the next link, so the walk
    lists root k's whole tree right after it (one vertex leading to every
    root would be rescanned on each return to it)."""
    from scipy.sparse.csgraph import depth_first_order
    v, k = counts.shape[0], roots.shape[0]
    links = np.empty(2 * k - 1, np.int64)
    links[0::2], links[1::2] = roots, v + 1 + np.arange(k - 1)
    link_counts = np.full(k, 2)
    link_counts[-1] = 1
    graph = successor_graph(np.concatenate([counts, link_counts]),
                            np.concatenate([indices, links]))
    pre = depth_first_order(graph, v, directed=True, return_predecessors=False)
    tree = np.cumsum(pre >= v) - 1                 # the link last passed: the tree
    inside = pre < v
    return pre[inside], tree[inside]


def breadth_first(left, right, n):
    """The nodes of the merge tree (merge i is node n + i, its children
    left[i] and right[i]) breadth first from the root, left before right:
    scipy's traversal takes a vertex's successors in the order they are
    stored (successor_graph), so the nodes are the vertices, merge i's row
    holding left[i], right[i], each point's none."""
    from scipy.sparse.csgraph import breadth_first_order
    m = left.shape[0]
    counts = np.zeros(n + m, np.int64)
    counts[n:] = 2
    children = np.empty(2 * m, np.int64)
    children[0::2], children[1::2] = left, right
    return breadth_first_order(successor_graph(counts, children), n + m - 1, directed=True,
                               return_predecessors=False).astype(np.int64, copy=False)
