"""Mini-batch k-means, scikit-learn's MiniBatchKMeans on OpenCL devices.

scikit-learn's algorithm and random stream: the inits drawn from init_size
rows and compared on a validation draw, the batches drawn by weight as
``choice(n, batch_size, p=w / w.sum())`` draws them (sampling.py), the
streaming centre update with per-centre weight sums, the reassignment of
centres whose weight falls below reassignment_ratio of the largest, and
the early stop on the exponentially weighted batch inertia
(max_no_improvement) or the centre change (tol).  Each batch is assigned on
the devices by the Lloyd pass (lloyd_shards.LloydShards); its per-cluster
sums, weights and inertia are added in float64 and the update is the
host's.  ``partial_fit`` takes one step on each chunk it is given (a data
stream, a file read in pieces).

A batch's sums, weights and inertia are added in float64 in row order
(minibatch_sums.py), so a dask array's fit, whose batches are assigned on
the workers holding their rows (minibatch_rows.WorkerRows), is the numpy
fit of the same rows bit for bit.  Where a fit's rows sit whole on one fp64
device they are placed once and each batch is gathered, assigned and
folded there in that order (minibatch_rows.DeviceRows): the same bits,
with only indices, labels, distances and k x d sums crossing the link.
Sparse rows are assigned by the CSR pass (minibatch_rows.SparseRows).
"""
import contextlib
import numbers
import warnings

import numpy as np

from .._base import (CENTERS_INIT_RULE, ClusterDistancesOut, ClusterMixin, KCluster,
                     TransformerMixin)
from ..checkpoint import CHECKPOINT_RULES, Checkpoint, rng_state, set_rng_state
from .minibatch_init import best_init, init_centroids
from .sparse import transform_csr
from .minibatch_rows import DeviceRows, HostRows, SparseRows, WorkerRows
from .minibatch_sums import index_order
from .sampling import weighted_draws
from ..spherical import renormalised, unit_rows
from ...parallel.placement import is_dask_array, new_data
from ...passes.distances import pairwise_euclidean
from ...runtime.validation import (all_finite, check_data, check_random_state, nonfinite_error,
                                   check_sample_weight, checked_csr, is_sparse)
from ...runtime.warning_site import user_stacklevel


# what a fit's mini-batch steps carry from one to the next, beside the centres
# and the random stream: a checkpoint's state (scikit-learn's counters)
STEP_STATE = ("_counts", "_ewa_inertia", "_ewa_inertia_min", "_no_improvement",
              "_n_since_last_reassign")

# whether a fit gathers and folds its batches on the device where its rows
# sit whole (DeviceRows: the same bits as HostRows; the tests compare both)
DEVICE_BATCHES = True


