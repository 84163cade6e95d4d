"""HDBSCAN's metrics: the ones the devices compute, scikit-learn's names and
its rules for which metric each neighbour-search algorithm takes, and the
n x n distance matrix on the host for everything else (scipy's metrics,
callables, metric_params, sparse rows), as sklearn.metrics.pairwise_distances
gives it.
"""
import numpy as np

from ....runtime.validation import is_sparse

# scikit-learn's metric names the devices compute -> the device's (pdist's)
# names, for dense rows and no metric_params (cosine is left out: scikit-
# learn's cosine distances round unlike pdist's, and its near-tied trees
# then split differently)
DEVICE = {"euclidean": "euclidean", "l2": "euclidean", "sqeuclidean": "sqeuclidean",
          "manhattan": "cityblock", "cityblock": "cityblock", "l1": "cityblock",
          "chebyshev": "chebyshev", "infinity": "chebyshev"}
# the metrics scikit-learn's KDTree and BallTree take (their valid_metrics):
# algorithm="kd_tree" / "ball_tree" refuses the others, as scikit-learn's does
KD_TREE = ("euclidean", "l2", "minkowski", "p", "manhattan", "cityblock", "l1", "chebyshev",
           "infinity")
BALL_TREE = KD_TREE + ("seuclidean", "mahalanobis", "hamming", "canberra", "braycurtis",
                       "jaccard", "dice", "rogerstanimoto", "russellrao", "sokalmichener",
                       "sokalsneath", "haversine", "pyfunc")
# sklearn.metrics.pairwise_distances' names (its _VALID_METRICS)
PAIRWISE = ("braycurtis", "canberra", "chebyshev", "cityblock", "correlation", "cosine", "dice",
            "euclidean", "hamming", "haversine", "jaccard", "l1", "l2", "mahalanobis",
            "manhattan", "matching", "minkowski", "nan_euclidean", "rogerstanimoto",
            "russellrao", "seuclidean", "sokalsneath", "sqeuclidean", "wminkowski", "yule")
NAMES = sorted(set(BALL_TREE + PAIRWISE) | {"precomputed"})
# scikit-learn's aliases -> scipy's names (sokalmichener is rogerstanimoto's
# formula: scipy dropped the duplicate; nan_euclidean: rows with NaN never
# reach the distances, they are labelled -3, and between finite rows it is
# the euclidean distance)
SCIPY = {"l1": "cityblock", "manhattan": "cityblock", "l2": "euclidean", "infinity": "chebyshev",
         "p": "minkowski", "matching": "hamming", "sokalmichener": "rogerstanimoto",
         "nan_euclidean": "euclidean"}
# compared as booleans (non-zero is true), as scikit-learn compares them
BOOLEAN = {"dice", "jaccard", "rogerstanimoto", "russellrao", "sokalsneath", "sokalmichener",
           "yule"}
# through the Gram matrix, as scikit-learn's pairwise_distances computes them
# (sqeuclidean only for sparse rows, which scipy does not take)
GRAM = {"euclidean", "cosine"}


def on_device(metric, params, sparse):
    """Whether the devices compute *metric* (else the host does)."""
    return isinstance(metric, str) and metric in DEVICE and not params and not sparse


def check_algorithm(algorithm, metric):
    """scikit-learn's error for a metric its chosen neighbour tree lacks."""
    for name, tree, valid in (("kd_tree", "KDTree", KD_TREE),
                              ("ball_tree", "BallTree", BALL_TREE)):
        if algorithm == name and (callable(metric) or metric not in valid):
            raise ValueError(f"{metric} is not a valid metric for a {tree}-based algorithm. "
                             "Please select a different metric.")


def prim_on_rows(algorithm, metric, sparse):
    """Whether scikit-learn builds this tree by its Prim's on the rows (core
    distances from a KDTree / BallTree, each edge from its tree source, alpha
    dividing the pair distances only) rather than from the distance matrix
    (alpha dividing every distance, core distances too)."""
    return (not sparse and algorithm != "brute" and isinstance(metric, str)
            and metric in BALL_TREE)


