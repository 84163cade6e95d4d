"""Ensemble k-means: M k-means models fit in one data pass per iteration.

The device passes live in passes/ensemble.py (task / data / concatenated
parallelism) and passes/kdtree.py (KD-tree pruning, three leaf mappings),
run over the fit's rows by ensemble_shards.py; this module holds
the models' backend of the Lloyd loop (lloyd_loop.py), the "auto" choice and the estimator.  Every
strategy and mapping gives bit-identical statistics (fixed-point sums), so
the choice changes the speed only, and each model follows exactly the path
an independent KMeans fit from its own init follows (its own tol, its own
iteration count: a converged model leaves the passes, the others go on).
"""
import numbers
import threading

import numpy as np
import pyopencl.array as cla

from .._base import KMEANS_PARALLEL_RULES, ClusterMixin, KCluster, check_oversampling, init_options
from ...passes.ensemble import STRATEGIES, EnsemblePass, EnsembleTerms, FixedPoint
from ...passes.kdtree import MAPPINGS, KDTreePass, KdTreeTerms
from ..checkpoint import CHECKPOINT_RULES
from ..inits import DEFAULT_OVERSAMPLING, draw_centers
from ..spherical import renormalised
from .lloyd_loop import LloydBackend, fit_lloyd, saved_centers
from .lloyd_shards import lloyd_calibration
from ...parallel.comm import Ranks
from ...parallel.placement import is_dask_array
from .ensemble_shards import EnsembleShards
from ...runtime.codegen import quiet_build
from ...runtime.validation import nonfinite_error


def choose(profile, d, ks, n, strategy="auto", kdtree="auto"):
    """(strategy, KD-tree mapping or None) for a device and problem shape."""
    if strategy == "auto":
        strategy = profile.terms(EnsembleTerms).strategy
    if kdtree == "auto":
        tree = profile.terms(KdTreeTerms)
        prunable = (strategy == "concatenated" and d <= tree.max_dims
                    and n >= tree.min_rows and max(ks) > 1)
        kdtree = tree.mapping if prunable else None
    return strategy, kdtree


def ensemble_passes(data, fixed, ks, strategy="auto", kdtree=None, ranks=None,
                    leaf_size=None, distributed=None, device_update=True):
    """The ensemble passes over *data* (ensemble_shards.py): on each
    chunk the pass choose() picks for its device and the models' K values
    *ks*; *fixed*: the fit's FixedPoint."""
    n = data.n   # not data: over remote data `make` travels to the rows

    def make(chunk):
        chosen, mapping = choose(chunk.profile, chunk.d, ks, n, strategy, kdtree)
        if mapping is None:
            return (chosen, mapping), EnsemblePass(chunk, chosen, fixed, distributed)
        leaf = leaf_size or chunk.profile.terms(KdTreeTerms).leaf_size
        return (chosen, mapping), KDTreePass(chunk, mapping, fixed, leaf, distributed)
    return EnsembleShards(data, fixed, make, ranks, device_update)


# pyopencl memoizes its min / max reduction kernels per context, so two fits
# in two threads set the arguments of one kernel object at once, which is not
# thread-safe (PoCL aborts: tests/runtime/test_reuse.py): one call at a time
_REDUCTIONS = threading.Lock()


def _extremes(x):
    """(min, max) of device array *x* by pyopencl's reductions."""
    with _REDUCTIONS:
        return float(cla.min(x).get()), float(cla.max(x).get())


def fixed_point(data, host_w, mean, ranks=None):
    """The FixedPoint of a fit: origin at the data mean, scales from bounds
    (summed over *ranks*, so every rank has the same ones)."""
    with quiet_build():   # pyopencl's own min/max kernels build on first use
        ext = data.map(lambda c: _extremes(c.x))
    lo, hi = min(e[0] for e in ext), max(e[1] for e in ext)
    spread = max(hi - float(np.min(mean)), float(np.max(mean)) - lo, 0.0)
    # rows whose squared distances overflow the compute dtype have no fixed
    # point that also resolves the others (their sums would round to 0):
    # the error KMeans's pass gives them, on every rank
    top = max(abs(lo), abs(hi))
    overflow = float(data.d * top * top > float(np.finfo(data.dtype).max))
    ranks = ranks or Ranks.alone(data)
    # the rows' count summed, the bounds the largest of the ranks': one process's scales
    every = np.array(ranks.gather((data.n, float(np.max(host_w)), spread, overflow)))
    n, (wmax, spread, overflow) = every[:, 0].sum(), every[:, 1:].max(axis=0)
    if overflow:
        raise nonfinite_error(data.dtype)
    return FixedPoint.for_bounds(mean, n, wmax, spread)


