"""Device discovery, resolved profiles and device selection (devices.yaml's
schema and validation: test_profiles.py)."""
import dataclasses
import pickle

import pyopencl as cl
import pytest

import oclclust as oc
from conftest import split_or_skip
from oclclust.runtime import devices as dv
from oclclust.runtime.profiles import DEVICE_TYPES, PROFILE_TERMS


# ----------------------------------------------------------------- discovery
def test_profiles_carry_what_the_device_reports(platform_devices):
    listed = oc.list_devices()
    for profile in platform_devices:
        assert profile in listed
        dev = profile.cl_device()
        assert profile.platform == dev.platform.name.strip()
        assert profile.name == dev.name.strip() and profile.vendor == dev.vendor.strip()
        assert profile.driver_version == dev.driver_version.strip()
        assert profile.compute_units == dev.max_compute_units >= 1
        assert profile.local_mem_size == dev.local_mem_size > 0
        assert profile.max_work_group_size == dev.max_work_group_size >= 1
        assert profile.global_mem_size == dev.global_mem_size >= profile.max_alloc_size > 0
        assert profile.max_alloc_size == dev.max_mem_alloc_size
        assert profile.fp64 == ("cl_khr_fp64" in dev.extensions or dev.double_fp_config != 0)
        assert profile.type in DEVICE_TYPES
        assert bool(dev.type & cl.device_type.CPU) == (profile.type == "cpu")


def test_profiles_are_resolved_and_in_range(platform_devices):
    for profile in platform_devices:
        assert profile.profile_entries[0] == "devices.yaml#0"   # the catch-all entry
        for term, (kind, lo, hi) in PROFILE_TERMS.items():
            value = profile.term(term)
            assert isinstance(value, kind), term
            if kind is str:
                assert value in lo, term
            else:
                assert lo <= value <= hi, term
        assert profile.local_memory_budget == int(profile.local_mem_size *
                                                  profile.local_memory_fraction)
        assert 0 < profile.memory_budget <= profile.global_mem_size


def test_cpu_entry_applies_to_cpus(platform_devices):
    for profile in platform_devices:
        assert ("devices.yaml#1" in profile.profile_entries) == (profile.type == "cpu")


def test_profiles_are_plain_data(profile):
    assert pickle.loads(pickle.dumps(profile)) == profile
    assert hash(profile) == hash(dataclasses.replace(profile))
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.work_group_size = 1
    assert str(profile) == f"{profile.name} [{profile.platform}]"


def test_queue_is_memoised_and_on_the_device(profile):
    q = profile.queue()
    assert q is profile.queue()
    assert q.device.int_ptr == profile.cl_device().int_ptr
    assert dv.profile_of_queue(q) == profile


def test_profile_of_a_users_queue(profile):
    q = cl.CommandQueue(cl.Context([profile.cl_device()]))
    assert dv.profile_of_queue(q) == profile


# ---------------------------------------------------------------- selection
def test_select_all_and_by_type():
    everything = oc.list_devices()
    assert oc.select_devices("all") == everything
    assert oc.select_devices(" ALL ") == everything
    for kind in sorted(DEVICE_TYPES):
        of_kind = [p for p in everything if p.type == kind]
        if of_kind:
            assert oc.select_devices(kind) == of_kind
            assert oc.select_devices(kind.upper()) == of_kind
        else:   # no GPU on CI's machines, say: a clear error naming what there is
            with pytest.raises(ValueError, match=f"no OpenCL device matches devices='{kind}'; "
                                                 "available: .*"):
                oc.select_devices(kind)


def test_select_by_name(devices, profile):
    platform = [p for p in oc.list_devices() if p.platform == profile.platform]
    assert oc.select_devices(profile.platform) == platform == devices
    assert oc.select_devices(profile.platform.upper()) == platform
    assert profile in oc.select_devices(profile.name)
    assert profile in oc.select_devices(profile.vendor[2:-1].lower())   # a substring
    both = oc.select_devices(f"{profile.platform}, {profile.name}")
    assert both == [p for p in oc.list_devices() if p in platform or p.name == profile.name]
    assert len(set(both)) == len(both)
    with pytest.raises(ValueError, match="no OpenCL device matches devices='no such thing'"):
        oc.select_devices("no such thing")


