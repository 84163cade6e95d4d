"""KMeans on sparse rows (scipy.sparse: TF-IDF and bag-of-words matrices),
scikit-learn's sparse k-means: the distances on one device from the CSR
arrays (passes.lloyd_csr), the loop of every k-means fit (lloyd_loop), and
the per-cluster sums of the rows on the host by scipy's sparse product, an
O(nnz) pass in float64.  Seeding draws as scikit-learn's does (greedy
k-means++ from the same random stream, its candidates' distances on the
device), so a fit from the same random_state starts where scikit-learn's does.
"""
import warnings

import numpy as np

from .lloyd_loop import LloydBackend, fit_lloyd
from ...parallel.comm import Ranks
from ...parallel.manager import DeviceManager
from ...passes.lloyd_csr import CsrRows
from ...runtime.devices import preferred
from ...runtime.validation import check_random_state, check_sample_weight, checked_csr
from ...runtime.warning_site import user_stacklevel

try:
    from sklearn.exceptions import ConvergenceWarning
except ImportError:
    class ConvergenceWarning(UserWarning):
        pass


def csr_rows(X, devices, dtype, name, n_features=None, unit=False):
    """checked_csr(X, ...) on the preferred device of *devices* (CsrRows)."""
    return rows_on_device(checked_csr(X, dtype, name, n_features, unit), devices)


def rows_on_device(X, devices):
    """Canonical CSR rows X on the preferred device of *devices*."""
    profiles = DeviceManager(devices.profiles if isinstance(devices, DeviceManager)
                             else devices).profiles
    return CsrRows(preferred(profiles)[0], X)


def kmeans_plusplus_csr(rows, n_clusters, rng, w, n_local_trials=None):
    """Greedy k-means++ over sparse *rows* (CsrRows), drawing as
    scikit-learn's _kmeans_plusplus does: centres (float64, dense)."""
    trials = n_local_trials or 2 + int(np.log(n_clusters))
    first = int(rng.choice(rows.n, p=w / w.sum()))
    centers = [rows.row(first)]
    closest = rows.distances(centers[0][None])[:, 0]
    pot = float(w @ closest)
    for _ in range(1, n_clusters):
        targets = rng.uniform(size=trials) * pot
        candidates = np.minimum(np.searchsorted(np.cumsum(w * closest), targets), rows.n - 1)
        dist = np.minimum(closest[:, None],
                          rows.distances(np.array([rows.row(c) for c in candidates])))
        pots = w @ dist
        best = int(np.argmin(pots))
        closest, pot = dist[:, best], float(pots[best])
        centers.append(rows.row(candidates[best]))
    return np.array(centers)


class CsrModel(LloydBackend):
    """One model over sparse rows: the backend of fit_lloyd (see KMeans'
    LloydModel, whose rules it keeps: a pass that changes no label stops
    the fit, its inertia that pass's)."""

    exact_shifts = True

    def __init__(self, rows, w, k, spherical=False):
        self.rows, self.k, self.spherical = rows, k, spherical
        self.w = np.asarray(w, np.float64)
        self.ranks = Ranks(None, rows.n, rows.d, rows.dtype)
        self.labels = self.dist = None
        self.n_changed = rows.n

    def stats(self, centers_list):
        from scipy.sparse import csr_matrix
        (centers,) = centers_list
        labels, self.dist = self.rows.assign(centers)
        rows = self.rows
        self.n_changed = rows.n if self.labels is None else int((labels != self.labels).sum())
        self.labels = labels
        assign = csr_matrix((self.w, (labels, np.arange(rows.n))),
                            shape=(self.k, rows.n))
        self.inertia = float(self.w @ self.dist)
        sums = np.asarray((assign @ rows.wide).todense(), np.float64)
        weights = np.bincount(labels, weights=self.w, minlength=self.k)
        return sums, weights

    def nearest(self, centers):
        return self.dist, self.labels

    def labels_unchanged(self, active):
        return [self.n_changed == 0]

    def record(self, shifts, moving, n_models):
        shift = float(shifts[0])
        return (dict(inertia=self.inertia, center_shift=shift, n_changed=self.n_changed),
                f"inertia {self.inertia:.6g}, shift {shift:.3g}")

    def finish(self, centers):
        if self.n_changed:
            self.labels, self.dist = self.rows.assign(centers[0])
            self.inertia = float(self.w @ self.dist)
        return [self.inertia], [self.labels]


