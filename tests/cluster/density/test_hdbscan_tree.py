"""The host's HDBSCAN tree (cluster/density/hdbscan/tree.py and
condensed.py), vectorised, against the loops that state its rules one node
at a time (the package's code before it was vectorised, kept here as the
reference): the condensed tree row for row, the excess-of-mass selection,
the labels and probabilities of every selection rule, scikit-learn's
single-linkage record with rows left out and its labels at a cut.

Host code only (no device).  Random merge sequences of random spanning trees
(random pairs, random orientation, chains and stars) with integer weights
(ties everywhere, zero heights: infinite lambdas) and continuous ones."""
import numpy as np
import pytest

from oclclust.cluster.density.hdbscan import tree as hdbscan_tree

pytestmark = pytest.mark.one_runtime   # host code only: one runtime runs it


def points_bfs(node, n, left, right):
    """The points under *node*, breadth first."""
    out, level = [], [node]
    while level:
        nxt = []
        for x in level:
            if x < n:
                out.append(x)
            else:
                nxt += (left[x - n], right[x - n])
        level = nxt
    return out


def condense_reference(tree, min_cluster_size):
    """scikit-learn's condense_tree one node at a time: internal nodes
    breadth first from the root; a side smaller than min_cluster_size falls
    out as points, two big sides are two new clusters, one big side goes on
    as its parent's cluster."""
    left, right, value, size = (t.tolist() for t in tree)
    n = len(left) + 1
    rows_p, rows_c, rows_l, rows_s = [], [], [], []
    relabel = {2 * n - 2: n}
    next_label = n + 1
    queue, head = [2 * n - 2], 0

    def fall(parent, node, lam):
        pts = points_bfs(node, n, left, right)
        rows_p.extend([parent] * len(pts))
        rows_c.extend(pts)
        rows_l.extend([lam] * len(pts))
        rows_s.extend([1] * len(pts))
    while head < len(queue):
        node = queue[head]
        head += 1
        if node < n:
            continue
        i = node - n
        l, r, dist = left[i], right[i], value[i]
        lam = 1.0 / dist if dist > 0.0 else np.inf
        lc = size[l - n] if l >= n else 1
        rc = size[r - n] if r >= n else 1
        me = relabel[node]
        if lc >= min_cluster_size and rc >= min_cluster_size:
            for child, count in ((l, lc), (r, rc)):
                relabel[child] = next_label
                next_label += 1
                rows_p.append(me), rows_c.append(relabel[child])
                rows_l.append(lam), rows_s.append(count)
                queue.append(child)
        elif lc < min_cluster_size and rc < min_cluster_size:
            fall(me, l, lam)
            fall(me, r, lam)
        elif lc < min_cluster_size:
            relabel[r] = me
            fall(me, l, lam)
            queue.append(r)
        else:
            relabel[l] = me
            fall(me, r, lam)
            queue.append(l)
    return (np.array(rows_p, np.int64), np.array(rows_c, np.int64),
            np.array(rows_l, np.float64), np.array(rows_s, np.int64))


def eom_reference(condensed, stab, allow_single, max_cluster_size):
    """Excess of mass one cluster at a time, children before parents: a
    cluster kept (its stability at least its children's best) unselects
    every cluster below it."""
    parent, child, lam, size = condensed
    rows = size > 1
    children, sizes = {}, dict(zip(child[rows].tolist(), size[rows].tolist()))
    for p, c in zip(parent[rows].tolist(), child[rows].tolist()):
        children.setdefault(p, []).append(c)
    nodes = sorted(stab, reverse=True)
    if not allow_single:
        nodes = nodes[:-1]
    else:
        sizes[nodes[-1]] = sum(sizes[c] for c in children.get(nodes[-1], ()))
    stab, is_cluster = dict(stab), {c: True for c in nodes}
    for node in nodes:
        sub = float(np.sum([stab[c] for c in children.get(node, ())]))
        if sub > stab[node] or sizes[node] > max_cluster_size:
            is_cluster[node] = False
            stab[node] = sub
        else:
            level = [node]
            while level:
                level = [c for x in level for c in children.get(x, ())]
                for c in level:
                    is_cluster[c] = False
    return {c for c in is_cluster if is_cluster[c]}


def point_owners_reference(condensed, clusters):
    """Each point's nearest selected cluster (the root where none): rows
    come parents first, so one pass top-down."""
    parent, child, lam, size = condensed
    root = int(parent.min())
    owner = {root: root}
    for p, c in zip(parent[size > 1].tolist(), child[size > 1].tolist()):
        owner[c] = c if c in clusters else owner[p]
    pts = child < root
    out = np.empty(root, np.int64)
    out[child[pts]] = [owner[p] for p in parent[pts].tolist()]
    return out


