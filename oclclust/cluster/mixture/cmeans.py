"""Fuzzy c-means (Bezdek) on OpenCL devices, in the O(N*D*C) form of eq. 3.

The device pass is passes/cmeans.py (CMeansPass), run over the fit's rows
by cmeans_shards.py's CMeansShards.  One fused pass per iteration reads
each row once: distances to all centres, s_i once per row, the
memberships, and per-work-group partial numerators sum w u^m x and
denominators sum w u^m (eq. 2), reduced on the device in a fixed order,
then in float64 over the chunks of every device (in row order) and over MPI
ranks (eq. 4).  Only the final pass (``u_``, ``predict_proba``) writes the
n x c membership matrix; the fit leaves it on the devices, ``u_`` brings it
to the host when first read and ``labels_`` (like ``predict``) is taken on
the devices while it is there.  Where the rows allow (one device, or
several of one process each holding its rows in one chunk, fp64), the
centres stay on the devices between passes and the update runs there
(CMeansShards.device_step, passes/cmeans_update.py), with the host
update's bits.

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
import warnings

import numpy as np

from .._base import CENTERS_INIT_RULE, ClusterMixin, ConvergenceWarning, KCluster
from ..empty_clusters import centers_update
from ..checkpoint import CHECKPOINT_RULES
from ...passes.cmeans import CMeansPass
from ...parallel.placement import is_dask_array
from .cmeans_shards import CMeansShards, Memberships
from ...runtime.progress import Progress, history_entry
from ...runtime.validation import nonfinite_error
from ...runtime.warning_site import user_stacklevel

DEVICE_UPDATE = True   # False: every iteration's update on the host (tests compare)


class FuzzyCMeans(ClusterMixin, KCluster):
    """Fuzzy c-means clustering on OpenCL devices (Bezdek's algorithm).

    Every row has a membership in every cluster (``u_``, summing to 1 a
    row); each pass computes a row's memberships once (the O(N·D·M)
    formulation).

    Parameters
    ----------
    n_clusters : int, default=8
        The number of clusters.
    m : float, default=2.0
        The fuzzifier (> 1): the larger, the softer the memberships.
    init : {"k-means++", "k-means||", "random"} or array-like of shape \
