"""Fuzzy c-means (Bezdek) on OpenCL devices, in the O(N*D*C) form of eq. 3.

The device pass is cmeans_pass.py.  One fused pass per iteration
reads each row once: distances to all centres, s_i once per row, the
memberships, and per-work-group partial numerators sum w u^m x and
denominators sum w u^m (eq. 2), reduced on the device in a fixed order,
then in float64 over the chunks of every device (in row order) and over MPI
ranks (eq. 4).  Only the final pass (``u_``, ``predict_proba``) writes the
n x c membership matrix.

Conventions (documented choices where the paper is silent):
- a row that coincides with k >= 1 centres (distance exactly 0) gets
  membership 1/k at each of them and 0 elsewhere (``labels_``: the first);
- a centre whose weight sum of u^m is 0 keeps its place;
- iterations stop when the sum of squared centre moves is <= tol times the
  data's mean feature variance (as KMeans), else after ``max_iter``;
  ``n_iter_`` counts centre updates; ``objective_`` is J_m of the final
  centres with their optimal memberships (those of ``u_``);
- with MPI (``comm``), each rank passes its own rows; seeding draws from
  all ranks' rows as one process would (as KMeans); every rank ends with the
  same centres; ``u_`` and ``labels_`` are each rank's own rows.
"""
import numbers
import time

import numpy as np
import pyopencl.array as cla

from ._base import BaseEstimator, ClusterMixin
from ..passes.cmeans import CMeansPass
from .inits import kmeans_plusplus
from ..parallel.manager import DeviceManager, surviving
from ..parallel.placement import fit_data, joined_moments, new_data
from ..parallel.sharded import CMeansShards
from ..runtime.progress import Progress, history_entry
from ..runtime.validation import NotFittedError, check_params, check_random_state


def _nonfinite_error(dtype):
    return ValueError("Input X contains NaN or infinity (or values whose squares overflow "
                      f"{np.dtype(dtype).name}).")


