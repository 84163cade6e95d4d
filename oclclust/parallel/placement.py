"""Where an estimator's data goes: the devices, the compute dtype, the shards."""
import copy
import sys
import warnings

import numpy as np
import pyopencl.array as cla

from ..runtime.devices import profile_of_queue, select_devices
from .comm import Ranks, local_rank
from .manager import DeviceManager
from .sharded_data import combined_mean_var_finite
from ..runtime.validation import as_dtype, check_data, check_sample_weight, packed_type
from ..runtime.warning_site import user_stacklevel

FLOAT_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def manager_for(X, devices, comm=None):
    """The devices of a call on X: a device array's own (its profile among
    *devices*, so a user's tuned profile applies), else *devices* (a name, a
    list of profiles, or a DeviceManager, copied: a fit may drop a failed
    device from it); with *comm*, this rank's share of a host's GPUs."""
    if isinstance(X, cla.Array):
        own = profile_of_queue(X.queue)
        if isinstance(devices, DeviceManager):
            devices = devices.profiles
        if devices is not None and not isinstance(devices, str):
            own = next((p for p in select_devices(devices) if p.key == own.key), own)
        return DeviceManager([own])
    if isinstance(devices, DeviceManager):
        return copy.deepcopy(devices)
    manager = DeviceManager(devices)
    if comm is not None and (devices is None or isinstance(devices, str)):
        # ranks of one host split its GPUs by local rank (a list is the user's choice)
        manager.profiles = bind_devices(manager.profiles, comm)
    return manager


def compute_dtype(requested, X, profiles):
    """float32 or float64, as scikit-learn keeps float32 and promotes the rest."""
    no_fp64 = [p for p in profiles if not p.fp64]
    if requested is not None:
        dtype = np.dtype(requested)
        if dtype not in FLOAT_TYPES:
            raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    else:
        # float32 stays, 2-byte floats are computed in float32 (and kept at 2
        # bytes where they would not fit: parallel.shard), the rest in float64
        single = X.dtype == np.float32 or packed_type(X.dtype) is not None
        dtype = np.dtype(np.float32 if single else np.float64)
        if dtype == np.float64 and no_fp64:
            warnings.warn(f"{no_fp64[0]} has no fp64: computing in float32", RuntimeWarning,
                          stacklevel=user_stacklevel())
            dtype = np.dtype(np.float32)
    if dtype == np.float64 and no_fp64:
        raise ValueError(f"the OpenCL device {no_fp64[0]} does not support float64 "
                         "(cl_khr_fp64): use dtype='float32'")
    return dtype


def _local_fit_data(X, sample_weight, devices, dtype, comm, calibration, name, stat_values=1,
                    prepare=None):
    """This rank's validated rows spread over its devices, with host weights
    (ones if none); *calibration*, *stat_values*: see DeviceManager.scatter;
    *prepare*: see fit_data."""
    X = check_data(X if prepare is None else prepare(X), name)
    manager = manager_for(X, devices, comm)
    dtype = compute_dtype(dtype, X, manager.profiles)
    w = check_sample_weight(sample_weight, X.shape[0], dtype)
    data = manager.scatter(as_dtype(X, dtype), w, calibration, dtype, stat_values)
    return data, (w if w is not None else np.ones(data.n, dtype))


def new_data(X, sample_weight, devices, dtype, n_features, name, comm=None):
    """Validated data of a predict-like call of estimator *name* fitted on
    *n_features* features, in the fitted *dtype*."""
    X = check_data(X, name)
    if X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, but {name} is "
                         f"expecting {n_features} features as input.")
    w = check_sample_weight(sample_weight, X.shape[0], dtype)
    return manager_for(X, devices, comm).scatter(as_dtype(X, dtype), w, dtype=dtype)


def bind_devices(profiles, comm):
    """The devices of this rank: with several ranks on a host that has GPUs,
    the GPU of the rank's local index (round robin), alone; else all of
    *profiles* (ranks sharing a CPU share its cores)."""
    if comm is None or comm.Get_size() == 1:
        return profiles
    return bind_by_index(profiles, *local_rank(comm))


def bind_by_index(profiles, index, count):
    """The devices of the process of local *index* among *count* on its
    host (an MPI rank, a Dask worker): see bind_devices."""
    gpus = [p for p in profiles if p.type == "gpu"]
    if count > 1 and gpus:
        return [gpus[index % len(gpus)]]
    return profiles


def fit_data(X, sample_weight, devices, dtype, comm=None, calibration=None, name="KMeans",
             stat_values=1, prepare=None):
    """(ShardedData, host weights, Ranks) of a fit of estimator *name*: this
    rank's rows on its *devices* in the compute dtype (*dtype* or from X),
    and the collective check of all ranks' shards (*comm*: None for one
    process); *calibration*, *stat_values*: see DeviceManager.scatter;
    *prepare*: what the estimator makes of X first (spherical k-means' unit
    rows), inside the check: a rank it refuses makes every rank raise."""
    args = (X, sample_weight, devices, dtype, comm, calibration, name, stat_values, prepare)
    if comm is None:
        data, w = _local_fit_data(*args)
        return data, w, Ranks.alone(data)
    data, w, error, shape = None, None, None, (0, 0, "float64")
    if comm.Get_size() > 1:
        local_rank(comm)   # collective: here, where every rank passes
    try:
        data, w = _local_fit_data(*args)
        shape = (data.n, data.d, data.dtype)
    except BaseException as exc:   # noqa: BLE001 -- an interrupt too: reported on every rank
        error = exc
    try:
        ranks = Ranks(comm, *shape, error=error)
    except BaseException:
        if data is not None:
            data.close()
        raise
    return data, w, ranks


def joined_mean_var_finite(data, ranks):
    """(means, variances, finite) of all ranks' rows, the same bits over any
    split of them (sharded_data.combined_mean_var_finite)."""
    return combined_mean_var_finite(data, ranks)


def is_dask_array(X):
    """Whether X is a dask array (without importing dask: a process that
    never imported it holds none)."""
    array = sys.modules.get("dask.array")
    return array is not None and isinstance(X, array.Array)
