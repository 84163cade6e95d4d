"""HDBSCAN on the host, from the mutual-reachability MST: the single-linkage
tree, the condensed tree, cluster stabilities, the flat selection (excess of
mass or leaves, epsilon, single cluster, largest size), labels and
membership strengths -- scikit-learn's rules (its _hdbscan/_tree.pyx),
including the order it visits nodes in, so that cluster numbers,
probabilities and its quirks come out alike (the condensed tree:
condensed.py).  No loop over the points: numpy and scipy's traversals; the
selection's loops are over the condensed clusters.
"""
import numpy as np

from ...merge_tree import merged_clusters
from .condensed import condense
from .traversal import preorder


def single_linkage(a, b, w):
    """(left, right, value, size) of the n-1 merges of the MST edges (a, b, w)
    taken in order of w (np.argsort, as scikit-learn sorts them): left and
    right are the current clusters of a and b (points 0..n-1, merge i is
    cluster n+i)."""
    order = np.argsort(w)
    a, b, w = a[order], b[order], np.asarray(w, np.float64)[order]
    left, right, sizes = merged_clusters(a, b, a.shape[0] + 1)
    return left, right, w, sizes


def stability(condensed):
    """The clusters' stabilities, an array over the cluster ids from the
    root's on (cluster c at c - root): sum over its rows of (lambda - its
    birth lambda) * size, added in row order (np.bincount adds its weights
    in order, as np.add.at, in one pass)."""
    parent, child, lam, size = condensed
    root = int(parent.min())
    births = np.full(max(int(child.max()), root) + 1, np.nan)
    births[child] = lam
    births[root] = 0.0
    with np.errstate(invalid="ignore"):   # born at distance 0: inf - inf, NaN as scikit-learn's
        out = np.bincount(parent, (lam - births[parent]) * size, int(parent.max()) + 1)
    return out[root:]


class _ClusterTree:
    """The condensed rows between clusters (size > 1): parent / children maps."""

    def __init__(self, condensed):
        parent, child, lam, size = condensed
        keep = size > 1
        parents = parent[keep].tolist()
        self.child = child[keep].tolist()
        self.birth = dict(zip(self.child, lam[keep].tolist()))
        self.up = dict(zip(self.child, parents))
        self.children = {}
        for p, c in zip(parents, self.child):
            self.children.setdefault(p, []).append(c)
        self.root = int(parent.min())

    def below(self, node):
        """node's descendant clusters, breadth first (node excluded)."""
        out, level = [], [node]
        while level:
            level = [c for x in level for c in self.children.get(x, ())]
            out += level
        return out

    def leaves(self):
        """Leaf clusters, depth first from the root (none where no split)."""
        if not self.child:
            return []
        out, stack = [], [self.root]
        while stack:
            x = stack.pop()
            kids = self.children.get(x)
            if kids:
                stack.extend(reversed(kids))
            else:
                out.append(x)
        return out


def _upwards(tree, epsilon, leaf, allow_single):
    """The ancestor of *leaf* born at a distance above epsilon (the root's
    child, or the root where allowed, at most)."""
    while True:
        parent = tree.up[leaf]
        if parent == tree.root:
            return parent if allow_single else leaf
        if 1.0 / tree.birth[parent] > epsilon:
            return parent
        leaf = parent


def _epsilon_search(leaves, tree, epsilon, allow_single):
    """Clusters born below epsilon give way to their ancestor born above it."""
    selected, processed = [], set()
    for leaf in leaves:
        if 1.0 / tree.birth[leaf] < epsilon:
            if leaf not in processed:
                top = _upwards(tree, epsilon, leaf, allow_single)
                selected.append(top)
                processed.update(tree.below(top))
        else:
            selected.append(leaf)
    return set(selected)


