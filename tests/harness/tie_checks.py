"""The fast precisions' contract (oclclust/passes/lloyd_mma.py's bound_terms)
against numpy's float64 argmin, and rows built about ties: used by
tests/passes/test_lloyd_mma.py and tests/cluster/kmeans/test_precision.py
(both find this folder on sys.path)."""
import numpy as np

from oclclust.passes.lloyd_mma import rounding_bound, tie_margin


def distances(X, C):
    """n x k float64 squared distances of float32 rows and centres."""
    X64, C64 = X.astype(np.float64), C.astype(np.float64)
    d2 = (X64 * X64).sum(1)[:, None] + (C64 * C64).sum(1)[None] - 2 * X64 @ C64.T
    return np.maximum(d2, 0)


def check_contract(precision, dp, kp, X, C, labels):
    """Labels differ from the float64 argmin only within the bound of a tie,
    and every row whose second best is past the bound has the argmin."""
    d2 = distances(X, C)
    ranked = np.argsort(d2, 1)
    gap, allowed = tie_margin(precision, dp, kp, X, C, labels, ranked[:, 0])
    assert np.all(gap <= allowed), (np.sum(gap > allowed), gap[gap > allowed][:4])
    second, to_second = tie_margin(precision, dp, kp, X, C, ranked[:, 1], ranked[:, 0])
    clear = second > to_second
    np.testing.assert_array_equal(labels[clear], d2.argmin(1)[clear])
    return int((labels != d2.argmin(1)).sum())


FACTORS = (1e-4, 0.5, 3.0, 12.0)   # near-tie rows' gaps, in their pair's bound


def rows_about_ties(precision, dp, kp, d=48, k=40, per=32, far=128, seed=0):
    """(X, C, factor): float32 centres uniform in [-3, 3]^d; per rows for
    each of FACTORS on the bisecting hyperplane of a random pair (a, b)
    moved along a - b by that multiple of the pair's bound E_a + E_b
    (rounding_bound: the distances then differ by about it), and *far*
    rows about the centres (noise 0.3: far from any tie, factor inf)."""
    rng = np.random.default_rng(seed)
    C = rng.uniform(-3, 3, (k, d)).astype(np.float32)
    C64 = C.astype(np.float64)
    m = per * len(FACTORS)
    pairs = np.array([rng.choice(k, 2, replace=False) for _ in range(m)])
    ca, cb = C64[pairs[:, 0]], C64[pairs[:, 1]]
    u = (ca - cb) / np.linalg.norm(ca - cb, axis=1)[:, None]
    v = rng.standard_normal((m, d)) * 0.5
    on = (ca + cb) / 2 + v - (v * u).sum(1)[:, None] * u      # on the bisector
    E = rounding_bound(precision, dp, kp, on.astype(np.float32), C)
    bound = E[np.arange(m), pairs[:, 0]] + E[np.arange(m), pairs[:, 1]]
    factor = np.repeat(FACTORS, per)
    # x.(a - b) moves the distances' difference by 2 t ||a - b||
    t = factor * bound / (2 * np.linalg.norm(ca - cb, axis=1)) * rng.choice((-1, 1), m)
    near = on + t[:, None] * u
    blobs = C64[rng.integers(0, k, far)] + 0.3 * rng.standard_normal((far, d))
    X = np.concatenate([near, blobs]).astype(np.float32)
    return X, C, np.concatenate([factor, np.full(far, np.inf)])