class FuzzyCMeans(ClusterMixin, BaseEstimator):
    """Fuzzy c-means clustering on OpenCL devices (Bezdek's algorithm).

    ``m``: fuzzifier (> 1).  ``init``: "k-means++" (on the devices, as
    KMeans), "random" (rows drawn with probability proportional to
    sample_weight) or an (n_clusters, n_features) array.  ``devices``,
    ``dtype``: as KMeans.  ``comm``: an mpi4py communicator (each rank passes
    its own rows).  ``sample_weight`` in fit/score multiplies u^m.
    """

    _parameter_rules = {
        "n_clusters": [(numbers.Integral, 1, None)],
        "m": [(numbers.Real, 1, None)],
        "init": ["k-means++", "random", np.ndarray, list, cla.Array],
        "max_iter": [(numbers.Integral, 1, None)],
        "tol": [(numbers.Real, 0, None)],
        "verbose": [(numbers.Integral, 0, None), bool],
        "random_state": [None, numbers.Integral, np.random.RandomState],
        "devices": [None, str, list, tuple, DeviceManager],
        "dtype": [None, "float32", "float64", type, np.dtype],
        "comm": [None, object],
    }

    def __init__(self, n_clusters=8, *, m=2.0, tol=1e-4, max_iter=300, init="k-means++",
                 random_state=None, devices=None, dtype=None, comm=None, verbose=0):
        self.n_clusters = n_clusters
        self.m = m
        self.tol = tol
        self.max_iter = max_iter
        self.init = init
        self.random_state = random_state
        self.devices = devices
        self.dtype = dtype
        self.comm = comm
        self.verbose = verbose

    def _check_params(self):
        check_params(self, self._parameter_rules)
        if not (np.isfinite(self.m) and self.m > 1):
            raise ValueError(f"The 'm' parameter of {type(self).__name__} must be a finite "
                             f"float > 1. Got {self.m!r} instead.")

    # ---------------------------------------------------------------- fitting
    def fit(self, X, y=None, sample_weight=None):
        self._check_params()
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
        _, var, finite = ranks.together(lambda: joined_moments(data, ranks))
        if not finite:
            raise ValueError("Input X contains NaN or infinity.")
        tol = float(np.mean(var) * self.tol)
        init = self._checked_init(data.d)
        centers = ranks.together(lambda: self._init_centers(data, init, rng, host_w, ranks))
        passes = CMeansShards(data, self.n_clusters, float(self.m), ranks)
        d, self.history_ = data.d, []
        bar = Progress(self.max_iter, "c-means", bool(self.verbose) and ranks.rank == 0)
        for it in range(self.max_iter):
            start = time.perf_counter()
            stats, _ = passes.run(centers)
            objective = stats.objective
            if stats.n_nonfinite:
                bar.close()
                raise _nonfinite_error(data.dtype)
            num, den = stats.stats[:, :d], stats.stats[:, d]
            new = np.where(den[:, None] > 0, num / np.where(den > 0, den, 1)[:, None], centers)
            shift = float(((new - centers) ** 2).sum())
            centers = new
            self.history_.append(history_entry(it + 1, start, data, objective=objective,
                                               center_shift=shift))
            bar.step(objective=objective, shift=shift)
            if self.verbose > 1 and ranks.rank == 0:
                print(f"  iteration {it}: objective {objective:.6g}, shift {shift:.3g}")
            if shift <= tol:
                break
            data.rebalance()
        bar.close()
        stats, u = passes.run(centers, update=False, write_u=True)
        objective = stats.objective
        if stats.n_nonfinite:
            raise _nonfinite_error(data.dtype)
        self.cluster_centers_ = centers.astype(data.dtype)
        self.u_ = u
        self.labels_ = u.argmax(axis=1)
        self.objective_ = objective
        self.n_iter_ = it + 1
        self.n_features_in_ = d
        self.devices_ = data.rows_per_device
        return self

    def _calibration_pass(self, part):
        """What measured weights time: an updating pass over a sample partition."""
        if "calibration" not in part.state:
            c = min(self.n_clusters, part.n)
            centers = part.x[:c].get(part.queue).astype(np.float64)
            part.state["calibration"] = CMeansPass(part, c, float(self.m)), centers
        cpass, centers = part.state["calibration"]
        cpass.run(centers)

    def _checked_init(self, d):
        if isinstance(self.init, str):
            return self.init
        init = self.init.get() if isinstance(self.init, cla.Array) else np.asarray(self.init)
        if init.shape != (self.n_clusters, d):
            raise ValueError(f"The shape of the initial centers {init.shape} does not "
                             f"match the number of clusters {self.n_clusters} and "
                             f"features {d}.")
        if not np.isfinite(init).all():
            raise ValueError("The initial centers contain NaN or infinity.")
        return init.astype(np.float64)

    def _init_centers(self, data, init, rng, host_w, ranks):
        """Initial centres (float64), the same on every rank."""
        if not isinstance(init, str):
            return init
        if init == "k-means++":
            idx = kmeans_plusplus(data, self.n_clusters, rng, host_w, ranks=ranks)
        else:   # every rank draws from all weights
            w = np.concatenate(ranks.gather(host_w)) if ranks.comm else host_w
            idx = rng.choice(ranks.n, size=self.n_clusters, replace=False, p=w / w.sum())
        return ranks.rows(data, idx)

    # ------------------------------------------------------------- inference
    def _on_devices(self, X, sample_weight, write_u):
        """(objective, memberships) of X at the fitted centres; a device that
        fails is dropped and the pass runs again on the others."""
        if not hasattr(self, "cluster_centers_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. "
                                 "Call 'fit' with appropriate arguments before using this "
                                 "estimator.")
        data = new_data(X, sample_weight, self.devices, self.cluster_centers_.dtype,
                        self.n_features_in_, type(self).__name__, self.comm)

        def attempt():
            passes = CMeansShards(data, self.n_clusters, float(self.m))
            stats, u = passes.run(self.cluster_centers_, update=False, write_u=write_u)
            if stats.n_nonfinite:
                raise _nonfinite_error(data.dtype)
            return stats.objective, u
        return surviving(data, attempt)

    def predict_proba(self, X):
        """Memberships (n x n_clusters, rows sum to 1) of X at the fitted centres."""
        return self._on_devices(X, None, True)[1]

    def predict(self, X):
        """Index of each row's largest membership (its nearest centre)."""
        return self.predict_proba(X).argmax(axis=1)

    def score(self, X, y=None, sample_weight=None):
        """Opposite of the objective J_m of X at the fitted centres."""
        return -self._on_devices(X, sample_weight, False)[0]
