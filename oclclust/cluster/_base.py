"""The estimators' base: scikit-learn's contract, and the k-family's shared
parts (KCluster: parameter rules, fit scaffold, inits, not-fitted check).
The Lloyd-type centre update and empty-cluster rules: empty_clusters.py.

With scikit-learn installed the estimators derive from its BaseEstimator and
mixins (so they pass check_estimator and work in pipelines); without it, a
minimal stand-in gives get_params/set_params and the same mixin methods.
"""
import copy
import functools
import inspect
import numbers

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from .checkpoint import Checkpoint, parse_every
from .column_contract import TAKE_ROWS, checks_columns, records_columns
from .docstrings import document
from .inits import DEFAULT_OVERSAMPLING, draw_centers
from .spherical import renormalised, unit_rows
from ..parallel.manager import Calibration, DeviceManager, surviving
from ..parallel.comm import Ranks
from ..parallel.placement import (compute_dtype, fit_data, is_dask_array,
                                  joined_mean_var_finite, new_data)
from ..passes.pass_rates import known_rate
from ..runtime.exact_sums import block_rows_for
from ..runtime.kernel_recorder import kernel_records, recorded_contexts, recording_kernels
from ..runtime.devices import DeviceProfile, profile_of_context
from ..runtime.validation import NotFittedError, check_params, check_random_state

try:
    from sklearn.exceptions import ConvergenceWarning
except ImportError:  # scikit-learn is optional
    class ConvergenceWarning(UserWarning):
        """A fit that stopped before it converged (scikit-learn's, where installed)."""

try:
    from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
except ImportError:  # scikit-learn is optional
    class BaseEstimator:
        @classmethod
        def _get_param_names(cls):
            sig = inspect.signature(cls.__init__)
            return sorted(p.name for p in sig.parameters.values()
                          if p.name != "self" and p.kind != p.VAR_KEYWORD)

        def get_params(self, deep=True):
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            valid = self._get_param_names()
            for key, value in params.items():
                if key not in valid:
                    raise ValueError(f"Invalid parameter {key!r} for estimator {self}.")
                setattr(self, key, value)
            return self

        def __repr__(self):
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class ClusterMixin:
        def fit_predict(self, X, y=None, **kwargs):
            self.fit(X, **kwargs)
            return self.labels_

    class TransformerMixin:
        def fit_transform(self, X, y=None, **kwargs):
            return self.fit(X, **kwargs).transform(X)


def records_kernels(fit):
    """*fit* (an estimator's fit or partial_fit) that sets ``kernels_``: the
    kernels the call ran, on this process's devices (a list of
    runtime.kernel_recorder.kernel_record); partial_fit adds its call's to those
    of the calls before.  Kernels run by Dask workers are theirs, not
    recorded here."""
    adds = fit.__name__ == "partial_fit"

    @functools.wraps(fit)
    def recorded(self, *args, **kwargs):
        with recording_kernels() as recorder:
            fitted = fit(self, *args, **kwargs)
        earlier = getattr(self, "kernels_", []) if adds else []
        made = recorder.records()   # each once, in order already
        self.kernels_ = kernel_records([*earlier, *made]) if earlier else made
        return fitted
    return recorded


def fit_devices(n_rows):
    """``devices_`` of a fit whose device work runs on one device over all
    its *n_rows* rows (AgglomerativeClustering, HDBSCAN, DBSCAN): {device:
    n_rows} of the device the fit under way ran kernels on (the recording
    its records_kernels opened); {} where it ran on the host alone (a metric
    the devices lack, a precomputed matrix, a tree from joblib's cache)."""
    profiles = [profile_of_context(ptr) for ptr in recorded_contexts()]
    return {str(p): int(n_rows) for p in profiles if p is not None}


