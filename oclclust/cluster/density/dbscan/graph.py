"""DBSCAN's eps-neighbourhood graphs built in row blocks (a block of rows
against all rows at a time, never n x n at once), as n x n CSR matrices of
the pairs within eps, for rules.py:

- ``metric_graph``: scipy.spatial.distance.cdist on the host (scipy metric
  names, minkowski with any p, callables, metric_params), dense or sparse
  rows (sparse blocks densified a block at a time);
- ``sparse_euclidean_graph``: sparse rows' euclidean neighbourhoods on the
  device (passes/lloyd_csr.py's CsrRows.distances: squared distances of the
  CSR rows to a dense block of rows, compared with eps squared);
- ``precomputed_graph``: a distance matrix, dense (entries <= eps) or sparse
  (stored entries <= eps; each row its own neighbour where its diagonal,
  0 when not stored, is <= eps, as scikit-learn's setdiag makes it).
"""
import numpy as np
from scipy import sparse
from scipy.spatial.distance import cdist

BLOCK_BYTES = 32 << 20      # one block of distances at a time


def _block_rows(n, width):
    return max(1, BLOCK_BYTES // (8 * max(1, n, width)))


def _rows(X, start, stop):
    block = X[start:stop]
    return block.toarray() if sparse.issparse(block) else block


def _from_blocks(n, blocks):
    """CSR n x n of boolean row blocks (n columns each), in row order."""
    indptr, indices = [np.zeros(1, np.int64)], []
    for mask in blocks:
        m = sparse.csr_matrix(mask)
        indptr.append(indptr[-1][-1] + m.indptr[1:])
        indices.append(m.indices.astype(np.int64))
    data_indices = np.concatenate(indices) if indices else np.zeros(0, np.int64)
    return sparse.csr_matrix((np.ones(len(data_indices), bool), data_indices,
                              np.concatenate(indptr)), shape=(n, n))


def _column_blocks(X, b):
    for start in range(0, X.shape[0], b):
        yield _rows(X, start, start + b)


def _cdist_arguments(X, metric, params):
    """cdist's keyword arguments: scipy estimates seuclidean's V and
    mahalanobis' VI from the rows it is given, so a block-wise cdist is given
    those of cdist(X, X) (the whole stack of X twice), as scikit-learn's
    brute search gets them."""
    params = dict(params)
    if metric in ("seuclidean", "mahalanobis") and not ({"V", "VI"} & set(params)):
        dense = X.toarray() if sparse.issparse(X) else X
        both = np.vstack([dense, dense])
        if metric == "seuclidean":
            params["V"] = np.var(both, axis=0, ddof=1)
        else:
            params["VI"] = np.linalg.inv(np.cov(both.T)).T
    return params


def metric_graph(X, eps, metric, params):
    """The pairs of rows of X (dense or sparse) within eps by cdist(metric, **params)."""
    n = X.shape[0]
    params = _cdist_arguments(X, metric, params)
    if callable(metric) and params:
        function, kwargs = metric, params
        metric, params = (lambda u, v: function(u, v, **kwargs)), {}
    b = _block_rows(n, X.shape[1])
    if not sparse.issparse(X):
        return _from_blocks(n, (cdist(X[i:i + b], X, metric, **params) <= eps
                                for i in range(0, n, b)))
    # sparse rows: a dense block of b rows against dense blocks of b rows (b x d
    # values, b x b distances at a time)
    b = max(1, int(np.sqrt(BLOCK_BYTES // 8 // max(1, X.shape[1]))))

    def rows(i):
        mine = _rows(X, i, i + b)
        return np.hstack([cdist(mine, other, metric, **params) <= eps
                          for other in _column_blocks(X, b)])
    return _from_blocks(n, (rows(i) for i in range(0, n, b)))


def sparse_euclidean_graph(csr_rows, X, eps):
    """The pairs of sparse rows within euclidean eps, every distance on the
    device of *csr_rows* (a CsrRows of X): squared distances to a dense
    block of rows at a time."""
    n = X.shape[0]
    b = _block_rows(n, X.shape[1])
    return sparse.hstack([sparse.csr_matrix(csr_rows.distances(block) <= eps * eps)
                          for block in _column_blocks(X, b)], format="csr")


def check_precomputed(D):
    """D as scikit-learn checks a precomputed distance matrix (square, no
    negative value, finite): float64 CSR (a copy) or a dense array."""
    if sparse.issparse(D):
        D = sparse.csr_matrix(D, dtype=np.float64, copy=True)
        values = D.data
    else:
        D = np.asarray(D, dtype=np.float64)
        values = D
    if D.ndim != 2:
        raise ValueError(f"Expected 2D array, got {D.ndim}D array instead.")
    if not np.isfinite(values).all():
        raise ValueError("Input X contains NaN or infinity.")
    if (values < 0).any():
        where = "precomputed distance matrix" if sparse.issparse(D) else "X"
        raise ValueError(f"Negative values in data passed to {where}.")
    if D.shape[0] != D.shape[1]:
        raise ValueError(f"Precomputed matrix must be square. Input is a "
                         f"{D.shape[0]}x{D.shape[1]} matrix.")
    if D.shape[0] < 1:
        raise ValueError(f"Found array with 0 sample(s) (shape={D.shape}) while a minimum "
                         "of 1 is required by DBSCAN.")
    return D


def precomputed_graph(D, eps):
    """The pairs within eps of a checked distance matrix (check_precomputed)."""
    n = D.shape[0]
    if not sparse.issparse(D):
        b = _block_rows(n, n)
        return _from_blocks(n, (D[i:i + b] <= eps for i in range(0, n, b)))
    near = D.copy()
    near.data = (near.data <= eps).astype(np.float64)
    near.eliminate_zeros()
    own = sparse.diags((D.diagonal() <= eps).astype(np.float64)).tocsr()
    return ((near + own) > 0).tocsr()
