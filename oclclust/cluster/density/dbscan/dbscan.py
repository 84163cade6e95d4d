"""DBSCAN on an OpenCL device (scikit-learn's API and labels).

The neighbour counts and the search for clusters run on the device without
the eps-graph (passes/dbscan.py): the core rows' connected components by
rounds of the least core label within eps (each followed by pointer jumping
on the host, O(n)), numbered as scikit-learn numbers them, by their least
core row; a border row takes the lowest numbered cluster among its core
neighbours', the one scikit-learn's depth-first expansion, cluster after
cluster in that order, reaches it from first.

The metrics the device does not compute (other scipy names, minkowski with
p other than 1, 2, inf, callables, metric_params), metric="precomputed" and
sparse rows go through an explicit neighbourhood graph built in row blocks
(graph.py) and the same rules (rules.py):
sparse rows under euclidean distances on the device (CsrRows), under the
other metrics on the host.

Across MPI ranks the grid's slabs are ranks.py's; on a Dask cluster's
workers, dask_slabs.py's (the grid metrics; the others compute a dask
array's rows here, with a warning).
"""
import numbers
import warnings

import numpy as np

from ..._base import DEVICES_RULE, BaseEstimator, ClusterMixin, RecordsKernels, fit_devices
from ....parallel.comm import local_rank, size
from ....parallel.placement import is_dask_array
from ....passes.linkage import check_range, plan_for
from .plans import device_plans, rank_plans
from .graph import check_precomputed, metric_graph, precomputed_graph, sparse_euclidean_graph
from .ranks import labels_across_ranks
from .rules import graph_labels
from ....passes.dbscan import Neighbourhoods
from ....passes.dbscan_grid import GRID_METRICS, GridNeighbourhoods
from ....passes.grid import CellGrid
from ....passes.lloyd_csr import CsrRows
from ....runtime.validation import (check_data, check_params, check_sample_weight, checked_csr,
                                    is_sparse)
from ....runtime.warning_site import user_stacklevel

# scikit-learn's metric names -> the device's (pdist's) names
METRICS = {"euclidean": "euclidean", "l2": "euclidean", "manhattan": "cityblock",
           "cityblock": "cityblock", "l1": "cityblock", "chebyshev": "chebyshev",
           "infinity": "chebyshev"}
# algorithm="auto": the grid where it compares fewer pairs than this share of
# n^2 (its candidates cost more each than the brute tiles')
GRID_SHARE = 0.25
# minkowski's p the device computes
MINKOWSKI = {1: "cityblock", 2: "euclidean", np.inf: "chebyshev"}
# scipy.spatial.distance's metrics scikit-learn names (its aliases mapped)
HOST_METRICS = {**METRICS, **{name: name for name in (
    "braycurtis", "canberra", "correlation", "cosine", "dice", "hamming", "jaccard",
    "mahalanobis", "matching", "minkowski", "rogerstanimoto", "russellrao", "seuclidean",
    "sokalsneath", "sqeuclidean", "yule")}}


def _metric(metric, p, metric_params):
    """(device metric or None, cdist's metric, cdist's keyword arguments)."""
    params = dict(metric_params or {})
    if metric == "minkowski":
        if "p" in params:
            if p is not None:
                warnings.warn("Parameter p is found in metric_params. The corresponding "
                              "parameter from __init__ is ignored.", SyntaxWarning,
                              stacklevel=user_stacklevel())
            p = params.pop("p")
        p = 2 if p is None else p
        if not (isinstance(p, numbers.Real) and p > 0):
            raise ValueError(f"The 'p' parameter of DBSCAN must be a float in the range "
                             f"(0.0, inf]. Got {p!r} instead.")
        if p in MINKOWSKI and not params:
            return MINKOWSKI[p], None, {}
        return None, "minkowski", dict(p=p, **params)
    if callable(metric):
        return None, metric, params
    if metric in METRICS and not params:
        return METRICS[metric], None, {}
    return None, HOST_METRICS[metric], params


