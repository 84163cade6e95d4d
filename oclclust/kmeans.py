"""k-means (Lloyd) with k-means++ seeding, scikit-learn's KMeans API.

The loop here is the *model update*: it sees only the reduced statistics of
the fused pass (lloyd.py) and never where distances are computed.
"""
import numbers
import time
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from .base import BaseEstimator, ClusterMixin, TransformerMixin
from .distances import pairwise_euclidean
from .placement import fit_partition, new_partition
from .kmeanspp import kmeans_plusplus
from .lloyd import LloydPass
from .validation import NotFittedError, check_params, check_random_state

try:
    from sklearn.exceptions import ConvergenceWarning
except ImportError:
    class ConvergenceWarning(UserWarning):
        pass


class KMeans(ClusterMixin, TransformerMixin, BaseEstimator):
    """k-means clustering on OpenCL devices (scikit-learn's KMeans API).

    ``devices``: "all", "gpu", "cpu", platform/device name substrings, or a
    list of DeviceProfile (None: $OCLCLUST_DEVICES, else all); the fit runs on
    the first of them in preferred order (GPUs first).  ``dtype``: float32 or
    float64 (None: float32 input stays float32, anything else float64 where
    the device has fp64).
    """

    _parameter_rules = {
        "n_clusters": [(numbers.Integral, 1, None)],
        "init": ["k-means++", "random", np.ndarray, list, cla.Array],
        "n_init": ["auto", (numbers.Integral, 1, None)],
        "max_iter": [(numbers.Integral, 1, None)],
        "tol": [(numbers.Real, 0, None)],
        "verbose": [(numbers.Integral, 0, None), bool],
        "random_state": [None, numbers.Integral, np.random.RandomState],
        "devices": [None, str, list, tuple],
        "dtype": [None, "float32", "float64", type, np.dtype],
    }

    def __init__(self, n_clusters=8, *, init="k-means++", n_init="auto", max_iter=300,
                 tol=1e-4, verbose=0, random_state=None, devices=None, dtype=None):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.devices = devices
        self.dtype = dtype

    # ---------------------------------------------------------------- fitting
    def fit(self, X, y=None, sample_weight=None):
        check_params(self, self._parameter_rules)
        part, host_w = fit_partition(self, X, sample_weight)
        n = part.n
        if n < self.n_clusters:
            raise ValueError(f"n_samples={n} should be >= n_clusters={self.n_clusters}.")
        _, var, finite = part.moments()
        if not finite:
            raise ValueError("Input X contains NaN or infinity.")
        tol = float(np.mean(var) * self.tol)
        init = self._checked_init(part.d)
        n_init = self._n_init(init)
        rng = check_random_state(self.random_state)
        lloyd = LloydPass(part, self.n_clusters)
        labels = cla.empty(part.queue, n, np.int32)
        best = None
        for run in range(n_init):
            start = time.perf_counter()
            centers = self._init_centers(part, init, rng, host_w)
            result = self._lloyd(lloyd, part, labels, centers, tol, host_w)
            if self.verbose:
                print(f"k-means run {run}: inertia {result[1]:.6g}, {result[2]} iterations, "
                      f"{time.perf_counter() - start:.3f} s on {part.profile}")
            if best is None or result[1] < best[1]:
                best = result + (labels.get(part.queue),)
        centers, inertia, n_iter, labels_host = best
        distinct = len(np.unique(labels_host))
        if distinct < self.n_clusters:
            warnings.warn(f"Number of distinct clusters ({distinct}) found smaller than "
                          f"n_clusters ({self.n_clusters}). Possibly due to duplicate points "
                          "in X.", ConvergenceWarning, stacklevel=2)
        self.cluster_centers_ = centers.astype(part.dtype)
        self.labels_ = labels_host
        self.inertia_ = inertia
        self.n_iter_ = n_iter
        self.n_features_in_ = part.d
        self.device_ = str(part.profile)
        return self

    def _n_init(self, init):
        if self.n_init != "auto":
            return self.n_init
        return 10 if isinstance(init, str) and init == "random" else 1

    def _checked_init(self, d):
        if isinstance(self.init, str):
            return self.init
        init = self.init.get() if isinstance(self.init, cla.Array) else np.asarray(self.init)
        if init.shape != (self.n_clusters, d):
            raise ValueError(f"The shape of the initial centers {init.shape} does not match "
                             f"the number of clusters {self.n_clusters} and features {d}.")
        if not np.isfinite(init).all():
            raise ValueError("The initial centers contain NaN or infinity.")
        if self.n_init not in ("auto", 1):
            warnings.warn("Explicit initial center position passed: performing only one "
                          f"init in {type(self).__name__} instead of n_init={self.n_init}.",
                          RuntimeWarning, stacklevel=3)
        return init.astype(np.float64)

    def _init_centers(self, part, init, rng, host_w):
        if not isinstance(init, str):
            return init
        if init == "k-means++":
            idx = kmeans_plusplus(part, self.n_clusters, rng, host_w)
        else:
            idx = rng.choice(part.n, size=self.n_clusters, replace=False,
                             p=host_w / host_w.sum())
        return np.stack([part.row(i) for i in idx]).astype(np.float64)

    def _lloyd(self, lloyd, part, labels, centers, tol, host_w):
        """One Lloyd run: (centres, inertia, iterations); *labels* left final."""
        cl.enqueue_fill_buffer(part.queue, labels.data, np.int32(-1), 0, labels.nbytes)
        strict = False
        for it in range(self.max_iter):
            stats = lloyd.run(centers, labels)
            if stats.n_nonfinite:
                raise ValueError("Input X contains NaN or infinity (or values whose squares "
                                 f"overflow {part.dtype.name}).")
            sums, weights = stats.sums, stats.weights
            if (weights == 0).any():
                self._relocate_empty(lloyd, part, labels, sums, weights, host_w)
            new = np.where(weights[:, None] > 0, sums / np.where(weights > 0, weights, 1)[:, None],
                           centers)
            shift = float(((new - centers) ** 2).sum())
            centers = new
            if self.verbose > 1:
                print(f"  iteration {it}: inertia {stats.inertia:.6g}, shift {shift:.3g}")
            if stats.n_changed == 0:
                strict = True
                break
            if shift <= tol:
                break
        if strict:
            return centers, stats.inertia, it + 1
        final = LloydPass(part, self.n_clusters, update=False).run(centers, labels)
        return centers, final.inertia, it + 1

    def _relocate_empty(self, lloyd, part, labels, sums, weights, host_w):
        """scikit-learn's rule: empty clusters take the points farthest from
        their centres (sums and weights are mended in place)."""
        empty = np.flatnonzero(weights == 0)
        dist = lloyd.min_dist.get(part.queue).astype(np.float64)
        far = np.argpartition(dist, -len(empty))[:-len(empty) - 1:-1]
        host_labels = labels.get(part.queue)
        for new_id, idx in zip(empty, far):
            w = 1.0 if host_w is None else float(host_w[idx])
            row = part.row(idx).astype(np.float64)
            old_id = host_labels[idx]
            sums[old_id] -= row * w
            weights[old_id] -= w
            sums[new_id] = row * w
            weights[new_id] = w

    # ------------------------------------------------------------- inference
    def _check_fitted(self):
        if not hasattr(self, "cluster_centers_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. "
                                 "Call 'fit' with appropriate arguments before using this "
                                 "estimator.")

    def _assign(self, X, sample_weight=None):
        self._check_fitted()
        part = new_partition(self, X, sample_weight, self.cluster_centers_.dtype)
        labels = cla.empty(part.queue, part.n, np.int32)
        # the pass compares with the previous labels: give it defined ones
        cl.enqueue_fill_buffer(part.queue, labels.data, np.int32(-1), 0, labels.nbytes)
        stats = LloydPass(part, self.n_clusters, update=False).run(
            self.cluster_centers_.astype(np.float64), labels)
        if stats.n_nonfinite:
            raise ValueError("Input X contains NaN or infinity.")
        return labels.get(part.queue), stats.inertia

    def predict(self, X, sample_weight=None):
        return self._assign(X)[0]

    def score(self, X, y=None, sample_weight=None):
        return -self._assign(X, sample_weight)[1]

    def transform(self, X):
        self._check_fitted()
        part = new_partition(self, X, None, self.cluster_centers_.dtype)
        distances = pairwise_euclidean(part, self.cluster_centers_)
        if not np.isfinite(distances).all():
            raise ValueError("Input X contains NaN or infinity (or values whose squares "
                             f"overflow {part.dtype.name}).")
        return distances
