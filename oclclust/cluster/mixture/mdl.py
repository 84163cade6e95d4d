"""Gaussian-mixture model math on the host, and MDL order selection.

The device passes (passes/gmm.py) reduce each component's N, S1 = sum r (x - mu)
and S2 = sum r (x - mu)(x - mu)^T about the current means mu; here they
become weights, means and covariances exactly as scikit-learn's M step makes
them, and Cholesky factors of the precisions.

Order selection (the paper's procedure, Bouman's "cluster"): fit K
components, record Rissanen's MDL = -log L + 1/2 P log(N D), merge the pair
(l, m) that minimises N_l/2 log(|R_lm|/|R_l|) + N_m/2 log(|R_lm|/|R_m|)
(R_lm the moment-matched covariance of the merged pair), fit again from the
merged model, and so on down to min_components; the model of least MDL wins.
"""
import dataclasses
import math

import numpy as np
from scipy.linalg import lapack

from ...runtime.transfer import by_rows

PRECISION_ERROR = (
    "Fitting the mixture model failed because some components have ill-defined empirical "
    "covariance (for instance caused by singleton or collapsed samples). Try to decrease "
    "the number of components, increase reg_covar, or scale the input data.")
# components a host thread takes at least in a diagonal M step (K = 1024, d = 128: on
# an H200 host 2.2 ms on one core, 1.7 on four, the GPU idle meanwhile)
ROWS_A_THREAD = 256


@dataclasses.dataclass
class Model:
    """A mixture in float64: weights (k), means (k x d), covariances and the
    precision Cholesky factors (k x d x d upper-triangular, or k x d)."""
    weights: np.ndarray
    means: np.ndarray
    covariances: np.ndarray
    prec_chol: np.ndarray

    @property
    def k(self):
        return len(self.weights)


def precision_cholesky(cov, full, float32=False, out=None):
    """scikit-learn's _compute_precision_cholesky (ValueError if singular);
    *out* (diag): the array the factors are written into."""
    msg = PRECISION_ERROR + (" The numerical accuracy can also be improved by passing "
                             "float64 data instead of float32." if float32 else "")
    if not full:   # every variance finite and positive (NaN fails both), no k x d masks
        if not (cov.min() > 0 and cov.max() < np.inf):
            raise ValueError(msg)
        factors = np.sqrt(cov, out=out)
        return np.divide(1.0, factors, out=factors)
    if not np.all(np.isfinite(cov)):
        raise ValueError(msg)
    try:
        lower = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        raise ValueError(msg) from None
    # (L^-1)^T, scikit-learn's solve_triangular(L, I, lower=True).T, as LAPACK's
    # triangular inverse a component: at k=100, d=24 0.34 ms, where
    # np.linalg.solve's batched LU took 1.0 ms and trtrs (scikit-learn's) 0.43
    # ms, 0.8-1.1 with OpenBLAS's threads (2 cores)
    prec_chol = np.empty_like(lower)
    factors, out = (a.reshape((-1,) + lower.shape[-2:]) for a in (lower, prec_chol))
    for factor, transposed in zip(factors, out):
        inverse, info = lapack.dtrtri(factor, lower=1)
        if info:
            raise ValueError(msg)
        transposed[...] = inverse.T
    if not np.all(np.isfinite(prec_chol)):
        raise ValueError(msg)
    return prec_chol


def cholesky_of_precisions(precisions, full):
    """Upper U with U U^T = precision (scikit-learn's flip trick)."""
    if not full:
        return np.sqrt(precisions)
    flipped = np.linalg.cholesky(precisions[:, ::-1, ::-1])
    return np.ascontiguousarray(flipped[:, ::-1, ::-1])


def covariances_of(prec_chol, full):
    if not full:
        return 1.0 / prec_chol ** 2
    eye = np.broadcast_to(np.eye(prec_chol.shape[-1]), prec_chol.shape)
    inv = np.linalg.solve(prec_chol, eye)             # U^-1
    return np.swapaxes(inv, -1, -2) @ inv             # (U U^T)^-1


def precisions_of(prec_chol, full):
    return prec_chol @ np.swapaxes(prec_chol, -1, -2) if full else prec_chol ** 2


def records(model, full):
    """Component records for the E kernel: c_k, mean, packed factor (k x CP)."""
    k, d = model.means.shape
    if full:
        log_det = np.log(np.diagonal(model.prec_chol, axis1=1, axis2=2)).sum(1)
        cols = np.concatenate([np.full(c + 1, c) for c in range(d)])
        rows = np.concatenate([np.arange(c + 1) for c in range(d)])
        factor = model.prec_chol[:, rows, cols]       # column by column, upper triangle
    else:
        log_det = np.log(model.prec_chol).sum(1)
        factor = model.prec_chol
    with np.errstate(divide="ignore"):                # weight 0: log 0 = -inf, as sklearn
        c = np.log(model.weights) - 0.5 * d * math.log(2 * math.pi) + log_det
    return np.concatenate([c[:, None], model.means, factor], axis=1)


