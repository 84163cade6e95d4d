"""Weighted draws of rows for the mini-batches: numpy's ``choice`` with its
cumulative distribution made once per fit, searched from a coarse table."""
import numpy as np


def weighted_draws(rng, p):
    """draw(size): the indices ``rng.choice(len(p), size, p=p)`` draws, the
    same random stream and values, with numpy's cumulative distribution
    made once rather than at every call, and searched from a coarse table
    of it (a few cached steps a draw, not a binary search over all n)."""
    cdf = np.asarray(p, np.float64).cumsum()
    cdf /= cdf[-1]
    n = len(cdf)
    buckets = max(1, n // 64)
    # first[b]: the first index whose cdf passes b / buckets
    first = np.minimum(cdf.searchsorted(np.arange(buckets + 1) / buckets, side="right"),
                       n - 1)

    def draw(size):
        u = rng.random_sample(size)
        scaled = u * buckets
        b = np.minimum(scaled.astype(np.intp), buckets - 1)
        # a guess between the bucket's first indices, in proportion (exact
        # but for rounding where p is uniform), then checked
        span = first[np.minimum(b + 1, buckets)] - first[b]
        idx = np.minimum(first[b] + ((scaled - b) * span).astype(np.intp), n - 1)
        wrong = np.flatnonzero(_missed(cdf, idx, u))
        if wrong.size:   # off by one either way: stepped
            near, uw = idx[wrong], u[wrong]
            near = np.minimum(near + (cdf[near] <= uw), n - 1)
            near -= (near > 0) & (cdf[np.maximum(near - 1, 0)] > uw)
            idx[wrong] = near
            wrong = wrong[_missed(cdf, near, uw)]
        if wrong.size:   # the rest (skewed p): a binary search from the bucket's bounds
            idx[wrong] = _search(cdf, u[wrong], first[np.maximum(b[wrong] - 1, 0)],
                                 first[np.minimum(b[wrong] + 2, buckets)])
        return idx
    return draw


def _missed(cdf, idx, u):
    """Where idx is not the first index whose cdf passes u."""
    return (cdf[idx] <= u) | ((idx > 0) & (cdf[np.maximum(idx - 1, 0)] > u))


def _search(cdf, u, lo, hi):
    """The first index whose cdf passes u, known to lie in [lo, hi], for
    each u (a binary search, all at once); numpy's where that fails."""
    lo, hi = lo.copy(), hi.copy()
    while True:
        open_ = lo < hi
        if not open_.any():
            break
        mid = (lo + hi) >> 1
        right = open_ & (cdf[mid] <= u)
        lo = np.where(right, mid + 1, lo)
        hi = np.where(open_ & ~right, mid, hi)
    # u is past (b - 1) / buckets and short of (b + 2) / buckets whatever u *
    # buckets rounded to, so [lo, hi] held it; checked all the same
    wrong = _missed(cdf, lo, u)
    if wrong.any():
        lo[wrong] = cdf.searchsorted(u[wrong], side="right")
    return lo
