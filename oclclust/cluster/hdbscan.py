"""HDBSCAN on an OpenCL device (scikit-learn's API and results).

Core distances by k nearest neighbours (passes/neighbours.py) and the
mutual-reachability minimum spanning tree (passes/mst.py) run on the
device, distances computed from the rows; the condensed tree and the
cluster selection run on the host in O(n) (cluster/hdbscan_tree.py).
"""
import numpy as np

from ._base import BaseEstimator, ClusterMixin
from .hdbscan_tree import hdbscan_labels
from .hierarchical import _check_range, _plan
from ..passes.mst import minimum_spanning_tree
from ..passes.neighbours import core_distances, prim_edges
from ..runtime.validation import check_data, check_params

# scikit-learn's metric names -> the device's (pdist's) names
METRICS = {"euclidean": "euclidean", "l2": "euclidean", "sqeuclidean": "sqeuclidean",
           "manhattan": "cityblock", "cityblock": "cityblock", "l1": "cityblock",
           "chebyshev": "chebyshev", "infinity": "chebyshev"}
# (cosine is left out: scikit-learn's cosine distances round unlike pdist's,
# and its near-tied trees then split differently)
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


class HDBSCAN(ClusterMixin, BaseEstimator):
    """Hierarchical density-based clustering on an OpenCL device.

    scikit-learn's parameters and attributes (``labels_``,
    ``probabilities_``, ``centroids_`` / ``medoids_`` with store_centers);
    ``algorithm`` and ``leaf_size`` are accepted and checked (the device
    computes every distance, so no tree is built); ``devices``: as in every
    oclclust estimator.  Rows with NaN get label -3, with inf -2, as in
    scikit-learn.
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
        check_params(self, {
            "min_cluster_size": [(int, 2, None), (np.integer, 2, None)],
            "min_samples": [(int, 1, None), (np.integer, 1, None), None],
            "cluster_selection_epsilon": real,
            "max_cluster_size": [(int, 1, None), (np.integer, 1, None), None],
            "metric": list(METRICS),
            "metric_params": [dict, None],
            "alpha": real,
            "algorithm": ["auto", "brute", "kd_tree", "ball_tree"],
            "leaf_size": [(int, 1, None), (np.integer, 1, None)],
            "cluster_selection_method": ["eom", "leaf"],
            "allow_single_cluster": [bool, np.bool_],
            "store_centers": ["centroid", "medoid", "both", None],
            "copy": [bool, np.bool_]})
        if self.alpha == 0:
            raise ValueError(f"The 'alpha' parameter of HDBSCAN must be a float in the range "
                             f"(0.0, inf). Got {self.alpha!r} instead.")
        if self.metric_params:
            raise ValueError(f"metric_params are not used by the {self.metric!r} metric")
        metric = METRICS[self.metric]
        if self.alpha != 1.0 and metric not in HOMOGENEITY:
            raise ValueError(f"alpha != 1 is supported for the metrics "
                             f"{sorted(HOMOGENEITY)} (got metric={self.metric!r})")
        return metric

    def fit(self, X, y=None):
        metric = self._check_params()
        X = np.asarray(check_data(X, type(self).__name__, min_samples=1), np.float64)
        self.n_features_in_ = X.shape[1]
        with np.errstate(invalid="ignore"):     # inf - inf: a missing row, as sklearn counts it
            sums = X.sum(axis=1)
        missing, infinite = np.isnan(sums), np.isinf(sums)
        finite = ~(missing | infinite)
        Xf = X[finite] if not finite.all() else X
        if Xf.shape[0] == 1 or X.shape[0] == 1:
            raise ValueError("n_samples=1 while HDBSCAN requires more than one sample")
        min_samples = self.min_cluster_size if self.min_samples is None else self.min_samples
        if min_samples > Xf.shape[0]:
            raise ValueError(f"min_samples ({min_samples}) must be at most the number of "
                             f"samples in X ({Xf.shape[0]})")
        plan = _plan(self.devices)
        _check_range(Xf, plan)
        core = core_distances(plan, Xf, int(min_samples), metric)
        rows = Xf if self.alpha == 1.0 else Xf / self.alpha ** (1.0 / HOMOGENEITY[metric])
        a, b, w = minimum_spanning_tree(plan, rows, metric, core=core, ties="any")
        if np.any(w[1:] == w[:-1]) and Xf.shape[0] <= PRIM_TIES_UP_TO:
            a, b, w = prim_edges(plan, rows, metric, core)
        labels, probs = hdbscan_labels(
            a, b, w, int(self.min_cluster_size), self.cluster_selection_method,
            bool(self.allow_single_cluster), float(self.cluster_selection_epsilon),
            self.max_cluster_size)
        self.labels_ = np.empty(X.shape[0], np.int64)
        self.probabilities_ = np.empty(X.shape[0])
        self.labels_[finite], self.probabilities_[finite] = labels, probs
        self.labels_[infinite], self.probabilities_[infinite] = INFINITE
        self.labels_[missing], self.probabilities_[missing] = MISSING
        if self.store_centers:
            self._centers(Xf, labels, probs, metric)
        return self

    def _centers(self, X, labels, probs, metric):
        """Strength-weighted centroids / medoids of each cluster (scikit-learn's)."""
        from scipy.spatial.distance import cdist
        k = int(labels.max()) + 1 if labels.size else 0
        want = self.store_centers
        if want in ("centroid", "both"):
            self.centroids_ = np.array([np.average(X[labels == c], weights=probs[labels == c],
                                                   axis=0) for c in range(k)]).reshape(k, -1)
        if want in ("medoid", "both"):
            medoids = []
            for c in range(k):
                rows = X[labels == c]
                cost = (cdist(rows, rows, metric) * probs[labels == c]).sum(axis=1)
                medoids.append(rows[np.argmin(cost)])
            self.medoids_ = np.array(medoids).reshape(k, X.shape[1])

    def fit_predict(self, X, y=None):
        return self.fit(X).labels_

    def __sklearn_tags__(self):
        # NaN / inf rows are labelled (-3 / -2), not refused, as in scikit-learn
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags
