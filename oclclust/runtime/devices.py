"""OpenCL devices: discovery, tuning profiles (devices.yaml) and selection.

A DeviceProfile is what the device reports merged with the matching entries of
devices.yaml.  Profiles are plain, picklable data; the pyopencl objects behind
them (context, queue) are looked up on demand and memoised per process.
"""
import dataclasses
import os
import warnings
from pathlib import Path

import pyopencl as cl
import yaml

from .resources import shipped_profiles_path

# Profile terms: name -> (type, minimum, maximum).  Nothing from a YAML file
# reaches a kernel without passing this table.
PROFILE_TERMS = {
    "work_group_size": (int, 1, 4096),
    "points_per_item": (int, 1, 16),
    "centroid_tile": (int, 1, 64),
    "groups_per_compute_unit": (int, 1, 256),
    "local_memory_fraction": (float, 0.0, 1.0),
    "private_floats": (int, 16, 65536),
    "memory_fraction": (float, 0.001, 1.0),
    "lloyd_variant": (str, ("tiled", "rowwise", "gemm", "mma"), None),
    # the "gemm" Lloyd variant: points x centroids per work-group tile, per
    # work-item register tile, dimensions per local-memory chunk, vector width
    "lloyd_tile_rows": (int, 1, 1024),
    "lloyd_tile_centroids": (int, 1, 1024),
    "lloyd_reg_rows": (int, 1, 16),
    "lloyd_reg_centroids": (int, 1, 16),
    "lloyd_depth": (int, 1, 256),
    "lloyd_vector_width": (int, 1, 16),
    "lloyd_prefetch": (int, 0, 2),
    # ensemble k-means "auto": strategy, model access order, KD-tree choice
    "ensemble_strategy": (str, ("concatenated", "task", "data"), None),
    "ensemble_order": (str, ("distributed", "uniform"), None),
    # 1: local statistics as 32-bit word pairs (where 64-bit local atomics are slow)
    "ensemble_word_atomics": (int, 0, 1),
    # the statistics pass's work-group size and groups per compute unit (0:
    # work_group_size, groups_per_compute_unit)
    "ensemble_work_group_size": (int, 0, 4096),
    "ensemble_groups_per_compute_unit": (int, 0, 4096),
    "kdtree_mapping": (str, ("direct", "distributed", "replicated"), None),
    "kdtree_max_dims": (int, 0, 4096),
    "kdtree_min_rows": (int, 0, 1 << 40),
    "kdtree_leaf_size": (int, 8, 1 << 20),
    "kdtree_groups_per_compute_unit": (int, 1, 4096),
    # 1: the distances of c-means, GMM (diagonal) and the linkage matrix as
    # register tiles (templates/distance_tile.cl.mako, k-means' gemm tiles)
    "cmeans_distance_tiles": (int, 0, 1),
    "gmm_distance_tiles": (int, 0, 1),
    "linkage_distance_tiles": (int, 0, 1),
}
MATCH_KEYS = {"vendor", "name", "platform", "driver", "type"}
DEVICE_TYPES = {"cpu", "gpu", "accelerator"}


class ProfileError(ValueError):
    """A devices.yaml file is malformed or holds an out-of-range value."""


@dataclasses.dataclass(frozen=True)
class DeviceProfile:
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
    platform_index: int
    device_index: int
    work_group_size: int
    points_per_item: int
    centroid_tile: int
    groups_per_compute_unit: int
    local_memory_fraction: float
    private_floats: int
    memory_fraction: float
    lloyd_variant: str
    native_vector_bytes: int
    profile_entries: tuple = ()
    sub_device: tuple = ()   # (compute-unit counts, index) of a sub-device, else ()
    lloyd_tile_rows: int = 64
    lloyd_tile_centroids: int = 64
    lloyd_reg_rows: int = 4
    lloyd_reg_centroids: int = 4
    lloyd_depth: int = 16
    lloyd_vector_width: int = 4
    lloyd_prefetch: int = 0
    ensemble_strategy: str = "concatenated"
    ensemble_order: str = "distributed"
    ensemble_word_atomics: int = 0
    ensemble_work_group_size: int = 0
    ensemble_groups_per_compute_unit: int = 0
    kdtree_mapping: str = "distributed"
    kdtree_max_dims: int = 4
    kdtree_min_rows: int = 200000
    kdtree_leaf_size: int = 512
    kdtree_groups_per_compute_unit: int = 4
    cmeans_distance_tiles: int = 0
    gmm_distance_tiles: int = 0
    linkage_distance_tiles: int = 0

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

    def cl_device(self):
        return _cl_device(self.key)

    def queue(self):
        """The memoised (context, queue) pair of this device."""
        return _queue(self.key)

    def __str__(self):
        if self.sub_device:
            counts, index = self.sub_device
            return (f"{self.name} [{self.platform}] sub-device {index} "
                    f"({self.compute_units} of {'+'.join(map(str, counts))} units)")
        return f"{self.name} [{self.platform}]"


