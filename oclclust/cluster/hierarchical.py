"""Hierarchical agglomerative clustering: scipy's linkage and scikit-learn's
AgglomerativeClustering, computed on an OpenCL device.

The device work (distance matrix, merges) is in passes/linkage.py and
passes/linkage_generic.py; here are the public API, input rules and the
bookkeeping scipy and scikit-learn do on the host (sorting, relabelling,
cutting the tree).
"""
import heapq
import warnings

import numpy as np

from ._base import BaseEstimator, ClusterMixin
from ..parallel.manager import DeviceManager
from ..runtime.devices import preferred, select_devices
from ..passes.linkage_rows import WardRowsTerms, generic_rows, ward_rounds, ward_rows
from ..passes.linkage import NN_CHAIN, Plan, condensed_distances, nn_chain, prim_single
from ..passes.linkage_generic import generic_linkage
from ..passes.mst import MstTerms, minimum_spanning_tree
from ..runtime.validation import check_data, check_params

METHODS = ("single", "complete", "average", "weighted", "centroid", "median", "ward")
METRICS = ("euclidean", "sqeuclidean", "cityblock", "chebyshev", "cosine")
EUCLIDEAN_METHODS = ("centroid", "median", "ward")


def _plan(devices):
    if isinstance(devices, DeviceManager):
        devices = devices.profiles
    profile = preferred(select_devices(devices))[0]
    if not profile.fp64:
        warnings.warn(f"{profile} has no fp64: distances and heights in float32, "
                      "so near-ties may merge unlike scipy", RuntimeWarning, stacklevel=3)
    return Plan(profile, np.float64 if profile.fp64 else np.float32)


def _check_condensed(y):
    m = y.shape[0]
    n = int(np.ceil(np.sqrt(m * 2)))
    if n * (n - 1) // 2 != m or m == 0:
        raise ValueError("Length n of condensed distance matrix 'y' must be a binomial "
                         "coefficient, i.e. there must be a k such that (k \\choose 2)=n) "
                         "with k >= 2!")
    if not np.all(np.isfinite(y)):
        raise ValueError("The condensed distance matrix must contain only finite values.")


def _check_range(values, plan):
    """ValueError where host values (observations or distances) do not fit
    the plan's value type: float32 on a device without fp64 would make them inf."""
    top = np.finfo(plan.dtype).max
    if plan.dtype != np.float64 and np.any(np.abs(values) > top):
        raise ValueError(f"values beyond {plan.dtype.name}'s range ({top:.3g}): "
                         f"{plan.profile} has no fp64; scale the data down")


def _overflow(plan, method):
    """The error where finite, non-negative distances made a non-finite
    merge height (or left a row no neighbour closer than inf): a
    Lance-Williams update squares distances and overflowed the plan's value
    type, and the tree above it would be silently wrong."""
    return ValueError(f"the {method} linkage's merge heights overflow "
                      f"{plan.dtype.name} on {plan.profile}: scale the data down")


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


