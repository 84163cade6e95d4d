"""HDBSCAN on an OpenCL device (scikit-learn's API and results).

Core distances by k nearest neighbours (passes/neighbours.py) and the
mutual-reachability minimum spanning tree (passes/mst.py) run on the
device, distances computed from the rows; the condensed tree and the
cluster selection run on the host in O(n) (tree.py).
A precomputed distance matrix (dense or sparse), sparse rows and the
metrics the devices lack (scipy's, callables, metric_params) take the
host's n x n distances and Prim's instead (metrics.py,
host_mst.py), then the same tree.
"""
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..._base import DEVICES_RULE, BaseEstimator, ClusterMixin, RecordsKernels, fit_devices
from .host_mst import check_precomputed, dense_mst, sparse_mst
from .metrics import DEVICE, NAMES, check_algorithm, distance_matrix, on_device, prim_on_rows
from .tree import labels_at_cut, single_linkage, tree_labels, tree_record
from ....passes.linkage import check_range, plan_for
from ....passes.mst import minimum_spanning_tree, tiles_work
from ....passes.neighbours import GRID_METRICS, core_distances, prim_edges
from ....runtime.validation import check_data, check_params, is_sparse

# d(x / s, y / s) = d(x, y) / s ** power: alpha divides the pair distance
# (not the core distance), done by scaling the rows the MST sees
HOMOGENEITY = {"euclidean": 1, "cityblock": 1, "chebyshev": 1, "sqeuclidean": 2}
# scikit-learn's encoding of rows it cannot place (label, probability)
INFINITE = (-2, 0.0)
MISSING = (-3, np.nan)
# with heights tied (core distances make many), scikit-learn's tree
# condenses by its Prim's edges in its order: Prim's on the rows, n
# launches; past this many rows Boruvka's tree is taken (the same clusters
# at every height; a tied height may condense otherwise)
PRIM_TIES_UP_TO = 20000
# algorithm="auto": core distances over a grid of cells and the MST over its
# hierarchy of tiles from this many rows
GRID_FROM = 4096