class DBSCAN(ClusterMixin, RecordsKernels, BaseEstimator):
    """Density-based clustering (DBSCAN) on an OpenCL device.

    Neighbour counts and the core rows' components on the device without
    storing the eps-graph (euclidean, manhattan, chebyshev and minkowski
    with p 1, 2, inf on dense rows: O(n d) memory), each row compared with
    every row or only with the rows of the cells around its own in a grid
    of cells wider than eps over up to 3 features (see ``algorithm``);
    other metrics, callables, ``metric="precomputed"`` and sparse rows
    through an eps-graph built a block of rows at a time.  scikit-learn's
    labels.  A dask array, with a ``distributed.Client`` active, is fitted
    on the workers (the grid's slabs, one a worker holding rows; the rows
    never on the client: :doc:`/guide/dask`).

    Parameters
    ----------
    eps : float, default=0.5
        The largest distance of two rows in one neighbourhood (> 0).
    min_samples : int, default=5
        Rows (the row itself included) within eps that make a core row.
    metric : str or callable, default="euclidean"
        scikit-learn's metrics, a callable, or "precomputed".
    metric_params : dict or None, default=None
        The metric's keyword arguments.
    algorithm : {"auto", "grid", "kd_tree", "ball_tree", "brute"}, default="auto"
        The device's neighbour search: "brute" every pair; "grid" (and
        scikit-learn's spatial indexes "kd_tree", "ball_tree") the grid of
        cells; "auto" the grid where it compares fewer than a quarter of the
        pairs.  The same labels either way.
    leaf_size, n_jobs
        Accepted and checked for scikit-learn's API.
    p : float or None, default=None
        The Minkowski power.
    devices : str, DeviceProfile, pyopencl Device, list of them or DeviceManager, \
default=None
        Where the work runs.  A list of devices, or a
        :class:`oclclust.DeviceManager` (its devices, split by its
        weights), spreads the grid's rows over all of them: slabs of cells,
        each device's with a halo of the cells within eps, the same labels
        whatever the split.  Any other value ("all", "gpu", a name, None:
        ``$OCLCLUST_DEVICES``) runs on its preferred device, as the brute
        search and the eps-graph paths do.
    comm : mpi4py communicator, default=None
        Fit across MPI ranks: each rank passes its own rows and gets their
        ``labels_`` (the clusters one process finds in all ranks' rows,
        numbered alike), ``core_sample_indices_`` (into its rows) and
        ``components_``; each rank answers for a slab of the grid of cells
        (dense rows, euclidean, manhattan or chebyshev distances) and holds
        its own rows and its slab's with their halo (:doc:`/guide/mpi`).

    Attributes
    ----------
    core_sample_indices_ : ndarray of shape (n_core_samples,)
        Indices of the core samples.
    components_ : ndarray of shape (n_core_samples, n_features)
        The core samples (a dask array, on the workers, after a fit on
        a Dask cluster's workers).
    labels_ : ndarray of shape (n_samples,)
        Each row's cluster; -1 for noise (a dask array in X's row
        chunks after a fit on a Dask cluster's workers).
    devices_ : dict
        {device: the rows it answered for} of the devices the fit ran on
        ({} where it ran on the host alone; "worker device" on Dask).

    See Also
    --------
    HDBSCAN : clusters of varying density, without eps.

    Examples
    --------
    >>> import numpy as np
    >>> import oclclust as oc
    >>> X = np.array([[1, 2], [2, 2], [2, 3], [8, 7], [8, 8], [25, 80]])
    >>> oc.DBSCAN(eps=3, min_samples=2).fit(X).labels_
    array([ 0,  0,  0,  1,  1, -1])
    """

    _parameter_rules = {
        "eps": [(numbers.Real, 0, None, "neither")],
        "min_samples": [(numbers.Integral, 1, None)],
        "metric": [*HOST_METRICS, "precomputed", callable],
        "metric_params": [dict, None],
        "algorithm": ["auto", "ball_tree", "kd_tree", "brute", "grid"],
        "leaf_size": [(numbers.Integral, 1, None)],
        "p": [(numbers.Real, 0, None, "right"), None],
        "n_jobs": [numbers.Integral, None],
        "devices": DEVICES_RULE,
        "comm": [None, object],
    }

    def __init__(self, eps=0.5, *, min_samples=5, metric="euclidean", metric_params=None,
                 algorithm="auto", leaf_size=30, p=None, n_jobs=None, devices=None,
                 comm=None):
        self.eps = eps
        self.min_samples = min_samples
        self.metric = metric
        self.metric_params = metric_params
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.p = p
        self.n_jobs = n_jobs
        self.devices = devices
        self.comm = comm

    def fit(self, X, y=None, sample_weight=None):
        if is_dask_array(X):
            if self._fit_dask(X, sample_weight):
                return self
            X = X.compute()
        if is_dask_array(sample_weight):
            sample_weight = sample_weight.compute()
        if size(self.comm) > 1:
            return self._fit_ranks(X, sample_weight)
        check_params(self, self._parameter_rules)
        if self.metric == "precomputed":
            X = check_precomputed(X)
            w = check_sample_weight(sample_weight, X.shape[0], np.float64, signed=True)
            graph = precomputed_graph(X, float(self.eps))
            return self._from_graph(X, graph, w)
        device, metric, params = _metric(self.metric, self.p, self.metric_params)
        X = _rows(X, type(self).__name__)
        w = check_sample_weight(sample_weight, X.shape[0], np.float64, signed=True)
        if is_sparse(X):
            if device == "euclidean":
                graph = sparse_euclidean_graph(CsrRows(plan_for(self.devices).profile, X), X,
                                               float(self.eps))
            else:
                graph = metric_graph(X, float(self.eps), metric or device, params)
            return self._from_graph(X, graph, w)
        if device is None:
            return self._from_graph(X, metric_graph(X, float(self.eps), metric, params), w)
        plans, split = device_plans(self.devices)
        for plan in plans:
            check_range(X, plan)
        hoods = _neighbourhoods(plans, split, X, float(self.eps), device, self.algorithm)
        core = hoods.counts(w, enough=self.min_samples) >= self.min_samples
        label = hoods.components(core)       # each core row's least core index
        roots = np.zeros(X.shape[0] + 1, bool)
        roots[label[core]] = True            # scikit-learn numbers clusters by it
        number = np.where(core, np.cumsum(roots)[label] - 1, -1)
        border = hoods.min_label(number, ~core)
        return self._set(X, np.where(core, number, border).astype(np.intp), core,
                         getattr(hoods, "rows", None))

    def _fit_ranks(self, X, sample_weight):
        """fit under MPI (ranks.py): this rank's rows checked here, a refusal
        on any rank raised on every rank."""
        local_rank(self.comm)   # collective, before anything can fail on one rank
        plans, split, w, device, error = None, {}, None, None, None
        try:
            check_params(self, self._parameter_rules)
            device = None if self.metric == "precomputed" else \
                _metric(self.metric, self.p, self.metric_params)[0]
            if device not in GRID_METRICS or self.algorithm == "brute":
                raise ValueError(
                    "DBSCAN across MPI ranks (comm) splits the grid of cells: dense rows "
                    "under euclidean, manhattan or chebyshev distances (minkowski with p "
                    f"1, 2 or inf), algorithm other than 'brute'; got metric={self.metric!r}, "
                    f"algorithm={self.algorithm!r}")
            X = _rows(X, type(self).__name__)
            if is_sparse(X):
                raise TypeError("DBSCAN across MPI ranks (comm) takes dense rows: pass "
                                "X.toarray()")
            w = check_sample_weight(sample_weight, X.shape[0], np.float64, signed=True)
            plans, split = rank_plans(self.devices, self.comm)
            check_range(X, plans[0])
        except Exception as exc:   # noqa: BLE001 -- raised on every rank
            error = exc
        labels, core, rows = labels_across_ranks(
            self.comm, X, w, (float(self.eps), int(self.min_samples), device), plans, split,
            error)
        return self._set(X, labels, core, lambda: rows)

    def _fit_dask(self, X, sample_weight):
        """fit on a dask array X on the active Client's workers
        (dask_slabs.py): the grid's slabs, one a worker holding rows.  False
        where X is to be computed here instead: without a Client (as any
        array), and, with a warning, for the brute search and the metrics
        the grid does not cut."""
        from ....parallel.dask import active_client
        check_params(self, self._parameter_rules)
        if self.comm is not None and size(self.comm) > 1:
            raise ValueError("a fit takes a dask array or an MPI comm, not both")
        client = active_client()
        if client is None:
            return False
        device = None if self.metric == "precomputed" else \
            _metric(self.metric, self.p, self.metric_params)[0]
        if device not in GRID_METRICS or self.algorithm == "brute":
            warnings.warn(
                f"DBSCAN(metric={self.metric!r}, algorithm={self.algorithm!r}) computes the "
                "dask array's rows in this process: only the grid of cells (euclidean, "
                "manhattan or chebyshev distances, minkowski with p 1, 2 or inf, algorithm "
                "other than 'brute') runs on the Dask workers", UserWarning,
                stacklevel=user_stacklevel())
            return False
        from .dask_slabs import fit_on_workers
        labels, core, rows = fit_on_workers(
            client, X, sample_weight, (float(self.eps), int(self.min_samples), device),
            self.devices, type(self).__name__)
        # the rows stay on the workers: labels_ and components_ dask arrays
        self.labels_, self.core_sample_indices_ = labels, core
        self.components_ = X[core].astype(np.float64)
        self.n_features_in_ = X.shape[1]
        self.devices_ = rows
        return True

    def _from_graph(self, X, graph, w):
        labels, core = graph_labels(graph, self.min_samples, w)
        return self._set(X, labels, core)

    def _set(self, X, labels, core, rows=None):
        self.labels_ = labels
        self.core_sample_indices_ = np.flatnonzero(core)
        # scikit-learn's: the core rows (sparse stays sparse), or an empty dense array
        self.components_ = (X[self.core_sample_indices_].copy() if core.any()
                            else np.empty((0, X.shape[1])))
        self.n_features_in_ = X.shape[1]
        self.devices_ = fit_devices(X.shape[0]) if rows is None else rows()
        return self

    def fit_predict(self, X, y=None, sample_weight=None):
        return self.fit(X, sample_weight=sample_weight).labels_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.metric == "precomputed"
        tags.input_tags.sparse = True
        return tags


