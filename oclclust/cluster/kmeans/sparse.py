"""KMeans on sparse rows (scipy.sparse: TF-IDF and bag-of-words matrices),
scikit-learn's sparse k-means: the distances on one device from the CSR
arrays (passes.lloyd_csr), the loop of every k-means fit (lloyd_loop), and
the per-cluster sums of the rows on the host by scipy's sparse product, an
O(nnz) pass in float64.  Seeding draws as scikit-learn's does (greedy
k-means++ from the same random stream, its candidates' distances on the
device), so a fit from the same random_state starts where scikit-learn's does.

Over MPI ranks (``comm``) each rank holds its shard of the rows: the seeding
draws from every rank's weights and distances joined in row order (the draws
and centres of one process fitting the stacked rows), and each iteration's
per-cluster sums, weights, inertia and changed labels are summed over the
ranks in rank order (comm.sum_across): every rank ends with the same model,
that of one process within the rounding of those sums (scipy's product adds
a cluster's rows one after another; the ranks' partial sums are added
after), and ``labels_`` of its own rows.
"""
import warnings

import numpy as np

from .lloyd_loop import LloydBackend, fit_lloyd, saved_centers
from ..checkpoint import Checkpoint
from ...parallel.comm import Ranks, local_rank
from ...parallel.manager import DeviceManager
from ...parallel.placement import manager_for
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


def joined(ranks, values):
    """This rank's per-row *values* with every other rank's, in row order:
    the whole data's (as one process holds them)."""
    return values if ranks is None or ranks.size == 1 else np.concatenate(ranks.gather(values))


def rows_of(rows, ranks, indices):
    """Global rows *indices* of sparse *rows* (CsrRows), dense float64, on
    every rank: each rank fills in those it owns, the others add zeros."""
    if ranks is None or ranks.size == 1:
        return np.array([rows.row(i) for i in indices]).reshape(len(indices), rows.d)
    out = np.zeros((len(indices), rows.d))
    for j, i in enumerate(indices):
        owner, local = ranks.owner(int(i))
        if owner == ranks.rank:
            out[j] = rows.row(local)
    return ranks.sum(out)


def kmeans_plusplus_csr(rows, n_clusters, rng, w, n_local_trials=None, ranks=None):
    """Greedy k-means++ over sparse *rows* (CsrRows; with *ranks*, this
    rank's shard), drawing as scikit-learn's _kmeans_plusplus does over all
    ranks' rows: centres (float64, dense)."""
    trials = n_local_trials or 2 + int(np.log(n_clusters))
    w = joined(ranks, np.asarray(w))
    n = len(w)
    first = int(rng.choice(n, p=w / w.sum()))
    centers = [rows_of(rows, ranks, [first])[0]]
    closest = joined(ranks, rows.distances(centers[0][None])[:, 0])
    pot = float(w @ closest)
    for _ in range(1, n_clusters):
        targets = rng.uniform(size=trials) * pot
        candidates = np.minimum(np.searchsorted(np.cumsum(w * closest), targets), n - 1)
        trial_rows = rows_of(rows, ranks, candidates)
        dist = np.minimum(closest[:, None], joined(ranks, rows.distances(trial_rows)))
        pots = w @ dist
        best = int(np.argmin(pots))
        closest, pot = dist[:, best], float(pots[best])
        centers.append(trial_rows[best])
    return np.array(centers)


class CsrModel(LloydBackend):
    """One model over sparse rows: the backend of fit_lloyd (see KMeans'
    LloydModel, whose rules it keeps: a pass that changes no label stops
    the fit, its inertia that pass's).  *ranks*: the fit's (comm.Ranks),
    over whose rows the statistics are summed; None for one process."""

    exact_shifts = True

    def __init__(self, rows, w, k, spherical=False, ranks=None):
        self.rows, self.k, self.spherical = rows, k, spherical
        self.w = np.asarray(w, np.float64)
        self.ranks = ranks or Ranks(None, rows.n, rows.d, rows.dtype)
        self.labels = self.dist = None
        self.n_changed = self.ranks.n

    def stats(self, centers_list):
        from scipy.sparse import csr_matrix
        (centers,) = centers_list
        labels, self.dist = self.rows.assign(centers)
        rows = self.rows
        changed = rows.n if self.labels is None else int((labels != self.labels).sum())
        self.labels = labels
        assign = csr_matrix((self.w, (labels, np.arange(rows.n))),
                            shape=(self.k, rows.n))
        sums = np.asarray((assign @ rows.wide).todense(), np.float64)
        weights = np.bincount(labels, weights=self.w, minlength=self.k)
        # one sum over the ranks for all four (the counts are whole: exact in any order)
        sums, weights, inertia, changed = self.ranks.sum(
            sums, weights, np.float64(self.w @ self.dist), np.float64(changed))
        self.inertia, self.n_changed = float(inertia), int(changed)
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
            self.inertia = float(self.ranks.sum(np.float64(self.w @ self.dist)))
        return [self.inertia], [self.labels]