def select(condensed, stab, method="eom", allow_single=False, epsilon=0.0,
           max_cluster_size=None):
    """The set of selected condensed clusters; *stab*: stability()'s.  The
    candidates are every cluster but the root (the root too with
    *allow_single*)."""
    parent, child, lam, size = condensed
    root, ids = int(parent.min()), len(stab)
    rows = size > 1                        # the rows between clusters, parents' first
    up, down = parent[rows] - root, child[rows] - root
    low = 0 if allow_single else 1         # the candidates: ids low.. (from the root)
    n = int(child[size == 1].max()) + 1
    if max_cluster_size is None:
        max_cluster_size = n + 1
    sizes = np.zeros(ids, np.int64)
    sizes[down] = size[rows]
    if allow_single:
        sizes[0] = sizes[down[up == 0]].sum()
    is_cluster = np.arange(ids) >= low
    if method == "eom":
        kept = _excess_of_mass(stab, up, down, sizes, low, max_cluster_size)
        is_cluster &= kept & ~_below(kept, up, down, ids)
        if epsilon != 0.0 and up.size:
            tree = _ClusterTree(condensed)
            eom = (np.flatnonzero(is_cluster)[::-1] + root).tolist()   # the candidates' order
            if len(eom) == 1 and eom[0] == tree.root:
                chosen = eom if allow_single else []
            else:
                chosen = _epsilon_search(set(eom), tree, epsilon, allow_single)
            is_cluster = (np.arange(ids) >= low) & _among(chosen, root, ids)
    else:
        tree = _ClusterTree(condensed)
        leaves = set(tree.leaves())   # none (no split): none selected
        chosen = (_epsilon_search(leaves, tree, epsilon, allow_single)
                  if epsilon != 0.0 else leaves)
        is_cluster &= _among(chosen, root, ids)
    return set((np.flatnonzero(is_cluster) + root).tolist())


def _among(chosen, root, ids):
    """Over the cluster ids from the root's: whether in the set *chosen*."""
    mask = np.zeros(ids, bool)
    mask[np.fromiter(chosen, np.int64, len(chosen)) - root] = True
    return mask


def _excess_of_mass(stab, up, down, sizes, low, max_cluster_size):
    """Which candidates (ids low..) keep themselves under the excess of mass:
    children before parents (ids grow downwards), a cluster keeps itself
    only where its stability is at least its children's best (their sum as
    scikit-learn adds it, in row order: none 0.0) and it is not too large;
    one that does not passes that sum up as its own.  The leaves at once;
    the clusters with children one at a time, from the deepest id up."""
    ids = len(stab)
    best = np.array(stab, np.float64)
    count = np.bincount(up, minlength=ids)
    leaf = count == 0
    leaf[:low] = False
    kept = np.zeros(ids, bool)
    kept[leaf] = ~((0.0 > best[leaf]) | (sizes[leaf] > max_cluster_size))
    best[leaf & ~kept] = 0.0
    order = np.argsort(up, kind="stable")  # each cluster's children in row order
    start = np.r_[0, np.cumsum(count)].tolist()
    children = down[order].tolist()
    values, too_large = best.tolist(), (sizes > max_cluster_size).tolist()
    for node in np.flatnonzero(count[low:] > 0)[::-1] + low:
        node = int(node)
        first, last = start[node], start[node + 1]
        sub = values[children[first]]
        for c in children[first + 1:last]:
            sub = sub + values[c]
        if sub > values[node] or too_large[node]:
            values[node] = sub
        else:
            kept[node] = True
    return kept


def _below(kept, up, down, ids):
    """Which clusters lie below a kept one (a strict ancestor kept): by
    pointer jumping up the cluster tree (id ids: past the root)."""
    above = np.full(ids + 1, ids)
    above[down] = up
    flag = np.zeros(ids + 1, bool)
    flag[down] = kept[up]                  # the parent kept
    while np.any(above[:ids] < ids):
        flag = flag | flag[above]
        above = above[above]
    return flag[:ids]


def labels_and_probabilities(condensed, clusters, allow_single=False, epsilon=0.0):
    """Each point's label (its nearest selected ancestor cluster, numbered
    in order of cluster id; -1: none) and membership strength (its lambda
    over its cluster's largest, as scikit-learn takes it)."""
    parent, child, lam, size = condensed
    root = int(parent.min())
    n = root
    numbers = {c: k for k, c in enumerate(sorted(clusters))}
    # clusters by their id less the root's (the root n, the others past it)
    ids = int(parent.max()) + 1 - root
    owner = _selected_owner(parent[size > 1] - root, child[size > 1] - root, clusters, root,
                            ids)
    pts = child < n
    point_lambda = np.empty(n)
    point_lambda[child[pts]] = lam[pts]
    point_owner = np.empty(n, np.int64)
    point_owner[child[pts]] = owner[parent[pts] - root]
    number_of = np.full(ids, -1, np.int64)
    for c, k in numbers.items():
        if c != root:
            number_of[c - root] = k
    labels = number_of[point_owner]
    at_root = point_owner == 0
    if len(clusters) == 1 and allow_single and root in numbers:
        threshold = 1.0 / epsilon if epsilon != 0.0 else lam[parent == root].max()
        labels[at_root & (point_lambda >= threshold)] = numbers[root]
    return labels, _probabilities(condensed, numbers, labels, point_lambda)


