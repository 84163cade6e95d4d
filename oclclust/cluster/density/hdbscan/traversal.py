"""Walks of merge trees and forests by scipy's traversals (csgraph), for
the host's HDBSCAN tree: a node's children in a given order, each root's
tree in one piece."""
import numpy as np


def index_type(size):
    """The index type of successor_graph's matrix for *size* entries."""
    return np.int32 if size < np.iinfo(np.int32).max else np.int64


def successor_graph(counts, indices):
    """The graph whose vertex v has the next counts[v] of *indices* as its
    successors, in that order (scipy's traversals take them so)."""
    from scipy.sparse import csr_matrix
    index = index_type(max(indices.shape[0], counts.shape[0]))
    indptr = np.zeros(counts.shape[0] + 1, index)
    np.cumsum(counts, out=indptr[1:])
    return csr_matrix((np.ones(indices.shape[0]), indices.astype(index, copy=False), indptr),
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


def breadth_first(left, right, n, within=None):
    """The nodes of the merge tree (merge i is node n + i, its children
    left[i] and right[i]) breadth first from the root, left before right:
    scipy's traversal takes a vertex's successors in the order they are
    stored (successor_graph), so the nodes are the vertices, merge i's row
    holding left[i], right[i], each point's none.

    *within* (a mask over the merges holding each one's parent too: a top
    part of the tree): only those merges' nodes, the walk over them alone
    (its vertices the merges, a merge's successors its children within) --
    the order the whole walk lists them in, the points and the merges below
    never stored nor walked."""
    from scipy.sparse.csgraph import breadth_first_order
    m = left.shape[0]
    if within is not None:
        inside = np.zeros(n + m, bool)            # by node: the merges within
        inside[n:] = within
        # the children's nodes in successor_graph's index type: no copy there
        inner = np.empty((m, 2), index_type(n + m))
        inner[:, 0], inner[:, 1] = left, right
        kept = inside[inner]
        counts = np.add(kept[:, 0], kept[:, 1], dtype=np.int64)
        inner = inner[kept]
        inner -= n                                   # their merges: the vertices
        order = breadth_first_order(successor_graph(counts, inner), m - 1, directed=True,
                                    return_predecessors=False)
        return order.astype(np.int64) + n
    counts = np.zeros(n + m, np.int64)
    counts[n:] = 2
    children = np.empty(2 * m, np.int64)
    children[0::2], children[1::2] = left, right
    return breadth_first_order(successor_graph(counts, children), n + m - 1, directed=True,
                               return_predecessors=False).astype(np.int64, copy=False)
