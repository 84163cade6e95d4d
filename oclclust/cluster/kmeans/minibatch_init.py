"""MiniBatchKMeans' start, scikit-learn's: each init drawn from init_size
rows (their indices drawn whatever the init, as scikit-learn draws them),
the n_init inits compared on a validation draw of init_size rows.
*est* is the MiniBatchKMeans whose fit prepared ``_init_size`` and
``_n_init`` (its _prepare)."""
import numpy as np

from ..inits import draw_centers
from ..spherical import renormalised
from .minibatch_rows import SparseRows
from .sparse import csr_start, rows_on_device


def best_init(est, rows, rng):
    """scikit-learn's start: of n_init inits, the one of least inertia on
    a validation draw of init_size rows."""
    valid = rng.randint(0, rows.n, est._init_size)
    best, best_inertia = None, None
    for _ in range(est._n_init):
        centers = init_centroids(est, rows, rng)
        inertia = est._batch(rows, valid, rows.w[valid], centers).inertia
        if best_inertia is None or inertia < best_inertia:
            best, best_inertia = centers, inertia
    return best


def init_centroids(est, rows, rng):
    """scikit-learn's: the init drawn from init_size rows (random indices,
    drawn whatever the init, as scikit-learn draws them)."""
    pick = rng.randint(0, rows.n, est._init_size) if est._init_size < rows.n else None
    if callable(est.init):   # scikit-learn calls it on the init_size rows
        sample = rows.rows(np.arange(rows.n) if pick is None else pick)
        if isinstance(rows, SparseRows):
            return csr_start(est, est.init, rows_on_device(sample, est.devices), rng,
                             None).astype(rows.dtype)
        return est._called_init(sample, rng).astype(rows.dtype)
    if not isinstance(est.init, str):
        return est._checked_init(rows.d).astype(rows.dtype)
    if isinstance(rows, SparseRows):
        if est.init == "k-means||":
            raise ValueError("init='k-means||' is not available for sparse input; use "
                             "'k-means++', 'random', a callable or the centres.")
        X, w = (rows.X, rows.w) if pick is None else (rows.X[pick], rows.w[pick])
        return csr_start(est, est.init, rows_on_device(X, est.devices), rng,
                         np.asarray(w, np.float64)).astype(rows.dtype)
    with rows.seeding(pick) as (data, host_w, ranks):
        centers = draw_centers(data, est.init, est.n_clusters, rng, host_w, ranks)
    return (renormalised(centers) if est.spherical else centers).astype(rows.dtype)
