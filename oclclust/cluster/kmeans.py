"""k-means (Lloyd) with k-means++ seeding, scikit-learn's KMeans API.

The loop here is the *model update*: it sees only the reduced statistics of
the fused pass (lloyd.py) and never where distances are computed.
"""
import numbers
import time
import warnings

import numpy as np
import pyopencl.array as cla

from ._base import BaseEstimator, ClusterMixin, TransformerMixin
from ..passes.distances import pairwise_euclidean
from .ensemble import fit_ensemble
from ..parallel.manager import DeviceManager, surviving
from ..parallel.placement import fit_data, joined_moments, new_data
from ..parallel.sharded import LloydShards
from ..runtime.progress import Progress
from .inits import kmeans_plusplus
from ..passes.lloyd import LloydPass
from ..runtime.validation import NotFittedError, check_params, check_random_state

try:
    from sklearn.exceptions import ConvergenceWarning
except ImportError:
    class ConvergenceWarning(UserWarning):
        pass


class KMeans(ClusterMixin, TransformerMixin, BaseEstimator):
    """k-means clustering on OpenCL devices (scikit-learn's KMeans API).

    ``devices``: "all", "gpu", "cpu", platform/device name substrings, a
    list of DeviceProfile, or a DeviceManager (None: $OCLCLUST_DEVICES, else
    all); the rows are split over all of them.  ``dtype``: float32 or
    float64 (None: float32 input stays float32, anything else float64 where
    the device has fp64).  ``comm``: an mpi4py communicator; each rank fits
    its own rows (X is this rank's shard), every rank ends with the same
    model, that of one process fitting all ranks' rows; ``labels_`` are
    this rank's.  predict, score and transform stay local.
    """

    _parameter_rules = {
        "n_clusters": [(numbers.Integral, 1, None)],
        "init": ["k-means++", "random", np.ndarray, list, cla.Array],
        "n_init": ["auto", (numbers.Integral, 1, None)],
        "max_iter": [(numbers.Integral, 1, None)],
        "tol": [(numbers.Real, 0, None)],
        "verbose": [(numbers.Integral, 0, None), bool],
        "random_state": [None, numbers.Integral, np.random.RandomState],
        "devices": [None, str, list, tuple, DeviceManager],
        "dtype": [None, "float32", "float64", type, np.dtype],
        "comm": [None, object],
    }

    def __init__(self, n_clusters=8, *, init="k-means++", n_init="auto", max_iter=300,
                 tol=1e-4, verbose=0, random_state=None, devices=None, dtype=None,
                 comm=None):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.devices = devices
        self.dtype = dtype
        self.comm = comm

    # ---------------------------------------------------------------- fitting
    def fit(self, X, y=None, sample_weight=None):
        check_params(self, self._parameter_rules)
        data, host_w, ranks = fit_data(X, sample_weight, self.devices, self.dtype, self.comm,
                                       self._calibration_pass, type(self).__name__)
        rng = check_random_state(self.random_state)

        def attempt():
            if ranks.n < self.n_clusters:
                raise ValueError(f"n_samples={ranks.n} should be >= "
                                 f"n_clusters={self.n_clusters}.")
            return self._fit(data, host_w, rng, ranks)
        return surviving(data, attempt, rng)

    def _fit(self, data, host_w, rng, ranks):
        mean, var, finite = ranks.together(lambda: joined_moments(data, ranks))
        if not finite:
            raise ValueError("Input X contains NaN or infinity.")
        tol = float(np.mean(var) * self.tol)
        init = self._checked_init(data.d)
        runs = self._n_init(init)
        # every run's start first: the same random draws as one run after another
        starts = [ranks.together(lambda: self._init_centers(data, init, rng, host_w, ranks))
                  for _ in range(runs)]
        start = time.perf_counter()
        if runs == 1:   # the fused Lloyd pass, with its per-iteration history
            lloyd = LloydShards(data, self.n_clusters, ranks)
            results = [self._lloyd(lloyd, data, starts[0], tol, host_w, ranks) +
                       (lloyd.labels(),)]
        else:           # the restarts as one ensemble: one data pass for all of them
            results = [(c, i, t, None, lab) for c, i, t, lab in ranks.together(
                lambda: fit_ensemble(data, starts, self.max_iter, tol, host_w,
                                     ranks=ranks, mean=mean))]
        if self.verbose and ranks.rank == 0:
            for run, result in enumerate(results):
                print(f"k-means run {run}: inertia {result[1]:.6g}, {result[2]} iterations")
            print(f"k-means: {runs} run(s) in {time.perf_counter() - start:.3f} s on "
                  f"{data.rows_per_device}")
        best = min(range(runs), key=lambda r: results[r][1])   # the first of equals
        centers, inertia, n_iter, history, labels_host = results[best]
        distinct = int((ranks.sum(np.bincount(labels_host, minlength=self.n_clusters)) > 0)
                       .sum())
        if distinct < self.n_clusters:
            warnings.warn(f"Number of distinct clusters ({distinct}) found smaller than "
                          f"n_clusters ({self.n_clusters}). Possibly due to duplicate points "
                          "in X.", ConvergenceWarning, stacklevel=3)
        self.cluster_centers_ = centers.astype(data.dtype)
        self.labels_ = labels_host
        self.inertia_ = inertia
        self.n_iter_ = n_iter
        self.history_ = history   # None when n_init > 1 ran the restarts as an ensemble
        self.n_features_in_ = data.d
        self.devices_ = data.rows_per_device
        self.reshards_ = data.manager.reshards
        return self

    def _calibration_pass(self, part):
        """What measured weights time: a Lloyd pass over a sample partition
        (any centres cost the same; the sample's first rows serve)."""
        if "calibration" not in part.state:
            k = min(self.n_clusters, part.n)
            centers = part.x[:k].get(part.queue).astype(np.float64)
            labels = cla.zeros(part.queue, part.n, np.int32)   # read by the pass
            part.state["calibration"] = LloydPass(part, k), labels, centers
        lloyd, labels, centers = part.state["calibration"]
        lloyd.run(centers, labels)

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

    def _init_centers(self, data, init, rng, host_w, ranks):
        if not isinstance(init, str):
            return init
        if init == "k-means++":
            idx = kmeans_plusplus(data, self.n_clusters, rng, host_w, ranks=ranks)
        else:   # every rank draws from all weights (1/d of the data)
            w = np.concatenate(ranks.gather(host_w)) if ranks.comm else host_w
            idx = rng.choice(ranks.n, size=self.n_clusters, replace=False, p=w / w.sum())
        return ranks.rows(data, idx)

    def _lloyd(self, lloyd, data, centers, tol, host_w, ranks):
        """One Lloyd run: (centres, inertia, iterations, history); the labels
        stay on the devices."""
        lloyd.forget_labels()
        with Progress(self.max_iter, "k-means", bool(self.verbose) and ranks.rank == 0) as bar:
            return self._iterate(lloyd, data, centers, tol, host_w, ranks, bar)

    def _iterate(self, lloyd, data, centers, tol, host_w, ranks, bar):
        strict, history = False, []
        for it in range(self.max_iter):
            start = time.perf_counter()
            stats = lloyd.run(centers)
            if stats.n_nonfinite:
                raise ValueError("Input X contains NaN or infinity (or values whose squares "
                                 f"overflow {data.dtype.name}).")
            sums, weights = stats.sums, stats.weights
            if (weights == 0).any():
                self._relocate_empty(lloyd, data, sums, weights, host_w, ranks)
            new = np.where(weights[:, None] > 0, sums / np.where(weights > 0, weights, 1)[:, None],
                           centers)
            shift = float(((new - centers) ** 2).sum())
            centers = new
            # inertia of the centres this pass assigned to (as sklearn's verbose output)
            history.append({"iteration": it + 1, "inertia": stats.inertia,
                            "center_shift": shift, "n_changed": stats.n_changed,
                            "seconds": time.perf_counter() - start,
                            "rows_per_device": list(data.rows_per_device.values())})
            bar.step(inertia=stats.inertia, shift=shift)
            if self.verbose > 1 and ranks.rank == 0:
                print(f"  iteration {it}: inertia {stats.inertia:.6g}, shift {shift:.3g}")
            if stats.n_changed == 0:
                strict = True
                break
            if shift <= tol:
                break
            lloyd.rebalance()
        if strict:
            return centers, stats.inertia, it + 1, history
        return centers, lloyd.run(centers, update=False).inertia, it + 1, history

    def _relocate_empty(self, lloyd, data, sums, weights, host_w, ranks):
        """scikit-learn's rule: empty clusters take the points farthest from
        their centres (sums and weights are mended in place); over ranks,
        the farthest of all ranks' farthest."""
        empty = np.flatnonzero(weights == 0)
        take = min(len(empty), data.n)
        dist = lloyd.min_dist()
        far = np.argpartition(dist, -take)[:-take - 1:-1]
        host_labels = lloyd.labels()
        mine = [(float(dist[i]), ranks.offset + int(i), int(host_labels[i]), float(host_w[i]),
                 data.row(i).astype(np.float64)) for i in far]
        farthest = mine if ranks.comm is None else sorted(   # one process: sklearn's order
            (c for cands in ranks.gather(mine) for c in cands), key=lambda c: (-c[0], c[1]))
        for new_id, (_, _, old_id, w, row) in zip(empty, farthest):
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

    def _on_devices(self, X, sample_weight, pass_):
        """pass_(data) over X spread on the devices; a device that fails is
        dropped and the pass runs again on the others."""
        self._check_fitted()
        data = new_data(X, sample_weight, self.devices, self.cluster_centers_.dtype,
                        self.n_features_in_, type(self).__name__, self.comm)
        return surviving(data, lambda: pass_(data))

    def _assign(self, X, sample_weight=None):
        def assign(data):
            lloyd = LloydShards(data, self.n_clusters)
            stats = lloyd.run(self.cluster_centers_.astype(np.float64), update=False)
            if stats.n_nonfinite:
                raise ValueError("Input X contains NaN or infinity.")
            return lloyd.labels(), stats.inertia
        return self._on_devices(X, sample_weight, assign)

    def predict(self, X, sample_weight=None):
        return self._assign(X)[0]

    def score(self, X, y=None, sample_weight=None):
        return -self._assign(X, sample_weight)[1]

    def transform(self, X):
        distances = self._on_devices(X, None, lambda data: np.concatenate(data.map(
            lambda c: pairwise_euclidean(c, self.cluster_centers_))))
        if not np.isfinite(distances).all():
            raise ValueError("Input X contains NaN or infinity (or values whose squares "
                             f"overflow {self.cluster_centers_.dtype.name}).")
        return distances