def data_moments(data, ranks=None):
    """(mean, variance) per dimension over every rank's rows; ValueError on NaN/inf."""
    mean, var, finite = data.mean_var_finite()
    if not finite:
        raise ValueError("Input X contains NaN or infinity.")
    ranks = ranks or Ranks.alone(data)
    n, s1, s2 = ranks.sum(np.float64(data.n), data.n * mean, data.n * (var + mean * mean))
    mean = s1 / n
    return mean, np.maximum(s2 / n - mean * mean, 0.0)


class EnsembleModels(LloydBackend):
    """Many models over the ensemble passes (ensemble_shards.
    EnsembleShards *engine*): the backend of fit_lloyd for EnsembleKMeans and
    KMeans's restarts.  On one device with double precision the update is
    the device's (passes.ensemble_update), two iterations ahead."""

    name = "ensemble k-means"

    def __init__(self, engine, spherical=False):
        self.engine, self.ranks = engine, engine.ranks
        self.spherical = spherical

    def stats(self, centers_list):
        return self.engine.stats_packed(centers_list)

    def nearest(self, centers):
        _, labels, dist = self.engine.assign([centers], labels=True, min_dist=True)
        return dist[0].astype(np.float64), labels[0]

    def record(self, shifts, moving, n_models):
        return (dict(models_moving=len(moving), max_center_shift=float(shifts.max(initial=0.0))),
                f"{len(moving)} of {n_models} models still moving")

    def finish(self, centers):
        inertia, labels, _ = self.engine.assign(centers, labels=True)
        return inertia, labels

    def farthest(self, centers, take):
        return self.engine.farthest(centers, take)

    def device_step(self, centers, active, tol, iterations_left):
        return self.engine.device_step(centers, active, tol, iterations_left)

    def centers_to_host(self, centers):
        self.engine.centers_to_host(centers)


def fit_ensemble(data, inits, max_iter, tol, host_w, strategy="auto", kdtree="auto",
                 ranks=None, mean=None, spherical=False, checkpoint=None):
    """KMeans(n_init=R) restarts (or a sweep of K values) as one ensemble over
    an existing ShardedData: *inits* are R initial centre arrays (any K each),
    *tol* absolute (KMeans's mean(var) * tol).  Returns a list of
    (centers, inertia, n_iter, labels) per init; labels cover this rank's rows.
    *checkpoint*: fit_lloyd's."""
    if mean is None:
        mean = data_moments(data, ranks)[0]
    ks = [len(c) for c in inits]
    engine = ensemble_passes(data, fixed_point(data, host_w, mean, ranks), ks, strategy,
                             kdtree, ranks)
    centers, inertia, n_iter, labels = fit_lloyd(EnsembleModels(engine, spherical), inits,
                                                 max_iter, tol, data, host_w,
                                                 checkpoint=checkpoint)
    return [(c, float(i), int(t), lab) for c, i, t, lab in zip(centers, inertia, n_iter, labels)]