def sparse_tol(x, tol):
    """scikit-learn's tolerance of sparse data (*x*: float64): tol times the
    mean of the columns' variances."""
    mean = np.asarray(x.mean(axis=0)).ravel()
    var = np.asarray(x.multiply(x).mean(axis=0)).ravel() - mean ** 2
    return float(np.mean(var) * tol)


def csr_start(est, init, rows, rng, w):
    """One run's initial centres (float64) as scikit-learn draws them from
    sparse rows; a callable init gets the (unit, if spherical) CSR rows."""
    if callable(init):
        centers = init(rows.host, est.n_clusters, random_state=rng)
        centers = centers.toarray() if hasattr(centers, "toarray") else np.asarray(centers)
        return est._valid_centers(centers.astype(rows.dtype), rows.d)
    if not isinstance(init, str):
        return init
    if init == "k-means++":
        return kmeans_plusplus_csr(rows, est.n_clusters, rng, w)
    return np.array([rows.row(i) for i in rng.choice(rows.n, size=est.n_clusters,
                                                    replace=False, p=w / w.sum())])


def fit_csr(est, X, sample_weight):
    """KMeans *est* fitted to sparse X (see the module)."""
    if isinstance(est.init, str) and est.init == "k-means||":
        raise ValueError("init='k-means||' is not available for sparse input; use "
                         "'k-means++', 'random', a callable or the centres.")
    est._check_params()
    spherical = bool(getattr(est, "spherical", False))
    rows = csr_rows(X, est.devices, est.dtype, type(est).__name__, unit=spherical)
    w = check_sample_weight(sample_weight, rows.n, rows.dtype)
    w = np.ones(rows.n, rows.dtype) if w is None else w
    est._check_n_samples(rows.n, rows.d)
    rng = check_random_state(est.random_state)
    tol = sparse_tol(rows.wide, est.tol)
    init = est._checked_init(rows.d)
    runs = est._runs(init)
    starts = [csr_start(est, init, rows, rng, w) for _ in range(runs)]
    best = None
    for start in starts:
        history = []
        centers, inertia, n_iter, labels = fit_lloyd(
            CsrModel(rows, w, est.n_clusters, spherical), [start], est.max_iter, tol, rows, w,
            est.verbose, history)
        if best is None or inertia[0] < best[1]:
            best = (centers[0], inertia[0], int(n_iter[0]), labels[0], history)
    centers, inertia, n_iter, labels, history = best
    distinct = len(np.unique(labels))
    if distinct < est.n_clusters:
        warnings.warn(f"Number of distinct clusters ({distinct}) found smaller than "
                      f"n_clusters ({est.n_clusters}). Possibly due to duplicate points "
                      "in X.", ConvergenceWarning, stacklevel=user_stacklevel())
    est.cluster_centers_ = centers.astype(rows.dtype)
    est.labels_, est.inertia_, est.n_iter_ = labels, inertia, n_iter
    est.history_ = history
    est.n_features_in_ = rows.d
    est.devices_ = rows.rows_per_device
    est.reshards_ = 0
    return est


def assign_csr(est, X, sample_weight=None):
    """(labels, weighted inertia) of sparse X about the fitted centres."""
    est._check_fitted()
    rows = csr_rows(X, est.devices, est.cluster_centers_.dtype, type(est).__name__,
                    est.n_features_in_, unit=bool(getattr(est, "spherical", False)))
    w = check_sample_weight(sample_weight, rows.n, np.float64)
    labels, dist = rows.assign(est.cluster_centers_)
    return labels, float((np.ones(rows.n) if w is None else w) @ dist)


def transform_csr(est, X):
    """Euclidean distances of sparse X's rows to the fitted centres."""
    est._check_fitted()
    rows = csr_rows(X, est.devices, est.cluster_centers_.dtype, type(est).__name__,
                    est.n_features_in_, unit=bool(getattr(est, "spherical", False)))
    return np.sqrt(rows.distances(est.cluster_centers_)).astype(est.cluster_centers_.dtype)