(n_clusters, n_features), default="k-means++"
        "k-means++" on the devices (as KMeans), "random" rows drawn with
        probability proportional to sample_weight, or the centres.
    precision : {"float32", "tf32", "bf16"}, default="float32"
        On NVIDIA tensor cores the pass's distances are GEMM tiles:
        "float32" 3xTF32 (every distance within 2^-13 of float64's, the
        rest re-checked exactly), "tf32" one TF32 product a step (within
        2^-8), "bf16" one BF16 product a step (within 2^-5): memberships
        within about 2^-12, 2^-7 and 2^-4 over (m - 1) of float64's,
        relatively (docs: Precision).  Every mode runs as "float32"
        elsewhere (bit for bit).

    ``checkpoint`` (a path) and ``checkpoint_every`` (an int: iterations;
    a float or "30s": seconds): the fit's state written there that often,
    and resumed from, bit for bit (cluster/checkpoint.py).

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        The centres.
    u_ : ndarray of shape (n_samples, n_clusters)
        Each row's memberships.
    labels_ : ndarray of shape (n_samples,)
        Each row's cluster of largest membership.
    objective_ : float
        J_m at the final centres with their optimal memberships.
    n_iter_ : int
        Centre updates run.
    history_ : list of dict
        Per iteration its objective, centre shift, seconds and rows per
        device.
    devices_ : dict
        Rows per device of the fit; 0 for a device whose measured rate was
        too small a share to pay for its passes (:class:`DeviceManager`).

    See Also
    --------
    KMeans : hard assignments.
    GaussianMixture : soft assignments of a probabilistic model.

    Notes
    -----
    ``sample_weight`` in fit and score multiplies u^m.

    Examples
    --------
    >>> import numpy as np
    >>> import oclclust as oc
    >>> X = np.array([[0, 0], [0, 2], [1, 1], [9, 9], [9, 11], [10, 10]],
    ...              dtype=np.float32)
    >>> fcm = oc.FuzzyCMeans(n_clusters=2, random_state=0).fit(X)
    >>> np.bincount(fcm.labels_)
    array([3, 3])
    >>> fcm.u_.sum(axis=1).round(6)
    array([1., 1., 1., 1., 1., 1.], dtype=float32)
    >>> fcm.predict([[-1, 0], [12, 12]]) == fcm.predict([[1, 1], [10, 10]])
    array([ True,  True])
    """

    _parameter_rules = {
        "n_clusters": [(numbers.Integral, 1, None)],
        "m": [(numbers.Real, 1, None)],
        "init": CENTERS_INIT_RULE,
        **CHECKPOINT_RULES,
    }

    def __init__(self, n_clusters=8, *, m=2.0, tol=1e-4, max_iter=300, init="k-means++",
                 random_state=None, devices=None, dtype=None, comm=None, verbose=0,
                 precision="float32", checkpoint=None, checkpoint_every=1):
        self.n_clusters = n_clusters
        self.checkpoint = checkpoint
        self.checkpoint_every = checkpoint_every
        self.precision = precision
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
        super()._check_params()
        if not (np.isfinite(self.m) and self.m > 1):
            raise ValueError(f"The 'm' parameter of {type(self).__name__} must be a finite "
                             f"float > 1. Got {self.m!r} instead.")

    def _stat_values(self, d):
        """A block's partial statistics: c x (d + 1) (passes/cmeans.py)."""
        return self.n_clusters * (d + 1)

    # ---------------------------------------------------------------- fitting
    def _fit(self, data, host_w, rng, ranks):
        _, tol = self._mean_and_tol(data, ranks)
        init = self._checked_init(data.d)
        checkpoint = getattr(self, "_checkpoint", None)
        saved = None if checkpoint is None else checkpoint.saved
        if saved is None:
            centers = ranks.run_failing_all(
                lambda: self._init_centers(data, init, rng, host_w, ranks))
            first, done, self.history_ = 0, False, []
        else:   # resumed where the checkpoint left the loop
            centers, first, done = saved["centers"], saved["iteration"], saved["done"]
            self.history_ = saved["history"]
        # the centres kept on the devices between passes where the layout
        # allows (cmeans_shards.CMeansShards.device_step); a checkpoint
        # reads them each iteration: the host's update
        passes = CMeansShards(data, self.n_clusters, float(self.m), ranks,
                              precision=self.precision,
                              device_update=DEVICE_UPDATE and checkpoint is None)
        d, it = data.d, first - 1
        bar = Progress(self.max_iter, "c-means", bool(self.verbose) and ranks.rank == 0)
        for it in range(first, first if done else self.max_iter):
            start = time.perf_counter()
            if passes.device_update:   # shift None: a row not finite
                stats, shift = passes.device_step(centers, self.max_iter - it - 1)
            else:
                stats, _ = passes.run(centers)
            objective = stats.objective
            if stats.n_nonfinite:
                bar.close()
                raise nonfinite_error(data.dtype)
            if not passes.device_update:
                num, den = stats.stats[:, :d], stats.stats[:, d]
                new = centers_update(num, den, centers)
                shift = float(((new - centers) ** 2).sum())
                centers = new
            self.history_.append(history_entry(it + 1, start, data, objective=objective,
                                               center_shift=shift))
            bar.step(objective=objective, shift=shift)
            if self.verbose > 1 and ranks.rank == 0:
                print(f"  iteration {it}: objective {objective:.6g}, shift {shift:.3g}")
            done = shift <= tol
            if checkpoint is not None:
                checkpoint.step(lambda: dict(centers=centers, iteration=it + 1, done=done,
                                             history=self.history_))
            if done:
                break
            data.rebalance()
        bar.close()
        if passes.device_update and it >= first:   # the last iteration's, from the devices
            centers = passes.centers_to_host()
        if shift > tol:
            warnings.warn(f"FuzzyCMeans did not converge in max_iter={self.max_iter} "
                          f"iterations (the last centre shift {shift:.3g} is above tol's "
                          f"{tol:.3g}): increase max_iter or tol", ConvergenceWarning,
                          stacklevel=user_stacklevel())
        stats, u = passes.memberships(centers)
        objective = stats.objective
        if stats.n_nonfinite:
            raise nonfinite_error(data.dtype)
        self.cluster_centers_ = centers.astype(data.dtype)
        self._u, self._labels = u, None   # u_, labels_: from the devices when first read
        self.objective_ = objective
        self.n_iter_ = it + 1
        self.n_features_in_ = d
        self.devices_ = data.rows_per_device
        return self

    @property
    def u_(self):
        """The fit's memberships (n x n_clusters): the final pass leaves them
        on the devices; the first read brings them to the host (a fit whose
        ``u_`` is never read never copies n x c values)."""
        if "_u" not in self.__dict__:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute 'u_'")
        if isinstance(self._u, Memberships):   # a dask array stays one
            self._u = self._u.get()
        return self._u

    @u_.setter
    def u_(self, value):
        self._u = value

    @property
    def labels_(self):
        """Each row's largest membership (the first of equals): taken on the
        devices while ``u_`` is there, else from ``u_``."""
        if self.__dict__.get("_labels") is None:
            if "_u" not in self.__dict__:
                raise AttributeError(f"'{type(self).__name__}' object has no attribute "
                                     "'labels_'")
            u = self._u
            self._labels = u.labels() if isinstance(u, Memberships) else u.argmax(axis=1)
        return self._labels

    @labels_.setter
    def labels_(self, value):
        self._labels = value

    def __getstate__(self):
        if "_u" in self.__dict__:   # device arrays do not pickle: the host's copies
            self.u_, self.labels_
        getstate = getattr(super(), "__getstate__", None)   # scikit-learn's, else Python's
        return getstate() if getstate is not None else dict(self.__dict__)

    _rate_name = "cmeans"

    def _calibration_pass(self, part):
        """What measured weights time (DeviceManager.scatter): an updating
        pass over a sample partition."""
        c = min(self.n_clusters, part.n)
        centers = part.x[:c].get(part.queue).astype(np.float64)
        cpass = CMeansPass(part, c, float(self.m), precision=self.precision)
        return lambda: cpass.run(centers)

    # ------------------------------------------------------------- inference
    def _memberships(self, X, sample_weight, write_u):
        """(objective, memberships) of X at the fitted centres."""
        def attempt(data):
            passes = CMeansShards(data, self.n_clusters, float(self.m),
                                  precision=self.precision)
            stats, u = passes.run(self.cluster_centers_, update=False, write_u=write_u)
            if stats.n_nonfinite:
                raise nonfinite_error(data.dtype)
            return stats.objective, u
        return self._on_devices(X, sample_weight, attempt)

    def predict_proba(self, X):
        """Memberships (n x n_clusters, rows sum to 1) of X at the fitted centres."""
        if is_dask_array(X):   # on the workers, beside the blocks
            return self._dask_rows(X, "predict_proba", self.cluster_centers_.dtype,
                                   self.n_clusters)
        return self._memberships(X, None, True)[1]

    def predict(self, X):
        """Index of each row's largest membership (its nearest centre),
        taken on the devices (the memberships stay there)."""
        if is_dask_array(X):   # on the workers, beside the blocks
            return self._dask_rows(X, "predict", np.int64)
        def attempt(data):
            passes = CMeansShards(data, self.n_clusters, float(self.m),
                                  precision=self.precision)
            stats, u = passes.memberships(self.cluster_centers_)
            if stats.n_nonfinite:
                raise nonfinite_error(data.dtype)
            return u.labels()
        return self._on_devices(X, None, attempt)

    def score(self, X, y=None, sample_weight=None):
        """Opposite of the objective J_m of X at the fitted centres."""
        if is_dask_array(X):   # each block's on its worker, summed
            return self._dask_score(X, sample_weight)
        return -self._memberships(X, sample_weight, False)[0]
