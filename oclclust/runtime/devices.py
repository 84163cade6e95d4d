"""OpenCL devices: discovery, DeviceProfile and selection.

A DeviceProfile is what the device reports merged with the matching entries of
devices.yaml (profiles.py): the generic terms as fields, every pass's terms
in ``term_values``, read typed with ``terms(LloydTerms)`` and the like.
Profiles are plain, picklable, hashable data; the pyopencl objects behind
them (context, queue) are looked up on demand and memoised per process.
"""
import dataclasses
import numbers
import os
import warnings

import numpy as np
import pyopencl as cl

from .profiles import (DEVICE_TYPES, GENERIC_TERMS, PROFILE_TERMS, TermValues, current_key,
                       profile_sources, read_terms, resolve_terms)
from .warning_site import user_stacklevel


@dataclasses.dataclass(frozen=True)
class DeviceProfile:
    """An OpenCL device: what it reports, merged with its devices.yaml entries.

    Made by :func:`list_devices` (one a device of every platform that
    loads), :func:`select_devices` and :func:`sub_devices`; pass them as any
    estimator's ``devices``.  Frozen: :meth:`replace` makes a changed copy,
    every value checked as devices.yaml's are.

    Attributes
    ----------
    platform, name, vendor, type, driver_version : str
        What the device reports; ``type`` is "cpu", "gpu" or "accelerator".
    compute_units, local_mem_size, max_work_group_size : int
        What the device reports.
    global_mem_size, max_alloc_size : int
        Its memory and largest buffer, in bytes.
    fp64 : bool
        Whether it computes in double precision.
    native_vector_bytes, platform_index, device_index : int
        Its float vector width in bytes, and where pyopencl lists it.
    work_group_size, groups_per_compute_unit, private_floats : int
        The generic tuning terms of devices.yaml (:doc:`/guide/profiles`).
    local_memory_fraction, memory_fraction : float
        The shares of local and global memory the kernels may take.
    term_values : TermValues
        The passes' terms by devices.yaml key (:meth:`term`, :meth:`terms`).
    profile_entries : tuple
        The devices.yaml entries that matched, in order.
    sub_device : tuple
        (compute-unit counts, index) of a sub-device, else ().

    See Also
    --------
    list_devices : every device's profile.
    sub_devices : several devices of one CPU.
    DeviceManager : how rows are split over devices.

    Examples
    --------
    >>> import oclclust as oc
    >>> profile = oc.select_devices()[0]
    >>> profile.type in ("cpu", "gpu", "accelerator")
    True
    >>> profile.replace(work_group_size=64).work_group_size
    64
    """

    # what the device reports
    platform: str
    name: str
    vendor: str
    type: str
    driver_version: str
    compute_units: int
    local_mem_size: int
    max_work_group_size: int
    global_mem_size: int
    max_alloc_size: int
    fp64: bool
    native_vector_bytes: int
    platform_index: int
    device_index: int
    # the generic terms of devices.yaml (profiles.GENERIC_TERMS)
    work_group_size: int
    groups_per_compute_unit: int
    local_memory_fraction: float
    private_floats: int
    memory_fraction: float
    # the passes' terms by devices.yaml key: read them with terms(TheirClass)
    term_values: TermValues
    profile_entries: tuple = ()
    sub_device: tuple = ()   # (compute-unit counts, index) of a sub-device, else ()

    def __post_init__(self):
        """Every field checked, a hand-made profile's too: a kernel's shape
        is derived from them (a zero or a string here would surface as a
        ZeroDivisionError deep in a planner); the terms by Term.check, as
        devices.yaml's values are."""
        for name in ("platform", "name", "vendor", "driver_version"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"DeviceProfile: {name} must be a str, "
                                f"got {getattr(self, name)!r}")
        if self.type not in DEVICE_TYPES:
            raise ValueError(f"DeviceProfile: type must be one of {sorted(DEVICE_TYPES)}, "
                             f"got {self.type!r}")
        if not isinstance(self.fp64, (bool, np.bool_)):
            raise TypeError(f"DeviceProfile: fp64 must be a bool, got {self.fp64!r}")
        for name, least in _REPORTED_COUNTS.items():
            _check_count(f"DeviceProfile: {name}", getattr(self, name), least)
        for key in GENERIC_TERMS:
            GENERIC_TERMS[key].check(key, getattr(self, key), "DeviceProfile")
        if not isinstance(self.term_values, TermValues):
            raise TypeError(f"DeviceProfile: term_values must be TermValues, "
                            f"got {type(self.term_values).__name__}")
        for key, value in self.term_values.items():
            if key not in PROFILE_TERMS or key in GENERIC_TERMS:
                raise ValueError(f"DeviceProfile: term_values holds {key!r}, not a pass's term")
            PROFILE_TERMS[key].check(key, value, "DeviceProfile")
        if self.sub_device:
            counts, index = self.sub_device
            if not (0 <= index < len(counts) and counts[index] == self.compute_units):
                raise ValueError(f"DeviceProfile: sub_device {self.sub_device!r} does not "
                                 f"match compute_units={self.compute_units}")

    @property
    def key(self):
        return (self.platform_index, self.device_index, self.platform, self.name,
                self.sub_device)

    @property
    def local_memory_budget(self):
        return int(self.local_mem_size * self.local_memory_fraction)

    @property
    def memory_budget(self):
        return int(self.global_mem_size * self.memory_fraction)

    def terms(self, cls):
        """The terms of a pass, as its declared dataclass.

        Parameters
        ----------
        cls : type
            The pass's terms dataclass (``oclclust.passes.lloyd.LloydTerms``, ...).

        Returns
        -------
        terms : cls
            This device's values of them.
        """
        return read_terms(self.term_values, cls)

    def term(self, key):
        """The value of any devices.yaml term.

        Parameters
        ----------
        key : str
            Its devices.yaml key (an old name too).

        Returns
        -------
        value : int, float, str or bool
            This device's value.
        """
        key = current_key(key)
        return getattr(self, key) if key in GENERIC_TERMS else self.term_values[key]

    def replace(self, **changes):
        """A copy with some values changed, checked as every profile is.

        Parameters
        ----------
        **changes
            Fields, or terms by devices.yaml key (old names too).

        Returns
        -------
        profile : DeviceProfile
            The changed copy.
        """
        fields = {f.name for f in dataclasses.fields(self)}
        terms = {}
        for key in set(changes) - fields:
            try:
                terms[current_key(key)] = changes.pop(key)
            except KeyError:
                raise TypeError(f"DeviceProfile has no field or term {key!r}") from None
        if terms:
            changes["term_values"] = TermValues({**self.term_values, **terms})
        return dataclasses.replace(self, **changes)

    def cl_device(self):
        """The pyopencl Device (made once a process; a sub-device's too).

        Returns
        -------
        device : pyopencl.Device
            This profile's device.
        """
        return _cl_device(self.key)

    def queue(self):
        """This device's context and command queue (made once a process).

        Returns
        -------
        context, queue : pyopencl.Context, pyopencl.CommandQueue
            The pair every pass on this device uses.
        """
        return _queue(self.key)

    def __str__(self):
        if self.sub_device:
            counts, index = self.sub_device
            return (f"{self.name} [{self.platform}] sub-device {index} "
                    f"({self.compute_units} of {'+'.join(map(str, counts))} units)")
        return f"{self.name} [{self.platform}]"