def raw_second_moment(stats, about):
    """sum_k sum_i r_ik x_i x_i^T (d x d) from full statistics about *about*
    (k x d): S2 + S1 c' + c S1' + N c c' of every component, summed."""
    k, d = about.shape
    n_raw, s1 = stats[:, 0], stats[:, 1:1 + d]
    s2 = stats[:, 1 + d:].reshape(k, d, d)
    cross = s1[:, :, None] * about[:, None, :]
    return (s2 + cross + np.swapaxes(cross, 1, 2)
            + n_raw[:, None, None] * about[:, :, None] * about[:, None, :]).sum(0)


def row_stats(rows, about, full):
    """The M statistics about *about* (k x d) of one-hot responsibilities on
    k rows (component j's one row ``rows[j]``), as the device passes give
    them (k x SZ: N, S1 = sum r (x - mu), S2 = sum r (x - mu)(x - mu)^T or
    its diagonal): N = 1, x - mu and its square, in float64."""
    z = np.asarray(rows, np.float64) - about
    second = (z[:, :, None] * z[:, None, :]).reshape(len(z), -1) if full else z * z
    return np.hstack([np.ones((len(z), 1)), z, second])


class DiagArrays:
    """Two sets of k x d arrays for the diagonal models an EM loop makes one
    after another (m_step's *out*): each model is written into the set the
    one before it does not hold.  A fresh MB page-faults: on the 2-core
    CI host ~0.5 ms, most of an M step's time at K = 1024, d = 128 (less on
    the GPU hosts)."""

    def __init__(self, k, d):
        self._sets = [tuple(np.empty((k, d)) for _ in range(4)) for _ in range(2)]
        self._turn = 0

    def next(self):
        """The set the next model goes into: (means, covariances, factors,
        scratch)."""
        self._turn ^= 1
        return self._sets[self._turn]


