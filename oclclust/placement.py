"""Where an estimator's data goes: the device, the compute dtype, the partition."""
import warnings

import numpy as np
import pyopencl.array as cla

from .devices import preferred, profile_of_queue, select_devices
from .partition import DevicePartition
from .validation import as_dtype, check_data, check_sample_weight

FLOAT_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def choose_device(estimator, X):
    """The fit's device: a device array's own (its profile among the selected
    ones, so a user's tuned profile applies), else the preferred selected one."""
    if isinstance(X, cla.Array):
        own = profile_of_queue(X.queue)
        if estimator.devices is None or isinstance(estimator.devices, str):
            return own   # a name picks among discovered profiles: own is one
        return next((p for p in select_devices(estimator.devices) if p.key == own.key), own)
    return preferred(select_devices(estimator.devices))[0]


def compute_dtype(requested, X, profile):
    """float32 or float64, as scikit-learn keeps float32 and promotes the rest."""
    if requested is not None:
        dtype = np.dtype(requested)
        if dtype not in FLOAT_TYPES:
            raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    else:
        dtype = np.dtype(np.float32 if X.dtype == np.float32 else np.float64)
        if dtype == np.float64 and not profile.fp64:
            warnings.warn(f"{profile} has no fp64: computing in float32", RuntimeWarning,
                          stacklevel=3)
            dtype = np.dtype(np.float32)
    if dtype == np.float64 and not profile.fp64:
        raise ValueError(f"the OpenCL device {profile} does not support float64 "
                         "(cl_khr_fp64): use dtype='float32'")
    return dtype


def fit_partition(estimator, X, sample_weight):
    """Validated data of a fit on its device, with host weights (ones if none)."""
    X = check_data(X, type(estimator).__name__)
    profile = choose_device(estimator, X)
    dtype = compute_dtype(estimator.dtype, X, profile)
    w = check_sample_weight(sample_weight, X.shape[0], dtype)
    part = DevicePartition(profile, as_dtype(X, dtype), w)
    return part, (w if w is not None else np.ones(part.n, dtype))


def new_partition(estimator, X, sample_weight, dtype):
    """Validated data of a predict-like call, in the fitted dtype."""
    X = check_data(X, type(estimator).__name__)
    if X.shape[1] != estimator.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {type(estimator).__name__} is "
                         f"expecting {estimator.n_features_in_} features as input.")
    w = check_sample_weight(sample_weight, X.shape[0], dtype)
    return DevicePartition(choose_device(estimator, X), as_dtype(X, dtype), w)