def labels_reference(condensed, clusters, allow_single, epsilon):
    """labels_and_probabilities with its owners from the loop above."""
    parent, child, lam, size = condensed
    root = n = int(parent.min())
    numbers = {c: k for k, c in enumerate(sorted(clusters))}
    owner = point_owners_reference(condensed, clusters)
    point_lambda = np.empty(n)
    point_lambda[child[child < n]] = lam[child < n]
    labels = np.array([numbers[c] if c != root and c in numbers else -1 for c in owner.tolist()],
                      np.int64)
    if len(clusters) == 1 and allow_single and root in numbers:
        threshold = 1.0 / epsilon if epsilon != 0.0 else lam[parent == root].max()
        labels[(owner == root) & (point_lambda >= threshold)] = numbers[root]
    return labels, hdbscan_tree._probabilities(condensed, numbers, labels)


def record_reference(tree, rows, n_rows):
    """tree_record one left-out row at a time."""
    left, right, value, size = tree
    n = left.shape[0] + 1
    out_rows = [r for r in range(n_rows) if r not in set(rows.tolist())]
    record = np.zeros(n_rows - 1, hdbscan_tree.TREE_DTYPE)
    for i in range(n - 1):
        node = [rows[x] if x < n else x + len(out_rows) for x in (left[i], right[i])]
        record[i] = (node[0], node[1], value[i], size[i])
    top = max(record[n - 2]["left_node"], record[n - 2]["right_node"]) if n > 1 else -1
    for i, row in enumerate(out_rows):
        record[n - 1 + i] = (row, top + 1 + i, np.inf, n + 1 + i)
    return record


def labels_at_cut_reference(record, cut, min_cluster_size):
    """scikit-learn's labelling_at_cut one merge at a time: a union-find by
    rank over the merges below the cut, then each point takes its topmost
    merge's representative; clusters numbered in order of it."""
    n = record.shape[0] + 1
    left, right = record["left_node"].tolist(), record["right_node"].tolist()
    below = (record["value"] < cut).tolist()
    rep = list(range(n)) + [-1] * (n - 1)
    rank = [0] * n
    for i in range(n - 1):
        if not below[i]:
            continue
        rl, rr = rep[left[i]], rep[right[i]]
        rank[rl] = max(rank[rl], 1)
        if rank[rr] < rank[rl]:
            rep[n + i] = rl
        else:
            rank[rr] += rank[rr] == rank[rl]
            rep[n + i] = rr
    final = rep[:]
    for i in range(n - 2, -1, -1):
        if below[i]:
            final[left[i]] = final[right[i]] = final[n + i]
    points = np.array(final[:n], np.intp)
    reps, inverse, counts = np.unique(points, return_inverse=True, return_counts=True)
    big = counts >= min_cluster_size
    number = np.where(big, np.cumsum(big) - 1, -1)
    return number[inverse].astype(np.intp)


def random_edges(n, shape, weights, seed):
    """The n-1 pairs of a random spanning tree (random point numbers, each
    pair's order at random) and their weights: integers 0..3 (ties, zero
    heights) or continuous."""
    rng = np.random.default_rng(seed)
    later = np.arange(1, n)
    earlier = {"random": rng.integers(0, np.maximum(later, 1)),
               "chain": later - 1,
               "star": np.zeros(n - 1, np.int64)}[shape]
    names = rng.permutation(n)
    a, b = names[later], names[earlier]
    swap = rng.random(n - 1) < 0.5
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    w = (rng.integers(0, 4, n - 1).astype(np.float64) if weights == "tied" else
         rng.random(n - 1))
    return a, b, w


def same(ours, reference):
    for x, y in zip(ours, reference):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


CASES = [(n, shape, weights, seed) for n in (2, 3, 7, 40, 257)
         for shape in ("random", "chain", "star") for weights in ("tied", "continuous")
         for seed in (0, 1)]


@pytest.mark.parametrize("n, shape, weights, seed", CASES)
@pytest.mark.parametrize("min_cluster_size", [1, 2, 3, 5, 16])
def test_condense_is_the_loops(n, shape, weights, seed, min_cluster_size):
    tree = hdbscan_tree.single_linkage(*random_edges(n, shape, weights, seed))
    same(hdbscan_tree.condense(tree, min_cluster_size), condense_reference(tree, min_cluster_size))


@pytest.mark.parametrize("n, shape, weights, seed", [c for c in CASES if c[0] > 2])
@pytest.mark.parametrize("method, allow_single, epsilon", [
    ("eom", False, 0.0), ("eom", True, 0.0), ("leaf", False, 0.0), ("leaf", True, 0.0),
    ("eom", False, 0.5), ("eom", True, 0.5), ("leaf", False, 0.5)])
def test_labels_are_the_loops(n, shape, weights, seed, method, allow_single, epsilon):
    tree = hdbscan_tree.single_linkage(*random_edges(n, shape, weights, seed))
    for min_cluster_size in (2, 3, 5):
        condensed = condense_reference(tree, min_cluster_size)
        clusters = hdbscan_tree.select(condensed, hdbscan_tree.stability(condensed), method,
                                       allow_single, epsilon)
        expected = labels_reference(condensed, clusters, allow_single, epsilon)
        same(hdbscan_tree.labels_and_probabilities(condensed, clusters, allow_single, epsilon),
             expected)
        same(hdbscan_tree.tree_labels(tree, min_cluster_size, method, allow_single, epsilon),
             expected)


