"""HDBSCAN's mutual-reachability minimum spanning tree on the host, from an
n x n distance matrix: a precomputed one (dense or sparse), or the host's
distances for the metrics the devices lack (metrics.py).

Dense: Prim's from node 0 over the matrix, O(n^2) time and the matrix's
memory, in scikit-learn's two edge orders (ties pick the lowest index):
from its distance matrix each edge is recorded from the node added last;
on the rows (its KDTree / BallTree path) from the tree node that last
lowered the new node's reachability.  Sparse: scipy's minimum spanning tree
of the mutual-reachability graph, as scikit-learn takes it.  The caller's
matrix is never written to.
"""
import warnings

import numpy as np

from ....runtime.warning_site import user_stacklevel

INFINITE_EDGES = ("The minimum spanning tree contains edge weights with value infinity. "
                  "Potentially, you are missing too many distances in the initial distance "
                  "matrix for the given neighborhood size.")


def check_precomputed(D):
    """scikit-learn's errors for a distance matrix that is not square or not
    symmetric (np.allclose, or the same sparsity pattern and close values)."""
    prefix = "The precomputed distance matrix is expected to be symmetric, however"
    if D.shape[0] != D.shape[1]:
        raise ValueError(f"{prefix} it has shape {D.shape}. Please verify that the distance "
                         "matrix was constructed correctly.")
    if hasattr(D, "tocsr"):
        A, B = D.tocsr(), D.T.tocsr()
        A.sum_duplicates(), B.sum_duplicates()
        A.sort_indices(), B.sort_indices()
        symmetric = (np.array_equal(A.indices, B.indices) and np.array_equal(A.indptr, B.indptr)
                     and np.allclose(A.data, B.data))
    else:
        symmetric = np.allclose(D, D.T)
    if not symmetric:
        raise ValueError(f"{prefix} its values appear to be asymmetric. Please verify that the "
                         "distance matrix was constructed correctly.")


def _warn_infinite(w):
    if np.isinf(w).any():
        warnings.warn(INFINITE_EDGES, UserWarning, stacklevel=user_stacklevel())


def dense_mst(D, min_samples, alpha=1.0, on_rows=False, own=False):
    """(a, b, w) MST edges of the mutual reachability of distances D, in
    Prim's order.  Core distance: each row's min_samples-th smallest
    distance (its own 0 counted).  on_rows: alpha divides the pair distances
    only and edges come from their tree source (scikit-learn's Prim's on
    the rows); else alpha divides D first and each edge comes from the node
    added last (its Prim's over the distance matrix).  own: D (float64) is
    the caller's to spend, else a copy is worked on."""
    D = D if own else np.array(D, np.float64)
    if not on_rows:
        D /= alpha
    core = np.partition(D, min_samples - 1, axis=1)[:, min_samples - 1]
    if on_rows:
        D /= alpha
    np.maximum(D, core[:, None], out=D)
    np.maximum(D, core[None, :], out=D)
    n = D.shape[0]
    a, b, w = np.empty(n - 1, np.int64), np.empty(n - 1, np.int64), np.empty(n - 1)
    reach = np.full(n, np.inf)              # each node's least weight to the tree
    source = np.zeros(n, np.int64)
    outside = np.ones(n, bool)
    pick = np.empty(n)
    current = 0
    for i in range(n - 1):
        outside[current] = False
        row = D[current]
        lower = (row < reach) & outside
        np.copyto(reach, row, where=lower)
        np.copyto(source, current, where=lower)
        np.copyto(pick, np.inf)
        np.copyto(pick, reach, where=outside)
        j = int(np.argmin(pick))            # the first of tied minima outside the tree
        if not outside[j]:                  # all outside at infinity: the first of them
            j = int(np.argmax(outside))
        a[i] = source[j] if on_rows else current
        b[i], w[i] = j, reach[j]
        current = j
    _warn_infinite(w)
    return a, b, w


def sparse_mst(D, min_samples, alpha=1.0, max_distance=0.0):
    """(a, b, w) MST edges of the mutual reachability of a sparse distance
    matrix (stored entries only: a missing one is no edge); core distance:
    a row's min_samples-th smallest stored distance.  A weight that comes
    out infinite becomes max_distance where that is > 0.  scikit-learn's
    errors for rows with too few distances and for a disconnected graph."""
    from scipy.sparse import csgraph
    D = D.tocsr().astype(np.float64, copy=True)
    D /= alpha           # scipy's sparse division (by the reciprocal), as scikit-learn's
    n = D.shape[0]
    counts = np.diff(D.indptr)
    if (counts < min_samples).any():
        raise ValueError(
            f"There exists points with fewer than {min_samples} neighbors. Ensure your "
            f"distance matrix has non-zero values for at least `min_sample`={min_samples} "
            "neighbors for each points (i.e. K-nn graph), or specify a `max_distance` in "
            "`metric_params` to use when distances are missing.")
    row = np.repeat(np.arange(n), counts)
    by_row = np.lexsort((D.data, row))      # each row's distances ascending
    core = D.data[by_row[D.indptr[:-1] + min_samples - 1]]
    mr = np.maximum(np.maximum(core[row], core[D.indices]), D.data)
    finite = np.isfinite(mr)
    D.data[finite] = mr[finite]
    if max_distance > 0:
        D.data[~finite] = max_distance
    components = csgraph.connected_components(D, directed=False, return_labels=False)
    if components > 1:
        raise ValueError(
            f"Sparse mutual reachability matrix has {components} connected components. "
            "HDBSCAN cannot be performed on a disconnected graph. Ensure that the sparse "
            "distance matrix has only one connected component.")
    tree = csgraph.minimum_spanning_tree(D).tocoo()
    a, b, w = tree.row.astype(np.int64), tree.col.astype(np.int64), tree.data.astype(np.float64)
    _warn_infinite(w)
    return a, b, w
