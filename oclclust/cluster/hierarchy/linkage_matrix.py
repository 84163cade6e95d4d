"""scipy's linkage on an OpenCL device: the same Z.

The device work (distance matrix, merges) is in passes/linkage.py,
passes/linkage_rows.py, passes/linkage_generic.py and passes/mst.py; here
are the public function, its input rules and the bookkeeping scipy does on
the host (sorting, relabelling the merges as cluster ids).
"""
import warnings

import numpy as np

from ..merge_tree import merged_clusters
from ...passes.linkage import (NN_CHAIN, check_range, condensed_distances, nn_chain, plan_for,
                               prim_single)
from ...passes.linkage_generic import generic_linkage
from ...passes.linkage_rows import WardRowsTerms, generic_rows, ward_rounds, ward_rows
from ...passes.mst import MstTerms, minimum_spanning_tree
from ...runtime.validation import check_data
from ...runtime.warning_site import user_stacklevel

METHODS = ("single", "complete", "average", "weighted", "centroid", "median", "ward")
METRICS = ("euclidean", "sqeuclidean", "cityblock", "chebyshev", "cosine")
EUCLIDEAN_METHODS = ("centroid", "median", "ward")


def _check_condensed(y):
    m = y.shape[0]
    n = int(np.ceil(np.sqrt(m * 2)))
    if n * (n - 1) // 2 != m or m == 0:
        raise ValueError("Length n of condensed distance matrix 'y' must be a binomial "
                         "coefficient, i.e. there must be a k such that (k \\choose 2)=n) "
                         "with k >= 2!")
    if not np.all(np.isfinite(y)):
        raise ValueError("The condensed distance matrix must contain only finite values.")


def _overflow(plan, method):
    """The error where finite, non-negative distances made a non-finite
    merge height (or left a row no neighbour closer than inf): a
    Lance-Williams update squares distances and overflowed the plan's value
    type, and the tree above it would be silently wrong."""
    return ValueError(f"the {method} linkage's merge heights overflow "
                      f"{plan.dtype.name} on {plan.profile}: scale the data down")


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

    Parameters
    ----------
    y : array-like of shape (n, d) or (n * (n - 1) / 2,)
        Observations, or a condensed distance vector (pdist's layout).
    method : {"single", "complete", "average", "weighted", "centroid", "median", "ward"}, default="single"
        The linkage.
    metric : {"euclidean", "sqeuclidean", "cityblock", "chebyshev", "cosine"}, default="euclidean"
        The distance between observations (euclidean only for centroid,
        median and ward).
    optimal_ordering : bool, default=False
        Reorder the leaves as scipy does (on the host, with scipy).
    devices : str, DeviceProfile, list or DeviceManager, default=None
        As every estimator's (the first GPU of them, else the largest
        device).

    Returns
    -------
    Z : ndarray of shape (n - 1, 4)
        scipy's linkage matrix: the merged clusters, their height and size.

    See Also
    --------
    AgglomerativeClustering : the same tree, cut into clusters.

    Notes
    -----
    Single linkage runs Prim's MST,
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

    Examples
    --------
    >>> import numpy as np
    >>> import oclclust as oc
    >>> X = np.array([[0, 0], [0, 1], [4, 0], [4, 2]], dtype=np.float32)
    >>> oc.linkage(X, method="single")
    array([[0., 1., 1., 2.],
           [2., 3., 2., 2.],
           [4., 5., 4., 4.]])
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
                          ClusterWarning, stacklevel=user_stacklevel())
        y = None
    else:
        raise ValueError("`y` must be 1 or 2 dimensional.")
    # negative distances make NaN heights and find_min_dist errors in scipy
    # too (ward of [0, 0, -1]; its gh-21011): from others they are overflows
    nonnegative = X is not None or bool(np.all(y >= 0))
    plan = plan_for(devices)
    check_range(y if X is None else X, plan)
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
