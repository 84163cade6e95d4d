"""warm_up: a process's first fit as fast as its later ones.

A fresh process's first fit pays once for what every later fit reuses: the
platforms' discovery and the device profiles, each device's context and
queue, its programs (loaded from the on-disk binary cache, or built),
the plans that pick a pass's kernel variant, and the page-locked pieces
the uploads go through.  ``warm_up`` pays it when the caller chooses (at
import, while data loads): a fit of each asked shape on a few rows of
its own builds exactly the programs and plans the real fit's passes use,
for they depend on the features, the clusters and the parameters, never
on the number of rows.
"""
import numbers
import warnings

import numpy as np

from ..parallel.manager import DeviceManager
from ..runtime import transfer
from ..runtime.devices import select_devices
from .registry import ESTIMATORS, estimator_class

# the warm-up fit's rows: enough for every estimator's smallest sensible fit
# of k clusters (a few rows a cluster), few enough to cost milliseconds
ROWS_PER_CLUSTER = 4
MIN_ROWS = 2048
# parameters the warm-up fit sets where the estimator has them: short, quiet,
# one start, no file written
SHORT_FIT = {"max_iter": 2, "tol": 0.0, "n_init": 1, "verbose": 0, "checkpoint": None,
             "random_state": 0}


def warm_up(devices=None, shapes=None, dtype=np.float32):
    """Make the devices, programs and staging of later fits ready now.

    Parameters
    ----------
    devices : str, list of DeviceProfile or pyopencl Device, DeviceManager, default=None
        The devices the later fits use, as their ``devices`` parameter.
    shapes : list of tuples, default=None
        The fits to prepare, each ``(estimator, n_features)`` with an
        unfitted estimator whose parameters are the later fit's, or
        ``(name, n_features, n_clusters)`` with an estimator's class name
        (``"KMeans"``, ``"GaussianMixture"``, ...) and its number of
        clusters (its ``n_components``, ``min_samples`` or
        ``min_cluster_size`` where it has no ``n_clusters``).  Without
        shapes only the devices' contexts, queues and staging are made.
    dtype : {numpy.float32, numpy.float64}, default=numpy.float32
        The dtype of the later fits' rows.

    Returns
    -------
    profiles : list of DeviceProfile
        The devices made ready.

    See Also
    --------
    select_devices : the devices a ``devices`` value picks.

    Notes
    -----
    Each shape is fitted, for at most two iterations, on
    ``max(2048, 4 n_clusters)`` normal rows on *devices*: its passes plan
    their kernels and load (or build) their programs, as the later fit of
    any number of rows would.  On a device that copies rows through
    page-locked memory, its two upload pieces are made at their full size.

    Examples
    --------
    >>> import oclclust as oc
    >>> profiles = oc.warm_up("cpu", [("KMeans", 8, 16)])
    >>> len(profiles) >= 1
    True
    """
    fits = [fit for shape in _listed(shapes) for fit in _fits_of(shape)]
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    profiles = devices.profiles if isinstance(devices, DeviceManager) else select_devices(devices)
    for profile in profiles:
        queue = profile.queue()
        if not queue.device.host_unified_memory:
            transfer.shared_staging(queue).reserve(transfer.PIECE_BYTES)
    rng = np.random.default_rng(0)
    for estimator, d, k in fits:
        rows = rng.standard_normal((max(MIN_ROWS, ROWS_PER_CLUSTER * k), d)).astype(dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # a two-iteration fit does not converge
            estimator.set_params(devices=devices).fit(rows)
    return profiles


def _listed(shapes):
    if shapes is None:
        return []
    one = isinstance(shapes, tuple) and shapes and not isinstance(shapes[0], tuple)
    if one or isinstance(shapes, str) or not hasattr(shapes, "__iter__"):
        raise TypeError("shapes must be a list of tuples (estimator, n_features) or "
                        f"(name, n_features, n_clusters), got {shapes!r}")
    return list(shapes)


def _fits_of(shape):
    """[(an unfitted estimator with the short fit's parameters, n_features,
    its number of clusters)] of one *shape*: its own, and where it starts
    from a KMeans fit (GaussianMixture's init_params="kmeans"), that one's,
    whose last labels pass (a fit of the real rows that ends before its
    labels settle) a two-iteration fit also runs."""
    if not isinstance(shape, tuple) or len(shape) not in (2, 3):
        raise TypeError("each shape must be a tuple (estimator, n_features) or "
                        f"(name, n_features, n_clusters), got {shape!r}")
    what, d, *k = shape
    if isinstance(what, str):
        if what not in ESTIMATORS:
            raise ValueError(f"unknown estimator {what!r}; expected one of "
                             f"{', '.join(sorted(ESTIMATORS))}")
        if len(k) != 1:
            raise TypeError(f"shape {shape!r} names an estimator: give (name, n_features, "
                            "n_clusters)")
        _positive(k[0], "n_clusters", shape)
        estimator = estimator_class(what)(**{ESTIMATORS[what].size_param: int(k[0])})
    else:
        if not hasattr(what, "get_params") or type(what).__name__ not in ESTIMATORS:
            raise TypeError(f"{what!r} is not an oclclust estimator")
        if k:
            raise TypeError(f"shape {shape!r} gives an estimator: give (estimator, n_features)")
        estimator = type(what)(**what.get_params())
    _positive(d, "n_features", shape)
    params = estimator.get_params()
    size = params[ESTIMATORS[type(estimator).__name__].size_param]
    estimator.set_params(**{key: value for key, value in SHORT_FIT.items() if key in params})
    fits = [(estimator, int(d), int(size))]
    if params.get("init_params") == "kmeans":
        kmeans = estimator_class("KMeans")(n_clusters=int(size), **{
            key: value for key, value in SHORT_FIT.items() if key != "checkpoint"})
        fits.append((kmeans, int(d), int(size)))
    return fits


def _positive(value, name, shape):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r} in {shape!r}")
