"""Gaussian-mixture EM (scikit-learn's GaussianMixture API) with MDL order selection.

Pairs with templates/gmm_estep.cl.mako (log-densities, log-sum-exp,
responsibilities) and templates/gmm_mstep.cl.mako (per-component N, sums and
scatter about the current means).  One EM iteration is one pass over every
chunk of a ShardedData: the E kernel, then the M kernel on the
responsibilities it left on the device; only the reduced float64 statistics
come to the host, which updates the model and its Cholesky factors (the
model's math, beside the MDL merge, is in mdl.py).
"""
import dataclasses
import math
import numbers
import time
import warnings

import numpy as np
import pyopencl.array as cla

from . import mdl, mpi
from .base import BaseEstimator
from .codegen import KernelBuildError, Spec, kernel, kernel_work_group_limit
from .manager import DeviceManager, surviving
from .placement import new_data
from .progress import Progress, history_entry
from .reduce import partial_buffer, reduce_partials
from .validation import NotFittedError, check_params, check_random_state

try:
    from sklearn.base import DensityMixin
    from sklearn.exceptions import ConvergenceWarning
except ImportError:   # scikit-learn is optional
    class ConvergenceWarning(UserWarning):
        pass

    class DensityMixin:
        pass


# ------------------------------------------------------------ kernel specs
@dataclasses.dataclass(frozen=True)
class EStepSpec(Spec):
    template = "gmm_estep.cl.mako"
    d: int = 1
    wg: int = 1
    ppi: int = 1
    cchunk: int = 1
    stage_params: bool = True
    full: bool = True

    def local_bytes(self):
        staged = self.cchunk * record_size(self.d, self.full) if self.stage_params else 0
        return self.wg * 8 + staged * np.dtype(self.dtype).itemsize