def merged_clusters(xs, ys, n):
    """Union-find over the merges of points xs[k], ys[k] of n points taken in
    order (merge k makes cluster n + k): each merge's two current clusters
    (left: xs[k]'s, right: ys[k]'s) and the merged size, as int64 arrays.

    Vectorised (no loop over the merges; a Python union-find took 3.1 s at
    a million on the H100's host).  The n-1 pairs of a merge sequence form a
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
    a, b = np.where(flip, ys, xs), np.where(flip, xs, ys)    # a_k the parent of b_k
    parent = np.empty(n, np.int64)
    pe = np.full(n, m, np.int64)                  # the root: after every merge
    parent[b] = a
    pe[b] = np.arange(m)
    root = int(np.argmax(pe))
    parent[root] = root
    top = a.copy()
    todo = np.flatnonzero(pe[top] < np.arange(m))
    for _ in range(4):                            # most walks up are short
        if not todo.size:
            break
        top[todo] = parent[top[todo]]
        todo = todo[pe[top[todo]] < todo]
    if todo.size:
        # level l: (the largest pe of the 2^l vertices from v up) << 32 |
        # v's 2^l-th ancestor; lifting from the highest level down
        low = np.int64(0xFFFFFFFF)
        levels, jump = [(pe << 32) | parent], parent
        while not np.all(jump == root):
            if len(levels) > m.bit_length() + 1:
                raise ValueError("the merges form a cycle: not a merge sequence")
            up = levels[-1][jump]
            jump = up & low
            level = np.maximum(levels[-1], up)
            level &= ~low
            level |= jump
            levels.append(level)
        walk = top[todo]
        for level in reversed(levels):
            step = level[walk]
            walk = np.where((step >> 32) < todo, step & low, walk)
        top[todo] = walk
    # by top, merges ascending: a sort of the keys top * m + k (values sort
    # several times faster than an argsort)
    tops, order = np.divmod(np.sort(top * m + np.arange(m)), m)
    same = np.r_[False, tops[1:] == tops[:-1]]
    upper = np.empty(m, np.int64)
    upper[order] = np.where(same, n + np.r_[0, order[:-1]], tops)
    ends = np.flatnonzero(np.r_[~same[1:], True])
    latest = np.full(n, -1, np.int64)
    latest[tops[ends]] = order[ends]
    lower = np.where(latest[b] >= 0, n + latest[b], b)
    mz = np.zeros((m, 3))
    mz[:, 0], mz[:, 1] = upper + 1, lower + 1
    sizes = from_mlab_linkage(mz)[:, 3].astype(np.int64)
    return np.where(flip, lower, upper), np.where(flip, upper, lower), sizes


def label(Z, n):
    """scipy's _hierarchy.label: merges of point/cluster indices (sorted by
    height) become cluster ids, the smaller id first, with cluster sizes."""
    pairs = Z[:, :2].astype(np.int64)
    left, right, sizes = merged_clusters(pairs[:, 0], pairs[:, 1], n)
    Z[:, 0], Z[:, 1], Z[:, 3] = np.minimum(left, right), np.maximum(left, right), sizes
    return Z


def _sorted_linkage(pairs, heights, n):
    Z = np.empty((n - 1, 4))
    Z[:, :2], Z[:, 2] = pairs, heights
    return label(Z[np.argsort(heights, kind="mergesort")], n)


def _single_on_rows(plan, n):
    """Whether single linkage of n observations runs on the rows
    (passes/mst.py, O(n d) memory): where the condensed matrix exceeds the
    device (its largest buffer or the memory budget), and from the profile's
    mst_single_rows_from observations on, where the rows are faster."""
    return not plan.matrix_fits(n) or n >= plan.profile.terms(MstTerms).single_rows_from


def _ward_on_rows(plan, n):
    """Whether ward linkage of n observations runs on the rows
    (passes/linkage_rows.py, O(n d) memory): past the condensed matrix, and
    from the profile's linkage_ward_rows_from observations on."""
    return not plan.matrix_fits(n) or n >= plan.profile.terms(WardRowsTerms).ward_rows_from


def _single_from_rows(plan, X, metric):
    """scipy's single-linkage Z from the device's MST of the rows."""
    a, b, w = minimum_spanning_tree(plan, X, metric)
    Z = np.empty((len(w), 4))
    Z[:, 0], Z[:, 1], Z[:, 2] = a, b, w
    return label(Z, X.shape[0])


