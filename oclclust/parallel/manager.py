"""The device manager: one fit across all devices of a host.

DeviceManager holds the host's devices and how rows are split among them
(weights: compute units, explicit, or measured throughput), and lays a data
set out over them (scatter: a device_data.DeviceData, one shard a device);
surviving() drops a device that fails during a fit and starts the fit over
on the others.
"""
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl

from ..runtime.kernel_recorder import recorded_on_workers
from ..runtime.devices import DeviceProfile, preferred, select_devices, sub_devices
# DEVICE_ERRORS and measuring: imported from here by the families' backends too
from .calibration import Calibration  # noqa: F401
from .device_data import DEVICE_ERRORS, DeviceData, DeviceFailure  # noqa: F401
from .shares import checked_memory_budget, checked_weights, measuring  # noqa: F401
from ..runtime.warning_site import user_stacklevel

# the former name of the host's implementation (sharded_data.ShardedData is
# the protocol it declares): code written against manager.ShardedData still runs
ShardedData = DeviceData

# DeviceManager's named weightings
WEIGHTINGS = ("auto", "compute_units", "measured")


def surviving(data, attempt, rng=None):
    """attempt() over *data* (a sharded_data.ShardedData), closed
    afterwards: a device that fails is dropped with a warning, its rows
    move to the others and attempt() starts over, from the same state of
    *rng* when given."""
    state = None if rng is None else rng.get_state()
    try:
        while True:
            try:
                return attempt()
            except DeviceFailure as failure:
                data.manager.drop(failure)
                data.reshard()
                if rng is not None:
                    rng.set_state(state)
    finally:
        data.close()