# what a device reports that must be a count: the least value that makes sense
_REPORTED_COUNTS = {"compute_units": 1, "local_mem_size": 0, "max_work_group_size": 1,
                    "global_mem_size": 1, "max_alloc_size": 1, "native_vector_bytes": 1,
                    "platform_index": 0, "device_index": 0}


def _check_count(what, value, least):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an int, got {value!r}")
    if value < least:
        raise ValueError(f"{what} must be at least {least}, got {value!r}")


def sub_devices(profile, counts):
    """Profiles of sub-devices that split one device: several devices of one CPU.

    A fit given them spreads its rows over them as over several GPUs
    (clCreateSubDevices BY_COUNTS; NVIDIA's GPUs cannot be split).

    Parameters
    ----------
    profile : DeviceProfile
        The device to split (not a sub-device).
    counts : list of int
        Compute units of each sub-device: positive, summing to at most the
        device's.

    Returns
    -------
    profiles : list of DeviceProfile
        One a count.

    See Also
    --------
    DeviceManager : how rows are split over devices.

    Examples
    --------
    >>> import oclclust as oc
    >>> cpu = oc.select_devices("cpu")[0]
    >>> halves = oc.sub_devices(cpu, [1, 1])
    >>> [p.compute_units for p in halves]
    [1, 1]
    """
    if profile.sub_device:
        raise ValueError(f"sub_devices: {profile} is a sub-device already")
    if isinstance(counts, (str, bytes)) or not hasattr(counts, "__len__") or not counts:
        raise ValueError(f"sub_devices: counts must be a non-empty list of ints, "
                         f"got {counts!r}")
    for c in counts:
        _check_count("sub_devices: a count", c, 1)
    counts = tuple(int(c) for c in counts)
    if sum(counts) > profile.compute_units:
        raise ValueError(f"sub_devices: counts {list(counts)} sum to {sum(counts)}, more "
                         f"than {profile}'s {profile.compute_units} compute units")
    return [dataclasses.replace(profile, compute_units=c, sub_device=(counts, i))
            for i, c in enumerate(counts)]


