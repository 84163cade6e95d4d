"""Gaussian-mixture EM (scikit-learn's GaussianMixture API) with MDL order selection.

One EM iteration is one pass over every chunk of the fit's rows
(gmm_shards.py's GmmShards of passes/gmm.py's GmmPass: the E kernel, then
the M kernel on the responsibilities it left on the device); only the
reduced float64 statistics come to the host, which updates the model and
its Cholesky factors (the model's math, beside the MDL merge, is in
mdl.py; the starts in gmm_starts.py).
"""
import math
import numbers
import time
import warnings

import numpy as np

from .mdl import DiagArrays, Fitted, Model, m_step, precisions_of, records, select_order
from .._base import KCluster
from ..checkpoint import CHECKPOINT_RULES
from .gmm_checkpoint import EmCheckpoint
from .gmm_params import broadcast, checked_inits, compact
from ...parallel.placement import is_dask_array, joined_mean_var_finite
from .gmm_shards import GmmShards, calibration_pass
from .gmm_starts import GmmStarts
from ...passes.gmm_specs import stats_size
from ...runtime.progress import Progress, history_entry
from ...runtime.validation import check_random_state
from ...runtime.warning_site import user_stacklevel

try:
    from sklearn.base import DensityMixin
    from sklearn.exceptions import ConvergenceWarning
except ImportError:   # scikit-learn is optional
    class ConvergenceWarning(UserWarning):
        pass

    class DensityMixin:
        pass


