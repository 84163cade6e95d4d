"""Hierarchical agglomerative clustering: scipy's linkage and scikit-learn's
AgglomerativeClustering, computed on an OpenCL device.

The device work (distance matrix, merges) is in linkage_device.py and
linkage_generic.py; here are the public API, input rules and the
bookkeeping scipy and scikit-learn do on the host (sorting, relabelling,
cutting the tree).
"""
import heapq
import warnings

import numpy as np

from .base import BaseEstimator, ClusterMixin
from .devices import preferred, select_devices
from .linkage_device import NN_CHAIN, Plan, condensed_distances, nn_chain, prim_single
from .linkage_generic import generic_linkage
from .validation import check_data, check_params

METHODS = ("single", "complete", "average", "weighted", "centroid", "median", "ward")
METRICS = ("euclidean", "sqeuclidean", "cityblock", "chebyshev", "cosine")
EUCLIDEAN_METHODS = ("centroid", "median", "ward")


def _plan(devices):
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


def label(Z, n):
    """scipy's _hierarchy.label: merges of point/cluster indices (sorted by
    height) become cluster ids, the smaller id first, with cluster sizes."""
    parent = np.arange(2 * n - 1).tolist()
    size = [1] * (2 * n - 1)

    def find(x):
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root
    pairs = Z[:, :2].astype(np.int64).tolist()
    for k, (x, y) in enumerate(pairs):
        a, b = find(x), find(y)
        Z[k, 0], Z[k, 1] = min(a, b), max(a, b)
        parent[a] = parent[b] = n + k
        size[n + k] = size[a] + size[b]
        Z[k, 3] = size[n + k]
    return Z


def _sorted_linkage(pairs, heights, n):
    Z = np.empty((n - 1, 4))
    Z[:, :2], Z[:, 2] = pairs, heights
    return label(Z[np.argsort(heights, kind="mergesort")], n)


def linkage(y, method="single", metric="euclidean", optimal_ordering=False, devices=None):
    """scipy.cluster.hierarchy.linkage on an OpenCL device: the same Z.

    *y*: observations (n x d) or a condensed distance vector (pdist's
    layout).  *method*: single, complete, average, weighted, centroid,
    median or ward; *metric*: euclidean, sqeuclidean, cityblock, chebyshev
    or cosine (observations only).  Single linkage runs Prim's MST,
    complete/average/weighted/ward the nearest-neighbour chain and
    centroid/median the generic algorithm, as scipy does, so ties and
    duplicate points merge as scipy merges them.  ``devices``: as in every
    oclclust estimator (the first GPU of them, else the largest device).
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
    plan = _plan(devices)
    dist, n = condensed_distances(plan, X=X, y=y, metric=metric)
    if method == "single":
        Z = _sorted_linkage(*prim_single(plan, dist, n), n)
    elif method in NN_CHAIN:
        Z = _sorted_linkage(*nn_chain(plan, dist, n, method), n)
    else:
        Z = generic_linkage(plan, dist, n, method)
    if optimal_ordering:
        from scipy.cluster.hierarchy import optimal_leaf_ordering
        from scipy.spatial.distance import pdist
        Z = optimal_leaf_ordering(Z, y if X is None else pdist(X, metric))
    return Z