@dataclasses.dataclass(frozen=True)
class MStepSpec(Spec):
    """``variant`` "tiled": a work-group per (component, chunk), register
    blocks of the scatter per work-item (GPUs); "rowwise": a work-item per
    component (CPUs, which vectorise across work-items; d <= 32 full, 64 diag)."""
    variant: str = "tiled"
    d: int = 1
    wg: int = 1
    tb: int = 1
    nb: int = 1
    reps: int = 1
    tile: int = 1
    full: bool = True

    @property
    def template(self):
        return {"tiled": "gmm_mstep.cl.mako", "rowwise": "gmm_mstep_rowwise.cl.mako"}[
            self.variant]

    def local_bytes(self):
        if self.variant == "rowwise":
            return 0
        return (2 * self.tile * self.nb * self.tb + self.tile) * np.dtype(self.dtype).itemsize

    def groups_per_chunk(self, k):
        return k if self.variant == "tiled" else -(-k // self.wg)


def record_size(d, full):
    """Reals per component record: c_k, mean, precision Cholesky factor."""
    return 1 + d + (d * (d + 1) // 2 if full else d)


def stats_size(d, full):
    return 1 + d + (d * d if full else d)


def _estep_specs(profile, dtype, d, full):
    """GPUs: records staged in local memory, two points per work-item.
    CPUs: small groups reading the records from memory (their caches serve;
    2 EPYC cores, 20k x 24, K=100: 1.3-2x the staged kernel on both runtimes)."""
    item = np.dtype(dtype).itemsize
    wg = 1 << (min(profile.work_group_size, profile.max_work_group_size).bit_length() - 1)
    if profile.type == "cpu" and profile.max_work_group_size >= 8:
        yield EStepSpec(dtype=np.dtype(dtype).name, acc_double=profile.fp64, d=d, wg=8,
                        ppi=1, full=full, cchunk=1 << 20, stage_params=False)
    for ppi in ((2, 1) if profile.type == "gpu" else (1,)):
        for w in (wg, max(1, wg // 4), 1):
            most = (profile.local_memory_budget - w * 8) // (record_size(d, full) * item)
            base = dict(dtype=np.dtype(dtype).name, acc_double=profile.fp64, d=d, wg=w,
                        ppi=ppi, full=full)
            if most >= 1:
                yield EStepSpec(cchunk=int(min(most, 256)), stage_params=True, **base)
            yield EStepSpec(cchunk=1 << 20, stage_params=False, **base)


def _mstep_specs(profile, dtype, d, full):
    """GPUs: ~64 work-items, each a small register block (2 tb local reads
    feed tb^2 fmas).  CPUs: a work-item per component (2 EPYC cores, 20k x
    24, K=100: ~10x the tiled kernel), else (larger d) few work-items with
    large blocks and long tiles (1.5-3x the GPU shape there)."""
    limit = min(profile.max_work_group_size, 256)
    cpu = profile.type == "cpu"
    if cpu and d <= (32 if full else 64) and limit >= 16:
        yield MStepSpec(variant="rowwise", dtype=np.dtype(dtype).name,
                        acc_double=profile.fp64, d=d, wg=16, tile=64, full=full)
    target = 4 if cpu else min(64, limit)
    if full:
        tb = min(d, 8) if cpu else max(1, -(-d // 8))
        while -(-d // tb) ** 2 > limit:
            tb += 1
        nb = -(-d // tb)
        nblk = nb * nb
    else:
        tb = min(d, 8) if cpu else max(1, -(-d // target))
        nb = -(-d // tb)
        nblk = nb
    reps = max(1, target // nblk)
    for tile in ((256, 64, 16, 4, 1) if cpu else (64, 16, 4, 1)):
        spec = MStepSpec(dtype=np.dtype(dtype).name, acc_double=profile.fp64, d=d,
                         wg=reps * nblk, tb=tb, nb=nb, reps=reps, tile=tile, full=full)
        if spec.local_bytes() <= profile.local_memory_budget:
            yield spec


_PLANS = {}


def plan(profile, queue, specs, name):
    """The first spec of *specs* that fits the device, built, with its kernel."""
    specs = list(specs)
    key = (profile, queue.context.int_ptr, specs[0] if specs else None, name)
    if key not in _PLANS:
        errors = []
        for spec in specs:
            if spec.local_bytes() > profile.local_memory_budget:
                continue
            try:
                knl = kernel(queue.context, spec, name)
            except KernelBuildError as exc:
                errors.append(exc)
                continue
            if kernel_work_group_limit(knl, queue.device) >= spec.wg:
                _PLANS[key] = (spec, knl)
                break
        else:
            raise KernelBuildError(f"no {name} kernel variant fits {profile}"
                                   + (f"; last error: {errors[-1]}" if errors else ""))
    return _PLANS[key]


# ------------------------------------------------------- passes on devices
class GmmPass:
    """The E and M kernels over one DevicePartition (components: at most k)."""

    def __init__(self, part, k, full):
        self.part, self.k, self.full = part, k, full
        q, p, dt = part.queue, part.profile, part.dtype
        self.espec, self.ekernel = plan(p, q, _estep_specs(p, dt, part.d, full), "gmm_estep")
        self.mspec, self.mkernel = plan(p, q, _mstep_specs(p, dt, part.d, full), "gmm_mstep")
        self.groups = self._groups(self.espec)[0]
        self.params = cla.empty(q, k * record_size(part.d, full), dt)
        self.means = cla.empty(q, k * part.d, dt)
        self.lse = cla.empty(q, part.n, dt)
        self.labels = cla.empty(q, part.n, np.int32)
        self.part_ll = partial_buffer(q, self.groups, 1, part.acc_double)
        self.part_bad = cla.empty(q, self.groups, np.int32)
        self.resp = None
        target = p.compute_units * p.groups_per_compute_unit * (4 if p.type == "gpu" else 1)
        per_chunk = self.mspec.groups_per_chunk(k)
        self.chunks = int(max(1, min(-(-target // per_chunk), -(-part.n // self.mspec.tile))))
        slabs = self.chunks * self.mspec.reps
        self.part_stats = partial_buffer(q, slabs, k * stats_size(part.d, full),
                                         part.acc_double)

    def _groups(self, spec):
        """(persistent work-groups, tiles each): on a GPU four times the
        profile's groups per compute unit, so the E kernel's long per-point
        work keeps every multiprocessor busy to the end."""
        p = self.part.profile
        tiles = -(-self.part.n // (spec.wg * spec.ppi))
        groups = max(1, min(tiles, p.compute_units * p.groups_per_compute_unit *
                            (4 if p.type == "gpu" else 1)))
        return groups, -(-tiles // groups)

    def _resp(self, k):
        if self.resp is None:
            self.resp = cla.empty(self.part.queue, self.k * self.part.n, self.part.dtype)
        return self.resp

    def estep(self, records, store_resp=True):
        """Run the E kernel for the k x CP *records*; (sum of log p(x), bad rows)."""
        part, q = self.part, self.part.queue
        k = records.shape[0]
        self.params[:records.size].set(np.ascontiguousarray(records, part.dtype).ravel(), q)
        spec = self.espec
        groups, tiles = self._groups(spec)
        resp = self._resp(k) if store_resp else self.lse   # (not written)
        self.ekernel(q, (groups * spec.wg,), (spec.wg,), part.x.data, np.int64(part.n),
                     np.int64(part.stride), self.params.data, np.int32(k), self.lse.data,
                     self.labels.data, np.int32(store_resp), resp.data,
                     self.part_ll.data, self.part_bad.data, np.int64(tiles))
        ll = self.part_ll.get(q).astype(np.float64)
        ll = ll[:groups].sum() - (0 if part.acc_double else ll[groups:2 * groups].sum())
        return float(ll), int(self.part_bad.get(q)[:groups].sum())

    def mstep(self, means):
        """The M kernel on the responsibilities in place: k x SZ float64 stats."""
        part, q, spec = self.part, self.part.queue, self.mspec
        k = means.shape[0]
        self.means[:means.size].set(np.ascontiguousarray(means, part.dtype).ravel(), q)
        rows = -(-part.n // self.chunks)
        self.mkernel(q, (self.chunks * spec.groups_per_chunk(k) * spec.wg,), (spec.wg,),
                     part.x.data,
                     np.int64(part.n), np.int64(part.stride), self._resp(k).data,
                     self.means.data, np.int32(k), np.int64(rows), self.part_stats.data)
        size = k * stats_size(part.d, self.full)
        # the kernel packs the slabs for this k (Kahan: then the compensations)
        return reduce_partials(q, self.part_stats, self.chunks * spec.reps, size, part.dtype,
                               part.acc_double).reshape(k, -1)

    def set_resp(self, rows):
        """Responsibilities from the host (n x k), component-major on the device."""
        k = rows.shape[1]
        self._resp(k)[:k * self.part.n].set(
            np.ascontiguousarray(rows.T, self.part.dtype).ravel(), self.part.queue)


class ShardedGmm:
    """The passes over every chunk of a ShardedData, statistics summed in
    chunk (row) order in float64: the model does not depend on the split."""

    def __init__(self, data, k, full):
        self.data, self.k, self.full = data, k, full

    def _pass(self, chunk):
        if "gmm" not in chunk.state:
            chunk.state["gmm"] = GmmPass(chunk, self.k, self.full)
        return chunk.state["gmm"]

    def em(self, records, means):
        """One EM pass: (total log-likelihood, bad rows, k x SZ statistics)."""
        def one(chunk):
            gp = self._pass(chunk)
            ll, bad = gp.estep(records)
            return ll, bad, gp.mstep(means)
        out = self.data.map(one, timed=True)
        return (sum(o[0] for o in out), sum(o[1] for o in out), sum(o[2] for o in out))

    def stats_from(self, resp_rows, means):
        """M statistics of host responsibilities: resp_rows(start, stop) -> rows."""
        def one(chunk):
            gp = self._pass(chunk)
            gp.set_resp(resp_rows(chunk.offset, chunk.offset + chunk.n))
            return gp.mstep(means)
        return sum(self.data.map(one))

    def score(self, records, want=("lse",)):
        """E pass without the M step: total log-likelihood, bad rows and the
        host arrays named in *want* ("lse", "labels", "resp": n x k)."""
        store = "resp" in want

        def one(chunk):
            gp = self._pass(chunk)
            ll, bad = gp.estep(records, store_resp=store)
            q, n = chunk.queue, chunk.n
            got = {"lse": lambda: gp.lse.get(q).astype(np.float64),
                   "labels": lambda: gp.labels.get(q).astype(np.int64),
                   "resp": lambda: gp.resp[:records.shape[0] * n].get(q)
                   .reshape(-1, n).T.astype(np.float64)}
            return ll, bad, {w: got[w]() for w in want}
        out = self.data.map(one)
        arrays = {w: np.concatenate([o[2][w] for o in out]) for w in want}
        return sum(o[0] for o in out), sum(o[1] for o in out), arrays


# ---------------------------------------------------------------- estimator
class GaussianMixture(DensityMixin, BaseEstimator):
    """Gaussian mixture fitted by EM on OpenCL devices (scikit-learn's API).

    The E step (log-densities, log-sum-exp, responsibilities) and the M-step
    statistics run on the devices; the host computes the new parameters.
    ``min_components``: MDL order selection from n_components down to it
    (``mdl_path_``, ``n_components_``).  ``devices``, ``dtype``, ``comm``: as
    in KMeans.
    """

    _parameter_rules = {
        "n_components": [(numbers.Integral, 1, None)],
        "covariance_type": ["full", "diag"],
        "tol": [(numbers.Real, 0, None)],
        "reg_covar": [(numbers.Real, 0, None)],
        "max_iter": [(numbers.Integral, 0, None)],
        "n_init": [(numbers.Integral, 1, None)],
        "init_params": ["kmeans", "k-means++", "random", "random_from_data"],
        "weights_init": [None, np.ndarray, list, tuple],
        "means_init": [None, np.ndarray, list, tuple],
        "precisions_init": [None, np.ndarray, list, tuple],
        "random_state": [None, numbers.Integral, np.random.RandomState],
        "min_components": [None, (numbers.Integral, 1, None)],
        "devices": [None, str, list, tuple, DeviceManager],
        "dtype": [None, "float32", "float64", type, np.dtype],
        "verbose": [(numbers.Integral, 0, None), bool],
    }

    def __init__(self, n_components=1, *, covariance_type="full", tol=1e-3, reg_covar=1e-6,
                 max_iter=100, n_init=1, init_params="kmeans", weights_init=None,
                 means_init=None, precisions_init=None, random_state=None,
                 min_components=None, devices=None, dtype=None, comm=None, verbose=0):
        self.n_components = n_components
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
        self.min_components = min_components
        self.devices = devices
        self.dtype = dtype
        self.comm = comm
        self.verbose = verbose

    @property
    def _full(self):
        return self.covariance_type == "full"

    # ---------------------------------------------------------------- fitting
    def fit(self, X, y=None):
        check_params(self, self._parameter_rules)
        if self.min_components is not None and self.min_components > self.n_components:
            raise ValueError(f"min_components={self.min_components} must be <= "
                             f"n_components={self.n_components}")
        # the collective check of all ranks' shards; a pass that raises on
        # one rank raises on all (self._ranks.together)
        (data, _), self._ranks = mpi.joined_fit_data(self, X, None)
        rng = check_random_state(self.random_state)

        def attempt():
            n = self._ranks.n
            if n < 2:
                raise ValueError(f"Found array with {n} sample(s) (shape=({n}, {data.d})) "
                                 "while a minimum of 2 is required by GaussianMixture.")
            if n < self.n_components:
                raise ValueError("Expected n_samples >= n_components but got n_components = "
                                 f"{self.n_components}, n_samples = {n}")
            return self._fit(data, n, rng)
        return surviving(data, attempt, rng)

    def _fit(self, data, n, rng):
        *_, finite = data.moments()
        mpi.check_together(self.comm, None if finite else
                           ValueError("Input X contains NaN or infinity."))
        full, d = self._full, data.d
        given = self._checked_inits(d)
        gm = ShardedGmm(data, self.n_components, full)
        self.history_ = []   # every EM iteration of the fit (all inits, all MDL orders)
        self._eps = float(np.finfo(data.dtype).eps)
        self._float32 = data.dtype == np.float32
        best = None
        for init in range(self.n_init if not all(g is not None for g in given) else 1):
            model = self._initial_model(gm, data, given, rng)
            fitted = self._em(gm, model, n)
            if self.verbose:
                print(f"GaussianMixture init {init}: lower bound {fitted.lower_bound:.6g}, "
                      f"{fitted.n_iter} iterations, converged={fitted.converged}")
            if best is None or fitted.lower_bound > best.lower_bound:
                best = fitted
        self.mdl_path_ = None
        if self.min_components is not None:
            best, self.mdl_path_ = mdl.select_order(
                best, lambda m: self._em(gm, m, n),
                lambda m: self._loglik(gm, m), self.min_components, n, d, full)
        if not best.converged and self.max_iter > 0:
            warnings.warn("Best performing initialization did not converge. Try different "
                          "init parameters, or increase max_iter, tol, or check for "
                          "degenerate data.", ConvergenceWarning, stacklevel=3)
        self._set_model(best.model, data.dtype)
        self.converged_, self.n_iter_ = best.converged, best.n_iter
        self.lower_bound_ = best.lower_bound
        self.n_features_in_ = d
        self.devices_ = data.rows_per_device
        return self

    def _em(self, gm, model, n):
        """EM iterations from *model* (scikit-learn's loop): a Fitted."""
        with Progress(self.max_iter, f"GMM K={len(model.weights)}",
                      bool(self.verbose) and self._ranks.rank == 0) as bar:
            return self._em_steps(gm, model, n, bar)

    def _em_steps(self, gm, model, n, bar):
        lower_bound, converged, it = -np.inf, False, 0
        for it in range(1, self.max_iter + 1):
            start = time.perf_counter()
            prev = lower_bound
            ll, bad, stats = self._ranks.together(
                lambda: gm.em(mdl.records(model, self._full), model.means))
            ll, bad, stats = mpi.sum_across(self.comm, np.array(ll), np.array(bad), stats)
            if bad:
                raise ValueError("Input X contains NaN or infinity (or values whose "
                                 "log-density is not finite).")
            model = mdl.m_step(stats, model.means, self.reg_covar, self._full, self._eps,
                               self._float32)
            lower_bound = float(ll) / n
            self.history_.append(history_entry(it, start, gm.data, lower_bound=lower_bound,
                                               n_components=len(model.weights)))
            bar.step(lower_bound=lower_bound)
            if self.verbose > 1:
                print(f"  iteration {it}: lower bound {lower_bound:.8g}")
            if abs(lower_bound - prev) < self.tol:
                converged = True
                break
            gm.data.rebalance()
        return mdl.Fitted(model, lower_bound, it, converged)

    def _loglik(self, gm, model):
        ll, bad, _ = self._ranks.together(
            lambda: gm.score(mdl.records(model, self._full), want=()))
        ll, bad = mpi.sum_across(self.comm, np.array(ll), np.array(bad))
        if bad:
            raise ValueError("Input X contains NaN or infinity.")
        return float(ll)

    # --------------------------------------------------------- initialisation
    def _checked_inits(self, d):
        """weights_init, means_init, precisions_init as float64 (None stays None),
        checked as scikit-learn checks them."""
        k, full = self.n_components, self._full
        out = []
        for name, value, shape in (("weights", self.weights_init, (k,)),
                                   ("means", self.means_init, (k, d)),
                                   ("precisions", self.precisions_init,
                                    (k, d, d) if full else (k, d))):
            if value is None:
                out.append(None)
                continue
            value = np.array(value, dtype=np.float64)
            if value.shape != shape:
                raise ValueError(f"The parameter '{name}' should have the shape of {shape}, "
                                 f"but got {value.shape}")
            if not np.all(np.isfinite(value)):
                raise ValueError(f"The parameter '{name}' contains NaN or infinity.")
            out.append(value)
        w, _, p = out
        if w is not None:
            if np.any(w < 0) or np.any(w > 1):
                raise ValueError("The parameter 'weights' should be in the range [0, 1], but "
                                 f"got max value {w.max():.5f}, min value {w.min():.5f}")
            if not abs(1.0 - w.sum()) <= 1e-6:
                raise ValueError("The parameter 'weights' should be normalized, but got "
                                 f"sum(weights) = {w.sum():.5f}")
        if p is not None:
            if full:
                sym = np.allclose(p, np.swapaxes(p, 1, 2))
                if not sym or np.any(np.linalg.eigvalsh(p) <= 0):
                    raise ValueError("'full precision' should be symmetric, positive-definite")
            elif np.any(p <= 0):
                raise ValueError("'diag precision' should be positive")
        return out

    def _initial_model(self, gm, data, given, rng):
        full, k = self._full, self.n_components
        w0, m0, p0 = given
        if w0 is None or m0 is None or p0 is None:
            rows = self._resp_rows(data, rng)
            local_mean = data.moments()[0]
            n = float(mpi.sum_across(self.comm, np.array([data.n]))[0])
            center = np.broadcast_to(mpi.sum_across(self.comm, local_mean * data.n) / n,
                                     (k, data.d))
            # means first (about the data mean), then the scatter about them
            stats = mpi.sum_across(self.comm, gm.stats_from(rows, center))
            nk = stats[:, 0] + 10 * self._eps
            means = (stats[:, 1:1 + data.d] + stats[:, :1] * center) / nk[:, None]
            stats = mpi.sum_across(self.comm, gm.stats_from(rows, means))
            est = mdl.m_step(stats, means, self.reg_covar, full, self._eps, self._float32)
            est.weights = (stats[:, 0] + 10 * self._eps) / n
            w0 = est.weights if w0 is None else w0
            m0 = est.means if m0 is None else m0
            if p0 is None:
                return mdl.Model(w0, m0, est.covariances, est.prec_chol)
        prec_chol = mdl.cholesky_of_precisions(p0, full)
        return mdl.Model(w0, m0, mdl.covariances_of(prec_chol, full), prec_chol)

    def _resp_rows(self, data, rng):
        """rows(start, stop) -> the initial responsibilities of those rows."""
        k, dtype = self.n_components, data.dtype
        if self.init_params == "random":
            resp = rng.uniform(size=(data.n, k))
            resp /= resp.sum(axis=1)[:, None]
            return lambda start, stop: resp[start:stop].astype(dtype)
        if self.init_params == "kmeans":
            from .kmeans import KMeans
            labels = KMeans(n_clusters=k, n_init=1, random_state=rng, devices=self.devices,
                            dtype=dtype).fit(data.source).labels_
            idx, cols = np.arange(data.n), labels
        elif self.init_params == "random_from_data":
            idx, cols = rng.choice(data.n, size=k, replace=False), np.arange(k)
        else:   # k-means++ on the devices
            from .kmeanspp import kmeans_plusplus
            idx = np.asarray(kmeans_plusplus(data, k, rng, np.ones(data.n, dtype)))
            cols = np.arange(k)

        def rows(start, stop):
            out = np.zeros((stop - start, k), dtype)
            sel = (idx >= start) & (idx < stop)
            out[idx[sel] - start, cols[sel]] = 1
            return out
        return rows

    def _set_model(self, model, dtype):
        full = self._full
        self.weights_ = model.weights.astype(dtype)
        self.means_ = model.means.astype(dtype)
        self.covariances_ = model.covariances.astype(dtype)
        self.precisions_cholesky_ = model.prec_chol.astype(dtype)
        self.precisions_ = mdl.precisions_of(model.prec_chol, full).astype(dtype)
        self.n_components_ = model.k

    # ------------------------------------------------------------- inference
    def _model(self):
        if not hasattr(self, "means_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. "
                                 "Call 'fit' with appropriate arguments before using this "
                                 "estimator.")
        return mdl.Model(self.weights_.astype(np.float64), self.means_.astype(np.float64),
                         self.covariances_.astype(np.float64),
                         self.precisions_cholesky_.astype(np.float64))

    def _score(self, X, want):
        model = self._model()
        data = new_data(self, X, None, self.means_.dtype)
        _, bad, arrays = surviving(data, lambda: ShardedGmm(data, model.k, self._full).score(
            mdl.records(model, self._full), want))
        if bad:
            raise ValueError("Input X contains NaN or infinity.")
        return arrays

    def score_samples(self, X):
        return self._score(X, ("lse",))["lse"]

    def score(self, X, y=None):
        return float(np.mean(self.score_samples(X)))

    def predict(self, X):
        return self._score(X, ("labels",))["labels"]

    def predict_proba(self, X):
        return self._score(X, ("resp",))["resp"]

    def fit_predict(self, X, y=None):
        return self.fit(X).predict(X)

    def _n_parameters(self):
        return mdl.n_parameters(self.n_components_, self.n_features_in_, self._full)

    def bic(self, X):
        n = len(X)
        return -2 * self.score(X) * n + self._n_parameters() * math.log(n)

    def aic(self, X):
        return -2 * self.score(X) * len(X) + 2 * self._n_parameters()

    def mdl(self, X):
        """Rissanen's MDL of the model on X: -log L + 1/2 P log(N D)."""
        n = len(X)
        return mdl.mdl_value(self.score(X) * n, self.n_components_, n, self.n_features_in_,
                             self._full)

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