def _neighbourhoods(plans, split, X, eps, metric, algorithm):
    """The devices' neighbourhoods of the rows X: over a grid of cells
    (passes/grid.py) for algorithm "grid", "kd_tree" and "ball_tree" (a
    spatial index, the same labels), and for "auto" where the grid compares
    fewer than GRID_SHARE of the n^2 pairs, its slabs over all *plans*
    (*split*: its shares and executor);
    every pair ("brute") otherwise and for the metrics the grid cannot cut,
    on the first plan's device alone."""
    if algorithm != "brute" and metric in GRID_METRICS:
        grid = CellGrid(X, eps, plans[0].dtype)
        if algorithm != "auto" or grid.candidate_pairs() < GRID_SHARE * float(X.shape[0]) ** 2:
            return GridNeighbourhoods(plans, grid, eps, metric, **split)
    return Neighbourhoods(plans[0], X, eps, metric)


def _rows(X, name):
    """Dense rows as float64, or sparse rows as a float64 CSR copy (the
    caller's matrix untouched), checked as scikit-learn checks them."""
    if is_sparse(X):
        return checked_csr(X, np.float64, name)
    X = np.asarray(check_data(X, name), np.float64)
    if not np.isfinite(X).all():
        raise ValueError("Input X contains NaN or infinity.")
    return X
