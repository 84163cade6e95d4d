"""Fallback copy of make_blobs, init_centers and gmm_init from ../shared/bench/baselines.py.

The benches take them from baselines.py when that file is there (same data
and initial parameters as the baseline measurements; bench/_common.baselines);
this identical copy is used only where it is not (the GPU host).  Keep the
two in step.
"""
import numpy as np

DEFAULT_SEED = 12345


def make_blobs(n, d, k_true, seed=DEFAULT_SEED):
    """Gaussian blobs, float32, shape (n, d).  Returns (X, labels, centers)."""
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-10.0, 10.0, size=(k_true, d))
    labels = rng.integers(0, k_true, size=n)
    X = centers[labels] + rng.standard_normal((n, d))
    perm = rng.permutation(n)
    X = np.ascontiguousarray(X[perm], dtype=np.float32)
    return X, labels[perm], centers


def init_centers(X, k):
    """First k points of the (already shuffled) data set, float32 copy."""
    return np.array(X[:k], dtype=np.float32, copy=True)


def gmm_init(X, K, covariance_type):
    """Fixed GMM start: equal weights, means = first K points, unit covariance."""
    d = X.shape[1]
    weights = np.full(K, 1.0 / K)
    means = np.array(X[:K], dtype=np.float64)
    if covariance_type == "full":
        precisions = np.broadcast_to(np.eye(d), (K, d, d)).copy()
    elif covariance_type == "diag":
        precisions = np.ones((K, d))
    else:
        raise ValueError(covariance_type)
    return weights, means, precisions