def linkage(y, method="single", metric="euclidean", optimal_ordering=False, devices=None):
    """scipy.cluster.hierarchy.linkage on an OpenCL device: the same Z.

    *y*: observations (n x d) or a condensed distance vector (pdist's
    layout).  *method*: single, complete, average, weighted, centroid,
    median or ward; *metric*: euclidean, sqeuclidean, cityblock, chebyshev
    or cosine (observations only).  Single linkage runs Prim's MST,
    complete/average/weighted/ward the nearest-neighbour chain and
    centroid/median the generic algorithm, as scipy does, so ties and
    duplicate points merge as scipy merges them.  Single linkage of
    observations runs on the rows (passes/mst.py: Boruvka's MST, distances
    never stored) where the condensed matrix does not fit the device and
    from the profile's mst_single_rows_from observations on; the same Z.
    Ward, centroid and median of observations run on the rows too where the
    matrix does not fit, ward also from the profile's linkage_ward_rows_from
    observations on (passes/linkage_rows.py: ward by rounds of reciprocal
    nearest neighbours -- where nearest neighbours or heights tie, the
    matrix's chain where it fits, else scipy's chain on the rows -- and the
    generic algorithm, over cluster centroids, O(n d) memory):
    scipy's merges, the heights computed from the centroids rather than by
    scipy's Lance-Williams updates, so equal to rounding (a few ulps here).
    Complete, average and weighted (and the others up to there) keep the
    matrix on the device across as many buffers as it needs (the device's
    largest buffer, or the profile's linkage_buffer_bytes, each) up to the
    matrix budget (global memory x linkage_memory_fraction, else
    memory_fraction); past it they raise MemoryError naming the limit.
    ``devices``: as in every oclclust estimator (the first GPU of them, else
    the largest device).
    """
    if method not in METHODS:
        raise ValueError(f"Invalid method: {method}")
    if not isinstance(metric, str) or metric not in METRICS:
        raise ValueError(f"Unknown or unsupported metric {metric!r}: oclclust.linkage "
                         f"supports {', '.join(METRICS)} (or a condensed distance vector)")
    y = np.asarray(y)
    if y.dtype.kind not in "fiub":
        raise ValueError(f"linkage needs numeric input, got dtype {y.dtype}")
    y = y.astype(np.float64)
    if method in EUCLIDEAN_METHODS and metric != "euclidean" and y.ndim == 2:
        raise ValueError(f"`method={method}` requires the distance metric to be Euclidean")
    if y.ndim == 1:
        _check_condensed(y)
        X = None
    elif y.ndim == 2:
        X = check_data(y, "linkage", min_samples=2)
        if not np.all(np.isfinite(X)):
            raise ValueError("Input contains NaN or infinity.")
        if (X.shape[0] == X.shape[1] and np.allclose(np.diag(X), 0) and np.all(X >= 0)
                and np.allclose(X, X.T)):
            from scipy.cluster.hierarchy import ClusterWarning
            warnings.warn("The symmetric non-negative hollow observation matrix looks "
                          "suspiciously like an uncondensed distance matrix",
                          ClusterWarning, stacklevel=2)
        y = None
    else:
        raise ValueError("`y` must be 1 or 2 dimensional.")
    # negative distances make NaN heights and find_min_dist errors in scipy
    # too (ward of [0, 0, -1]; its gh-21011): from others they are overflows
    nonnegative = X is not None or bool(np.all(y >= 0))
    plan = _plan(devices)
    _check_range(y if X is None else X, plan)
    # single linkage past the matrix (or where the rows are faster): the MST
    on_rows = method == "single" and X is not None and _single_on_rows(plan, X.shape[0])
    # ward, centroid and median past the matrix: over centroids (passes/linkage_rows.py)
    rows_ = (method in EUCLIDEAN_METHODS and X is not None
             and not plan.matrix_fits(X.shape[0]))
    # ward where the matrix fits, from linkage_ward_rows_from on: the rows'
    # rounds, else (nearest neighbours tie) the matrix's chain, the faster
    found = None
    if method == "ward" and X is not None and not rows_ and _ward_on_rows(plan, X.shape[0]):
        try:
            found = ward_rounds(plan, X)
        except ValueError as exc:        # no neighbour closer than inf: an overflow
            raise _overflow(plan, method) from exc
    if not (on_rows or rows_ or found):
        dist, n = condensed_distances(plan, X=X, y=y, metric=metric)
    if on_rows:
        Z = _single_from_rows(plan, X, metric)
    elif found:
        Z = _sorted_linkage(*found, X.shape[0])
    elif rows_ and method == "ward":     # reciprocal nearest neighbours, or the chain
        try:
            Z = _sorted_linkage(*ward_rows(plan, X), X.shape[0])
        except ValueError as exc:        # no neighbour closer than inf: an overflow
            raise _overflow(plan, method) from exc
    elif rows_:                          # the generic algorithm
        try:
            Z = generic_rows(plan, X, method)
        except ValueError as exc:        # no neighbour closer than inf: an overflow
            raise _overflow(plan, method) from exc
    elif method == "single":
        Z = _sorted_linkage(*prim_single(plan, dist, n), n)
    elif method in NN_CHAIN:
        Z = _sorted_linkage(*nn_chain(plan, dist, n, method), n)
    else:
        try:
            Z = generic_linkage(plan, dist, n, method)
        except ValueError as exc:    # scipy's find_min_dist error
            if nonnegative:
                raise _overflow(plan, method) from exc
            raise
    if nonnegative and not np.all(np.isfinite(Z[:, 2])):
        raise _overflow(plan, method)
    if optimal_ordering:
        from scipy.cluster.hierarchy import optimal_leaf_ordering
        from scipy.spatial.distance import pdist
        Z = optimal_leaf_ordering(Z, y if X is None else pdist(X, metric))
    return Z