class MiniBatchKMeans(ClusterMixin, ClusterDistancesOut, TransformerMixin, KCluster):
    """Mini-batch k-means on OpenCL devices (scikit-learn's MiniBatchKMeans).

    scikit-learn's algorithm and random draws (the same centres from the
    same ``random_state``), each batch assigned on the devices by the fused
    Lloyd pass; ``partial_fit`` learns from a stream a chunk at a time.

    Parameters
    ----------
    n_clusters : int, default=8
        The number of clusters.
    init : {"k-means++", "k-means||", "random"}, callable or array-like, \
default="k-means++"
        The seeding, on ``init_size`` rows (KMeans' forms).
    batch_size : int, default=1024
        Rows a mini-batch.
    compute_labels : bool, default=True
        Whether fit ends with a pass setting ``labels_`` and ``inertia_``.
    max_no_improvement : int or None, default=10
        Stop after this many batches that do not improve the smoothed
        inertia (None: never).
    init_size : int or None, default=None
        Rows the seedings draw from (None: 3 x batch_size, >= 3 x n_clusters).
    n_init : "auto" or int, default="auto"
        Seedings tried, the best on a validation draw kept ("auto": 3 for
        "random", else 1).
    reassignment_ratio : float, default=0.01
        Clusters under this share of the largest one's rows move to random rows.
    precision : {"float32", "tf32", "bf16"}, default="float32"
        As KMeans'; the batch pass has no tensor-core form yet: every mode
        runs as "float32" (the same model, bit for bit).

    ``checkpoint`` (a path) and ``checkpoint_every`` (an int: mini-batch
    steps; a float or "30s": seconds): the fit's state written there that
    often, and resumed from, bit for bit (cluster/checkpoint.py).
    partial_fit writes none.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        The centres.
    labels_, inertia_
        Each row's cluster and the rows' inertia, with compute_labels.
    n_iter_, n_steps_ : int
        Passes over the data and mini-batches processed.

    See Also
    --------
    KMeans : every row in every iteration.

    Examples
    --------
    >>> import numpy as np
    >>> import oclclust as oc
    >>> X = np.array([[1, 2], [1, 4], [1, 0], [4, 2], [4, 0], [4, 4],
    ...               [4, 5], [0, 1], [2, 2], [3, 2], [5, 5], [1, -1]], dtype=np.float32)
    >>> mbk = oc.MiniBatchKMeans(n_clusters=2, batch_size=6, random_state=0)
    >>> mbk.partial_fit(X[:6]).partial_fit(X[6:]).n_steps_
    2
    >>> mbk = oc.MiniBatchKMeans(2, batch_size=6, max_iter=10, random_state=0).fit(X)
    >>> np.bincount(mbk.labels_)
    array([6, 6])
    """

    comm = None   # the shared rules read it: one process (MPI: KMeans)

    _parameter_rules = {
        "n_clusters": [(numbers.Integral, 1, None)],
        "init": CENTERS_INIT_RULE,
        "batch_size": [(numbers.Integral, 1, None)],
        "max_iter": [(numbers.Integral, 0, None)],
        "max_no_improvement": [(numbers.Integral, 0, None), None],
        "init_size": [(numbers.Integral, 1, None), None],
        "n_init": ["auto", (numbers.Integral, 1, None)],
        "reassignment_ratio": [(numbers.Real, 0, None)],
        "compute_labels": [bool],
        "spherical": [bool],
        **CHECKPOINT_RULES,
    }

    def __init__(self, n_clusters=8, *, init="k-means++", max_iter=100, batch_size=1024,
                 verbose=0, compute_labels=True, random_state=None, tol=0.0,
                 max_no_improvement=10, init_size=None, n_init="auto",
                 reassignment_ratio=0.01, devices=None, dtype=None, spherical=False,
                 precision="float32", checkpoint=None, checkpoint_every=1):
        self.n_clusters = n_clusters
        self.checkpoint = checkpoint
        self.checkpoint_every = checkpoint_every
        self.precision = precision
        self.init = init
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.verbose = verbose
        self.compute_labels = compute_labels
        self.random_state = random_state
        self.tol = tol
        self.max_no_improvement = max_no_improvement
        self.init_size = init_size
        self.n_init = n_init
        self.reassignment_ratio = reassignment_ratio
        self.devices = devices
        self.dtype = dtype
        self.spherical = spherical

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True   # scipy.sparse rows: sparse.py's assignment
        return tags

    # ------------------------------------------------------------- helpers
    def _host_rows(self, X, sample_weight, fitted=False, check_finite=True):
        """X (unit rows when spherical) and its weights, validated, on the host
        (*fitted*: X's features must be the fit's); sparse X stays sparse
        (canonical CSR)."""
        if is_sparse(X):
            X = checked_csr(X, self.dtype, type(self).__name__,
                            self.n_features_in_ if fitted else None, unit=self.spherical)
            w = check_sample_weight(sample_weight, X.shape[0], X.dtype)
            return X, (np.ones(X.shape[0], X.dtype) if w is None else w)
        X = unit_rows(X, type(self).__name__) if self.spherical else \
            check_data(X, type(self).__name__)
        if not isinstance(X, np.ndarray):
            X = X.get()
        if check_finite and not all_finite(X):
            raise ValueError("Input X contains NaN or infinity.")
        dtype = np.dtype(self.dtype) if self.dtype is not None else (
            np.dtype(np.float32) if X.dtype == np.float32 else np.dtype(np.float64))
        X = np.ascontiguousarray(X, dtype)
        if fitted and X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but MiniBatchKMeans is "
                             f"expecting {self.n_features_in_} features as input.")
        w = check_sample_weight(sample_weight, X.shape[0], dtype)
        return X, (np.ones(X.shape[0], dtype) if w is None else w)

    @contextlib.contextmanager
    def _rows(self, X, sample_weight, fitted=False, resident=False):
        """HostRows or, for a dask array with a distributed Client active,
        WorkerRows (the blocks freed on the workers when the block ends)."""
        if is_dask_array(X):
            from ...parallel.dask import active_client
            if active_client() is None:   # as any array: the one-process fit
                X = X.compute()
                if is_dask_array(sample_weight):
                    sample_weight = sample_weight.compute()
            else:
                if fitted and X.shape[1] != self.n_features_in_:
                    raise ValueError(f"X has {X.shape[1]} features, but MiniBatchKMeans is "
                                     f"expecting {self.n_features_in_} features as input.")
                if not fitted:
                    self._check_n_samples(X.shape[0], X.shape[1])
                if self.spherical:
                    X = unit_rows(X, type(self).__name__)
                with WorkerRows.loaded(X, sample_weight, self.devices, self.dtype,
                                       type(self).__name__) as rows:
                    yield rows
                return
        # rows placed on a device are checked there (moments: one pass at the
        # device's bandwidth, not the host's)
        placing = resident and DEVICE_BATCHES and not is_sparse(X)
        X, w = self._host_rows(X, sample_weight, fitted, check_finite=not placing)
        name = type(self).__name__
        if is_sparse(X):
            yield SparseRows(X, w, self.devices, name)
            return
        # *resident*: a fit's rows placed once where they stay whole on one
        # device (a partial_fit's chunk is its one batch: nothing to gain)
        placed = DeviceRows.placed(X, w, self.devices, name) if placing else None
        if placing and (not all_finite(X) if placed is None else not placed.finite()):
            if placed is not None:
                placed.close()
            raise ValueError("Input X contains NaN or infinity.")
        try:
            yield placed or HostRows(X, w, self.devices, name)
        finally:
            if placed is not None:
                placed.close()

    def _prepare(self, rows):
        """scikit-learn's _check_params_vs_input: batch and init sizes, n_init, tol."""
        n = rows.n
        self._check_n_samples(n, rows.d)
        self._batch_size = min(self.batch_size, n)
        init_size = self.init_size
        if init_size is None:
            init_size = 3 * self._batch_size
            if init_size < self.n_clusters:
                init_size = 3 * self.n_clusters
        elif init_size < self.n_clusters:
            warnings.warn(f"init_size={init_size} should be larger than n_clusters="
                          f"{self.n_clusters}. Setting it to min(3*n_clusters, n_samples)",
                          RuntimeWarning, stacklevel=user_stacklevel())
            init_size = 3 * self.n_clusters
        self._init_size = min(init_size, n)
        init = self.init
        if self.n_init == "auto":   # 3 random or called draws; one k-means++ or given start
            self._n_init = 3 if callable(init) or isinstance(init, str) and init == "random" \
                else 1
        else:
            self._n_init = self.n_init
        if not isinstance(init, str) and not callable(init) and self._n_init != 1:
            warnings.warn("Explicit initial center position passed: performing only one "
                          f"init in MiniBatchKMeans instead of n_init={self._n_init}.",
                          RuntimeWarning, stacklevel=user_stacklevel())
            self._n_init = 1
        variances = rows.variances() if self.tol else np.zeros(1)
        self._tol = float(np.mean(variances) * self.tol)

    @staticmethod
    def _batch(rows, indices, weights, centers):
        """BatchTotals of rows *indices* (drawn, repeats allowed) of *weights*:
        added in the order of their indices (minibatch_sums.py).  A batch
        whose inertia is not finite has rows whose squares overflow."""
        totals = rows.batch(indices, np.asarray(weights), centers, index_order(indices))
        if not np.isfinite(totals.inertia):
            raise nonfinite_error(rows.dtype)
        return totals

    def _random_reassign(self):
        self._n_since_last_reassign += self._batch_size
        if (self._counts == 0).any() or self._n_since_last_reassign >= 10 * self.n_clusters:
            self._n_since_last_reassign = 0
            return True
        return False

    def _step(self, rows, batch, w, centers, rng, reassign):
        """scikit-learn's _mini_batch_step on rows *batch* (of weights *w*):
        the new centres (float64 update, then the rows' dtype) and the batch
        inertia."""
        stats = self._batch(rows, batch, w, centers)
        counts = self._counts
        new = np.array(centers, np.float64)
        hit = stats.weights > 0
        total = counts[hit].astype(np.float64) + stats.weights[hit]
        new[hit] = (new[hit] * counts[hit, None] + stats.sums[hit]) / total[:, None]
        counts[hit] = total
        if self.spherical:
            new = renormalised(new)
        new = new.astype(rows.dtype)
        if reassign and self.reassignment_ratio > 0:
            to_reassign = counts < self.reassignment_ratio * counts.max()
            if to_reassign.sum() > 0.5 * len(batch):
                keep = np.argsort(counts)[int(0.5 * len(batch)):]
                to_reassign[keep] = False
            n_reassigns = int(to_reassign.sum())
            if n_reassigns:
                picked = rng.choice(len(batch), replace=False, size=n_reassigns)
                new[to_reassign] = rows.dense_rows(batch[picked])
            counts[to_reassign] = np.min(counts[~to_reassign])
        return new, float(stats.inertia)

    def _converged(self, step, n_steps, n, shift, batch_inertia):
        """scikit-learn's _mini_batch_convergence."""
        batch_inertia /= self._batch_size
        step += 1
        if step == 1:
            return False
        if self._ewa_inertia is None:
            self._ewa_inertia = batch_inertia
        else:
            alpha = min(self._batch_size * 2.0 / (n + 1), 1)
            self._ewa_inertia = self._ewa_inertia * (1 - alpha) + batch_inertia * alpha
        if self.verbose:
            print(f"Minibatch step {step}: mean batch inertia: {batch_inertia}, "
                  f"ewa inertia: {self._ewa_inertia}")
        if self._tol > 0.0 and shift <= self._tol:
            if self.verbose:
                print(f"Converged (small centers change) at step {step}/{n_steps}")
            return True
        if self._ewa_inertia_min is None or self._ewa_inertia < self._ewa_inertia_min:
            self._no_improvement = 0
            self._ewa_inertia_min = self._ewa_inertia
        else:
            self._no_improvement += 1
        if (self.max_no_improvement is not None
                and self._no_improvement >= self.max_no_improvement):
            if self.verbose:
                print(f"Converged (lack of improvement in inertia) at step {step}/{n_steps}")
            return True
        return False

    def _finish(self, rows, centers):
        """The fitted centres, and with compute_labels every row's label and
        the inertia there (checked before anything is set)."""
        if self.compute_labels:
            labels, inertia = rows.labels_inertia(centers)
            if not np.isfinite(inertia):
                raise nonfinite_error(rows.dtype)
        self.cluster_centers_ = centers
        self.n_features_in_ = rows.d
        self.devices_ = dict(rows.rows_per_device)
        if self.compute_labels:
            self.labels_, self.inertia_ = labels, inertia

    # ------------------------------------------------------------- fitting
    def fit(self, X, y=None, sample_weight=None):
        self._check_params()
        with self._rows(X, sample_weight, resident=True) as rows:
            return self._fit(rows, Checkpoint.of(self, X, sample_weight, rows.n, rows.d,
                                                 rows.dtype))

    def _fit(self, rows, checkpoint=None):
        self._prepare(rows)
        n, w = rows.n, rows.w
        rng = check_random_state(self.random_state)
        saved = None if checkpoint is None else checkpoint.saved
        if saved is None:
            centers = best_init(self, rows, rng)
            self._counts = np.zeros(self.n_clusters, rows.dtype)
            self._ewa_inertia = self._ewa_inertia_min = None
            self._no_improvement = self._n_since_last_reassign = 0
            first, done = 0, False
        else:   # resumed after the checkpoint's step, its random stream where it was
            centers, first, done = saved["centers"], saved["step"] + 1, saved["done"]
            set_rng_state(rng, saved["rng"])
            for name in STEP_STATE:
                setattr(self, name, saved[name])
        n_steps = (self.max_iter * n) // self._batch_size
        # batches drawn by weight, each row of one then counted once (scikit-learn's)
        draw = weighted_draws(rng, w / np.sum(w))
        unit = np.ones(self._batch_size, rows.dtype)
        step = first - 1
        for step in range(first, first if done else n_steps):
            batch = draw(self._batch_size)
            new, inertia = self._step(rows, batch, unit, centers, rng, self._random_reassign())
            shift = float(np.sum((new.astype(np.float64) - centers) ** 2)) if self._tol else 0.0
            centers = new
            done = self._converged(step, n_steps, n, shift, inertia)
            if checkpoint is not None:
                checkpoint.step(lambda: dict(
                    centers=centers, step=step, done=done, rng=rng_state(rng),
                    **{name: getattr(self, name) for name in STEP_STATE}))
            if done:
                break
        self.n_steps_ = step + 1
        self.n_iter_ = int(np.ceil(((step + 1) * self._batch_size) / n))
        self._finish(rows, centers)
        if not self.compute_labels:
            self.inertia_ = self._ewa_inertia * float(np.sum(w))
        return self

    def partial_fit(self, X, y=None, sample_weight=None):
        """One mini-batch step on X (the next chunk of a stream)."""
        first = not hasattr(self, "cluster_centers_")
        if first:
            self._check_params()
        with self._rows(X, sample_weight, fitted=not first) as rows:
            return self._partial_fit(rows, first)

    @property
    def _rng_state(self):
        """partial_fit's random stream as a model file keeps it
        (checkpoint.rng_state's list)."""
        if getattr(self, "_random_state", None) is None:
            raise AttributeError("_rng_state")
        return rng_state(self._random_state)

    @_rng_state.setter
    def _rng_state(self, state):
        self._random_state = set_rng_state(np.random.RandomState(), state)

    def _partial_fit(self, rows, first):
        self._random_state = getattr(self, "_random_state", None) or \
            check_random_state(self.random_state)
        self.n_steps_ = getattr(self, "n_steps_", 0)
        if first:   # (the centres are set once the step has run: a failed one sets none)
            self._prepare(rows)
            centers = init_centroids(self, rows, self._random_state)
            self._counts = np.zeros(self.n_clusters, rows.dtype)
            self._n_since_last_reassign = 0
        else:
            centers = self.cluster_centers_
        if not hasattr(self, "_counts"):   # a model read from a file: its centres go on
            self._counts = np.zeros(self.n_clusters, rows.dtype)
            self._n_since_last_reassign = 0
        self._batch_size = min(self.batch_size, rows.n)
        centers, _ = self._step(rows, np.arange(rows.n), rows.w, centers, self._random_state,
                                self._random_reassign())
        self._finish(rows, centers)
        self.n_steps_ += 1
        return self

    # ------------------------------------------------------------- inference
    def predict(self, X, sample_weight=None):
        self._check_fitted()
        if is_dask_array(X):   # on the workers, beside the blocks
            return self._dask_rows(X, "predict", np.int32)
        return self._labels_inertia(*self._host_rows(X, None, fitted=True))[0]

    def score(self, X, y=None, sample_weight=None):
        """Opposite of the rows' inertia on the fitted centres (scikit-learn's)."""
        self._check_fitted()
        if is_dask_array(X):   # each block's on its worker, summed
            return self._dask_score(X, sample_weight)
        return -self._labels_inertia(*self._host_rows(X, sample_weight, fitted=True))[1]

    def _labels_inertia(self, X, w):
        """(labels, inertia) of host rows X (weights w) about the centres;
        rows whose squares overflow raise, as in fit."""
        labels, inertia = (SparseRows if is_sparse(X) else HostRows)(
            X, w, self.devices, type(self).__name__).labels_inertia(self.cluster_centers_)
        if not np.isfinite(inertia):
            raise nonfinite_error(self.cluster_centers_.dtype)
        return labels, inertia

    def transform(self, X):
        self._check_fitted()
        if is_dask_array(X):
            return self._dask_rows(X, "transform", self.cluster_centers_.dtype,
                                   self.n_clusters)
        if is_sparse(X):
            return transform_csr(self, X)
        X, _ = self._host_rows(X, None, fitted=True)   # unit rows already when spherical
        data = new_data(X, None, self.devices, X.dtype, X.shape[1], type(self).__name__)
        try:
            return np.concatenate(data.map(
                lambda chunk: pairwise_euclidean(chunk, self.cluster_centers_)))
        finally:
            data.close()
