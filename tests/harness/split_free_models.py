"""The fits of tests/parallel/test_split_free.py, shared with the ranks that
tests/harness/mpi_script.py runs (case ``split_free``): every iterative
estimator as it is fitted on any split, the data, and what a fit learned.

A fit's model is every attribute of its model file's schema
(io/model_schema.py) but those that say where it ran (``devices_``,
``reshards_``, ``kernels_``, ``strategy_``), with its history less each
iteration's seconds and rows per device.
"""
import numpy as np

import oclclust as oc
from oclclust.io.model_schema import SCHEMAS

N, D, K = 2000, 4, 3          # 4 blocks of 512 rows (the smallest) and a short one
ITER = 4                      # iterations of a fit (and of its resumption)
WHERE = ("devices_", "reshards_", "kernels_", "strategy_")   # where a fit ran
ROW_ATTRS = ("labels_", "u_")                                # one value a row
HISTORY_WHERE = ("seconds", "rows_per_device")


def data(dtype, n=N, seed=0):
    """Blobs with a little overlap (the sums' last bits matter to the model)."""
    rng = np.random.RandomState(seed)
    centres = rng.uniform(-4, 4, size=(K, D))
    return (centres[np.arange(n) % K] + rng.normal(size=(n, D))).astype(dtype)


def _lloyd(variant):
    def make(devices, **kw):
        devices = None if devices is None else [p.replace(lloyd_variant=variant)
                                                for p in devices]
        return oc.KMeans(K, n_init=1, max_iter=ITER, tol=0, random_state=0,
                         devices=devices, **kw)
    return make


def _gmm(covariance_type):
    def make(devices, **kw):
        return oc.GaussianMixture(K, covariance_type=covariance_type, max_iter=ITER, tol=0,
                                  random_state=0, devices=devices, **kw)
    return make


# id -> make(devices, **kw) (kw: comm); MPI: those with a comm
ESTIMATORS = {
    **{f"KMeans-{v}": _lloyd(v) for v in ("tiled", "rowwise", "blocked")},
    "MiniBatchKMeans": lambda devices, **kw: oc.MiniBatchKMeans(
        K, batch_size=256, max_iter=2, n_init=1, random_state=0, devices=devices, **kw),
    "EnsembleKMeans": lambda devices, **kw: oc.EnsembleKMeans(
        K, n_models=3, max_iter=ITER, tol=0, random_state=0, devices=devices, **kw),
    "FuzzyCMeans": lambda devices, **kw: oc.FuzzyCMeans(
        K, max_iter=ITER, tol=0, random_state=0, devices=devices, **kw),
    **{f"GaussianMixture-{c}": _gmm(c) for c in ("full", "diag", "tied", "spherical")},
}
MPI_ESTIMATORS = [name for name in ESTIMATORS if name != "MiniBatchKMeans"]   # no comm


def one_device(devices):
    """The device a one-device fit on *devices* runs on (conftest's
    ``profile``), as a list: a rank's, a worker's, the reference's."""
    return oc.runtime.devices.preferred(devices)[:1]


def model(est):
    """{attribute: value} of what *est* learned (see the module), per-row
    values as numpy (a Dask fit's are dask arrays)."""
    out = {}
    for name in SCHEMAS[type(est).__name__].attributes:
        if name in WHERE or not hasattr(est, name):
            continue
        value = getattr(est, name)
        if name == "history_":
            value = [{k: v for k, v in step.items() if k not in HISTORY_WHERE}
                     for step in value]
        out[name] = value.compute() if hasattr(value, "compute") else value
    return out


def differences(got, ref):
    """The attributes of model *got* not bit for bit those of *ref*."""
    def same(a, b):
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], dict):
            return len(a) == len(b) and all(
                a_.keys() == b_.keys() and all(same(a_[k], b_[k]) for k in a_)
                for a_, b_ in zip(a, b))
        a, b = np.asarray(a), np.asarray(b)
        return np.array_equal(a, b, equal_nan=a.dtype.kind == "f" and b.dtype.kind == "f")
    missing = sorted(set(ref) ^ set(got))
    return missing + [k for k in ref if k in got and not same(got[k], ref[k])]


def resume(est):
    """*est* set to continue its fit from what it learned: GaussianMixture's
    warm start, the others' init from their centres (one init)."""
    if isinstance(est, oc.GaussianMixture):
        return est.set_params(warm_start=True)
    if isinstance(est, oc.EnsembleKMeans):
        return est.set_params(init=est.models_)
    est.set_params(init=est.cluster_centers_)
    if "n_init" in est.get_params():
        est.set_params(n_init=1)
    return est
