"""The merge tree of a linkage: each merge's two current clusters and the
merged size from a sequence of merged point pairs (scipy's cluster ids),
shared by the hierarchy (linkage's Z) and HDBSCAN (its single-linkage tree)."""
import numpy as np


def _tree_parents(a, b, n):
    """flip[k]: merge k's point a_k is the child (b_k its parent) in the
    merges' spanning tree rooted at its one vertex that is no child.  The
    callers' trees come rooted already (b_k the later point: Prim's order,
    mst.toward_root): then no traversal."""
    if np.bincount(b, minlength=n).max() <= 1:
        return np.zeros(len(a), bool)
    if np.bincount(a, minlength=n).max() <= 1:
        return np.ones(len(a), bool)
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order
    tree = csr_matrix((np.ones(len(a), np.int8), (a, b)), shape=(n, n))
    reached, parent = breadth_first_order(tree, 0, directed=False, return_predecessors=True)
    if len(reached) != n:
        raise ValueError("the merges do not join all points: not a merge sequence")
    return parent[a] == b


def _tops(a, b, n):
    """(up, pe, point) over the vertices renumbered (below): each vertex's
    nearest proper ancestor with a later merge (pe, the merge of a vertex
    and its parent; the root's: after every merge, and its up itself), by a
    step up and then binary lifting; and each vertex's point.  For merge k
    of a_k (the parent) and b_k = point[v] (k = pe[v]), T_k = up[v].

    The walks run over the vertices renumbered breadth first from the root
    (a vertex's ancestors then lie at lower numbers, its parent's number
    grows with its own): the gathers of parents and of their levels read
    nearly in order, where the points' own numbers (the data's rows, in no
    tree order) would read at random -- past the cache, at millions of
    points, most of the time went there.  The vertices with children come
    first (in that order still): every walk passes only them, so the
    levels hold only them (an MST's leaves are about half its points)."""
    from scipy.sparse import csc_matrix
    from scipy.sparse.csgraph import breadth_first_order
    m = n - 1
    pe = np.full(n, m, np.int64)                  # the root: after every merge
    pe[b] = np.arange(m)
    root = int(np.argmax(pe))
    index = np.int32 if n < np.iinfo(np.int32).max else np.int64
    # the children graph's transpose, each vertex's column holding its
    # parent, is compressed already (every vertex but the root one entry):
    # tocsr's one counting pass then makes the graph, where a matrix of
    # (a, b) pairs would sort each row and sum duplicates as well.  float64
    # weights and int32 indices: csgraph's own types, taken without a copy
    up_of = np.empty(n, index)
    up_of[b] = a
    has = np.ones(n + 1, index)
    has[0], has[root + 1] = 0, 0
    children = csc_matrix((np.ones(m), np.delete(up_of, root), np.cumsum(has, dtype=index)),
                          shape=(n, n)).tocsr()
    order = breadth_first_order(children, root, directed=True, return_predecessors=False)
    if order.shape[0] != n:       # each point a child once, yet some unreached
        raise ValueError("the merges form a cycle: not a merge sequence")
    inner = (np.diff(children.indptr) > 0)[order]
    inners = int(np.count_nonzero(inner))
    order = np.concatenate([order[inner], order[~inner]])
    number = np.empty(n, np.int64)
    number[order] = np.arange(n)
    # each vertex's parent's number, written in the new order (a gather of
    # the parents, not a scatter over the children)
    up_of[root] = root                            # the root's: itself, number 0
    parent = number[up_of[order]]
    pe = pe[order]
    # up[v]: v's nearest proper ancestor with pe > pe[v] (the root's: itself)
    up = parent.copy()
    todo = np.flatnonzero(pe[up] < pe)
    while todo.size:
        # a step up while it ends at least an eighth of the walks (a
        # chain's merges walk far: binary lifting then does better)
        before = todo.size
        up[todo] = parent[up[todo]]
        todo = todo[pe[up[todo]] < pe[todo]]
        if 8 * todo.size > 7 * before:
            break
    if todo.size:
        # level l: (the largest pe of the 2^l vertices from v up) << 32 |
        # v's 2^l-th ancestor; lifting from the highest level down
        low = np.int64(0xFFFFFFFF)
        levels, jump = [(pe[:inners] << 32) | parent[:inners]], parent[:inners].copy()
        while jump.any():
            above = levels[-1][jump]
            np.bitwise_and(above, low, out=jump)
            np.maximum(above, levels[-1], out=above)
            above &= ~low
            above |= jump
            levels.append(above)
        # in place (fresh arrays of this size cost their pages' faults):
        # a step where the largest pe is below the bound, i.e. the level's
        # value below bound << 32
        walk, bound = up[todo], pe[todo] << 32
        step, below = np.empty_like(walk), np.empty(walk.shape, bool)
        for level in reversed(levels):
            np.take(level, walk, out=step)
            np.less(step, bound, out=below)
            np.bitwise_and(step, low, out=walk, where=below)     # the step's ancestor
        up[todo] = walk
    return up, pe, order.astype(np.int64)