def m_step(stats, means_old, reg_covar, full, eps, float32=False, pooled=False, extra=None,
           out=None):
    """The model of scikit-learn's M step from statistics about *means_old*.
    *pooled*: scikit-learn's 'tied' (full) or 'spherical' (diag) covariances,
    kept broadcast to the full / diag layout the device passes read: tied is
    every component's scatter over the total weight, spherical each
    component's diag covariance averaged over the d features.  *extra*
    (tied): sum_i (1 - sum_k r_ik) x_i x_i^T, the rows that responsibilities
    which are no partition (one-hot on k chosen rows) leave out; scikit-learn's
    X'X - sum_k N_k mu_k mu_k' counts them.  *out* (diag): the arrays the
    model is written into (DiagArrays.next(), none of them *means_old*).
    Diagonal models are made a block of components a host thread (each
    component's arithmetic is its own: the same bits)."""
    k, d = means_old.shape
    nk = stats[:, 0] + 10 * eps
    if not full:
        arrays = out if out is not None else tuple(np.empty((k, d)) for _ in range(4))
        by_rows(lambda rows: _diag_m_step(stats[rows], means_old[rows], nk[rows], reg_covar,
                                          pooled, float32, *(a[rows] for a in arrays)),
                k, k // ROWS_A_THREAD)
        return Model(nk / nk.sum(), *arrays[:3])
    n_raw, s1 = stats[:, 0], stats[:, 1:1 + d]
    means = np.multiply(n_raw[:, None], means_old)    # (s1 + N mu_old) / nk, in place:
    means += s1                                       # k x d temporaries page-fault
    means /= nk[:, None]
    dm = means - means_old                            # scatter about the new means:
    s2 = stats[:, 1 + d:].reshape(k, d, d)            # S2 - S1 dm' - dm S1' + N dm dm',
    scatter = np.add(s2, np.swapaxes(s2, 1, 2))       # in that order, in two k x d x d
    scatter *= 0.5                                    # arrays (fresh ones page-fault)
    outer = np.multiply(s1[:, :, None], dm[:, None, :])
    scatter -= outer
    scatter -= np.swapaxes(outer, 1, 2)
    np.multiply(n_raw[:, None, None] * dm[:, :, None], dm[:, None, :], out=outer)
    scatter += outer
    if pooled:
        pooled_scatter = scatter.sum(0) if extra is None else scatter.sum(0) + extra
        tied = pooled_scatter / nk.sum() + reg_covar * np.eye(d)
        cov = np.broadcast_to(tied, (k, d, d)).copy()
    else:
        cov = scatter
        cov /= nk[:, None, None]
        cov += reg_covar * np.eye(d)
    return Model(nk / nk.sum(), means, cov, precision_cholesky(cov, full, float32))


def _diag_m_step(stats, means_old, nk, reg_covar, pooled, float32, means, cov, prec, scratch):
    """m_step's diagonal model of some components, into *means*, *cov* and
    *prec* (*scratch*: a fourth array of their shape)."""
    d = means_old.shape[1]
    n_raw, s1 = stats[:, :1], stats[:, 1:1 + d]
    np.multiply(n_raw, means_old, out=means)          # (s1 + N mu_old) / nk
    means += s1
    means /= nk[:, None]
    dm = np.subtract(means, means_old, out=scratch)   # the scatter about the new means,
    # a sum of r (x - mean)^2, never negative: where the statistics' rounding
    # leaves it so (a component of one row that moved, its S2 and S1^2 / N
    # cancelling: float32 sums off by 1e-5 at |x - mu| = 6, past reg_covar's
    # 1e-6), zero, as the exact sums would be within it (S2 - 2 S1 dm + N
    # dm^2, in that order)
    np.multiply(2, s1, out=cov)
    cov *= dm
    np.subtract(stats[:, 1 + d:], cov, out=cov)
    dm *= dm
    dm *= n_raw
    cov += dm
    np.maximum(cov, 0.0, out=cov)
    cov /= nk[:, None]
    cov += reg_covar
    if pooled:
        cov[...] = cov.mean(1, keepdims=True)
    precision_cholesky(cov, False, float32, prec)


def n_parameters(k, d, full):
    """Free parameters: k(1 + d + d(d+1)/2) - 1 (full), k(1 + 2d) - 1 (diag)."""
    return int(k * (1 + d + (d * (d + 1) // 2 if full else d)) - 1)


def mdl_value(loglik, k, n, d, full):
    """Rissanen's MDL: -log L + 1/2 P log(N D)."""
    return -loglik + 0.5 * n_parameters(k, d, full) * math.log(n * d)


def _log_det(cov, full):
    if full:
        return np.linalg.slogdet(cov)[1]
    return np.log(cov).sum(-1)


def merge_cost(model, n, full):
    """Bouman's distance of every pair (l < m): (ls, ms, costs, merged means, covs)."""
    ls, ms = np.triu_indices(model.k, 1)
    cnt = model.weights * n
    nl, nm = cnt[ls], cnt[ms]
    tot = np.maximum(nl + nm, np.finfo(float).tiny)
    mu = (nl[:, None] * model.means[ls] + nm[:, None] * model.means[ms]) / tot[:, None]
    dl, dmv = model.means[ls] - mu, model.means[ms] - mu
    cl, cm = model.covariances[ls], model.covariances[ms]
    if full:
        cov = (nl[:, None, None] * (cl + dl[:, :, None] * dl[:, None, :]) +
               nm[:, None, None] * (cm + dmv[:, :, None] * dmv[:, None, :])) / tot[:, None, None]
    else:
        cov = (nl[:, None] * (cl + dl ** 2) + nm[:, None] * (cm + dmv ** 2)) / tot[:, None]
    ld = _log_det(cov, full)
    own = _log_det(model.covariances, full)
    cost = 0.5 * nl * (ld - own[ls]) + 0.5 * nm * (ld - own[ms])
    return ls, ms, cost, mu, cov


def merge_closest(model, n, full):
    """The model with its closest pair merged (k - 1 components)."""
    ls, ms, cost, mu, cov = merge_cost(model, n, full)
    best = int(np.argmin(cost))
    l, m = ls[best], ms[best]
    keep = [j for j in range(model.k) if j not in (l, m)]
    weights = np.append(model.weights[keep], model.weights[l] + model.weights[m])
    means = np.concatenate([model.means[keep], mu[best][None]])
    covs = np.concatenate([model.covariances[keep], cov[best][None]])
    return Model(weights, means, covs, precision_cholesky(covs, full))


@dataclasses.dataclass
class Fitted:
    """An EM result: the model, its EM record and (order selection) its MDL."""
    model: Model
    lower_bound: float
    n_iter: int
    converged: bool
    mdl: float = math.nan
    lower_bounds: list = dataclasses.field(default_factory=list)   # one per iteration


def select_order(first, refit, loglik, min_components, n, d, full):
    """MDL order selection.  *first*: the Fitted model at n_components;
    refit(model) -> Fitted: EM from a merged model; loglik(model) -> total
    log-likelihood of the data.  Returns (best Fitted, [(K, MDL), ...])."""
    fitted, path, best = first, [], None
    while True:
        fitted.mdl = mdl_value(loglik(fitted.model), fitted.model.k, n, d, full)
        path.append((fitted.model.k, fitted.mdl))
        if best is None or fitted.mdl < best.mdl:
            best = fitted
        if fitted.model.k <= min_components:
            return best, path
        fitted = refit(merge_closest(fitted.model, n, full))
