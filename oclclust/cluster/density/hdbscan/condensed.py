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


def _falling_points(left, right, n, sides, rows, out):
    """out[rows[k]:] <- the points of falling side k (merge node sides[k],
    fewer than min_cluster_size points) breadth first, as a walk of the
    whole tree meets them: one level of every side at a time (fewer levels
    than min_cluster_size), each level's nodes side by side in the order
    of the sides and, within one, left before right; a side's points at a
    level follow those it had at the levels above."""
    filled = np.zeros(sides.shape[0], np.int64)
    nodes, side = sides, np.arange(sides.shape[0])
    while nodes.shape[0]:
        below = np.empty((nodes.shape[0], 2), np.int64)
        below[:, 0], below[:, 1] = left[nodes - n], right[nodes - n]
        below = below.ravel()
        side = np.repeat(side, 2)
        point = below < n
        points, of = below[point], side[point]
        if points.shape[0]:
            # each side's points of this level are one run (of ascends)
            first = np.flatnonzero(np.r_[True, of[1:] != of[:-1]])
            runs = np.diff(np.r_[first, points.shape[0]])
            rank = np.arange(points.shape[0]) - np.repeat(first, runs)
            out[rows[of] + filled[of] + rank] = points
            filled[of[first]] += runs
        nodes, side = below[~point], side[~point]
    return out


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
    clusters' chains, the units' order from a walk of the visited merges
    alone, the falling sides' points from a walk of all sides at once, a
    level at a time (fewer than min_cluster_size levels).  The rows are the
    units breadth first, one row for a new cluster, a falling side's points
    breadth first."""
    left, right, value, size = (np.asarray(t) for t in tree)
    m = left.shape[0]
    n = m + 1
    if m == 0:
        return (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64),
                np.empty(0, np.int64))
    left, right = left.astype(np.int64, copy=False), right.astype(np.int64, copy=False)
    sizes = np.ones(2 * n - 1, np.int64)
    sizes[n:] = size
    big = sizes >= min_cluster_size
    big_left, big_right = big[left], big[right]
    visited = big[n:].copy()
    visited[-1] = True                      # the root, whatever its size
    both_big = big_left & big_right
    # the merges that start clusters: the root and the merges under a
    # visited merge of two big sides (each of them a new cluster)
    splits = visited & both_big
    starts = np.zeros(m, bool)
    starts[-1] = True
    for side in (left[splits], right[splits]):
        starts[side[side >= n] - n] = True
    # each visited merge's cluster: the chains of one big child
    goes_on = np.where(visited & ~both_big, np.where(big_left, left, right), -1)
    goes_on = np.where(goes_on >= n, goes_on - n, -1)
    head = _cluster_heads(goes_on, np.flatnonzero(starts), m) + n
    # the units breadth first: the children of the visited merges (a top
    # part of the tree: a big merge's parent is bigger) taken breadth first,
    # left before right -- the whole walk's order, from a walk of that part;
    # a child starts a unit where it is small or its sibling big too
    walked = breadth_first(left, right, n, visited) - n
    kids = np.empty((walked.shape[0], 2), np.int64)
    kids[:, 0], kids[:, 1] = left[walked], right[walked]
    kid_big = np.empty(kids.shape, bool)
    kid_big[:, 0], kid_big[:, 1] = big_left[walked], big_right[walked]
    unit = ~kid_big
    unit |= both_big[walked][:, None]
    unit = unit.ravel()
    tops, clusters = kids.ravel()[unit], kid_big.ravel()[unit]
    merge = np.repeat(walked, 2)[unit]      # each unit's parent merge
    label = np.empty(2 * n - 1, np.int64)
    label[2 * n - 2] = n                    # the root
    label[tops[clusters]] = np.arange(n + 1, n + 1 + int(clusters.sum()))
    unit_size = sizes[tops]
    count = np.where(clusters, 1, unit_size)
    # a new cluster's row, or a point falling alone; then the points of the
    # sides of several (not new clusters: rows of their own)
    unit_node = tops.copy()
    unit_node[clusters] = label[tops[clusters]]
    row_node = np.repeat(unit_node, count)
    first_row = np.cumsum(count) - count
    several = count > 1
    if several.any():
        _falling_points(left, right, n, tops[several], first_row[several], row_node)
    # each unit's parent, lambda and size, then repeated over its rows: the
    # gathers run over the units, the rows (millions, one a point) are
    # written in order; lambda in place (1 / 0 and below: inf)
    lam = np.asarray(value, np.float64)[merge]
    positive = lam > 0.0
    np.divide(1.0, lam, out=lam, where=positive)
    lam[~positive] = np.inf
    row_size = np.ones(row_node.shape[0], np.int64)    # a point's 1, a new cluster's size
    row_size[first_row[clusters]] = unit_size[clusters]
    return np.repeat(label[head[merge]], count), row_node, np.repeat(lam, count), row_size