def merged_clusters(xs, ys, n):
    """Union-find over the merges of points xs[k], ys[k] of n points taken in
    order (merge k makes cluster n + k): each merge's two current clusters
    (left: xs[k]'s, right: ys[k]'s) and the merged size, as int64 arrays.

    Vectorised (no loop over the merges: a Python union-find was slow at a
    million points).  The n-1 pairs of a merge sequence form a
    spanning tree; rooted, with pe(v) the merge of v and its parent, the
    cluster of merge k that holds its parent end p is the component of p in
    the forest of merges before k, whose top vertex T_k is p's nearest
    ancestor (p included) with pe > k (binary lifting over the ancestors),
    and whose id is n + the latest merge j < k with T_j = T_k (else the point
    T_k); the child end c's cluster has top c: n + the latest j with T_j = c
    (all such j are < k = pe(c)), else c.  Sizes: scipy's cluster sizes of
    those children (from_mlab_linkage)."""
    from scipy.cluster.hierarchy import from_mlab_linkage
    xs, ys = np.asarray(xs, np.int64), np.asarray(ys, np.int64)
    m = n - 1
    if m <= 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
    flip = _tree_parents(xs, ys, n)
    flipped = bool(flip.any())          # none where the merges come rooted: no copies
    a, b = (np.where(flip, ys, xs), np.where(flip, xs, ys)) if flipped else (xs, ys)
    # a_k the parent of b_k
    up, pe, point = _tops(a, b, n)
    # by top, merges ascending: a sort of the keys T_k * m + k over the
    # renumbered vertices but the root (number 0), made in their order
    # (values sort faster than an argsort)
    tops, order = np.divmod(np.sort(up[1:] * m + pe[1:]), m)
    same = np.r_[False, tops[1:] == tops[:-1]]
    upper = np.empty(m, np.int64)
    upper[order] = np.where(same, n + np.r_[0, order[:-1]], point[tops])
    ends = np.flatnonzero(np.r_[~same[1:], True])
    latest = np.full(n, -1, np.int64)
    latest[tops[ends]] = order[ends]
    lower = np.empty(m, np.int64)
    lower[pe[1:]] = np.where(latest[1:] >= 0, n + latest[1:], point[1:])
    # MATLAB's linkage (ids from 1) of the two columns alone: scipy's copy
    # and checks of a third would be a pass over the merges more
    mz = np.empty((m, 2))
    mz[:, 0], mz[:, 1] = upper, lower
    mz += 1.0
    sizes = from_mlab_linkage(mz)[:, 2].astype(np.int64)
    if not flipped:
        return upper, lower, sizes
    return np.where(flip, lower, upper), np.where(flip, upper, lower), sizes