# ------------------------------------------------------------------ discovery
def _device_type(dev):
    if dev.type & cl.device_type.GPU:
        return "gpu"
    if dev.type & cl.device_type.CPU:
        return "cpu"
    return "accelerator"


def _reported(dev, platform, pi, di):
    return dict(
        platform=platform.name.strip(), name=dev.name.strip(), vendor=dev.vendor.strip(),
        type=_device_type(dev), driver=dev.driver_version.strip(),
        compute_units=dev.max_compute_units, local_mem_size=dev.local_mem_size,
        max_work_group_size=dev.max_work_group_size, global_mem_size=dev.global_mem_size,
        max_alloc_size=dev.max_mem_alloc_size,
        native_vector_bytes=4 * max(1, dev.native_vector_width_float),
        fp64="cl_khr_fp64" in dev.extensions or dev.double_fp_config != 0,
        platform_index=pi, device_index=di)


# what a machine without a usable OpenCL device needs (apt's PoCL, PyPI's, or a driver)
INSTALL_HINT = ("install pocl-opencl-icd (apt) or pocl-binary-distribution (pip) for the "
                "CPU, or your GPU's OpenCL driver")


class NoOpenCLError(RuntimeError):
    """No OpenCL device can be used on this machine: no runtime (ICD) is
    installed, or none of those installed loads.  Raised where devices are
    selected; its message says what to install.

    See Also
    --------
    list_devices : the devices there are.
    show_devices : the same as a table.
    """


def no_opencl_error():
    """A NoOpenCLError naming what to install (and why each platform found
    was skipped, if any was)."""
    # "no platform" (clGetPlatformIDs: PLATFORM_NOT_FOUND_KHR) is what the first words say
    why = "; ".join(e for e in DISCOVERY_ERRORS if "PLATFORM_NOT_FOUND" not in e)
    return NoOpenCLError(f"no OpenCL runtime found: {INSTALL_HINT}"
                         + (f" ({why})" if why else ""))


DISCOVERY_ERRORS = []
_LISTED = {}   # profile files' key -> (profiles, discovery errors): once per process


