"""Fuzzy c-means (Bezdek) on OpenCL devices, in the O(N*D*C) form of eq. 3.

Pairs with templates/cmeans_pass.cl.mako.  One fused pass per iteration
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
import dataclasses
import numbers
import time

import numpy as np
import pyopencl.array as cla

from . import mpi
from .base import BaseEstimator, ClusterMixin
from .codegen import KernelBuildError, Spec, kernel, kernel_work_group_limit
from .kmeanspp import kmeans_plusplus
from .manager import DeviceManager, surviving
from .mpi import joined_fit_data, joined_moments
from .placement import new_data
from .progress import Progress, history_entry
from .reduce import acc_dtype, partial_buffer, reduce_partials
from .validation import NotFittedError, check_params, check_random_state


@dataclasses.dataclass(frozen=True)
class CMeansSpec(Spec):
    template = "cmeans_pass.cl.mako"
    d: int = 1
    c: int = 1
    wg: int = 1
    p: int = 1
    xs: int = 1
    ps: int = 1
    stage_centers: bool = True
    cchunk: int = 1
    local_u: bool = True
    stage_point: bool = True
    acc_private: bool = True
    kb: int = 1
    kw: int = 1
    qs: int = 1
    update: bool = True
    write_u: bool = False
    weighted: bool = False
    m_two: bool = True
    row_major: bool = False

    def dt_size(self):
        """Reals of a tile's memberships."""
        return self.p * self.ps if self.row_major else self.c * self.ps

    def local_bytes(self):
        item, acc = np.dtype(self.dtype).itemsize, 8 if self.acc_double else 4
        reals = self.p * self.xs + self.p + 2 * self.wg
        reals += self.dt_size() if self.local_u else 0
        reals += self.cchunk * self.d if self.stage_centers else 0
        return reals * item + self.wg * acc


def _odd(v):
    return v if v % 2 else v + 1