def test_a_full_platform_name_picks_only_that_platform(profile):
    """Intel's CPU and GPU runtimes are "Intel(R) OpenCL" and "Intel(R) OpenCL
    Graphics": the first name must not select the second platform too."""
    cpu = dataclasses.replace(profile, platform="Intel(R) OpenCL", name="Some CPU")
    gpu = dataclasses.replace(profile, platform="Intel(R) OpenCL Graphics", name="Some GPU",
                              type="gpu", device_index=1)
    assert dv.match_names(["intel(r) opencl"], [gpu, cpu]) == [cpu]
    assert dv.match_names(["intel(r) opencl graphics"], [gpu, cpu]) == [gpu]
    assert dv.match_names(["opencl"], [gpu, cpu]) == [gpu, cpu]
    assert dv.match_names(["some gpu", "intel(r) opencl"], [gpu, cpu]) == [gpu, cpu]


def test_select_from_the_environment(monkeypatch, devices, profile):
    monkeypatch.setenv("OCLCLUST_DEVICES", profile.platform)
    assert oc.select_devices() == devices
    assert oc.select_devices(None) == devices
    monkeypatch.delenv("OCLCLUST_DEVICES")
    assert oc.select_devices() == oc.list_devices()


def test_select_profiles_passes_them_through(profile):
    tweaked = dataclasses.replace(profile, work_group_size=2)
    assert oc.select_devices(tweaked) == [tweaked]
    assert oc.select_devices([tweaked, profile]) == [tweaked, profile]
    assert oc.select_devices((profile,)) == [profile]
    for bad in ([], [profile, "cpu"], [1]):
        with pytest.raises(ValueError, match="non-empty list of DeviceProfile"):
            oc.select_devices(bad)


def test_select_pyopencl_devices(devices, profile):
    """A pyopencl Device stands for its profile: alone, in a list, mixed with
    profiles; the one the caller got from pyopencl is matched by handle."""
    users = cl.get_platforms()[profile.platform_index].get_devices()[profile.device_index]
    assert oc.select_devices(users) == [profile]
    assert oc.select_devices([users]) == [profile]
    tweaked = dataclasses.replace(profile, work_group_size=2)
    assert oc.select_devices((tweaked, users)) == [tweaked, profile]
    every = [p.cl_device() for p in devices]
    assert oc.select_devices(every) == devices
    assert oc.DeviceManager([users]).profiles == [profile]
    with pytest.raises(ValueError, match="lists .* twice"):
        oc.DeviceManager([users, profile])
    with pytest.raises(ValueError, match="non-empty list of DeviceProfile or pyopencl Device"):
        oc.select_devices([users, "cpu"])


def test_select_pyopencl_sub_devices(profile):
    """A sub-device that oclclust.sub_devices made resolves to its profile;
    one the user split is refused by name (its profile is unknown)."""
    subs = split_or_skip(profile, (1, 1))
    assert oc.select_devices([s.cl_device() for s in subs]) == subs
    mine = profile.cl_device().create_sub_devices(
        [cl.device_partition_property.BY_COUNTS, 1, cl.device_partition_property.BY_COUNTS_LIST_END])
    with pytest.raises(ValueError, match="not made by oclclust.sub_devices"):
        oc.select_devices(mine)


def test_estimator_takes_pyopencl_devices(profile, blobs):
    X = blobs[0]
    want = oc.KMeans(3, n_init=1, random_state=0, devices=[profile]).fit(X)
    got = oc.KMeans(3, n_init=1, random_state=0, devices=[profile.cl_device()]).fit(X)
    assert list(got.devices_) == list(want.devices_) == [str(profile)]
    assert (got.labels_ == want.labels_).all() and got.inertia_ == want.inertia_
    alone = oc.KMeans(3, n_init=1, random_state=0, devices=profile.cl_device()).fit(X)
    assert (alone.labels_ == want.labels_).all()


