"""k-means (Lloyd) with k-means++ seeding, scikit-learn's KMeans API.

The loop here is the *model update*: it sees only the reduced statistics of
the fused pass (passes/lloyd.py, over the fit's rows by lloyd_shards.py's
LloydShards) and never where distances are computed.
"""
import numbers
import time
import warnings

import numpy as np

from .._base import (CENTERS_INIT_RULE, KMEANS_PARALLEL_RULES, ClusterDistancesOut, ClusterMixin,
                     KCluster, TransformerMixin, check_oversampling)
from ...passes.distances import pairwise_euclidean
from .ensemble import fit_ensemble
from ..checkpoint import CHECKPOINT_RULES
from ..inits import DEFAULT_OVERSAMPLING
from .sparse import assign_csr, fit_csr, transform_csr
from ...runtime.validation import is_sparse, nonfinite_error
from .lloyd_loop import LloydBackend, fit_lloyd, saved_centers
from ...parallel.placement import is_dask_array
from .lloyd_shards import LloydShards, lloyd_calibration
from ...passes.lloyd import stat_values
from ...runtime.warning_site import user_stacklevel

try:
    from sklearn.exceptions import ConvergenceWarning
except ImportError:
    class ConvergenceWarning(UserWarning):
        pass


# whether a fit on one resident device with fp64 keeps its centres there
# between passes (passes.lloyd_update); the tests turn it off to compare
DEVICE_UPDATE = True
HOST_COUNT_ROWS = 1 << 16   # fits of at most this many rows (all ranks') count labels on the host


def counted_on_host(labels, ranks):
    """Whether a fit's cluster sizes are counted from its labels on the host
    (np.bincount of 65536 labels: ~0.05 ms) rather than on the devices (a
    kernel and a read: ~0.15 ms on an H200): in memory, and few rows over
    all ranks (each rank decides alike)."""
    return isinstance(labels, np.ndarray) and ranks.n <= HOST_COUNT_ROWS