# ------------------------------------------------- scikit-learn's estimator
# metric names scikit-learn accepts -> scipy's (the linkage's) names
SKLEARN_METRICS = {"euclidean": "euclidean", "l2": "euclidean", "l1": "cityblock",
                   "manhattan": "cityblock", "cityblock": "cityblock",
                   "sqeuclidean": "sqeuclidean", "chebyshev": "chebyshev", "cosine": "cosine"}


def sklearn_single_children(Z_points, n):
    """scikit-learn's children of single linkage: its MST edges (the same Prim
    order) labelled by union-find without scipy's smaller-id-first swap:
    merged_clusters' (left, right) as they come."""
    pairs = np.asarray(Z_points, np.int64)
    left, right, _ = merged_clusters(pairs[:, 0], pairs[:, 1], n)
    children = np.empty((n - 1, 2), np.intp)
    children[:, 0], children[:, 1] = left, right
    return children


def hc_cut(n_clusters, children, n_leaves):
    """scikit-learn's _hc_cut: labels of the n_clusters top clusters, numbered
    in the order of its heap of node ids."""
    if n_clusters > n_leaves:
        raise ValueError(f"Cannot extract more clusters than samples: {n_clusters} clusters "
                         f"were given for a tree with {n_leaves} leaves.")
    nodes = [-(max(children[-1]) + 1)]
    for _ in range(n_clusters - 1):
        these = children[-nodes[0] - n_leaves]
        heapq.heappush(nodes, -these[0])
        heapq.heappushpop(nodes, -these[1])
    # every leaf takes the index of its nearest ancestor among the top nodes:
    # pointers to parents, the top nodes (and the root) pointing at
    # themselves, jumped (ptr = ptr[ptr]) until no pointer moves -- log2 of
    # the tree's depth rounds (a Python walk of a million leaves took 2 s)
    children = np.asarray(children, np.intp)
    ptr = np.arange(n_leaves + len(children), dtype=np.intp)
    ptr[children.ravel()] = np.repeat(np.arange(n_leaves, len(ptr)), 2)
    top = np.array([-node for node in nodes], np.intp)
    ptr[top] = top
    while True:
        jumped = ptr[ptr]
        if np.array_equal(jumped, ptr):
            break
        ptr = jumped
    index = np.zeros(len(ptr), np.intp)
    index[top] = np.arange(len(top))
    return index[ptr[:n_leaves]]


def _tree(X, method, metric, devices):
    """(children, distances) as scikit-learn's tree builders give them."""
    if metric == "precomputed" or callable(metric):
        D = metric(X) if callable(metric) else X
        if D.shape[0] != D.shape[1]:
            raise ValueError(f"Distance matrix should be square, got matrix of shape {D.shape}")
        Z = linkage(D[np.triu_indices(D.shape[0], k=1)], method, devices=devices)
        return Z[:, :2].astype(np.intp), Z[:, 2]
    metric = SKLEARN_METRICS[metric]
    if metric == "cosine" and np.any(~np.any(X, axis=1)):
        raise ValueError("Cosine affinity cannot be used when X contains zero vectors")
    if method == "single" and metric in ("euclidean", "cityblock", "chebyshev"):
        # scikit-learn runs its own Prim (the same edges) and labels unswapped
        plan = _plan(devices)
        _check_range(X, plan)
        if _single_on_rows(plan, X.shape[0]):
            a, b, w = minimum_spanning_tree(plan, X, metric)
            return sklearn_single_children(np.column_stack([a, b]), X.shape[0]), w
        dist, n = condensed_distances(plan, X=X, metric=metric)
        pairs, heights = prim_single(plan, dist, n)
        order = np.argsort(heights, kind="mergesort")
        return sklearn_single_children(pairs[order], n), heights[order]
    Z = linkage(X, method, metric, devices=devices)
    return Z[:, :2].astype(np.intp), Z[:, 2]