class RecordsKernels:
    """An estimator whose ``fit`` and ``partial_fit`` set ``kernels_``
    (records_kernels): each class that defines either has it wrapped as it
    is made, so no estimator can forget it.  scikit-learn's column contract
    is kept the same way (records_columns, checks_columns), and the
    docstrings are completed with the entries every estimator shares
    (docstrings.document)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        document(cls)
        for name in ("fit", "partial_fit"):
            if name in vars(cls):
                setattr(cls, name, records_kernels(records_columns(vars(cls)[name])))
        for name in TAKE_ROWS:
            if name in vars(cls):
                setattr(cls, name, checks_columns(vars(cls)[name]))


class ClusterDistancesOut:
    """scikit-learn's get_feature_names_out of the transformers whose output
    columns are the distances to the cluster centres: "<class name>0", ...
    (its ClassNamePrefixFeaturesOutMixin's names)."""

    @property
    def _n_features_out(self):
        return self.cluster_centers_.shape[0]

    def get_feature_names_out(self, input_features=None):
        """The names of transform's output columns (scikit-learn's).

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Checked against the features seen in fit (their number).

        Returns
        -------
        feature_names_out : ndarray of str objects
            "<class name>0", "<class name>1", ... one a cluster.
        """
        self._check_fitted()
        if input_features is not None and len(input_features) != self.n_features_in_:
            raise ValueError(f"input_features should have length equal to number of "
                             f"features ({self.n_features_in_}), got {len(input_features)}")
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}{i}" for i in range(self._n_features_out)], dtype=object)


# what every estimator's ``devices`` may be (select_devices' forms)
DEVICES_RULE = [None, str, list, tuple, DeviceManager, DeviceProfile, cl.Device]

# ------------------------------------------------------------ the k-family
# the rules every k-family estimator shares; an estimator's own rule of the
# same name (GaussianMixture's max_iter >= 0) replaces the shared one
SHARED_RULES = {
    "max_iter": [(numbers.Integral, 1, None)],
    "tol": [(numbers.Real, 0, None)],
    "verbose": [(numbers.Integral, 0, None), bool],
    "random_state": [None, numbers.Integral, np.random.RandomState],
    "devices": DEVICES_RULE,
    "dtype": [None, "float32", "float64", type, np.dtype],
    "comm": [None, object],
    # the distance products' precision (passes.lloyd_mma.PRECISIONS): read
    # by KMeans's Lloyd pass on NVIDIA tensor cores; float32 everywhere else
    "precision": ["float32", "tf32", "bf16"],
}
# ``init`` of the estimators that take one set of centres (a callable is
# scikit-learn's: init(X, n_clusters, random_state=...) -> the centres)
CENTERS_INIT_RULE = ["k-means++", "k-means||", "random", np.ndarray, list, cla.Array, callable]
# k-means||'s options (cuML's oversampling_factor, Dask-ML's init_max_iter: the
# rounds, None for inits.DEFAULT_ROUNDS), rules of the estimators that take them
KMEANS_PARALLEL_RULES = {"oversampling_factor": [(numbers.Real, 0, None)],
                         "init_max_iter": [None, (numbers.Integral, 1, None)]}


def check_oversampling(estimator):
    """oversampling_factor positive and finite (the rule's interval is closed)."""
    factor = estimator.oversampling_factor
    if not 0 < factor < np.inf:
        raise ValueError(f"The 'oversampling_factor' parameter of {type(estimator).__name__} "
                         f"must be a positive finite number. Got {factor!r} instead.")


def init_options(estimator):
    """draw_centers' options for k-means|| from *estimator*'s parameters
    (the defaults where it has none: FuzzyCMeans)."""
    return {"oversampling_factor": getattr(estimator, "oversampling_factor",
                                           DEFAULT_OVERSAMPLING),
            "rounds": getattr(estimator, "init_max_iter", None)}


def _numeric(centers, how):
    """*centers* if their dtype is a number's, else the ValueError naming *how*
    they came (given as init, returned by init)."""
    if centers.dtype.kind not in "fiub":
        raise ValueError(f"The initial centers {how} must be numeric, got dtype "
                         f"{centers.dtype}.")
    return centers