def list_devices():
    """Every OpenCL device of every platform that loads, with its profile.

    Discovered once a process and set of profile texts (the platforms an ICD
    loader offers do not change; every fit asks).
    ``python -m oclclust devices`` prints them.

    Returns
    -------
    profiles : list of DeviceProfile
        One a device, platform by platform.

    See Also
    --------
    select_devices : the devices a ``devices`` value picks.
    DeviceProfile : what each says.

    Examples
    --------
    >>> import oclclust as oc
    >>> profiles = oc.list_devices()
    >>> all(isinstance(p, oc.DeviceProfile) for p in profiles)
    True
    """
    key, entries = profile_sources()
    if key not in _LISTED:
        profiles = _discover(entries)
        _LISTED[key] = (profiles, list(DISCOVERY_ERRORS))
    profiles, errors = _LISTED[key]
    DISCOVERY_ERRORS[:] = errors
    return list(profiles)


def _discover(entries):
    profiles = []
    DISCOVERY_ERRORS.clear()
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:
        DISCOVERY_ERRORS.append(f"no OpenCL platform could be loaded: {exc}")
        return []
    for pi, platform in enumerate(platforms):
        try:
            devs = platform.get_devices()
        except cl.Error as exc:
            msg = f"OpenCL platform {platform.name!r} skipped: {exc}"
            DISCOVERY_ERRORS.append(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=user_stacklevel())
            continue
        for di, dev in enumerate(devs):
            rep = _reported(dev, platform, pi, di)
            terms, used = resolve_terms(rep, entries)
            generic = {key: terms.pop(key) for key in GENERIC_TERMS}
            driver = rep.pop("driver")
            profiles.append(DeviceProfile(driver_version=driver, profile_entries=used,
                                          term_values=TermValues(terms), **rep, **generic))
    return profiles


def match_names(parts, available):
    """Profiles named by the lower-case strings *parts*.  A part that is a
    platform's or device's full name picks only that one: "Intel(R) OpenCL"
    must not also pick "Intel(R) OpenCL Graphics"; any other part is a
    substring of the platform, device or vendor name."""
    chosen = []
    for part in parts:
        exact = [p for p in available if part in (p.platform.lower(), p.name.lower())]
        chosen += exact or [p for p in available
                            if part in p.platform.lower() or part in p.name.lower()
                            or part in p.vendor.lower()]
    return [p for p in available if p in chosen]   # each once, in discovery order


def select_devices(devices=None):
    """The profiles a ``devices`` value picks (every estimator's forms).

    Parameters
    ----------
    devices : str, DeviceProfile, pyopencl Device or list of them, default=None
        "all", "gpu", "cpu", "accelerator", platform / device name
        substrings (comma-separated), a profile or pyopencl Device, or a
        list of them (a Device stands for its profile).  None:
        ``$OCLCLUST_DEVICES``, else "all".

    Returns
    -------
    profiles : list of DeviceProfile
        The devices picked; ValueError, naming the devices there are,
        where none matches; NoOpenCLError where the machine has no device.

    See Also
    --------
    list_devices : every device.

    Examples
    --------
    >>> import oclclust as oc
    >>> cpus = oc.select_devices("cpu")
    >>> {p.type for p in cpus}
    {'cpu'}
    """
    if devices is None:
        devices = os.environ.get("OCLCLUST_DEVICES", "all")
    if isinstance(devices, (DeviceProfile, cl.Device)):
        return [as_profile(devices)]
    if not isinstance(devices, str):
        chosen = list(devices)
        if not chosen or not all(isinstance(d, (DeviceProfile, cl.Device)) for d in chosen):
            raise ValueError("devices must be a string or a non-empty list of DeviceProfile "
                             "or pyopencl Device")
        return [as_profile(d) for d in chosen]
    available = list_devices()
    if not available:
        raise no_opencl_error()
    want = devices.strip().lower()
    if want == "all":
        chosen = available
    elif want in DEVICE_TYPES:
        chosen = [p for p in available if p.type == want]
    else:
        chosen = match_names([s.strip() for s in want.split(",") if s.strip()], available)
    if not chosen:
        names = ", ".join(str(p) for p in available) or "none"
        raise ValueError(f"no OpenCL device matches devices={devices!r}; available: {names}")
    return chosen