def sparse_tol(x, tol, ranks=None):
    """scikit-learn's tolerance of sparse data (*x*: float64, this rank's
    rows): tol times the mean of the columns' variances over all *ranks*' rows."""
    if ranks is None or ranks.size == 1:
        mean = np.asarray(x.mean(axis=0)).ravel()
        var = np.asarray(x.multiply(x).mean(axis=0)).ravel() - mean ** 2
    else:   # the columns' sums and sums of squares over the ranks
        s1, s2 = ranks.sum(np.asarray(x.sum(axis=0)).ravel(),
                           np.asarray(x.multiply(x).sum(axis=0)).ravel())
        mean = s1 / ranks.n
        var = s2 / ranks.n - mean ** 2
    return float(np.mean(var) * tol)


def csr_start(est, init, rows, rng, w, ranks=None):
    """One run's initial centres (float64) as scikit-learn draws them from
    sparse rows (over all *ranks*' rows); a callable init gets the (unit,
    if spherical) CSR rows, which must all be in this process."""
    if callable(init) and ranks is not None and ranks.size > 1:
        raise ValueError(f"A callable init needs all rows in one process: "
                         f"{type(est).__name__} got them spread over MPI ranks; pass the "
                         "initial centres as an array.")
    if callable(init):
        centers = init(rows.host, est.n_clusters, random_state=rng)
        centers = centers.toarray() if hasattr(centers, "toarray") else np.asarray(centers)
        return est._valid_centers(centers.astype(rows.dtype), rows.d)
    if not isinstance(init, str):
        return init
    if init == "k-means++":
        return kmeans_plusplus_csr(rows, est.n_clusters, rng, w, ranks=ranks)
    w = joined(ranks, np.asarray(w))
    return rows_of(rows, ranks, rng.choice(len(w), size=est.n_clusters, replace=False,
                                           p=w / w.sum()))


def fit_csr(est, X, sample_weight):
    """KMeans *est* fitted to sparse X (see the module): with ``comm``, X is
    this rank's shard; a rank whose shard is refused makes every rank raise
    (comm.Ranks' collective check), as does one that fails later."""
    if isinstance(est.init, str) and est.init == "k-means||":
        raise ValueError("init='k-means||' is not available for sparse input; use "
                         "'k-means++', 'random', a callable or the centres.")
    est._check_params()
    comm = est.comm
    if comm is not None and comm.Get_size() > 1:
        local_rank(comm)   # collective (the ranks of a host share its GPUs): all pass here
    rows = w = error = None
    try:
        rows = csr_rows(X, manager_for(X, est.devices, comm), est.dtype, type(est).__name__,
                        unit=bool(getattr(est, "spherical", False)))
        w = check_sample_weight(sample_weight, rows.n, rows.dtype)
        w = np.ones(rows.n, rows.dtype) if w is None else w
    except BaseException as exc:   # noqa: BLE001 -- an interrupt too: reported on every rank
        if comm is None:
            raise
        error = exc
    shape = (rows.n, rows.d, rows.dtype) if error is None else (0, 0, "float64")
    ranks = Ranks(comm, *shape, error=error)
    fitted = ranks.run_failing_all(lambda: _fit_csr_rows(est, rows, w, ranks, Checkpoint.of(
        est, X, sample_weight, ranks.n, rows.d, rows.dtype, ranks)))
    ranks.finished()   # no rank returns a model while another fails
    return fitted


def _fit_csr_rows(est, rows, w, ranks, checkpoint=None):
    """fit_csr's fit of this rank's CsrRows *rows* (weights *w*) over all
    *ranks*; *checkpoint*: the fit's (fit_lloyd's), of one run."""
    est._check_n_samples(ranks.n, rows.d)
    rng = check_random_state(est.random_state)
    tol = sparse_tol(rows.wide, est.tol, ranks)
    init = est._checked_init(rows.d)
    runs = est._runs(init)
    if checkpoint is not None and runs > 1:   # its runs follow one another: a run's state
        raise ValueError("checkpoint on sparse X needs one run: pass n_init=1 (or dense X, "
                         "whose runs are one ensemble)")
    if checkpoint is not None and checkpoint.saved is not None:
        starts = saved_centers(checkpoint.saved)
    else:
        starts = [csr_start(est, init, rows, rng, w, ranks) for _ in range(runs)]
    best = None
    for start in starts:
        history = []
        centers, inertia, n_iter, labels = fit_lloyd(
            CsrModel(rows, w, est.n_clusters, bool(getattr(est, "spherical", False)), ranks),
            [start], est.max_iter, tol, rows, w, est.verbose if ranks.rank == 0 else 0,
            history, checkpoint)
        if best is None or inertia[0] < best[1]:
            best = (centers[0], inertia[0], int(n_iter[0]), labels[0], history)
    centers, inertia, n_iter, labels, history = best
    sizes = ranks.sum(np.bincount(labels, minlength=est.n_clusters), exact=True)
    distinct = int((sizes > 0).sum())
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