class GaussianMixture(GmmStarts, DensityMixin, KCluster):
    """Gaussian mixture fitted by EM on OpenCL devices (scikit-learn's API).

    The E step (log-densities, log-sum-exp, responsibilities) and the M
    step's statistics run on the devices; the host computes the new
    parameters.  ``min_components`` adds MDL order selection: from
    n_components down by merging the closest pair of components.

    Parameters
    ----------
    n_components : int, default=1
        The number of mixture components (the largest order, with
        min_components).
    covariance_type : {"full", "tied", "diag", "spherical"}, default="full"
        The covariance of each component: its own full matrix, one full
        matrix for all, its own diagonal, or its own single variance.
    reg_covar : float, default=1e-6
        Added to the covariances' diagonals, keeping them positive.
    n_init : int, default=1
        Initialisations; the best lower bound wins.
    init_params : {"kmeans", "k-means++", "random", "random_from_data"}, \
default="kmeans"
        How the responsibilities start (scikit-learn's choices).
    weights_init, means_init, precisions_init : array-like, default=None
        Given initial weights, means and precisions.
    warm_start : bool, default=False
        Each fit goes on from the last one's parameters (one init).
    min_components : int or None, default=None
        MDL order selection down to this order ("full" and "diag" only):
        ``n_components_`` and ``mdl_path_``.

    ``checkpoint`` (a path) and ``checkpoint_every`` (an int: iterations (EM);
    a float or "30s": seconds): the fit's state written there that often,
    and resumed from, bit for bit (cluster/checkpoint.py).
    With min_components, the states of the inits' EM: resumed, the order
    selection runs again.

    Attributes
    ----------
    weights_ : ndarray of shape (n_components,)
        The components' weights.
    means_ : ndarray of shape (n_components, n_features)
        The components' means.
    covariances_ : ndarray
        The covariances, shaped by covariance_type as scikit-learn's.
    precisions_, precisions_cholesky_ : ndarray
        The precision matrices and their Cholesky factors.
    converged_ : bool
        Whether the best initialisation converged.
    lower_bound_ : float
        The best initialisation's log-likelihood lower bound.
    n_iter_ : int
        EM iterations of the best initialisation.
    n_components_, mdl_path_
        With min_components: the order MDL chose, and (order, MDL) of every
        order tried.
    devices_ : dict
        Rows per device of the fit; 0 for a device whose measured rate was
        too small a share to pay for its passes (:class:`DeviceManager`).

    See Also
    --------
    KMeans : hard clusters, spherical and of equal size.
    FuzzyCMeans : soft memberships without a probabilistic model.

    Notes
    -----
    "tied" runs the "full" passes with one precision factor for every
    component, "spherical" the "diag" passes; the host pools their
    statistics as scikit-learn's M step does.  ``precision`` is read by the
    diag and spherical tensor-core E and M steps (NVIDIA): 3xTF32 at
    "float32", one product of TF32 or bfloat16 operands in the E step at
    "tf32" and "bf16", the values that may matter to a row's log-likelihood
    made again in float32 (the precision guide states the bound), TF32
    responsibilities in the M step; every other kernel is float32.

    Examples
    --------
    >>> import numpy as np
    >>> import oclclust as oc
    >>> X = np.array([[1, 2], [1, 4], [1, 0], [10, 2], [10, 4], [10, 0]])
    >>> gm = oc.GaussianMixture(n_components=2, random_state=0).fit(X)
    >>> gm.means_
    array([[10.,  2.],
           [ 1.,  2.]])
    >>> gm.predict([[0, 0], [12, 3]])
    array([1, 0])
    >>> gm.predict_proba([[0, 0]]).round(3)
    array([[0., 1.]])
    """

    _parameter_rules = {
        "n_components": [(numbers.Integral, 1, None)],
        "covariance_type": ["full", "diag", "tied", "spherical"],
        "reg_covar": [(numbers.Real, 0, None)],
        "max_iter": [(numbers.Integral, 0, None)],
        "n_init": [(numbers.Integral, 1, None)],
        "init_params": ["kmeans", "k-means++", "random", "random_from_data"],
        "weights_init": [None, np.ndarray, list, tuple],
        "means_init": [None, np.ndarray, list, tuple],
        "precisions_init": [None, np.ndarray, list, tuple],
        "warm_start": [bool],
        "min_components": [None, (numbers.Integral, 1, None)],
        **CHECKPOINT_RULES,
    }
    _fitted_attribute = "means_"

    def __init__(self, n_components=1, *, covariance_type="full", tol=1e-3, reg_covar=1e-6,
                 max_iter=100, n_init=1, init_params="kmeans", weights_init=None,
                 means_init=None, precisions_init=None, random_state=None,
                 warm_start=False, min_components=None, devices=None, dtype=None, comm=None,
                 verbose=0, precision="float32", checkpoint=None, checkpoint_every=1):
        self.n_components = n_components
        self.checkpoint = checkpoint
        self.checkpoint_every = checkpoint_every
        self.precision = precision
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.n_init = n_init
        self.init_params = init_params
        self.weights_init = weights_init
        self.means_init = means_init
        self.precisions_init = precisions_init
        self.random_state = random_state
        self.warm_start = warm_start
        self.min_components = min_components
        self.devices = devices
        self.dtype = dtype
        self.comm = comm
        self.verbose = verbose

    @property
    def _full(self):
        """The device passes' layout: "tied" is "full" with equal factors."""
        return self.covariance_type in ("full", "tied")

    @property
    def _pooled(self):
        """One covariance for all components (tied) or for all features (spherical)."""
        return self.covariance_type in ("tied", "spherical")

    _rate_name = "gmm"

    def _work_per_row(self, d):
        """The values a row meets (passes.pass_rates): each component's mean
        and covariance factor (a full one's triangle)."""
        return self.n_components * (d * (d + 3) // 2 if self._full else d)

    def _calibration_pass(self, part):
        """What measured weights time: an E+M pass over a sample partition."""
        return calibration_pass(part, self.n_components, self._full, self.precision)

    def _stat_values(self, d):
        """A block's M statistics: k x [N, S1, S2] (passes/gmm.stats_size)."""
        return self.n_components * stats_size(d, self._full)

    # ---------------------------------------------------------------- fitting
    def fit(self, X, y=None):
        return self._fit_on_devices(X, None)

    def _check_params(self):
        super()._check_params()
        if self.min_components is not None and self.min_components > self.n_components:
            raise ValueError(f"min_components={self.min_components} must be <= "
                             f"n_components={self.n_components}")
        if self.min_components is not None and self._pooled:
            # merging two components of a tied / spherical mixture leaves one
            # that is neither: Bouman's merge is defined on full / diag only
            raise ValueError("min_components (MDL order selection) needs covariance_type "
                             f"'full' or 'diag', got '{self.covariance_type}'")

    def _check_n_samples(self, n, d):
        if n < 2:
            raise ValueError(f"Found array with {n} sample(s) (shape=({n}, {d})) "
                             "while a minimum of 2 is required by GaussianMixture.")
        if n < self.n_components:
            raise ValueError("Expected n_samples >= n_components but got n_components = "
                             f"{self.n_components}, n_samples = {n}")

    def _fit(self, data, host_w, rng, ranks):
        # a pass that raises on one rank raises on all (self._ranks.run_failing_all)
        self._ranks, n = ranks, ranks.n
        # all ranks' rows at once (every rank raises alike); their mean is
        # the first statistics' shift (_initial_model: one data pass a fit)
        self._data_mean, _, finite = ranks.run_failing_all(
            lambda: joined_mean_var_finite(data, ranks))
        if not finite:
            raise ValueError("Input X contains NaN or infinity.")
        full, d = self._full, data.d
        given = checked_inits(self, d)
        gm = GmmShards(data, self.n_components, full, self._ranks, self.precision)
        self.history_ = []   # every EM iteration of the fit (all inits, all MDL orders)
        self._eps = float(np.finfo(data.dtype).eps)
        self._float32 = data.dtype == np.float32
        best = None
        # scikit-learn's warm start: one EM run from the last fit's parameters
        warm = self._warm_model(d) if self.warm_start and hasattr(self, "converged_") else None
        n_init = 1 if warm is not None or all(g is not None for g in given) else self.n_init
        self._em_saves = saves = EmCheckpoint(getattr(self, "_checkpoint", None))
        first, resumed = 0, None
        if saves.saved is not None:   # resumed in init `first`, after its draws
            first, best, resumed, self.history_ = saves.resume(rng)
        for init in range(first, n_init):
            if resumed is not None and init == first:
                fitted = self._em(gm, None, n, resumed=resumed)
            else:
                model = warm if warm is not None else self._initial_model(gm, data, given,
                                                                          rng, host_w)
                saves.start(init, rng, best)
                # a warm start's first change is from the last fit's lower bound
                fitted = self._em(gm, model, n, -np.inf if warm is None else self.lower_bound_)
            if self.verbose:
                print(f"GaussianMixture init {init}: lower bound {fitted.lower_bound:.6g}, "
                      f"{fitted.n_iter} iterations, converged={fitted.converged}")
            if best is None or fitted.lower_bound > best.lower_bound:
                best = fitted
        self.mdl_path_ = None
        saves.start(None)   # MDL's refits write no checkpoint: resumed, they run again
        if self.min_components is not None:
            best, self.mdl_path_ = select_order(
                best, lambda m: self._em(gm, m, n),
                lambda m: self._loglik(gm, m), self.min_components, n, d, full)
        if not best.converged and self.max_iter > 0:
            warnings.warn("Best performing initialization did not converge. Try different "
                          "init parameters, or increase max_iter, tol, or check for "
                          "degenerate data.", ConvergenceWarning, stacklevel=user_stacklevel())
        self._set_model(best.model, data.dtype)
        self.converged_, self.n_iter_ = best.converged, best.n_iter
        self.lower_bound_ = best.lower_bound
        self.lower_bounds_ = best.lower_bounds   # each iteration's, of the best run
        self.n_features_in_ = d
        self.devices_ = data.rows_per_device
        del self._em_saves
        return self

    def _em(self, gm, model, n, lower_bound=-np.inf, resumed=None):
        """EM iterations from *model* (scikit-learn's loop): a Fitted;
        *resumed*: a checkpoint's Fitted, whose EM goes on after its iteration."""
        first, bounds = 0, []
        if resumed is not None:
            if resumed.converged or resumed.n_iter == self.max_iter:
                return resumed
            model, lower_bound, first, bounds = (resumed.model, resumed.lower_bound,
                                                 resumed.n_iter, resumed.lower_bounds)
        with Progress(self.max_iter, f"GMM K={len(model.weights)}",
                      bool(self.verbose) and self._ranks.rank == 0) as bar:
            return self._em_steps(gm, model, n, bar, lower_bound, first, bounds)

    def _em_steps(self, gm, model, n, bar, lower_bound, first=0, bounds=()):
        if self.max_iter == 0:   # scikit-learn: the start, no lower bound (warm too)
            return Fitted(model, -np.inf, 0, False)
        converged, it, bounds = False, first, list(bounds)
        arrays = None if self._full else DiagArrays(*model.means.shape)
        for it in range(first + 1, self.max_iter + 1):
            start = time.perf_counter()
            prev = lower_bound
            step = gm.em(records(model, self._full), model.means)
            ll, stats = step.loglik, step.stats
            if step.n_bad:
                raise ValueError("Input X contains NaN or infinity (or values whose "
                                 "log-density is not finite).")
            out = None if arrays is None else arrays.next()
            model = m_step(stats, model.means, self.reg_covar, self._full, self._eps,
                           self._float32, self._pooled, out=out)
            lower_bound = float(ll) / n
            bounds.append(lower_bound)
            self.history_.append(history_entry(it, start, gm.data, lower_bound=lower_bound,
                                               n_components=len(model.weights)))
            bar.step(lower_bound=lower_bound)
            if self.verbose > 1:
                print(f"  iteration {it}: lower bound {lower_bound:.8g}")
            converged = abs(lower_bound - prev) < self.tol
            self._em_saves.step(lambda: (self.history_, Fitted(model, lower_bound, it, converged,
                                                                lower_bounds=bounds)))
            if converged:
                break
            gm.data.rebalance()
        return Fitted(model, lower_bound, it, converged, lower_bounds=bounds)

    def _loglik(self, gm, model):
        scored, _ = gm.score(records(model, self._full), want=())
        if scored.n_bad:
            raise ValueError("Input X contains NaN or infinity.")
        return float(scored.loglik)

    # --------------------------------------------------------- initialisation
    def _warm_model(self, d):
        """The last fit's model (float64, device layout), as warm start's start."""
        model = self._model()
        if model.means.shape != (self.n_components, d):
            raise ValueError(f"warm_start: the fitted means_ have shape {model.means.shape}, "
                             f"but n_components={self.n_components} and X has {d} features")
        return model

    def _set_model(self, model, dtype):
        full, kind = self._full, self.covariance_type
        self.weights_ = model.weights.astype(dtype)
        self.means_ = model.means.astype(dtype)
        self.covariances_ = compact(kind, model.covariances).astype(dtype)
        self.precisions_cholesky_ = compact(kind, model.prec_chol).astype(dtype)
        self.precisions_ = compact(kind, precisions_of(model.prec_chol, full)).astype(dtype)
        self.n_components_ = model.k

    # ------------------------------------------------------------- inference
    def _model(self):
        self._check_fitted()
        kind, (k, d) = self.covariance_type, self.means_.shape
        return Model(self.weights_.astype(np.float64), self.means_.astype(np.float64),
                     broadcast(kind, self.covariances_.astype(np.float64), k, d),
                     broadcast(kind, self.precisions_cholesky_.astype(np.float64), k, d))

    def _score(self, X, want):
        model = self._model()
        scored, arrays = self._on_devices(X, None, lambda data: GmmShards(
            data, model.k, self._full).score(records(model, self._full), want))
        if scored.n_bad:
            raise ValueError("Input X contains NaN or infinity.")
        return arrays

    def score_samples(self, X):
        """Each row's log-likelihood, in the model's dtype (scikit-learn's);
        computed in float64 on the devices."""
        self._check_fitted()
        if is_dask_array(X):   # on the workers, beside the blocks
            return self._dask_rows(X, "score_samples", self.means_.dtype)
        return self._score(X, ("lse",))["lse"].astype(self.means_.dtype)

    def score(self, X, y=None):
        """The mean log-likelihood: scikit-learn's, the mean of score_samples
        (a numpy scalar of the model's dtype; of a dask array, each block's
        sum made on its worker, in float64)."""
        samples = self.score_samples(X)
        if is_dask_array(samples):
            return self.means_.dtype.type(samples.astype(np.float64).mean().compute())
        return samples.mean()

    def predict(self, X):
        if is_dask_array(X):   # on the workers, beside the blocks
            return self._dask_rows(X, "predict", np.int64)
        return self._score(X, ("labels",))["labels"]

    def predict_proba(self, X):
        if is_dask_array(X):   # on the workers, beside the blocks
            return self._dask_rows(X, "predict_proba", np.float64, self.n_components_)
        return self._score(X, ("resp",))["resp"]

    def fit_predict(self, X, y=None):
        return self.fit(X).predict(X)

    def _n_parameters(self):
        """scikit-learn's count: covariances + means + weights - 1."""
        k, d = self.n_components_, self.n_features_in_
        cov = {"full": k * d * (d + 1) // 2, "diag": k * d, "tied": d * (d + 1) // 2,
               "spherical": k}[self.covariance_type]
        return int(cov + k * d + k - 1)

    def bic(self, X):
        n = len(X)
        return -2 * self.score(X) * n + self._n_parameters() * math.log(n)

    def aic(self, X):
        return -2 * self.score(X) * len(X) + 2 * self._n_parameters()

    def mdl(self, X):
        """Rissanen's MDL of the model on X: -log L + 1/2 P log(N D)."""
        n = len(X)
        return (-self.score(X) * n
                + 0.5 * self._n_parameters() * math.log(n * self.n_features_in_))

    def sample(self, n_samples=1):
        """Random samples from the fitted mixture: (X, component labels)."""
        model = self._model()
        if n_samples < 1:
            raise ValueError(f"Invalid value for 'n_samples': {n_samples} . The sampling "
                             "requires at least one sample.")
        rng = check_random_state(self.random_state)
        counts = rng.multinomial(n_samples, model.weights / model.weights.sum())
        if self._full:
            X = np.vstack([rng.multivariate_normal(m, c, int(s)) for m, c, s in
                           zip(model.means, model.covariances, counts)])
        else:
            X = np.vstack([m + rng.standard_normal(size=(s, len(m))) * np.sqrt(c)
                           for m, c, s in zip(model.means, model.covariances, counts)])
        return X, np.repeat(np.arange(model.k), counts)