class KMeans(ClusterMixin, ClusterDistancesOut, TransformerMixin, KCluster):
    """k-means clustering on OpenCL devices (scikit-learn's KMeans API).

    Lloyd's iterations run as one fused pass over the rows on every device
    chosen (distances, argmin and float64 partial sums; no n x k matrix),
    from greedy k-means++ seeding on the devices: from the same initial
    state, scikit-learn's model.  Takes dense rows, scipy.sparse rows (they
    stay CSR on one device; under MPI each rank's CSR shard, one process's
    model within the rounding of the per-cluster sums) and dask arrays (the
    rows stay on the workers).

    Parameters
    ----------
    n_clusters : int, default=8
        The number of clusters.
    init : {"k-means++", "k-means||", "random"}, callable or array-like of \
shape (n_clusters, n_features), default="k-means++"
        "k-means++": greedy k-means++, scikit-learn's centres from the same
        ``random_state``; it makes n_clusters sequential passes over the
        rows.  "k-means||": Bahmani et al.'s scalable k-means++,
        ``init_max_iter`` rounds that each draw ``oversampling_factor`` x
        n_clusters candidates, then greedy k-means++ over the weighted
        candidates on one device: far fewer passes at large n_samples x
        n_clusters.  "random": n_clusters rows.  A callable
        ``init(X, n_clusters, random_state=...)`` or the centres
        themselves (scikit-learn's forms).
    n_init : "auto" or int, default="auto"
        Runs from different seedings; the least inertia wins.  "auto": 1,
        or 10 for "random" and a callable (scikit-learn's rule).  Several
        runs are fit as one ensemble, one data pass for all.
    copy_x : bool, default=True
        Accepted for scikit-learn's API: X is never modified (the devices
        hold a copy).
    algorithm : {"lloyd", "elkan"}, default="lloyd"
        Accepted for scikit-learn's API: every fit runs the fused Lloyd
        pass (Elkan's bounds save work on a CPU core, not on a device's
        tiles, and give the same model).
    precision : {"float32", "tf32", "bf16"}, default="float32"
        On an NVIDIA GPU with tensor cores, float32 rows of at most 128
        features: "float32" keeps float32 accuracy (3xTF32 products);
        "tf32" and "bf16" compute the distances' products in one TF32 or
        BF16 product and re-check exactly every row whose two best
        candidates are within the mode's error bound, so labels equal the
        float32 argmin except within that bound of a tie
        (:doc:`/guide/precision`).  Everywhere else every mode runs as
        "float32", bit for bit.

    ``checkpoint`` (a path) and ``checkpoint_every`` (an int: iterations;
    a float or "30s": seconds): the fit's state written there that often,
    and resumed from, bit for bit (cluster/checkpoint.py).
    Sparse X: with n_init=1.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        The centres of the best run.
    labels_ : ndarray of shape (n_samples,)
        Each row's cluster (a dask array for a dask array X).
    inertia_ : float
        The rows' weighted sum of squared distances to their centres.
    n_iter_ : int
        Iterations of the best run.
    history_ : list of dict or None
        Per iteration of a single run: its statistics, seconds and rows per
        device (None where n_init > 1 ran the runs as an ensemble).
    devices_ : dict
        Rows per device of the fit; 0 for a device whose measured rate was
        too small a share to pay for its passes (:class:`DeviceManager`).

    See Also
    --------
    MiniBatchKMeans : k-means on mini-batches, and on a stream (partial_fit).
    EnsembleKMeans : many k-means models in one pass over the rows.
    FuzzyCMeans : soft memberships instead of labels.
    kmeans_plusplus : the seeding alone.

    Notes
    -----
    ``spherical=True`` reports ``inertia_`` as the sum of squared distances
    between the unit rows and their unit centres, sum w (2 - 2 cos), as
    scikit-learn's KMeans on normalised rows.  On one device with double
    precision the centre update, shift and inertia run on the device too,
    bit for bit the host's.  Under ``comm``, predict, score and transform
    stay local to the rank.

    Examples
    --------
    >>> import numpy as np
    >>> import oclclust as oc
    >>> X = np.array([[1, 2], [1, 4], [1, 0],
    ...               [10, 2], [10, 4], [10, 0]], dtype=np.float32)
    >>> km = oc.KMeans(n_clusters=2, random_state=0).fit(X)
    >>> km.labels_
    array([1, 1, 1, 0, 0, 0], dtype=int32)
    >>> km.predict([[0, 0], [12, 3]])
    array([1, 0], dtype=int32)
    >>> km.cluster_centers_
    array([[10.,  2.],
           [ 1.,  2.]], dtype=float32)
    >>> km.transform([[1, 2]]).round(2)
    array([[9., 0.]], dtype=float32)
    >>> float(km.score(X))
    -16.0
    """

    _parameter_rules = {
        "n_clusters": [(numbers.Integral, 1, None)],
        "init": CENTERS_INIT_RULE,
        "n_init": ["auto", (numbers.Integral, 1, None)],
        "spherical": [bool],
        "algorithm": ["lloyd", "elkan"],
        "copy_x": [bool],
        **KMEANS_PARALLEL_RULES,
        **CHECKPOINT_RULES,
    }

    def __init__(self, n_clusters=8, *, init="k-means++", n_init="auto", max_iter=300,
                 tol=1e-4, verbose=0, random_state=None, devices=None, dtype=None,
                 comm=None, oversampling_factor=DEFAULT_OVERSAMPLING, init_max_iter=None,
                 spherical=False, copy_x=True, algorithm="lloyd", precision="float32",
                 checkpoint=None, checkpoint_every=1):
        self.n_clusters = n_clusters
        self.checkpoint = checkpoint
        self.checkpoint_every = checkpoint_every
        self.precision = precision
        self.copy_x = copy_x
        self.algorithm = algorithm
        self.spherical = spherical
        self.init = init
        self.oversampling_factor = oversampling_factor
        self.init_max_iter = init_max_iter
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.devices = devices
        self.dtype = dtype
        self.comm = comm

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True   # scipy.sparse rows: sparse.py
        return tags

    # ---------------------------------------------------------------- fitting
    def _stat_values(self, d):
        """A Lloyd pass's statistics: k x d sums and k weights (lloyd.stat_values)."""
        return stat_values(self.n_clusters, d)

    def fit(self, X, y=None, sample_weight=None):
        self._check_params()
        self._algorithm = self.algorithm
        if self.algorithm == "elkan" and self.n_clusters == 1:
            warnings.warn("algorithm='elkan' doesn't make sense for a single cluster. Using "
                          "'lloyd' instead.", RuntimeWarning)
            self._algorithm = "lloyd"
        if is_sparse(X):   # the rows stay sparse (sparse.py)
            return fit_csr(self, X, sample_weight)
        return super().fit(X, y, sample_weight)

    def _fit_leaving_labels(self, data, host_w, rng, ranks):
        """Fit on *data* (a fit's rows) with one run and give back the
        LloydShards whose labels stay on the devices: GaussianMixture's
        "kmeans" init reads them there."""
        lloyd = LloydShards(data, self.n_clusters, ranks)
        self._fit(data, host_w, rng, ranks, lloyd)
        return lloyd

    def _fit(self, data, host_w, rng, ranks, lloyd=None):
        """*lloyd*: the LloydShards a single run uses (GaussianMixture's
        "kmeans" init reads the labels it leaves on the devices)."""
        if self.tol == 0 and self.n_init in ("auto", 1) and not (
                isinstance(self.init, str) or callable(self.init)):
            # one run from given centres with tol=0: the moments would only
            # scale tol (and check the rows, which the first pass does too)
            mean, tol = None, 0.0
        else:
            mean, tol = self._mean_and_tol(data, ranks)
        init = self._checked_init(data.d)
        runs = self._runs(init)
        checkpoint = getattr(self, "_checkpoint", None)
        if checkpoint is not None and checkpoint.saved is not None:   # resumed: its centres
            starts = saved_centers(checkpoint.saved)
        else:   # every run's start first: the same random draws as one run after another
            starts = [ranks.run_failing_all(
                          lambda: self._init_centers(data, init, rng, host_w, ranks))
                      for _ in range(runs)]
        if self.verbose and ranks.rank == 0:
            print("Initialization complete")
        start = time.perf_counter()
        if runs == 1:   # the fused Lloyd pass, with its per-iteration history
            history = []
            lloyd = lloyd or LloydShards(data, self.n_clusters, ranks,
                                         device_update=DEVICE_UPDATE and not self.spherical,
                                         precision=self.precision)
            fitted = fit_lloyd(LloydModel(lloyd, self.spherical,
                                          rechecks=self.precision != "float32"), starts,
                               self.max_iter, tol, data, host_w,
                               self.verbose if ranks.rank == 0 else 0, history, checkpoint)
            results = [(c, i, int(t), history, lab) for c, i, t, lab in zip(*fitted)]
            sizes = None if counted_on_host(fitted[3][0], ranks) else lloyd.cluster_sizes()
        else:           # the restarts as one ensemble: one data pass for all of them
            sizes = None
            results = [(c, i, t, None, lab) for c, i, t, lab in ranks.run_failing_all(
                lambda: fit_ensemble(data, starts, self.max_iter, tol, host_w,
                                     ranks=ranks, mean=mean, spherical=self.spherical,
                                     checkpoint=checkpoint))]
        if self.verbose and ranks.rank == 0:
            for run, result in enumerate(results):
                print(f"k-means run {run}: inertia {result[1]:.6g}, {result[2]} iterations")
            print(f"k-means: {runs} run(s) in {time.perf_counter() - start:.3f} s on "
                  f"{data.rows_per_device}")
        best = min(range(runs), key=lambda r: results[r][1])   # the first of equals
        centers, inertia, n_iter, history, labels_host = results[best]
        if sizes is None:   # the ensemble's labels, or a small fit's: the host's
            sizes = ranks.sum(np.bincount(labels_host, minlength=self.n_clusters),
                              exact=True)
        distinct = int((sizes > 0).sum())
        if distinct < self.n_clusters:
            warnings.warn(f"Number of distinct clusters ({distinct}) found smaller than "
                          f"n_clusters ({self.n_clusters}). Possibly due to duplicate points "
                          "in X.", ConvergenceWarning, stacklevel=user_stacklevel())
        self.cluster_centers_ = centers.astype(data.dtype)
        self.labels_ = labels_host
        self.inertia_ = inertia
        self.n_iter_ = n_iter
        self.history_ = history   # None when n_init > 1 ran the restarts as an ensemble
        self.n_features_in_ = data.d
        self.devices_ = data.rows_per_device
        self.reshards_ = data.manager.reshards
        return self

    _rate_name = "lloyd"

    def _calibration_pass(self, part):
        """What measured weights time (DeviceManager.scatter): a Lloyd pass
        over a sample partition."""
        return lloyd_calibration(part, self.n_clusters)

    def _check_params(self):
        super()._check_params()
        check_oversampling(self)

    def _runs(self, init):
        """The number of runs (scikit-learn's ``_n_init``, set here too)."""
        self._n_init = self._count_runs(init)
        return self._n_init

    def _count_runs(self, init):
        if not isinstance(init, str) and not callable(init) and self.n_init not in ("auto", 1):
            warnings.warn("Explicit initial center position passed: performing only one "
                          f"init in {type(self).__name__} instead of n_init={self.n_init}.",
                          RuntimeWarning, stacklevel=user_stacklevel())
        if self.n_init != "auto":
            return self.n_init
        return 10 if callable(init) or isinstance(init, str) and init == "random" else 1

    # ------------------------------------------------------------- inference
    def _assign(self, X, sample_weight=None):
        def assign(data):
            lloyd = LloydShards(data, self.n_clusters, precision=self.precision)
            stats = lloyd.run(self.cluster_centers_.astype(np.float64), update=False)
            if stats.n_nonfinite:
                raise nonfinite_error(self.cluster_centers_.dtype)
            return lloyd.labels(), stats.inertia
        return self._on_devices(X, sample_weight, assign)

    def predict(self, X, sample_weight=None):
        if is_dask_array(X):   # on the workers, beside the blocks
            return self._dask_rows(X, "predict", np.int32)
        if is_sparse(X):
            return assign_csr(self, X)[0]
        return self._assign(X)[0]

    def score(self, X, y=None, sample_weight=None):
        """Opposite of the rows' inertia on the fitted centres (scikit-learn's).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The rows (a dask array: each block's on its worker).
        y : Ignored
            Not used, present for API consistency by convention.
        sample_weight : array-like of shape (n_samples,), default=None
            The weight of each row; None: every row weighs 1.

        Returns
        -------
        score : float
            Minus the weighted sum of squared distances of the rows to
            their nearest centre.
        """
        if is_dask_array(X):   # each block's on its worker, summed
            return self._dask_score(X, sample_weight)
        if is_sparse(X):
            return -assign_csr(self, X, sample_weight)[1]
        return -self._assign(X, sample_weight)[1]

    def transform(self, X):
        if is_sparse(X):
            return transform_csr(self, X)
        if is_dask_array(X):
            return self._dask_rows(X, "transform", self.cluster_centers_.dtype,
                                   len(self.cluster_centers_))
        distances = self._on_devices(X, None, lambda data: np.concatenate(data.map(
            lambda c: pairwise_euclidean(c, self.cluster_centers_))))
        if not np.isfinite(distances).all():
            raise nonfinite_error(self.cluster_centers_.dtype)
        return distances