# ------------------------------------------------------- pyopencl objects
_DEVICES = {}
_QUEUES = {}


def _cl_device(key):
    if key not in _DEVICES:
        pi, di, platform, name, sub = key
        if sub:
            counts, index = sub
            parent = _cl_device((pi, di, platform, name, ()))
            prop = cl.device_partition_property
            try:
                subs = parent.create_sub_devices([prop.BY_COUNTS, *counts,
                                                  prop.BY_COUNTS_LIST_END])
            except cl.Error as exc:
                raise ValueError(f"{name} [{platform}] cannot be split by counts {counts}: "
                                 f"{exc}") from exc
            for i, dev in enumerate(subs):
                _DEVICES[(pi, di, platform, name, (counts, i))] = dev
            return _DEVICES[key]
        dev = cl.get_platforms()[pi].get_devices()[di]
        if dev.name.strip() != name:
            raise RuntimeError(f"OpenCL device {name!r} of {platform!r} is no longer present")
        _DEVICES[key] = dev
    return _DEVICES[key]


def _queue(key):
    if key not in _QUEUES:
        # the context is kept beside its queue: Intel's runtime invalidates a
        # queue's context once the last Python reference to it goes
        ctx = cl.Context([_cl_device(key)])
        _QUEUES[key] = (ctx, cl.CommandQueue(ctx))
    return _QUEUES[key][1]


def profile_of_context(ptr):
    """The profile of the device whose memoised context (queue()) has the
    int_ptr *ptr*, or None if oclclust made no such context."""
    for key, (ctx, _) in list(_QUEUES.items()):
        if ctx.int_ptr != ptr:
            continue
        root = next((p for p in list_devices() if p.key == key[:4] + ((),)), None)
        if root is None or not key[4]:
            return root
        counts, index = key[4]
        return dataclasses.replace(root, compute_units=counts[index], sub_device=key[4])
    return None


def as_profile(device):
    """The profile of *device*: a DeviceProfile as it is; a pyopencl Device
    resolved by its handle (a root device's handle is fixed for the process,
    a sub-device's is the one sub_devices made), never by its name: the GPUs
    of one host share a name."""
    if isinstance(device, DeviceProfile):
        return device
    for p in list_devices():
        if p.cl_device().int_ptr == device.int_ptr:
            return p
    for key, dev in _DEVICES.items():
        if key[4] and dev.int_ptr == device.int_ptr:
            return next(dataclasses.replace(p, compute_units=dev.max_compute_units,
                                            sub_device=key[4])
                        for p in list_devices() if p.key == key[:4] + ((),))
    if device.parent_device is not None:
        raise ValueError(f"devices: the sub-device of {device.name.strip()!r} was not made "
                         "by oclclust.sub_devices (its profile is unknown): split the device "
                         "with oclclust.sub_devices")
    raise ValueError(f"devices: the pyopencl Device {device.name.strip()!r} is not among "
                     "oclclust's devices")


def profile_of_queue(queue):
    """The profile of the device a (user's) pyopencl queue runs on."""
    dev = queue.device
    for p in list_devices():
        d = p.cl_device()
        if d.int_ptr == dev.int_ptr or (d.name == dev.name and
                                        d.platform.name == dev.platform.name):
            return p
    raise ValueError(f"the queue's device {dev.name!r} is not among oclclust's devices")


def preferred(profiles):
    """Order in which a single-device fit picks devices: GPUs first, then size."""
    rank = {"gpu": 0, "accelerator": 1, "cpu": 2}
    return sorted(profiles, key=lambda p: (rank[p.type], -p.compute_units))