@pytest.mark.parametrize("n, shape, weights, seed", [c for c in CASES if c[0] > 2])
@pytest.mark.parametrize("allow_single, max_cluster_size", [
    (False, None), (True, None), (False, 12), (True, 30)])
def test_excess_of_mass_is_the_loop(n, shape, weights, seed, allow_single, max_cluster_size):
    tree = hdbscan_tree.single_linkage(*random_edges(n, shape, weights, seed))
    for min_cluster_size in (2, 3, 5):
        condensed = condense_reference(tree, min_cluster_size)
        stab = hdbscan_tree.stability(condensed)
        by_id = dict(enumerate(stab.tolist(), int(condensed[0].min())))   # from the root's id
        largest = n + 1 if max_cluster_size is None else max_cluster_size
        assert (hdbscan_tree.select(condensed, stab, "eom", allow_single, 0.0, max_cluster_size)
                == eom_reference(condensed, by_id, allow_single, largest))


@pytest.mark.parametrize("n, shape, weights, seed", [c for c in CASES if c[2] == "tied"])
@pytest.mark.parametrize("left_out", [0, 1, 5])
def test_record_is_the_loop(n, shape, weights, seed, left_out):
    tree = hdbscan_tree.single_linkage(*random_edges(n, shape, weights, seed))
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(n + left_out, n, replace=False))
    np.testing.assert_array_equal(hdbscan_tree.tree_record(tree, rows, n + left_out),
                                  record_reference(tree, rows, n + left_out))


@pytest.mark.parametrize("n, shape, weights, seed", CASES)
@pytest.mark.parametrize("left_out", [0, 3])
def test_labels_at_cut_are_the_loop(n, shape, weights, seed, left_out):
    tree = hdbscan_tree.single_linkage(*random_edges(n, shape, weights, seed))
    rows = np.sort(np.random.default_rng(seed).choice(n + left_out, n, replace=False))
    record = hdbscan_tree.tree_record(tree, rows, n + left_out)
    for cut in (0.0, 0.5, 1.5, 2.5, np.inf):
        for min_cluster_size in (0, 1, 2, 5):
            labels = hdbscan_tree.labels_at_cut(record, cut, min_cluster_size)
            assert labels.dtype == np.intp
            np.testing.assert_array_equal(
                labels, labels_at_cut_reference(record, cut, min_cluster_size))


@pytest.mark.parametrize("n, shape, weights, seed", [c for c in CASES if c[2] == "tied"])
def test_traversals_are_the_definitions(n, shape, weights, seed):
    """traversal.breadth_first: left before right; traversal.preorder: each
    root's tree in one piece, parents before children, left before right."""
    from oclclust.cluster.density.hdbscan import traversal
    left, right, _, _ = hdbscan_tree.single_linkage(*random_edges(n, shape, weights, seed))
    level, expected = [2 * n - 2], []
    while level:
        expected += level
        level = [c for x in level if x >= n for c in (left[x - n], right[x - n])]
    np.testing.assert_array_equal(traversal.breadth_first(left, right, n), expected)
    counts = np.r_[np.zeros(n, np.int64), np.full(n - 1, 2)]
    children = np.stack([left, right], axis=1).ravel()
    roots = np.array(sorted({int(left[-1]), int(right[-1])}, reverse=True))

    def walk(x):
        return [x] + (walk(left[x - n]) + walk(right[x - n]) if x >= n else [])
    pre, tree = traversal.preorder(counts, children, roots)
    np.testing.assert_array_equal(pre, walk(roots[0]) + walk(roots[1]))
    np.testing.assert_array_equal(tree, np.repeat([0, 1], [len(walk(r)) for r in roots]))


@pytest.mark.parametrize("n, shape, weights, seed", [c for c in CASES if c[2] == "tied"])
@pytest.mark.parametrize("min_size", [1, 2, 3, 5, 16, 1000])
def test_breadth_first_within_is_the_whole_walks(n, shape, weights, seed, min_size):
    """traversal.breadth_first(within=): the merges of a top part of the
    tree (those of min_size points or more, and the root) in the order the
    walk of the whole tree lists them."""
    from oclclust.cluster.density.hdbscan import traversal
    left, right, _, size = hdbscan_tree.single_linkage(*random_edges(n, shape, weights, seed))
    within = size >= min_size
    within[-1] = True
    whole = traversal.breadth_first(left, right, n)
    expected = whole[(whole >= n) & within[np.maximum(whole - n, 0)]]
    np.testing.assert_array_equal(traversal.breadth_first(left, right, n, within), expected)