class LloydModel(LloydBackend):
    """One model over the fused Lloyd pass (lloyd_shards.LloydShards):
    the backend of fit_lloyd for KMeans.  On one resident device with
    double precision the update is the device's (passes.lloyd_update), its
    shift and inertia np.sum's bits; else, and for an iteration with an
    empty cluster or a non-finite row, the host's.  A pass that changes no
    label stops it (strict convergence, the inertia that pass's); measured
    device weights re-split the rows between iterations."""

    exact_shifts = True     # its shift is recorded: in numpy's order, always

    def __init__(self, lloyd, spherical=False, rechecks=False):
        self.lloyd, self.ranks, self.last = lloyd, lloyd.ranks, None
        self.spherical = spherical
        self.rechecks = rechecks   # a fast precision: history_ records the re-checked rows
        self.replay = None   # a flagged device iteration's statistics, for the host's update

    def device_step(self, centers, active, tol, iterations_left):
        if not self.lloyd.device_update:
            return None
        # the next iteration enqueued before this one is read, when one may follow
        stats, shift, flagged = self.lloyd.device_step(centers, iterations_left)
        if flagged:          # centers hold this iteration's centres: the host takes it
            self.replay = stats
            return None
        self.last = stats
        return np.array([shift])

    def centers_to_host(self, centers):
        self.lloyd.centers_to_host(centers)

    def stats(self, centers_list):
        (centers,) = centers_list
        if self.replay is not None:   # the pass over these centres ran on the device
            self.last, self.replay = self.replay, None
        else:
            self.last = self.lloyd.run(centers)
        if self.last.n_nonfinite:
            raise nonfinite_error(self.lloyd.data.dtype)
        return self.last.sums, self.last.weights

    def nearest(self, centers):
        # of the pass just run, in the rows' dtype: widening is exact, so the
        # farthest rows and their distances are float64's, and float32
        # distances are less to convert and select
        return self.lloyd.min_dist(dtype=None), self.lloyd.labels()

    def labels_unchanged(self, active):
        return [self.last.n_changed == 0]

    def record(self, shifts, moving, n_models):
        # inertia of the centres this pass assigned to (as sklearn's verbose output)
        shift = float(shifts[0])
        stats = dict(inertia=self.last.inertia, center_shift=shift,
                     n_changed=self.last.n_changed)
        if self.rechecks:   # 0 where the fast mode runs as float32
            stats["rechecked"] = self.last.n_rechecked
        return (stats,
                f"inertia {self.last.inertia:.6g}, shift {shift:.3g}")

    def farthest(self, centers, take):
        return self.lloyd.farthest(take)   # of the pass just run

    def farthest_found(self, take):
        return self.lloyd.farthest_found(take)   # of the pass just run

    def rebalance(self):
        self.lloyd.rebalance()

    def finish(self, centers):
        # (no pass ran: a fit resumed from a checkpoint of its last iteration)
        inertia = (self.last.inertia if self.last is not None and self.last.n_changed == 0
                   else self.lloyd.run(centers[0], update=False).inertia)
        return [inertia], [self.lloyd.labels()]