def distance_matrix(X, metric, params=None, on_rows=False):
    """n x n float64 distances between the rows of X (dense or sparse), as
    pairwise_distances gives them; *on_rows*: as scikit-learn's neighbour
    trees measure them (its Bray-Curtis divides by sum |x| + |y|, scipy's by
    sum |x + y|)."""
    from scipy.spatial.distance import pdist, squareform
    params = dict(params or {})
    if metric == "pyfunc":                  # BallTree's name for a callable in params
        metric = params.pop("func")
    if metric == "wminkowski":
        raise ValueError("Unknown Distance Metric: wminkowski (scipy removed it: use "
                         "metric='minkowski' with metric_params={'w': ...})")
    name = metric if callable(metric) else SCIPY.get(metric, metric)
    if not params and (name in GRAM or (name == "sqeuclidean" and is_sparse(X))):
        return _gram_distances(X, name)
    rows = X.toarray() if is_sparse(X) else np.asarray(X)
    if name == "haversine":
        return _haversine(rows)
    if name == "braycurtis" and on_rows and not params:
        return _tree_braycurtis(rows)
    if not callable(name) and name in BOOLEAN:
        rows = rows != 0
    if name == "mahalanobis" and "V" in params:     # scikit-learn takes V, scipy its inverse
        params["VI"] = np.linalg.inv(params.pop("V"))
    D = squareform(pdist(rows, name, **params))
    return np.asarray(D, np.float64)


def _squared_norms(X):
    if is_sparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), np.float64).ravel()
    return np.einsum("ij,ij->i", X, X)


def _gram_distances(X, name):
    """scikit-learn's euclidean / cosine distances: through X X^T, clipped
    at 0, the diagonal 0."""
    if name == "cosine":
        norms = np.sqrt(_squared_norms(X))
        norms[norms == 0.0] = 1.0          # a row of zeros stays zeros
        if is_sparse(X):                    # each row's values divided by its norm
            Xn = X.copy()
            Xn.data /= np.repeat(norms, np.diff(X.indptr))
        else:
            Xn = X / norms[:, None]
        D = np.asarray((Xn @ Xn.T).toarray() if is_sparse(Xn) else Xn @ Xn.T, np.float64)
        D *= -1
        D += 1
        np.clip(D, 0, 2, out=D)
    else:
        gram = X @ X.T
        D = -2 * np.asarray(gram.toarray() if is_sparse(gram) else gram, np.float64)
        sq = _squared_norms(X)
        D += sq[:, None]
        D += sq[None, :]
        np.maximum(D, 0, out=D)
    np.fill_diagonal(D, 0.0)
    return np.sqrt(D, out=D) if name == "euclidean" else D


def _haversine(rows):
    """Great-circle distances of (latitude, longitude) rows in radians."""
    if rows.shape[1] != 2:
        raise ValueError("Haversine distance only valid in 2 dimensions")
    lat, lon = rows[:, 0], rows[:, 1]
    half_lat = np.sin(0.5 * (lat[:, None] - lat[None, :]))
    half_lon = np.sin(0.5 * (lon[:, None] - lon[None, :]))
    inner = half_lat ** 2 + np.cos(lat)[:, None] * np.cos(lat)[None, :] * half_lon ** 2
    return 2 * np.arcsin(np.sqrt(inner))


def _tree_braycurtis(rows):
    """sum |x - y| / sum (|x| + |y|), summed feature by feature as
    scikit-learn's trees sum them (0 where both rows are 0)."""
    n = rows.shape[0]
    num, den = np.zeros((n, n)), np.zeros((n, n))
    for col in rows.T:
        num += np.abs(col[:, None] - col[None, :])
        den += np.abs(col)[:, None] + np.abs(col)[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, 0.0)