def _selected_owner(parent, child, clusters, root, ids):
    """owner[c]: cluster c where it is selected (or the root, 0), else its
    parent's owner -- the nearest selected cluster at or above c, by
    pointer jumping over the cluster tree (rows parent -> child; clusters
    numbered from the root's 0, *clusters* the selected ones' ids)."""
    owner = np.arange(ids)
    chosen = np.zeros(ids, bool)
    chosen[np.fromiter(clusters, np.int64, len(clusters)) - root] = True
    chosen[0] = True
    owner[child] = np.where(chosen[child], child, parent)
    while True:
        jumped = owner[owner]
        if np.array_equal(jumped, owner):
            return owner
        owner = jumped


def _deaths(parent, lam):
    """Each parent's largest lambda over its last run of consecutive rows
    (scikit-learn's max_lambdas keeps the run it saw last)."""
    deaths = np.zeros(int(parent.max()) + 1)
    starts = np.flatnonzero(np.r_[True, parent[1:] != parent[:-1]])
    run_max = np.maximum.reduceat(lam, starts)
    deaths[parent[starts]] = run_max      # a later run overwrites an earlier one
    return deaths


def _probabilities(condensed, numbers, labels, point_lambda=None):
    """Each point's membership strength: its lambda over its cluster's
    death, capped at 1 (noise: 0), in the points' order -- point_lambda
    (each point's lambda, its one row's) where given, so that no pass
    scatters over the rows again (at millions of points a scatter reads and
    writes at random)."""
    parent, child, lam, size = condensed
    n = labels.shape[0]
    if point_lambda is None:
        pts = child < n
        point_lambda = np.empty(n)
        point_lambda[child[pts]] = lam[pts]
    deaths = _deaths(parent, lam)
    cluster_of = np.array(sorted(numbers), np.int64)
    out = np.zeros(n)
    member = labels != -1
    members = labels[member]
    death = deaths[cluster_of[members]] if members.shape[0] else np.zeros(0)
    value = point_lambda[member]
    whole = (death == 0.0) | np.isinf(value)
    with np.errstate(divide="ignore", invalid="ignore"):
        out[member] = np.where(whole, 1.0, np.minimum(value, death) / death)
    return out


def hdbscan_labels(a, b, w, min_cluster_size, method="eom", allow_single=False,
                   epsilon=0.0, max_cluster_size=None):
    """labels, probabilities of the MST edges (a, b, w)."""
    return tree_labels(single_linkage(a, b, w), min_cluster_size, method, allow_single,
                       epsilon, max_cluster_size)


def tree_labels(tree, min_cluster_size, method="eom", allow_single=False, epsilon=0.0,
                max_cluster_size=None):
    """labels, probabilities of a single-linkage tree (single_linkage's)."""
    condensed = condense(tree, min_cluster_size)
    clusters = select(condensed, stability(condensed), method, allow_single, epsilon,
                      max_cluster_size)
    return labels_and_probabilities(condensed, clusters, allow_single, epsilon)


# scikit-learn's record of a single-linkage tree (its HIERARCHY_dtype), kept
# as HDBSCAN's _single_linkage_tree_
TREE_DTYPE = np.dtype([("left_node", np.intp), ("right_node", np.intp), ("value", np.float64),
                       ("cluster_size", np.intp)])