class EnsembleKMeans(ClusterMixin, KCluster):
    """M k-means models fit at once, one data pass an iteration for all.

    The models' distances are computed in the same pass over the rows
    (Ravunnikutty et al., "Ensemble K-means on multi-core architectures"),
    optionally pruned by a KD-tree; on one device the model update runs
    there too.  A list of cluster counts fits a sweep of K side by side.

    Parameters
    ----------
    n_clusters : int or list of int, default=8
        K of every model, or one K a model (a sweep of K).
    n_models : int, default=4
        The number of models M.
    strategy : {"auto", "task", "data", "concatenated"}, default="auto"
        "task": a model a work-group; "data": a model a launch;
        "concatenated": all models a data pass; "auto": the device
        profile's choice.
    kdtree : {None, "auto", "direct", "distributed", "replicated"}, default=None
        KD-tree pruning with that leaf mapping (concatenated parallelism);
        None: brute force.
    init : {"k-means++", "k-means||", "random"} or array-like, default="k-means++"
        The seeding of each model, or the centres: an M x K x d array (a
        list of M arrays for different K).

    ``checkpoint`` (a path) and ``checkpoint_every`` (an int: iterations;
    a float or "30s": seconds): the fit's state written there that often,
    and resumed from, bit for bit (cluster/checkpoint.py).

    Attributes
    ----------
    models_ : ndarray of shape (n_models, n_clusters, n_features) or list
        Every model's centres (a list of arrays where the models' K differ).
    inertias_ : ndarray of shape (n_models,)
        Every model's inertia.
    n_iter_ : ndarray of shape (n_models,)
        Every model's iterations; each stops at its own ``tol``.
    best_index_ : int
        The model of least inertia (with different K the largest K usually
        wins: compare the models yourself).
    cluster_centers_ : ndarray of shape (K, n_features)
        The best model's centres.
    labels_ : ndarray of shape (n_samples,)
        Each row's cluster in the best model.
    inertia_ : float
        The best model's inertia.
    strategy_ : dict
        {device: (strategy, KD-tree mapping)} the fit ran.
    devices_ : dict
        Rows per device of the fit; 0 for a device whose measured rate was
        too small a share to pay for its passes (:class:`DeviceManager`).

    See Also
    --------
    KMeans : one model (its restarts, n_init > 1, run as an ensemble).

    Examples
    --------
    >>> import numpy as np
    >>> import oclclust as oc
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(c, 0.5, size=(50, 2)) for c in (0, 5, 10)])
    >>> ens = oc.EnsembleKMeans(n_clusters=[2, 3, 4], n_models=3, random_state=0).fit(X)
    >>> [len(centres) for centres in ens.models_]
    [2, 3, 4]
    >>> ens.inertias_.shape
    (3,)
    >>> int(np.argmin(ens.inertias_)) == ens.best_index_
    True
    >>> ens.predict(X[:3]).shape
    (3,)
    """

    _parameter_rules = {
        "n_clusters": [(numbers.Integral, 1, None), list, tuple, np.ndarray],
        "n_models": [(numbers.Integral, 1, None)],
        "strategy": ["auto", *STRATEGIES],
        "kdtree": [None, "auto", *MAPPINGS],
        "init": ["k-means++", "k-means||", "random", np.ndarray, list, tuple],
        "spherical": [bool],
        **KMEANS_PARALLEL_RULES,
        **CHECKPOINT_RULES,
    }

    def __init__(self, n_clusters=8, n_models=4, *, strategy="auto", kdtree=None,
                 init="k-means++", max_iter=300, tol=1e-4, random_state=None, devices=None,
                 dtype=None, comm=None, verbose=0, oversampling_factor=DEFAULT_OVERSAMPLING,
                 init_max_iter=None, spherical=False, precision="float32", checkpoint=None,
                 checkpoint_every=1):
        self.checkpoint = checkpoint
        self.checkpoint_every = checkpoint_every
        self.spherical = spherical
        self.precision = precision
        self.oversampling_factor = oversampling_factor
        self.init_max_iter = init_max_iter
        self.n_clusters = n_clusters
        self.n_models = n_models
        self.strategy = strategy
        self.kdtree = kdtree
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.devices = devices
        self.dtype = dtype
        self.comm = comm
        self.verbose = verbose

    def _ks(self):
        if isinstance(self.n_clusters, numbers.Integral):
            return [int(self.n_clusters)] * self.n_models
        ks = [int(k) for k in self.n_clusters]
        if len(ks) != self.n_models or min(ks) < 1:
            raise ValueError(f"n_clusters as a list needs n_models={self.n_models} values "
                             f">= 1, got {list(self.n_clusters)}")
        return ks

    def _stat_values(self, d):
        """A block's partials: the labels pass's inertia of every model
        (the centroid sums are fixed-point integers, exact already)."""
        return self.n_models

    def _check_params(self):
        super()._check_params()
        check_oversampling(self)
        self._ks()
        if self.kdtree not in (None, "auto") and self.strategy in ("task", "data"):
            raise ValueError("the KD-tree mappings are concatenated parallelism: use "
                             "strategy='concatenated' or 'auto' with kdtree")

    _rate_name = "lloyd"

    def _work_per_row(self, d):
        return sum(self._ks()) * d

    def _calibration_pass(self, part):
        """What measured weights time (DeviceManager.scatter): a Lloyd pass
        over every model's centres at once, the work of the concatenated
        pass (the joint passes' timings do not re-split an ensemble: this
        rate is its split)."""
        return lloyd_calibration(part, sum(self._ks()))

    def _fit(self, data, host_w, rng, ranks):
        ks = self._ks()
        mean, tol = self._mean_and_tol(data, ranks)
        checkpoint = getattr(self, "_checkpoint", None)
        if checkpoint is not None and checkpoint.saved is not None:   # resumed: its centres
            inits = saved_centers(checkpoint.saved)
        else:
            inits = ranks.run_failing_all(lambda: self._inits(data, rng, host_w, ks, ranks))
        engine = ensemble_passes(data, fixed_point(data, host_w, mean, ranks), ks,
                                 self.strategy, self.kdtree, ranks)
        self.history_ = []
        centers, inertia, n_iter, labels = fit_lloyd(
            EnsembleModels(engine, self.spherical), inits, self.max_iter, tol, data, host_w,
            self.verbose if ranks.rank == 0 else 0, self.history_, checkpoint)
        centers = [c.astype(data.dtype) for c in centers]
        self.models_ = np.stack(centers) if len(set(ks)) == 1 else centers
        self.inertias_ = np.asarray(inertia, np.float64)
        self.n_iter_ = n_iter
        self.best_index_ = int(np.argmin(self.inertias_))
        self.cluster_centers_ = centers[self.best_index_]
        self.inertia_ = float(self.inertias_[self.best_index_])
        self.labels_ = labels[self.best_index_]
        self.n_features_in_ = data.d
        self.strategy_ = dict(engine.chosen())
        self.devices_ = data.rows_per_device
        if self.verbose and ranks.rank == 0:
            print(f"ensemble of {len(ks)} models: {self.strategy_}; inertias {self.inertias_}, "
                  f"iterations {self.n_iter_}")
        return self

    def _inits(self, data, rng, host_w, ks, ranks):
        """The models' initial centres, the same on every rank (as KMeans
        draws them, one model after another from one random state)."""
        if isinstance(self.init, str):
            return [draw_centers(data, self.init, k, rng, host_w, ranks, **init_options(self))
                    for k in ks]
        inits = [np.asarray(c, np.float64) for c in self.init]
        shapes = [c.shape for c in inits]
        if len(inits) != len(ks) or any(s != (k, data.d) for s, k in zip(shapes, ks)):
            raise ValueError(f"init must hold n_models={len(ks)} arrays of shape (K, "
                             f"{data.d}) with K = {ks}; got shapes {shapes}")
        if not all(np.isfinite(c).all() for c in inits):
            raise ValueError("The initial centers contain NaN or infinity.")
        if self.spherical:   # centres on the sphere, as the rows
            return [renormalised(c) for c in inits]
        return inits

    def _assign(self, X, sample_weight=None):
        def attempt(data):
            engine = ensemble_passes(data, FixedPoint.for_bounds(
                np.zeros(data.d), 1, 1, 1), [len(self.cluster_centers_)], "data")
            inertia, labels, _ = engine.assign(
                [self.cluster_centers_.astype(np.float64)], labels=True)
            if not np.isfinite(inertia[0]):
                raise nonfinite_error(self.cluster_centers_.dtype)
            return labels[0], float(inertia[0])
        return self._on_devices(X, sample_weight, attempt)

    def predict(self, X, sample_weight=None):
        """The nearest centre of the best model for each row of X."""
        if is_dask_array(X):   # on the workers, beside the blocks
            return self._dask_rows(X, "predict", np.int32)
        return self._assign(X)[0]

    def score(self, X, y=None, sample_weight=None):
        """Minus the best model's inertia on X."""
        if is_dask_array(X):   # each block's on its worker, summed
            return self._dask_score(X, sample_weight)
        return -self._assign(X, sample_weight)[1]
