"""DBSCAN on an OpenCL device (scikit-learn's API and labels).

The neighbour counts and the search for clusters run on the device without
the eps-graph (passes/dbscan.py): the core rows' connected components by
rounds of the least core label within eps (each followed by pointer jumping
on the host, O(n)), numbered as scikit-learn numbers them, by their least
core row; a border row takes the lowest numbered cluster among its core
neighbours', the one scikit-learn's depth-first expansion, cluster after
cluster in that order, reaches it from first.
"""
import numbers

import numpy as np

from ._base import BaseEstimator, ClusterMixin
from .hierarchical import _check_range, _plan
from ..passes.dbscan import Neighbourhoods
from ..runtime.validation import check_data, check_params, check_sample_weight

# scikit-learn's metric names -> the device's (pdist's) names
METRICS = {"euclidean": "euclidean", "l2": "euclidean", "manhattan": "cityblock",
           "cityblock": "cityblock", "l1": "cityblock", "chebyshev": "chebyshev",
           "infinity": "chebyshev"}


class DBSCAN(ClusterMixin, BaseEstimator):
    """Density-based clustering (DBSCAN) on an OpenCL device.

    scikit-learn's parameters and attributes (``labels_``,
    ``core_sample_indices_``, ``components_``); ``algorithm``, ``leaf_size``,
    ``p`` and ``n_jobs`` are accepted and checked (the device computes every
    distance, no tree is built); ``devices``: as in every oclclust estimator.
    Memory O(n d): the eps-graph is never stored.
    """

    _parameter_rules = {
        "eps": [(numbers.Real, 0, None)],
        "min_samples": [(numbers.Integral, 1, None)],
        "metric": list(METRICS),
        "metric_params": [dict, None],
        "algorithm": ["auto", "ball_tree", "kd_tree", "brute"],
        "leaf_size": [(numbers.Integral, 1, None)],
        "p": [(numbers.Real, 0, None), None],
        "n_jobs": [numbers.Integral, None],
        "devices": [None, str, list, tuple, object],
    }

    def __init__(self, eps=0.5, *, min_samples=5, metric="euclidean", metric_params=None,
                 algorithm="auto", leaf_size=30, p=None, n_jobs=None, devices=None):
        self.eps = eps
        self.min_samples = min_samples
        self.metric = metric
        self.metric_params = metric_params
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.p = p
        self.n_jobs = n_jobs
        self.devices = devices

    def fit(self, X, y=None, sample_weight=None):
        check_params(self, self._parameter_rules)
        if not self.eps > 0:
            raise ValueError(f"The 'eps' parameter of DBSCAN must be a float in the range "
                             f"(0.0, inf). Got {self.eps!r} instead.")
        if self.metric_params:
            raise ValueError(f"metric_params are not used by the {self.metric!r} metric")
        X = np.asarray(check_data(X, type(self).__name__), np.float64)
        if not np.isfinite(X).all():
            raise ValueError("Input X contains NaN or infinity.")
        w = check_sample_weight(sample_weight, X.shape[0], np.float64)
        plan = _plan(self.devices)
        _check_range(X, plan)
        hoods = Neighbourhoods(plan, X, float(self.eps), METRICS[self.metric])
        core = hoods.counts(w) >= self.min_samples
        n = X.shape[0]
        # the core rows' components: each core row's label the least core index it reaches
        label = np.where(core, np.arange(n), -1)
        while True:
            lowered = hoods.min_label(label, core)
            while True:                       # pointer jumping: a label's own label
                jumped = np.where(lowered >= 0, lowered[np.maximum(lowered, 0)], -1)
                if np.array_equal(jumped, lowered):
                    break
                lowered = jumped
            if np.array_equal(lowered, label):
                break
            label = lowered
        roots = np.unique(label[core])       # ascending: scikit-learn's numbering
        number = np.full(n, -1)
        number[core] = np.searchsorted(roots, label[core])
        border = hoods.min_label(number, ~core)
        self.labels_ = np.where(core, number, border).astype(np.intp)
        self.core_sample_indices_ = np.flatnonzero(core)
        self.components_ = X[core].copy()
        self.n_features_in_ = X.shape[1]
        return self

    def fit_predict(self, X, y=None, sample_weight=None):
        return self.fit(X, sample_weight=sample_weight).labels_
