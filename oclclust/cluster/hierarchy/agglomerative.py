"""scikit-learn's AgglomerativeClustering on an OpenCL device: the tree is
oclclust.linkage's (scipy's algorithms on the device), relabelled and cut
as scikit-learn does on the host."""
import heapq

import numpy as np

from .._base import DEVICES_RULE, BaseEstimator, ClusterMixin, RecordsKernels, fit_devices
from ..merge_tree import merged_clusters
from .linkage_matrix import _single_on_rows, linkage
from ...passes.linkage import check_range, condensed_distances, plan_for, prim_single
from ...passes.mst import minimum_spanning_tree
from ...runtime.validation import check_data, check_params

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
    # the tree's depth rounds (a Python walk of the leaves was slow at large n)
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
        plan = plan_for(devices)
        check_range(X, plan)
        if _single_on_rows(plan, X.shape[0]):
            a, b, w = minimum_spanning_tree(plan, X, metric)
            return sklearn_single_children(np.column_stack([a, b]), X.shape[0]), w
        dist, n = condensed_distances(plan, X=X, metric=metric)
        pairs, heights = prim_single(plan, dist, n)
        order = np.argsort(heights, kind="mergesort")
        return sklearn_single_children(pairs[order], n), heights[order]
    Z = linkage(X, method, metric, devices=devices)
    return Z[:, :2].astype(np.intp), Z[:, 2]


class AgglomerativeClustering(ClusterMixin, RecordsKernels, BaseEstimator):
    """Agglomerative clustering on an OpenCL device (scikit-learn's API).

    The tree is :func:`oclclust.linkage`'s (scipy's algorithms, with the
    distance matrix, its minimum search and the Lance-Williams updates on
    the device), so ``labels_``, ``children_`` and ``distances_`` equal
    scikit-learn's.

    Parameters
    ----------
    n_clusters : int or None, default=2
        The clusters to find; None with ``distance_threshold``.
    metric : str or callable, default="euclidean"
        The distance between rows ("euclidean" only for ward), or
        "precomputed" for a distance matrix X.
    memory : None
        Accepted for scikit-learn's API (no caching).
    connectivity : None
        Connectivity constraints are not implemented
        (NotImplementedError).
    compute_full_tree : "auto" or bool, default="auto"
        Accepted for scikit-learn's API: the whole tree is always built.
    linkage : {"ward", "complete", "average", "single"}, default="ward"
        The merge criterion.
    distance_threshold : float or None, default=None
        Cut the tree at this height instead of at n_clusters.
    compute_distances : bool, default=False
        Keep the merges' heights in ``distances_``.

    Attributes
    ----------
    n_clusters_ : int
        Clusters found.
    labels_ : ndarray of shape (n_samples,)
        Each row's cluster.
    n_leaves_ : int
        Leaves of the tree.
    n_connected_components_ : int
        Connected components of the rows (1).
    children_ : ndarray of shape (n_samples - 1, 2)
        The merges, as scikit-learn numbers them.
    distances_ : ndarray of shape (n_samples - 1,)
        The merges' heights, with compute_distances or distance_threshold.

    See Also
    --------
    linkage : scipy's linkage matrix of the same tree.

    Examples
    --------
    >>> import numpy as np
    >>> import oclclust as oc
    >>> X = np.array([[1, 2], [1, 4], [1, 0],
    ...               [4, 2], [4, 4], [4, 0]], dtype=np.float32)
    >>> hc = oc.AgglomerativeClustering(n_clusters=2).fit(X)
    >>> hc.labels_
    array([1, 1, 1, 0, 0, 0])
    >>> hc.children_.shape
    (5, 2)
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
            "compute_distances": [bool, np.bool_],
            "devices": DEVICES_RULE})
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
        self.devices_ = fit_devices(X.shape[0])
        return self

    def fit_predict(self, X, y=None):
        return self.fit(X).labels_