class KCluster(RecordsKernels, BaseEstimator):
    """The k-family base (Heat's ``_KCluster``): what KMeans, EnsembleKMeans,
    FuzzyCMeans and GaussianMixture share.

    A subclass declares its own ``_parameter_rules`` (SHARED_RULES fill in
    the rest), implements ``_fit(data, host_w, rng, ranks)``, and may set
    ``_calibration_pass`` (what measured device weights time:
    parallel.device_data.Calibration's pass_on) with ``_rate_name`` (the
    passes.pass_rates.PassRates field a profile knows its rate by) and
    ``_fitted_attribute`` (what a fit sets: the not-fitted check and the
    dtype of predict's data)."""

    _parameter_rules = {}
    _calibration_pass = None
    _rate_name = None
    _fitted_attribute = "cluster_centers_"

    def _work_per_row(self, d):
        """The values a row meets in the calibrated pass (passes.pass_rates):
        the clusters' features."""
        return int(np.sum(self.n_clusters)) * d

    def _calibration(self):
        """What measured device weights time and read (DeviceManager.scatter's
        *calibration*), or None where the estimator has no such pass."""
        if self._calibration_pass is None:
            return None
        # the rates this process measures are kept by the pass and its shape
        key = (type(self).__name__, self._work_per_row(1), getattr(self, "precision", None))
        if self._rate_name is None:
            return Calibration(self._calibration_pass, key=key)
        return Calibration(self._calibration_pass, lambda profile, d: known_rate(
            profile, self._rate_name, self._work_per_row(d)), key)

    def _check_params(self):
        own = self._parameter_rules
        check_params(self, {**own, **{name: rule for name, rule in SHARED_RULES.items()
                                      if name not in own}})
        if "checkpoint_every" in own:   # a string's form, a float's finiteness
            parse_every(self.checkpoint_every, type(self).__name__)

    def fit(self, X, y=None, sample_weight=None):
        return self._fit_on_devices(X, sample_weight)

    def _stat_values(self, d):
        """Float64 values of one row block's partial statistics in this
        estimator's passes (k-means: k x (d + 1)): they size the blocks that
        every split of the rows falls on (runtime.exact_sums.block_rows_for)."""
        return 1

    def fit_block_rows(self, d, dtype=np.float64):
        """Rows of one block of this estimator's split-free sums.

        Under MPI, ranks whose rows are whole blocks of it (all but the
        last rank: :func:`oclclust.io.shards.load_shard` with the
        estimator) fit the model of one process bit for bit.

        Parameters
        ----------
        d : int
            The data's features.
        dtype : numpy dtype, default=numpy.float64
            The data's dtype (the fit computes in ``dtype`` when set, keeps
            float32, else takes float64).

        Returns
        -------
        block_rows : int
            Rows of one block.
        """
        self._check_params()
        item = compute_dtype(self.dtype, np.empty(0, dtype), []).itemsize
        return block_rows_for(int(d), item, self._stat_values(int(d)))

    def _fit_on_devices(self, X, sample_weight):
        """The fit scaffold: parameters checked, the data on the devices of
        every rank, then ``_fit``; a device that fails is dropped and the fit
        starts over on the others from the same random state."""
        self._check_params()
        # compared by cosine: unit rows (a copy), made where a rank's refusal reaches every rank
        unit = (lambda X: unit_rows(X, type(self).__name__)) \
            if getattr(self, "spherical", False) else None
        if is_dask_array(X):   # the rows stay on a Dask cluster's workers
            from ..parallel.dask import dask_fit_data
            X = X if unit is None else unit(X)
            data, host_w = dask_fit_data(X, sample_weight, self.devices, self.dtype,
                                         self.comm, type(self).__name__,
                                         self._stat_values(_columns(X)))
            ranks = Ranks.alone(data)
        else:
            data, host_w, ranks = fit_data(X, sample_weight, self.devices, self.dtype,
                                           self.comm, self._calibration(),
                                           type(self).__name__, self._stat_values(_columns(X)),
                                           unit)
        rng = check_random_state(self.random_state)

        def attempt():
            self._check_n_samples(ranks.n, data.d)
            return self._fit(data, host_w, rng, ranks)
        try:   # the checkpoint (every rank reads it) that the loops write and resume from
            self._checkpoint = Checkpoint.of(self, X, sample_weight, ranks.n, data.d,
                                             data.dtype, ranks)
            fitted = surviving(data, attempt, rng)
            ranks.finished()   # no rank returns a model while another fails
        except BaseException as exc:   # an interrupt too: no rank may be left waiting
            ranks.raise_left(exc)
        finally:
            self.__dict__.pop("_checkpoint", None)
        return fitted

    def _check_n_samples(self, n, d):
        k = int(np.max(self.n_clusters))   # EnsembleKMeans: the largest of its K
        if n < k:
            raise ValueError(f"n_samples={n} should be >= n_clusters={k}.")

    def _mean_and_tol(self, data, ranks):
        """The data's mean over all ranks' rows and ``tol`` made absolute
        (times the mean feature variance, as scikit-learn's)."""
        mean, var, finite = ranks.run_failing_all(lambda: joined_mean_var_finite(data, ranks))
        if not finite:
            raise ValueError("Input X contains NaN or infinity.")
        return mean, float(np.mean(var) * self.tol)

    def _checked_init(self, d):
        """``init``: its name or callable, or the given (n_clusters, d)
        centres in float64."""
        if isinstance(self.init, str) or callable(self.init):
            return self.init
        init = self.init.get() if isinstance(self.init, cla.Array) else np.asarray(self.init)
        return self._valid_centers(_numeric(init, "given as init"), d)

    def _valid_centers(self, init, d):
        """Given or called-for initial centres checked as scikit-learn checks
        them, on the sphere where the rows are, in float64."""
        if init.ndim != 2 or init.shape[0] != self.n_clusters:
            raise ValueError(f"The shape of the initial centers {init.shape} does not match "
                             f"the number of clusters {self.n_clusters}.")
        if init.shape[1] != d:
            raise ValueError(f"The shape of the initial centers {init.shape} does not match "
                             f"the number of features of the data {d}.")
        if not np.isfinite(init).all():
            raise ValueError("The initial centers contain NaN or infinity.")
        if getattr(self, "spherical", False):   # centres on the sphere, as the rows
            return renormalised(init)
        return init.astype(np.float64)

    def _called_init(self, X, rng):
        """scikit-learn's callable init on the host rows X (they must all be
        in this process): its centres in X's dtype, checked."""
        centers = _numeric(np.asarray(self.init(X, self.n_clusters, random_state=rng)),
                           "returned by init")
        return self._valid_centers(centers.astype(X.dtype), X.shape[1])

    def _init_centers(self, data, init, rng, host_w, ranks):
        """Initial centres (float64), the same on every rank: *init* as
        ``_checked_init`` gave it."""
        if callable(init):
            if getattr(data, "remote", False) or ranks.size > 1:
                raise ValueError(f"A callable init needs all rows in one process: "
                                 f"{type(self).__name__} got them spread over "
                                 f"{'Dask workers' if ranks.size == 1 else 'MPI ranks'}; "
                                 "pass the initial centres as an array.")
            X = data.source.get() if isinstance(data.source, cla.Array) else data.source
            return self._called_init(np.asarray(X, data.dtype), rng)
        if not isinstance(init, str):
            return init
        return draw_centers(data, init, self.n_clusters, rng, host_w, ranks,
                            **init_options(self))

    def _check_fitted(self):
        if not hasattr(self, self._fitted_attribute):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. "
                                 "Call 'fit' with appropriate arguments before using this "
                                 "estimator.")

    def _on_workers(self):
        """bound(devices): a copy of this fitted estimator on a Dask worker's
        *devices*; what travels leaves the per-row attributes behind."""
        self._check_fitted()
        model = copy.copy(self)
        # (the blocks a worker is given have no column names)
        for name in ("labels_", "u_", "history_", "feature_names_in_"):
            model.__dict__.pop(name, None)
        model.devices = None   # bound() sets the worker's; a pyopencl Device does not pickle

        def bound(devices):
            here = copy.copy(model)
            here.devices = devices
            return here
        return bound

    def _dask_rows(self, X, method, dtype, columns=None):
        """``method(block)`` of this fitted estimator on each block of rows
        of a dask array X, on the worker holding it with that worker's
        devices: a dask array, never gathered (parallel/dask.map_rows)."""
        from ..parallel.dask import map_rows
        bound = self._on_workers()
        return map_rows(X, lambda block, devices: getattr(bound(devices), method)(block),
                        self.devices, dtype, columns)

    def _dask_score(self, X, sample_weight):
        """score(block, sample_weight=its weights) (a sum over the rows) of
        each block of rows of a dask array X on its worker, summed."""
        from ..parallel.dask import block_total
        bound = self._on_workers()
        return block_total(X, lambda block, devices, w: bound(devices).score(
            block, sample_weight=w), self.devices, sample_weight)

    def _on_devices(self, X, sample_weight, pass_):
        """pass_(data) over X spread on the devices, in the fitted dtype; a
        device that fails is dropped and the pass runs again on the others."""
        self._check_fitted()
        if getattr(self, "spherical", False):
            X = unit_rows(X, type(self).__name__)
        data = new_data(X, sample_weight, self.devices,
                        getattr(self, self._fitted_attribute).dtype, self.n_features_in_,
                        type(self).__name__, self.comm)
        return surviving(data, lambda: pass_(data))


def _columns(X):
    """The columns of rows *X* as given (an array, a sparse or dask array, a
    list of lists), before their validation: 1 where they are not a matrix
    (the validation then says why)."""
    shape = getattr(X, "shape", None)
    if shape is None:
        try:   # (what the validation makes of them: a list's copy, briefly)
            shape = np.asarray(X).shape
        except (ValueError, TypeError):   # ragged lists
            shape = ()
    return int(shape[1]) if len(shape) == 2 else 1