class AgglomerativeClustering(ClusterMixin, BaseEstimator):
    """Agglomerative clustering on an OpenCL device (scikit-learn's API).

    The tree is oclclust.linkage's (scipy's algorithms on the device), so
    ``labels_``, ``children_`` and ``distances_`` equal scikit-learn's.
    ``connectivity`` constraints are not implemented (NotImplementedError).
    ``devices``: as in every oclclust estimator.
    """

    def __init__(self, n_clusters=2, *, metric="euclidean", memory=None, connectivity=None,
                 compute_full_tree="auto", linkage="ward", distance_threshold=None,
                 compute_distances=False, devices=None):
        self.n_clusters = n_clusters
        self.metric = metric
        self.memory = memory
        self.connectivity = connectivity
        self.compute_full_tree = compute_full_tree
        self.linkage = linkage
        self.distance_threshold = distance_threshold
        self.compute_distances = compute_distances
        self.devices = devices

    def fit(self, X, y=None):
        check_params(self, {
            "n_clusters": [(int, 1, None), (np.integer, 1, None), None],
            "compute_full_tree": ["auto", bool, np.bool_],
            "linkage": ["ward", "complete", "average", "single"],
            "distance_threshold": [(float, 0, None), (int, 0, None), (np.floating, 0, None),
                                   None],
            "compute_distances": [bool, np.bool_]})
        metric = self.metric
        if not (callable(metric) or metric == "precomputed" or metric in SKLEARN_METRICS):
            raise ValueError(f"The 'metric' parameter of AgglomerativeClustering must be one "
                             f"of {sorted(SKLEARN_METRICS)}, 'precomputed' or a callable. "
                             f"Got {metric!r} instead.")
        if self.connectivity is not None:
            raise NotImplementedError("connectivity constraints are not implemented in "
                                      "oclclust: use sklearn.cluster.AgglomerativeClustering")
        X = check_data(X, type(self).__name__, min_samples=2)
        X = np.asarray(X, np.float64)
        if not np.all(np.isfinite(X)):
            raise ValueError("Input X contains NaN or infinity.")
        self.n_features_in_ = X.shape[1]
        if not ((self.n_clusters is None) ^ (self.distance_threshold is None)):
            raise ValueError("Exactly one of n_clusters and distance_threshold has to be "
                             "set, and the other needs to be None.")
        if self.distance_threshold is not None and not self.compute_full_tree:
            raise ValueError("compute_full_tree must be True if distance_threshold is set.")
        if self.linkage == "ward" and metric not in ("euclidean", "l2"):
            raise ValueError(f"{metric} was provided as metric. Ward can only work with "
                             "euclidean distances (i.e. 'euclidean' and 'l2').")
        tree = _tree
        if self.memory is not None:
            memory = self.memory
            if isinstance(memory, str):
                import joblib
                memory = joblib.Memory(location=memory, verbose=0)
            tree = memory.cache(_tree, ignore=["devices"])
        self.children_, distances = tree(X, self.linkage, metric, self.devices)
        self.n_leaves_, self.n_connected_components_ = X.shape[0], 1
        if self.distance_threshold is not None or self.compute_distances:
            self.distances_ = distances
        if self.distance_threshold is not None:
            self.n_clusters_ = int(np.count_nonzero(distances >= self.distance_threshold)) + 1
        else:
            self.n_clusters_ = self.n_clusters
        self.labels_ = hc_cut(self.n_clusters_, self.children_, self.n_leaves_)
        return self

    def fit_predict(self, X, y=None):
        return self.fit(X).labels_