class DeviceManager:
    """Devices of one host and how work is split among them.

    Give it as an estimator's ``devices``: each device's rows are copied to
    it once and stay there across iterations; every pass runs on all of
    them at once and their statistics are summed in row order, so the model
    does not depend on the split (:doc:`/guide/several_devices`).

    Parameters
    ----------
    devices : str, DeviceProfile, pyopencl Device or list of them, default=None
        The devices, as :func:`select_devices` reads them (a CPU that two
        platforms expose counts once); a list of profiles is taken as given.
    weights : "auto", "compute_units", "measured" or list of float, default="auto"
        How the rows are split: by compute units; measured: each device's
        rate for the fit's pass as its profile knows it (devices.yaml's
        ``*_rate`` terms), else from a timed pass on a sample, and then the
        joint passes' timings (rows move again only when the time lost to
        imbalance has paid for the move), a device whose rate is under
        1/32 of the sum given no rows (``left_out``); or one number a
        device.  "auto": compute units over devices that are alike (one
        model of one vendor's runtime: identical GPUs, sub-devices of one
        CPU), measured over others (a GPU beside a CPU); where the fit has
        no pass to measure (MiniBatchKMeans) and no profile knows a rate,
        only the devices alike the first (GPUs first) take rows.
    memory_budget : int or None, default=None
        Bytes of rows a device holds at once; a larger shard streams
        through two staging buffers of half of it each.  None: the
        profile's share of the device's memory, less the passes' per-row
        state.
    executor : callable, default=concurrent.futures.ThreadPoolExecutor
        Makes the pools (called with max_workers) whose threads drive the
        devices at once.  A harness whose OpenCL runtime must be called
        from one thread gives one that runs each task on the calling thread.

    Attributes
    ----------
    profiles : list of DeviceProfile
        The devices, in the order the rows are split.
    weights : str or ndarray
        The split asked for.
    measured : ndarray or None
        The measured weights (rows per second; 0 for a device left out),
        once measured.
    left_out : list of DeviceProfile
        The devices that measured weights gave no rows (their rate under
        1/32 of the devices' sum: ``oclclust.parallel.shares.MIN_SHARE``),
        or that "auto" left aside for want of a measurement.
    reshards : int
        Times measured weights moved rows between devices.

    See Also
    --------
    select_devices : the devices a ``devices`` value picks.
    sub_devices : several devices of one CPU.

    Examples
    --------
    >>> import numpy as np
    >>> import oclclust as oc
    >>> X = np.random.default_rng(0).normal(size=(1000, 4))
    >>> manager = oc.DeviceManager(weights=[1.0] * len(oc.DeviceManager().profiles))
    >>> km = oc.KMeans(3, random_state=0, devices=manager).fit(X)
    >>> sum(km.devices_.values())
    1000
    """

    def __init__(self, devices=None, weights="auto", memory_budget=None,
                 executor=ThreadPoolExecutor):
        if isinstance(devices, DeviceManager):
            raise ValueError("devices is already a DeviceManager")
        if isinstance(devices, (list, tuple)) and devices and \
                all(isinstance(p, (DeviceProfile, cl.Device)) for p in devices):
            self.profiles = select_devices(devices)   # as given: the caller knows best
            twice = [p for i, p in enumerate(self.profiles) if p.key in
                     [q.key for q in self.profiles[:i]]]
            if twice:
                raise ValueError(f"devices lists {twice[0]} twice: a device takes one share "
                                 "of the rows (sub_devices splits one device)")
        else:
            self.profiles = reserve_host_cores(
                _one_per_processor(preferred(select_devices(devices))))
        if isinstance(weights, str):
            if weights not in WEIGHTINGS:
                raise ValueError(f"weights must be 'auto', 'compute_units', 'measured' or "
                                 f"numbers, got {weights!r}")
            self.weights = weights
        else:
            self.weights = checked_weights(weights, len(self.profiles))
        self.memory_budget = checked_memory_budget(memory_budget)
        self.executor = recorded_on_workers(executor)
        self.measured = None     # rows per second of each device, once known
        self.reshards = 0        # times rows were laid out anew (rebalancing, faults)
        self.left_out = []       # devices measured weights (or "auto") gave no rows

    def current_weights(self):
        """The shares the rows are split by now.

        Returns
        -------
        weights : ndarray of shape (n_devices,)
            The given weights, the measured ones once measured, else the
            devices' compute units (0 for a device left out).
        """
        if isinstance(self.weights, np.ndarray):
            return self.weights
        if measuring(self) and self.measured is not None:
            return self.measured
        left_out = getattr(self, "left_out", ())   # (a manager pickled before it had one)
        return np.array([0 if p in left_out else p.compute_units for p in self.profiles],
                        dtype=np.float64)

    def budget(self, profile, d, dtype):
        """Bytes of rows a device holds at once.

        Parameters
        ----------
        profile : DeviceProfile
            The device.
        d : int
            Values a row.
        dtype : numpy dtype
            The rows' dtype.

        Returns
        -------
        budget : int
            ``memory_budget``, or the profile's budget less the per-row
            state of a pass (labels, distances, weights: 4 + 3 items a row).
        """
        if self.memory_budget is not None:
            return self.memory_budget
        row = d * np.dtype(dtype).itemsize
        return profile.memory_budget * row // (row + 4 + 3 * np.dtype(dtype).itemsize)

    def drop(self, failure):
        """Forget a failed device (with a warning); its rows go to the others.

        Parameters
        ----------
        failure : DeviceFailure
            The device's failure; RuntimeError where it was the last device.
        """
        i = self.profiles.index(failure.profile)
        warnings.warn(f"{failure}; its rows move to the remaining devices", RuntimeWarning,
                      stacklevel=user_stacklevel())
        del self.profiles[i]
        if not self.profiles:
            raise RuntimeError(f"no OpenCL device left: {failure}") from failure.cause
        if isinstance(self.weights, np.ndarray):
            self.weights = np.delete(self.weights, i)
            if not self.weights.any():   # the devices given no share take the rows now
                self.weights = np.ones(len(self.profiles))
        if self.measured is not None:
            self.measured = np.delete(self.measured, i)
        if all(p in getattr(self, "left_out", ()) for p in self.profiles):
            # the devices left out for slowness are all that is left: they take
            # the rows, by compute units (their own rates were not kept)
            self.left_out, self.measured = [], None

    def scatter(self, X, sample_weight=None, calibration=None, dtype=None, stat_values=1):
        """Spread host rows (or take a device array as it is) over the devices.

        Host rows are converted chunk by chunk on their way to a device, a
        memmap read a chunk at a time.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or pyopencl Array
            The rows.
        sample_weight : array-like of shape (n_samples,), default=None
            Their weights.
        calibration : Calibration or callable, default=None
            With measured weights not yet measured, each device's rate as
            its profile knows it (Calibration.known_rate), else timed first
            on a sample on each device: fn(partition) (Calibration.pass_on)
            sets the algorithm's pass up over that partition and returns a
            function of no arguments that runs it once.
        dtype : numpy dtype, default=None
            The dtype the devices hold (None: X's).
        stat_values : int, default=1
            Float64 values of one row block's partial statistics in the
            fit's passes: they size the blocks every split of the rows
            falls on.

        Returns
        -------
        data : DeviceData
            The rows on the devices (the passes' ShardedData).
        """
        return DeviceData(self, X, sample_weight, calibration, dtype, stat_values)


def _one_per_processor(profiles):
    """A CPU that several platforms expose (PoCL's "pthread-haswell-AMD EPYC"
    and Intel's "AMD EPYC") is one processor: splitting rows between its two
    faces would only make them fight for the same cores."""
    kept = []
    for p in profiles:
        if not any(p.type == q.type == "cpu" and p.compute_units == q.compute_units and
                   (p.name in q.name or q.name in p.name) for q in kept):
            kept.append(p)
    return kept


def reserve_host_cores(profiles, per_gpu=1):
    """A CPU device working beside GPUs leaves *per_gpu* cores per GPU to the
    host threads that feed them (launches, transfers, reductions): a CPU
    runtime that takes every core would slow each GPU pass to its own
    pace.  The CPU becomes a sub-device of the remaining cores."""
    gpus = sum(p.type == "gpu" for p in profiles)
    keep = gpus * per_gpu
    return [sub_devices(p, [p.compute_units - keep])[0]
            if p.type == "cpu" and not p.sub_device and gpus and p.compute_units > keep + 1
            else p for p in profiles]