class HDBSCAN(ClusterMixin, RecordsKernels, BaseEstimator):
    """Hierarchical density-based clustering on an OpenCL device.

    Core distances (k nearest neighbours; over a grid of cells in low
    dimensions, see ``algorithm``) and the mutual-reachability minimum
    spanning tree on the device, distances computed from the rows;
    the condensed tree and the cluster selection on the host in O(N):
    scikit-learn's labels and probabilities.

    Parameters
    ----------
    min_cluster_size : int, default=5
        The fewest rows a cluster has.
    min_samples : int or None, default=None
        Neighbours that make a row's core distance (None: min_cluster_size).
    cluster_selection_epsilon : float, default=0.0
        Clusters closer than this are merged.
    max_cluster_size : int or None, default=None
        The most rows an "eom" cluster has (None: no limit).
    metric : str or callable, default="euclidean"
        The distance: on the device euclidean, manhattan, chebyshev and
        minkowski; scipy's, callables and "precomputed" on the host.
    metric_params : dict or None, default=None
        The metric's keyword arguments.
    alpha : float, default=1.0
        Scales the distances in the mutual reachability (> 0).
    algorithm : {"auto", "brute", "kd_tree", "ball_tree"}, default="auto"
        Checked as scikit-learn checks it.  The core distances of
        euclidean, manhattan and chebyshev rows: over a grid of cells with
        "kd_tree" or "ball_tree" (scikit-learn's spatial indexes) and with
        "auto" from 4096 rows, else from every pair; the same values.  With
        those, for every metric on the device, the minimum spanning tree's
        scans skip whole groups of far rows (a hierarchy of boxes over a
        k-d tree's leaves), else test every tile: the same tree.
    leaf_size : int, default=40
        Checked as scikit-learn checks it.
    n_jobs : int or None, default=None
        Accepted for scikit-learn's API.
    cluster_selection_method : {"eom", "leaf"}, default="eom"
        Excess of mass, or the tree's leaves.
    allow_single_cluster : bool, default=False
        Whether one cluster of all rows may be chosen.
    store_centers : {None, "centroid", "medoid", "both"}, default=None
        Keep each cluster's centroid and / or medoid.
    copy : bool, default=False
        Accepted for scikit-learn's API: X is never written to.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Each row's cluster; -1 noise, -2 infinite, -3 missing values.
    probabilities_ : ndarray of shape (n_samples,)
        Each row's strength of membership in its cluster.
    centroids_, medoids_ : ndarray of shape (n_clusters, n_features)
        Per cluster, with store_centers.

    See Also
    --------
    DBSCAN : one density, eps.
    AgglomerativeClustering : the single-linkage tree HDBSCAN condenses.

    Examples
    --------
    >>> import numpy as np
    >>> import oclclust as oc
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 0.3, (30, 2)), rng.normal(5, 0.3, (30, 2))])
    >>> hd = oc.HDBSCAN(min_cluster_size=10).fit(X)
    >>> np.bincount(hd.labels_ + 1)
    array([ 0, 30, 30])
    >>> int(hd.dbscan_clustering(cut_distance=1.0).max())
    1
    """

    def __init__(self, min_cluster_size=5, min_samples=None, cluster_selection_epsilon=0.0,
                 max_cluster_size=None, metric="euclidean", metric_params=None, alpha=1.0,
                 algorithm="auto", leaf_size=40, n_jobs=None, cluster_selection_method="eom",
                 allow_single_cluster=False, store_centers=None, copy=False, devices=None):
        self.min_cluster_size = min_cluster_size
        self.min_samples = min_samples
        self.cluster_selection_epsilon = cluster_selection_epsilon
        self.max_cluster_size = max_cluster_size
        self.metric = metric
        self.metric_params = metric_params
        self.alpha = alpha
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.n_jobs = n_jobs
        self.cluster_selection_method = cluster_selection_method
        self.allow_single_cluster = allow_single_cluster
        self.store_centers = store_centers
        self.copy = copy
        self.devices = devices

    def _check_params(self):
        real = [(float, 0, None), (int, 0, None), (np.floating, 0, None), (np.integer, 0, None)]
        positive = [(*rule, "neither") for rule in real]
        check_params(self, {
            "min_cluster_size": [(int, 2, None), (np.integer, 2, None)],
            "min_samples": [(int, 1, None), (np.integer, 1, None), None],
            "cluster_selection_epsilon": real,
            "max_cluster_size": [(int, 1, None), (np.integer, 1, None), None],
            "metric": NAMES + [Callable],
            "metric_params": [dict, None],
            "alpha": positive,
            "algorithm": ["auto", "brute", "kd_tree", "ball_tree"],
            "leaf_size": [(int, 1, None), (np.integer, 1, None)],
            "cluster_selection_method": ["eom", "leaf"],
            "allow_single_cluster": [bool, np.bool_],
            "store_centers": ["centroid", "medoid", "both", None],
            "copy": [bool, np.bool_],
            "devices": DEVICES_RULE})
        if self.metric == "precomputed" and self.store_centers is not None:
            raise ValueError("Cannot store centers when using a precomputed distance matrix.")

    def _check_X(self, X):
        """X as float64 (dense, or canonical CSR), scikit-learn's input errors."""
        if not is_sparse(X):
            X = np.asarray(check_data(X, type(self).__name__, min_samples=1), np.float64)
            if self.metric == "precomputed" and np.isnan(X).any():
                raise ValueError("np.nan values found in precomputed-dense")
            return X
        if X.ndim != 2:
            raise ValueError(f"Expected 2D input, got {X.ndim}D sparse input instead.")
        if min(X.shape) < 1:
            raise ValueError(f"Found array with {X.shape[0]} sample(s) and {X.shape[1]} "
                             f"feature(s) (shape={X.shape}) while a minimum of 1 is required "
                             "by HDBSCAN.")
        if np.iscomplexobj(X):
            raise ValueError("Complex data not supported")
        X = X.tocsr().astype(np.float64, copy=True)
        X.sum_duplicates()
        X.sort_indices()
        if self.metric == "precomputed" and not np.isfinite(X.data).all():
            raise ValueError("Input X contains NaN or infinity.")
        return X

    def fit(self, X, y=None):
        self._check_params()
        X = self._check_X(X)
        sparse, precomputed = is_sparse(X), self.metric == "precomputed"
        self.n_features_in_ = X.shape[1]
        finite = np.ones(X.shape[0], bool)
        missing = infinite = ~finite
        if not precomputed:
            with np.errstate(invalid="ignore"):     # inf - inf: a missing row, as sklearn counts it
                sums = np.asarray(X.sum(axis=1)).ravel()
            missing, infinite = np.isnan(sums), np.isinf(sums)
            finite = ~(missing | infinite)
        Xf = X[finite] if not finite.all() else X
        if Xf.shape[0] == 1 or X.shape[0] == 1:
            raise ValueError("n_samples=1 while HDBSCAN requires more than one sample")
        min_samples = self.min_cluster_size if self.min_samples is None else self.min_samples
        if min_samples > Xf.shape[0]:
            raise ValueError(f"min_samples ({min_samples}) must be at most the number of "
                             f"samples in X ({Xf.shape[0]})")
        check_algorithm(self.algorithm, self.metric)
        if sparse and not precomputed and self.algorithm not in ("auto", "brute"):
            raise ValueError("Sparse data matrices only support algorithm `brute`.")
        a, b, w = self._mst(Xf, int(min_samples), sparse, precomputed)
        tree = single_linkage(a, b, w)
        labels, probs = tree_labels(
            tree, int(self.min_cluster_size), self.cluster_selection_method,
            bool(self.allow_single_cluster), float(self.cluster_selection_epsilon),
            self.max_cluster_size)
        # scikit-learn's record of the tree (dbscan_clustering cuts it)
        self._single_linkage_tree_ = tree_record(tree, np.flatnonzero(finite), X.shape[0])
        self.labels_ = np.empty(X.shape[0], np.int64)
        self.probabilities_ = np.empty(X.shape[0])
        self.labels_[finite], self.probabilities_[finite] = labels, probs
        self.labels_[infinite], self.probabilities_[infinite] = INFINITE
        self.labels_[missing], self.probabilities_[missing] = MISSING
        if self.store_centers:
            self._centers(Xf, labels, probs)
        self.devices_ = fit_devices(Xf.shape[0])
        return self

    def _mst(self, X, min_samples, sparse, precomputed):
        """(a, b, w) edges of the mutual-reachability MST of the finite rows X."""
        params = dict(self.metric_params or {})
        if precomputed:
            check_precomputed(X)
            if sparse:
                return sparse_mst(X, min_samples, self.alpha, params.get("max_distance", 0.0))
            return dense_mst(X, min_samples, self.alpha)
        if not on_device(self.metric, params, sparse):
            on_rows = prim_on_rows(self.algorithm, self.metric, sparse)
            D = distance_matrix(X, self.metric, params, on_rows)
            return dense_mst(D, min_samples, self.alpha, on_rows, own=True)
        metric = DEVICE[self.metric]
        plan = plan_for(self.devices)
        check_range(X, plan)
        # a spatial index where the rows are many (kd_tree / ball_tree: one
        # asked for, at any size): the MST's scans over the tiles' hierarchy
        # (every device metric), the core distances over a grid of cells
        # where the metric allows
        index = (self.algorithm in ("kd_tree", "ball_tree") or
                 (self.algorithm == "auto" and X.shape[0] >= GRID_FROM))
        # each row's nearest rows: the MST's first candidates, where its
        # distances are theirs (alpha 1: the rows unscaled)
        grid = index and metric in GRID_METRICS
        rows = X if self.alpha == 1.0 else X / self.alpha ** (1.0 / HOMOGENEITY[metric])
        # the MST's tiles come from the rows alone: made on a thread of the
        # host while the core distances run (1M x 8 on an H200 host: the
        # k-d tree's leaves, their rows and boxes took 0.4-0.55 s)
        with ThreadPoolExecutor(1) as pool:
            tiles = pool.submit(tiles_work(plan, rows, metric, core=True, index=index))
            if self.alpha == 1.0:
                core, nearest = core_distances(plan, X, min_samples, metric, grid,
                                               neighbours=True)
            else:
                core, nearest = core_distances(plan, X, min_samples, metric, grid), None
            a, b, w = minimum_spanning_tree(plan, rows, metric, core=core, ties="any",
                                            index=index, nearest=nearest, tiles=tiles.result())
        if np.any(w[1:] == w[:-1]) and X.shape[0] <= PRIM_TIES_UP_TO:
            a, b, w = prim_edges(plan, rows, metric, core)
        return a, b, w

    def _centers(self, X, labels, probs):
        """Strength-weighted centroids / medoids of each cluster (scikit-learn's)."""
        from scipy.spatial.distance import cdist
        k = int(labels.max()) + 1 if labels.size else 0
        want = self.store_centers
        members = [X[labels == c] for c in range(k)]
        members = [m.toarray() if is_sparse(m) else m for m in members]
        weights = [probs[labels == c] for c in range(k)]
        if want in ("centroid", "both"):
            self.centroids_ = np.array([np.average(m, weights=p, axis=0) for m, p in
                                        zip(members, weights)]).reshape(k, X.shape[1])
        if want in ("medoid", "both"):
            medoids = []
            for rows, p in zip(members, weights):
                params = self.metric_params or {}
                D = (cdist(rows, rows, DEVICE[self.metric])
                     if on_device(self.metric, params, False) else
                     distance_matrix(rows, self.metric, params))
                medoids.append(rows[np.argmin((D * p).sum(axis=1))])
            self.medoids_ = np.array(medoids).reshape(k, X.shape[1])

    def dbscan_clustering(self, cut_distance, min_cluster_size=5):
        """DBSCAN* labels at *cut_distance* (scikit-learn's).

        The flat clusters of the single-linkage tree of mutual
        reachability cut there.

        Parameters
        ----------
        cut_distance : float
            The mutual-reachability distance to cut the tree at.
        min_cluster_size : int, default=5
            Clusters smaller than this are noise (-1).

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Each row's cluster; -1 noise, -2 rows with inf, -3 with NaN.
        """
        if not hasattr(self, "_single_linkage_tree_"):
            # a model file keeps the labels, not the tree they came from
            raise AttributeError("dbscan_clustering needs the single-linkage tree of a fit in "
                                 "this process (a loaded model has none): fit again")
        labels = labels_at_cut(self._single_linkage_tree_, cut_distance, min_cluster_size)
        labels[self.labels_ == INFINITE[0]] = INFINITE[0]
        labels[self.labels_ == MISSING[0]] = MISSING[0]
        return labels

    def fit_predict(self, X, y=None):
        return self.fit(X).labels_

    def __sklearn_tags__(self):
        # NaN / inf rows are labelled (-3 / -2), not refused, as in scikit-learn
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.metric != "precomputed"
        tags.input_tags.sparse = True
        return tags