def column_blocks(c, d, wg):
    """(kb, kw, qs): the d + 1 statistics of a centre in kb blocks of kw
    columns, so that the c * kb (centre, block) slots keep the wg work-items
    evenly busy with the fewest accumulators each (qs slots, qs * kw sums)."""
    best = None
    for kw in range(1, d + 2):
        kb = -(-(d + 1) // kw)
        qs = -(-c * kb // wg)
        cost = (qs * kw, kb)         # work per item, then fewer blocks
        if best is None or cost < best[0]:
            best = cost, (kb, kw, qs)
    return best[1]


def row_major_blocks(c, d, wg):
    """(kb, kw, qs) of the row-major order: blocks of 4 to 8 columns (a
    work-item's running sums stay in registers), the fewest padded ones."""
    kw = min(range(min(4, d + 1), min(8, d + 1) + 1), key=lambda w: (-(-(d + 1) // w) * w, -w))
    kb = -(-(d + 1) // kw)
    return kb, kw, kb * -(-c // wg)


def _layout(profile, d, c, wg, row_major, update):
    """The spec fields that follow from the statistics' order."""
    kb, kw, qs = (row_major_blocks if row_major else column_blocks)(c, d, wg)
    acc_words = 2 * qs * kw    # a double, or a Kahan pair of floats
    acc_private = update and acc_words <= profile.private_floats // 2
    return dict(kb=kb, kw=kw, qs=qs, xs=_odd(max(d + 1, kb * kw)), row_major=row_major,
                acc_private=acc_private,
                stage_point=d + (acc_words if acc_private else 0) <= profile.private_floats)


def candidate_specs(profile, dtype, d, c, update, write_u, weighted, m_two):
    """Specs in order of preference; the first that fits the device is used.
    Tile memberships in local memory before a global scratch; all centres
    staged before chunks of them before none; big tiles (several rows per
    statistic update) first; then smaller work-groups."""
    item = np.dtype(dtype).itemsize
    wg = 1 << (max(1, min(profile.work_group_size, profile.max_work_group_size)).bit_length() - 1)
    while True:
        base = dict(dtype=np.dtype(dtype).name, acc_double=profile.fp64, d=d, c=c, wg=wg,
                    update=update, write_u=write_u, weighted=weighted, m_two=m_two)
        tiles = [1 << s for s in range(wg.bit_length() - 1, -1, -1)]
        big = min(8, wg)           # rows per tile that amortise a statistics update
        for local_u in (True, False):
            for lo, hi in ((big, wg), (1, big - 1)):
                for stage in ("all", "chunk", "none"):
                    for p in tiles:
                        if not lo <= p <= hi:
                            continue
                        row_major = profile.type == "cpu" and p == wg
                        spec = CMeansSpec(p=p, ps=_odd(c if row_major else p), local_u=local_u,
                                          stage_centers=stage != "none", cchunk=c, **base,
                                          **_layout(profile, d, c, wg, row_major, update))
                        if stage == "chunk":
                            spare = profile.local_memory_budget - spec.local_bytes() + \
                                c * d * item
                            chunk = min(c - 1, spare // (d * item))
                            if chunk < 1:
                                continue
                            spec = dataclasses.replace(spec, cchunk=int(chunk))
                        if spec.local_bytes() <= profile.local_memory_budget:
                            yield spec
        if wg == 1:
            return
        wg //= 2


_PLANS = {}


def plan(profile, queue, dtype, d, c, update, write_u, weighted, m_two):
    """(spec, kernel) of the first candidate that builds and fits the device."""
    ctx = queue.context
    key = (profile, ctx.int_ptr, np.dtype(dtype).name, d, c, update, write_u, weighted, m_two)
    if key not in _PLANS:
        errors = []
        for spec in candidate_specs(profile, dtype, d, c, update, write_u, weighted, m_two):
            try:
                fn = kernel(ctx, spec, "cmeans_pass")
            except KernelBuildError as exc:
                errors.append(exc)
                continue
            if kernel_work_group_limit(fn, queue.device) >= spec.wg:
                _PLANS[key] = (spec, fn)
                break
        else:
            raise KernelBuildError(f"no c-means kernel variant fits {profile}"
                                   + (f"; last error: {errors[-1]}" if errors else ""))
    return _PLANS[key]


class CMeansPass:
    """The fused pass over one DevicePartition.  ``update``: partial
    statistics; ``write_u``: the memberships into ``self.u`` (n x c)."""

    def __init__(self, part, c, m, update=True, write_u=False):
        self.part, self.c, self.m, self.update = part, c, float(m), update
        q = part.queue
        self.spec, self.kernel = plan(part.profile, q, part.dtype, part.d, c, update, write_u,
                                      part.weighted, self.m == 2.0)
        self.groups, self.tiles = part.groups(self.spec.wg, self.spec.p)
        self.size = c * (part.d + 1)
        self.part_stats = partial_buffer(q, self.groups, self.size if update else 1,
                                         part.acc_double)
        self.part_obj = cla.empty(q, self.groups, acc_dtype(part.acc_double))
        self.part_flags = cla.empty(q, self.groups, np.int32)
        self.scratch = (None if self.spec.local_u else
                        cla.empty(q, self.groups * self.spec.dt_size(), part.dtype))
        self.centers = cla.empty(q, c * part.d, part.dtype)
        self.u = cla.empty(q, part.n * c, part.dtype) if write_u else None

    def run(self, centers):
        """(statistics c x (d+1) float64 or None, objective, non-finite count)."""
        part, q = self.part, self.part.queue
        self.centers.set(np.ascontiguousarray(centers, part.dtype).ravel(), q)
        real = part.dtype.type
        self.kernel(q, (self.groups * self.spec.wg,), (self.spec.wg,),
                    part.x.data, np.int64(part.n), np.int64(part.stride), part.weights_arg(),
                    self.centers.data, real(self.m), real(1.0 / (self.m - 1.0)),
                    (self.u if self.u is not None else part.x).data, self.part_stats.data,
                    self.part_obj.data, self.part_flags.data,
                    (self.scratch if self.scratch is not None else part.x).data,
                    np.int64(self.tiles))
        stats = None
        if self.update:
            stats = reduce_partials(q, self.part_stats, self.groups, self.size, part.dtype,
                                    part.acc_double).reshape(self.c, part.d + 1)
        objective = float(np.sum(self.part_obj.get(q), dtype=np.float64))
        return stats, objective, int(self.part_flags.get(q).sum())


class ShardedCMeans:
    """The pass over every chunk of a ShardedData (all devices at once), its
    statistics summed in float64 in chunk order, then across MPI ranks."""

    def __init__(self, data, c, m, ranks=None):
        self.data, self.c, self.m = data, c, m
        self.comm = ranks.comm if ranks is not None else None

    def _pass(self, chunk, update, write_u):
        key = ("cmeans", self.c, self.m, update, write_u)
        if key not in chunk.state:
            chunk.state[key] = CMeansPass(chunk, self.c, self.m, update, write_u)
        return chunk.state[key]

    def run(self, centers, update=True, write_u=False):
        """(statistics or None, objective, non-finite count) over all rows;
        with *write_u* also the memberships (host n x c, this rank's rows)."""
        # each chunk's memberships go straight to their rows (one host copy)
        u = np.empty((self.data.n, self.c), self.data.dtype) if write_u else None

        def one(chunk):
            p = self._pass(chunk, update, write_u)
            stats, obj, bad = p.run(centers)
            if write_u:
                p.u.get(chunk.queue, ary=u[chunk.offset:chunk.offset + chunk.n].reshape(-1))
            return stats, obj, bad
        results = self.data.map(one, timed=update)
        stats = sum(r[0] for r in results) if update else np.zeros(0)
        scalars = np.array([sum(r[1] for r in results), sum(r[2] for r in results)])
        stats, scalars = mpi.sum_across(self.comm, stats, scalars)
        return (stats if update else None), float(scalars[0]), int(scalars[1]), u


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
        (data, host_w), ranks = joined_fit_data(self, X, sample_weight,
                                                self._calibration_pass)
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
        passes = ShardedCMeans(data, self.n_clusters, float(self.m), ranks)
        d, self.history_ = data.d, []
        bar = Progress(self.max_iter, "c-means", bool(self.verbose) and ranks.rank == 0)
        for it in range(self.max_iter):
            start = time.perf_counter()
            stats, objective, bad, _ = ranks.together(lambda: passes.run(centers))
            if bad:
                bar.close()
                raise _nonfinite_error(data.dtype)
            num, den = stats[:, :d], stats[:, d]
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
        _, objective, bad, u = ranks.together(
            lambda: passes.run(centers, update=False, write_u=True))
        if bad:
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
        data = new_data(self, X, sample_weight, self.cluster_centers_.dtype)

        def attempt():
            passes = ShardedCMeans(data, self.n_clusters, float(self.m))
            _, objective, bad, u = passes.run(self.cluster_centers_, update=False,
                                              write_u=write_u)
            if bad:
                raise _nonfinite_error(data.dtype)
            return objective, u
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