def sub_devices(profile, counts):
    """Profiles of the sub-devices that split *profile*'s device by compute-unit
    *counts* (clCreateSubDevices BY_COUNTS): several devices of one CPU."""
    counts = tuple(int(c) for c in counts)
    return [dataclasses.replace(profile, compute_units=c, sub_device=(counts, i))
            for i, c in enumerate(counts)]


# --------------------------------------------------------------- YAML profiles
def _check_entry(entry, where):
    if not isinstance(entry, dict):
        raise ProfileError(f"{where}: an entry must be a mapping, got {type(entry).__name__}")
    match = entry.get("match", {}) or {}
    if not isinstance(match, dict) or set(match) - MATCH_KEYS:
        raise ProfileError(f"{where}: 'match' takes only {sorted(MATCH_KEYS)}")
    if "type" in match and str(match["type"]).lower() not in DEVICE_TYPES:
        raise ProfileError(f"{where}: match type must be one of {sorted(DEVICE_TYPES)}")
    terms = {}
    for key, value in entry.items():
        if key == "match":
            continue
        if key not in PROFILE_TERMS:
            raise ProfileError(f"{where}: unknown profile term {key!r}")
        kind, lo, hi = PROFILE_TERMS[key]
        if kind is str:  # an enumeration: lo holds the choices
            if value not in lo:
                raise ProfileError(f"{where}: {key} must be one of {lo}, got {value!r}")
            terms[key] = value
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
            raise ProfileError(f"{where}: {key} must be {kind.__name__}, got {value!r}")
        if not lo <= value <= hi:
            raise ProfileError(f"{where}: {key}={value!r} is outside [{lo}, {hi}]")
        terms[key] = kind(value)
    return {k: str(v).lower() for k, v in match.items()}, terms


def load_profile_file(path):
    """Validated (match, terms) entries of one devices.yaml file."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text()) or []
    except (OSError, yaml.YAMLError) as exc:
        raise ProfileError(f"cannot read device profiles {path}: {exc}") from exc
    if not isinstance(data, list):
        raise ProfileError(f"{path}: expected a list of entries")
    return [_check_entry(e, f"{path} entry {i}") + (f"{path.name}#{i}",)
            for i, e in enumerate(data)]


def profile_entries():
    entries = load_profile_file(shipped_profiles_path())
    user = os.environ.get("OCLCLUST_DEVICES_YAML")
    if user:
        entries += load_profile_file(user)
    return entries


def _matches(match, reported):
    for key, want in match.items():
        have = reported[key].lower()
        if (want != have) if key == "type" else (want not in have):
            return False
    return True


def resolve_terms(reported, entries):
    terms, used = {}, []
    for match, entry_terms, label in entries:
        if _matches(match, reported):
            terms.update(entry_terms)
            used.append(label)
    missing = set(PROFILE_TERMS) - set(terms)
    if missing:
        raise ProfileError(f"no profile entry sets {sorted(missing)} for {reported['name']}")
    return terms, tuple(used)


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


DISCOVERY_ERRORS = []


def list_devices():
    """Every OpenCL device of every platform that loads, with its resolved profile."""
    entries = profile_entries()
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
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
            continue
        for di, dev in enumerate(devs):
            rep = _reported(dev, platform, pi, di)
            terms, used = resolve_terms(rep, entries)
            driver = rep.pop("driver")
            profiles.append(DeviceProfile(driver_version=driver, profile_entries=used,
                                          **rep, **terms))
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
    """Profiles picked by *devices*: "all", "gpu", "cpu", "accelerator", a
    comma-separated list of platform/device name substrings, or a list of
    DeviceProfile.  None means $OCLCLUST_DEVICES, else "all"."""
    if devices is None:
        devices = os.environ.get("OCLCLUST_DEVICES", "all")
    if isinstance(devices, DeviceProfile):
        return [devices]
    if not isinstance(devices, str):
        chosen = list(devices)
        if not chosen or not all(isinstance(d, DeviceProfile) for d in chosen):
            raise ValueError("devices must be a string or a non-empty list of DeviceProfile")
        return chosen
    available = list_devices()
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