def tree_record(tree, rows=None, n_rows=None):
    """The tree as a TREE_DTYPE array over all *n_rows* rows of the data:
    point k of the tree is row rows[k]; the rows left out (not finite) join
    the root one by one at an infinite height, as scikit-learn adds them."""
    left, right, value, size = (np.asarray(t) for t in tree)
    n = left.shape[0] + 1
    rows = np.arange(n) if rows is None else np.asarray(rows, np.intp)
    n_rows = n if n_rows is None else n_rows
    left_out = np.ones(n_rows, bool)
    left_out[rows] = False
    out_rows = np.flatnonzero(left_out)
    shift = out_rows.shape[0]
    record = np.zeros(n_rows - 1, TREE_DTYPE)

    identity = shift == 0 and np.array_equal(rows, np.arange(n))

    def node(x):   # a point -> its row; a cluster -> its number past the rows
        if identity:                      # every row kept, in order: no gather
            return x
        return np.where(x < n, rows[np.minimum(x, n - 1)], x + shift)
    record["left_node"][:n - 1], record["right_node"][:n - 1] = node(left), node(right)
    record["value"][:n - 1], record["cluster_size"][:n - 1] = value, size
    # scikit-learn numbers them on from the root merge's larger child
    top = max(int(record["left_node"][n - 2]), int(record["right_node"][n - 2]))
    one_by_one = np.arange(shift)
    record["left_node"][n - 1:], record["right_node"][n - 1:] = out_rows, top + 1 + one_by_one
    record["value"][n - 1:], record["cluster_size"][n - 1:] = np.inf, n + 1 + one_by_one
    return record


def labels_at_cut(record, cut, min_cluster_size):
    """scikit-learn's labelling_at_cut of a TREE_DTYPE record: the merges
    below *cut* make the clusters, one of fewer than min_cluster_size points
    is noise (-1), and clusters are numbered in order of the point that
    represents them in scikit-learn's union-find (union by rank).

    That union-find (union(left, merge) keeps left's point, its rank at
    least 1; union(right, merge) keeps the higher rank's point, right's on a
    tie) gives a merge of children ranked a, b the rank max(a', b) + [a' ==
    b], a' = max(a, 1), and left's point where b < a', else right's.  Without
    a loop over the merges: a merge ranks t or more where a merge below it
    (or itself) has both children (left floored at 1) ranked t - 1 or more,
    counted over its span of a preorder of the merges below the cut (their
    children are below it too: the heights grow); a tree's point is the one
    no unchosen child's span covers."""
    n = record.shape[0] + 1
    left = record["left_node"].astype(np.int64)
    right = record["right_node"].astype(np.int64)
    below = np.flatnonzero(record["value"] < cut)
    points = np.arange(n)
    if below.shape[0]:
        node, left, right = n + below, left[below], right[below]
        parent = np.full(2 * n - 1, -1, np.int64)
        parent[left], parent[right] = node, node
        counts = np.zeros(2 * n - 1, np.int64)
        counts[node] = 2
        children = np.empty(2 * below.shape[0], np.int64)
        children[0::2], children[1::2] = left, right
        roots = node[parent[node] < 0]
        pre, tree = preorder(counts, children, roots)
        pos = np.empty(2 * n - 1, np.int64)
        pos[pre] = np.arange(pre.shape[0])
        span = np.ones(2 * n - 1, np.int64)
        span[node] = 2 * record["cluster_size"][below] - 1
        first, end = pos[node], pos[node] + span[node]
        rank = np.zeros(2 * n - 1, np.int64)
        rank[node] = 1
        seeds, t = right >= n, 2          # rank 2: a merge as the right child
        while seeds.any():
            marks = np.zeros(pre.shape[0] + 1, np.int64)
            marks[first[seeds] + 1] = 1
            np.cumsum(marks, out=marks)
            rank[node[marks[end] > marks[first]]] = t
            t += 1
            seeds = (rank[left] >= t - 1) & (rank[right] >= t - 1)
        unchosen = np.where(rank[right] < np.maximum(rank[left], 1), right, left)
        cover = (np.bincount(pos[unchosen], minlength=pre.shape[0] + 1)
                 - np.bincount(pos[unchosen] + span[unchosen], minlength=pre.shape[0] + 1))
        np.cumsum(cover, out=cover)
        chosen = (pre < n) & (cover[:-1] == 0)
        point_of = np.empty(roots.shape[0], np.int64)
        point_of[tree[chosen]] = pre[chosen]
        inside = pre < n
        points[pre[inside]] = point_of[tree[inside]]
    # by representative (each a cluster of one point at least)
    big = np.bincount(points, minlength=n) >= max(min_cluster_size, 1)
    number = np.where(big, np.cumsum(big) - 1, -1)
    return number[points].astype(np.intp)
