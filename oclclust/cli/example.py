"""The built-in example: Gaussian blobs clustered with k-means on every device.

``python -m oclclust example`` runs :func:`run_example`; the data generator and
the adjusted Rand index are plain numpy, so the example needs nothing beyond
oclclust's own dependencies.
"""
import time

import numpy as np


def make_blobs(n=200_000, d=16, k=32, seed=0, spread=10.0, std=1.0):
    """(X float32 n x d, true labels, true centres): k isotropic Gaussian blobs
    with centres uniform in [-spread, spread]^d and unit standard deviation."""
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-spread, spread, size=(k, d))
    labels = rng.integers(0, k, size=n)
    X = rng.standard_normal((n, d), dtype=np.float32) * np.float32(std)
    X += centers[labels].astype(np.float32)
    return X, labels, centers


def _pairs(counts):
    counts = np.asarray(counts, dtype=np.float64)
    return float(np.sum(counts * (counts - 1) / 2))


def adjusted_rand_index(labels_true, labels_pred):
    """Adjusted Rand index of two labelings (as scikit-learn's adjusted_rand_score)."""
    labels_true = np.asarray(labels_true).ravel()
    labels_pred = np.asarray(labels_pred).ravel()
    if labels_true.shape != labels_pred.shape:
        raise ValueError("the two labelings must have the same length")
    n = labels_true.size
    if n == 0:
        return 1.0
    classes, t = np.unique(labels_true, return_inverse=True)
    clusters, p = np.unique(labels_pred, return_inverse=True)
    contingency = np.bincount(t * len(clusters) + p, minlength=len(classes) * len(clusters))
    index = _pairs(contingency)
    sum_a = _pairs(np.bincount(t))
    sum_b = _pairs(np.bincount(p))
    expected = sum_a * sum_b / _pairs([n]) if n > 1 else 0.0
    maximum = (sum_a + sum_b) / 2
    if maximum == expected:        # e.g. one cluster in both, or every point alone
        return 1.0
    return (index - expected) / (maximum - expected)


def fit_on_device(profile, X, k, truth, warm_up=True):
    """Cluster X with oc.KMeans on one device: a dict of what the example prints."""
    from ..cluster.kmeans.kmeans import KMeans
    result = {"device": profile.name, "platform": profile.platform, "type": profile.type}
    if warm_up:   # build the kernels on a slice with the same d and k, so the fit time is the fit
        start = time.perf_counter()
        m = min(len(X), max(20 * k, 2000))
        KMeans(n_clusters=k, random_state=0, devices=[profile], max_iter=2).fit(X[:m])
        result["warmup_s"] = time.perf_counter() - start
    start = time.perf_counter()
    km = KMeans(n_clusters=k, random_state=0, devices=[profile]).fit(X)
    result["fit_s"] = time.perf_counter() - start
    result["n_iter"] = int(km.n_iter_)
    result["inertia"] = float(km.inertia_)
    result["ari"] = adjusted_rand_index(truth, km.labels_)
    return result