def test_preferred_order(profile):
    def dev(kind, cu, i):
        return dataclasses.replace(profile, type=kind, compute_units=cu, device_index=i)
    small_cpu, big_cpu = dev("cpu", 2, 0), dev("cpu", 16, 1)
    small_gpu, big_gpu, acc = dev("gpu", 8, 2), dev("gpu", 80, 3), dev("accelerator", 4, 4)
    ordered = dv.preferred([small_cpu, small_gpu, acc, big_cpu, big_gpu])
    assert ordered == [big_gpu, small_gpu, acc, big_cpu, small_cpu]
    twin = dev("cpu", 2, 5)
    assert dv.preferred([small_cpu, twin]) == [small_cpu, twin]   # stable on ties


def test_estimator_runs_on_the_selected_platform(devices, profile, blobs):
    km = oc.KMeans(3, n_init=1, random_state=0, devices=profile.platform).fit(blobs[0])
    names = [str(p) for p in dv.preferred(devices)]   # two GPUs of a model: by their index
    assert list(km.devices_) == [f"{name} #{p.device_index}" if names.count(name) > 1
                                 else name for name, p in zip(names, dv.preferred(devices))]
    assert sum(km.devices_.values()) == len(blobs[0])


# ------------------------------------------------- hand-made profiles, sub-devices
BAD_PROFILES = {   # a field or term -> (its bad value, the error, its message)
    "compute_units=0": ("compute_units", 0, ValueError, "compute_units must be at least 1"),
    "compute_units=2.0": ("compute_units", 2.0, TypeError, "compute_units must be an int"),
    "max_work_group_size=0": ("max_work_group_size", 0, ValueError, "max_work_group_size"),
    "local_mem_size=-1": ("local_mem_size", -1, ValueError, "local_mem_size must be at least"),
    "name=None": ("name", None, TypeError, "name must be a str"),
    "type=tpu": ("type", "tpu", ValueError, "type must be one of"),
    "fp64=1": ("fp64", 1, TypeError, "fp64 must be a bool"),
    "work_group_size='64'": ("work_group_size", "64", ValueError, "work_group_size must be int"),
    "work_group_size=0": ("work_group_size", 0, ValueError, r"work_group_size=0 is outside"),
    "memory_fraction=nan": ("memory_fraction", float("nan"), ValueError, "memory_fraction=nan"),
    "points_per_item=0": ("points_per_item", 0, ValueError, "points_per_item=0 is outside"),
    "lloyd_variant=fastest": ("lloyd_variant", "fastest", ValueError, "lloyd_variant must be"),
}


@pytest.mark.parametrize("case", BAD_PROFILES)
def test_a_hand_made_profile_is_checked(profile, case):
    """A bad field or term is refused when the profile is made, by name: not
    a ZeroDivisionError, IndexError or TypeError in a planner later."""
    key, value, error, match = BAD_PROFILES[case]
    with pytest.raises(error, match=match):
        if key in {f.name for f in dataclasses.fields(profile)}:
            dataclasses.replace(profile, **{key: value})
        else:
            profile.replace(**{key: value})


@pytest.mark.parametrize("counts, error, match", [
    ([1.5], TypeError, "a count must be an int"),
    ([0, 1], ValueError, "a count must be at least 1"),
    ([], ValueError, "non-empty list of ints"),
    ("11", ValueError, "non-empty list of ints"),
    (["many"], TypeError, "a count must be an int"),
], ids=["fraction", "zero", "empty", "string", "word"])
def test_sub_device_counts_are_checked(profile, counts, error, match):
    with pytest.raises(error, match=match):
        dv.sub_devices(profile, counts)


def test_sub_devices_fit_in_the_device(profile):
    """More units than the device has is refused; all of them in one
    sub-device is a valid split (PoCL and Intel's runtime both make it)."""
    with pytest.raises(ValueError, match="more than .* compute units"):
        dv.sub_devices(profile, [profile.compute_units, 1])
    whole, = split_or_skip(profile, [profile.compute_units])
    assert whole.compute_units == profile.compute_units and whole.cl_device() is not None
    with pytest.raises(ValueError, match="is a sub-device already"):
        dv.sub_devices(whole, [1])
