"""HDBSCAN's condensed tree from a single-linkage tree, in scikit-learn's
row order (its _hdbscan/_tree.pyx condense_tree), without a loop over the
nodes: scipy's traversals of the merge tree and numpy."""
import numpy as np

from .traversal import breadth_first, preorder


def _cluster_heads(goes_on, heads, m):
    """For each merge of a cluster, the merge that starts it (-1 where none):
    goes_on[i] is the merge that continues merge i's cluster below it (-1
    where none), *heads* the merges that start clusters; a preorder of the
    chains from the heads lists each head's chain right after it."""
    has = goes_on >= 0
    pre, chain = preorder(has.astype(np.int64), goes_on[has], heads)
    out = np.full(m, -1, np.int64)
    out[pre] = heads[chain]
    return out


def _jump(step, todo, done):
    """step[x] followed from each x in *todo* until a node where done holds
    (pointer jumping, in place: the chains must be short or few)."""
    while todo.shape[0]:
        step[todo] = step[step[todo]]
        todo = todo[~done[step[todo]]]
    return step


def condense(tree, min_cluster_size):
    """The condensed tree (parent, child, lambda, child size) rows, in
    scikit-learn's order: internal nodes breadth first from the root; a
    side smaller than min_cluster_size falls out as points (breadth first
    under it), two big sides are two new clusters (numbered n+1, n+2, ... in
    that order), the root is cluster n.

    Without a loop over the nodes: the nodes visited are the root and the
    merges of min_cluster_size points or more; each of their children that
    is small or one of two big ones starts a unit (a falling side or a new
    cluster), the one big child of the others goes on as its parent's
    cluster.  Each visited merge's cluster comes from one walk down the
    clusters' chains, each point's falling side from pointer jumping (fewer
    than min_cluster_size steps up).  The rows are the units breadth first,
    one row for a new cluster, a falling side's points breadth first."""
    left, right, value, size = (np.asarray(t) for t in tree)
    m = left.shape[0]
    n = m + 1
    if m == 0:
        return (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64),
                np.empty(0, np.int64))
    left, right = left.astype(np.int64, copy=False), right.astype(np.int64, copy=False)
    root = 2 * n - 2
    sizes = np.ones(2 * n - 1, np.int64)
    sizes[n:] = size
    big = sizes >= min_cluster_size
    parent = np.empty(2 * n - 1, np.int64)
    parent[left] = parent[right] = np.arange(n, 2 * n - 1)
    parent[root] = root
    visited = big[n:].copy()
    visited[-1] = True                      # the root, whatever its size
    both_big = big[left] & big[right]
    up = parent[:-1] - n                    # every node but the root: its parent's merge
    start = np.ones(2 * n - 1, bool)
    start[:-1] = visited[up] & (~big[:-1] | both_big[up])
    new_cluster = start & big
    new_cluster[root] = False
    # each visited merge's cluster: the chains of one big child
    goes_on = np.where(visited & ~both_big, np.where(big[left], left, right), -1)
    goes_on = np.where(goes_on >= n, goes_on - n, -1)
    head = _cluster_heads(goes_on, np.flatnonzero(new_cluster[n:] | (np.arange(m) == m - 1)),
                          m) + n
    bfs = breadth_first(left, right, n)
    label = np.empty(2 * n - 1, np.int64)
    label[root] = n
    tops = bfs[1:][start[bfs[1:]]]          # the units, breadth first
    clusters = big[tops]
    label[tops[clusters]] = np.arange(n + 1, n + 1 + int(clusters.sum()))
    unit_size = sizes[tops]
    count = np.where(clusters, 1, unit_size)
    row_node = np.repeat(tops, count)       # a new cluster, or a point falling alone
    several = count > 1
    if several.any():
        # the points of the falling sides of several points, side by side;
        # a point's side: its top, fewer than min_cluster_size steps up
        falling = np.flatnonzero(~start[:-1] & ~visited[up])
        unit = _jump(np.where(start, np.arange(2 * n - 1), parent), falling, start)
        place = np.empty(2 * n - 1, np.int64)
        place[tops[several]] = np.arange(int(several.sum()))
        points = bfs[bfs < n]
        points = points[unit[points] >= n]
        row_node[np.repeat(several, count)] = points[
            np.argsort(place[unit[points]], kind="stable")]
    # each unit's parent, lambda and size, then repeated over its rows: the
    # gathers run over the units, the rows (millions, one a point) are
    # written in order
    row_node[np.repeat(clusters, count)] = label[tops[clusters]]   # one row each
    merge = parent[tops] - n
    dist = np.asarray(value, np.float64)[merge]
    with np.errstate(divide="ignore"):
        lam = np.where(dist > 0.0, 1.0 / dist, np.inf)
    return (np.repeat(label[head[merge]], count), row_node, np.repeat(lam, count),
            np.repeat(np.where(clusters, unit_size, 1), count))
