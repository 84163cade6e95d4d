"""The device manager (issue 3): one fit over several devices of one host.

CPU only: OpenCL sub-devices split the CPU into devices of unequal size (the
whole device, 2 units, beside its two 1-unit sub-devices: weights 2:1:1), and
the two CPU runtimes (PoCL, Intel) serve as two devices of two platforms.
Whatever the split -- devices, weights, measured rebalancing, streamed chunks,
a device dropped mid-fit -- the model equals the single-device run (labels,
n_iter_ exactly; centres and inertia within 1e-6 relative).
"""
import collections
import copy
import gc
import itertools
import os
import pickle
import re
import threading
import time
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest
from sklearn.base import clone
from sklearn.cluster import kmeans_plusplus as sk_kmeans_plusplus

import oclclust as oc
from oclclust.passes import kmeanspp
from oclclust.passes import lloyd
from oclclust.passes import lloyd_shared
from oclclust.runtime.codegen import KernelBuildError
from oclclust.parallel.calibration import forget_rates
from oclclust.parallel.device_data import DeviceData
from oclclust.parallel.shares import kept_rates, split_rows
from oclclust.cluster.kmeans import lloyd_shards
from oclclust.cluster.kmeans.lloyd_shards import LloydShards

N, D, K = 3000, 8, 6
FLOATS = [np.float32, np.float64]
RTOL = 1e-6
CPU_RUNTIMES = ["Portable Computing Language", "Intel(R) OpenCL"]


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def subs(profile):
    """The device under test split in two 1-unit sub-devices."""
    if profile.compute_units < 2:
        pytest.skip(f"{profile} has {profile.compute_units} compute unit: no sub-devices")
    subs = oc.sub_devices(profile, [1, 1])
    try:
        subs[0].cl_device()
    except ValueError as exc:
        if profile.type == "cpu":   # both CPU runtimes of CI split by counts
            raise
        pytest.skip(f"{profile} cannot be split into sub-devices: {exc}")  # NVIDIA GPUs
    return subs


def layout(profile, subs, name):
    """Device lists: 1 = a lone 1-unit sub-device, 2 = the device beside one of
    its sub-devices (2:1), 3 = the device and both sub-devices (2:1:1)."""
    return {"1": [subs[0]], "2": [profile, subs[0]], "3": [profile, *subs],
            "pair": list(subs), "single": [profile]}[name]


def random_data(dtype=np.float64, n=N, seed=0):
    """Unstructured data: k-means takes dozens of iterations on it, so any
    dependence of the reduction on the split would show in labels and n_iter_."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, D)
    X[:, 0] *= 3
    return X.astype(dtype)


def sample_weights(dtype, n=N):
    w = np.random.RandomState(1).uniform(0.5, 2.0, n)
    w[::11] = 0
    return w.astype(dtype)


def fit(devices, dtype=np.float64, init="k-means++", weighted=False, X=None, **params):
    X = random_data(dtype) if X is None else X
    if isinstance(init, str) and init == "array":
        init = random_data(dtype, n=K, seed=5)
    sw = sample_weights(X.dtype, len(X)) if weighted else None
    km = oc.KMeans(K, init=init, n_init=1, random_state=2, devices=devices, **params)
    return km.fit(X, sample_weight=sw)


_REFERENCES = {}


def reference(profile, dtype=np.float64, init="k-means++", weighted=False):
    """The single-device fit (memoised: many tests compare with it)."""
    key = (profile.key, np.dtype(dtype).name, init, weighted)
    if key not in _REFERENCES:
        _REFERENCES[key] = fit([profile], dtype, init, weighted)
    return _REFERENCES[key]


def assert_same_fit(km, ref, rtol=RTOL):
    np.testing.assert_array_equal(km.labels_, ref.labels_)
    assert km.n_iter_ == ref.n_iter_
    assert km.cluster_centers_.dtype == ref.cluster_centers_.dtype
    scale = np.abs(ref.cluster_centers_).max()
    np.testing.assert_allclose(km.cluster_centers_, ref.cluster_centers_, rtol=rtol,
                               atol=rtol * scale)
    assert km.inertia_ == pytest.approx(ref.inertia_, rel=rtol)


def rows(km):
    return list(km.devices_.values())


def split(weights, block_rows, n=N):
    """The rows *weights* give each device in whole blocks of *block_rows*
    (a fit's: ``fit_block_rows``; a scatter's: ``block_rows``), checked to
    be more than one row: the split-free sums' blocks decide the shares."""
    assert block_rows > 1 and n > 2 * block_rows
    return split_rows(n, weights, block_rows).tolist()


def assert_fit_rows(km, weights, dtype=np.float64):
    """*km*'s rows per device are *weights*' split in its blocks."""
    assert rows(km) == split(weights, km.fit_block_rows(D, dtype))


def streaming_budget(counts, dtype, spare_rows=40):
    """A memory budget under which every shard of *counts* rows is streamed
    in several chunks: two staging buffers of *spare_rows* rows (the budget
    counts the rows a device holds, not their per-row state)."""
    assert max(counts) > 2 * spare_rows
    return 2 * spare_rows * D * np.dtype(dtype).itemsize


def streamed_manager(devices, dtype, n=N, **kwargs):
    weights = [p.compute_units for p in devices]
    return oc.DeviceManager(devices, memory_budget=streaming_budget(split_rows(n, weights),
                                                                    dtype), **kwargs)


def assert_streamed(data):
    for shard in data.shards:
        assert shard.streamed and len(shard.chunks) > 2, (str(shard.profile),
                                                          len(shard.chunks))


# ------------------------------------------------- results equal one device
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("init", ["k-means++", "array"])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("n_devices", ["1", "2", "3"])
@pytest.mark.covering(2)
def test_sub_devices_equal_single_device(profile, subs, n_devices, dtype, init, weighted):
    devices = layout(profile, subs, n_devices)
    km = fit(devices, dtype, init, weighted)
    ref = reference(profile, dtype, init, weighted)
    assert ref.n_iter_ > 5           # the data make the reduction order matter
    assert_same_fit(km, ref)
    assert list(km.devices_) == [str(p) for p in devices]
    assert_fit_rows(km, [p.compute_units for p in devices], dtype)


def _runtime(name):
    """The preferred device of the CPU runtime *name*; missing: a failure under
    CI=true (both runtimes are part of CI), else a skip."""
    try:
        return oc.runtime.devices.preferred(oc.select_devices(name))[0]
    except ValueError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but the OpenCL platform {name!r} is missing: {exc}")
        pytest.skip(f"the OpenCL platform {name!r} is not installed: {exc}")


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_both_cpu_runtimes_in_one_fit(profile, make_blobs, dtype):
    """PoCL and Intel's runtime as two devices of two platforms: the same
    model as the single-device run on the platform under test."""
    both = [_runtime(name) for name in CPU_RUNTIMES]
    assert len({p.platform for p in both}) == 2
    # well-separated blobs: the two compilers may round distances differently
    X, _ = make_blobs(n=N, d=D, k=K, seed=4, dtype=dtype)
    for weighted in (False, True):
        # (unlike devices: "auto" would measure them; tests/parallel/test_weights.py)
        km = fit(oc.DeviceManager(both, weights="compute_units"), dtype, weighted=weighted, X=X)
        ref = fit([profile], dtype, weighted=weighted, X=X)
        assert_same_fit(km, ref)
        assert list(km.devices_) == [str(p) for p in both]
        assert_fit_rows(km, [p.compute_units for p in both], dtype)
        np.testing.assert_array_equal(km.predict(X), ref.labels_)


# --------------------------------------------------- partition sizes / weights
@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("n, weights, block, expected", [
    (10, [1, 1, 1], 1, [4, 3, 3]),          # equal remainders: the first device first
    (7, [0.5, 0.3, 0.2], 1, [4, 2, 1]),     # 3.5, 2.1, 1.4: the largest remainder wins
    (8, [0.2, 0.3, 0.5], 1, [2, 2, 4]),     # 1.6, 2.4, 4.0
    (5, [1, 2, 2], 1, [1, 2, 2]),           # exact
    (11, [1, 0, 1], 1, [6, 0, 5]),          # a zero weight gets no row, not even a remainder
    (3, [0, 0, 5], 1, [0, 0, 3]),
    (0, [2, 1, 1], 1, [0, 0, 0]),
    (2, [2, 1, 1], 1, [1, 1, 0]),           # fewer rows than devices
    (4000, [2, 1, 1], 1, [2000, 1000, 1000]),
    # whole blocks (the last one short, on the last device that has rows)
    (3000, [2, 1, 1], 512, [1536, 1024, 440]),   # 6 blocks: 3, 1.5, 1.5
    (3000, [1, 1, 2], 512, [1024, 512, 1464]),   # 1.5, 1.5, 3
    (3000, [3, 0, 1], 512, [2560, 0, 440]),      # 4.5, 0, 1.5
    (1024, [1, 1, 1], 512, [512, 512, 0]),       # fewer blocks than devices
    (1000, [1, 0], 512, [1000, 0]),
    (1000, [0, 1], 512, [0, 1000]),
    (100, [1, 1], 512, [100, 0]),                # one short block
    (0, [1, 1], 512, [0, 0]),
])
def test_split_rows_examples(n, weights, block, expected):
    counts = split_rows(n, weights, block)
    assert counts.tolist() == expected
    assert np.issubdtype(counts.dtype, np.integer)


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("block", [1, 7, 512])
@pytest.mark.parametrize("seed", range(20))
def test_split_rows_sum_and_proportion(seed, block):
    """Whole blocks (the short last one with the last device that has
    rows), each device the floor or ceiling of its exact share of the
    blocks, the remainders to the largest fractions."""
    rng = np.random.RandomState(seed)
    n = int(rng.randint(0, 100000))
    w = rng.uniform(0, 10, rng.randint(1, 9))
    w[rng.rand(len(w)) < 0.2] = 0
    if w.sum() == 0:
        w[0] = 1
    counts = split_rows(n, w, block)
    assert counts.sum() == n
    assert (counts >= 0).all() and (counts[w == 0] == 0).all()
    held = np.flatnonzero(counts)
    if len(held):
        assert (counts[:held[-1]] % block == 0).all()
    blocks = -(-counts // block)
    exact = -(-n // block) * w / w.sum()
    assert np.all(np.abs(blocks - exact) < 1)          # floor or ceil of the exact share
    extra = blocks - np.floor(exact)                   # who got the remainder blocks
    if 0 < extra.sum() < len(w):
        frac = exact - np.floor(exact)
        assert frac[extra == 1].min() >= frac[extra == 0].max()


@pytest.mark.parametrize("weights, match", [
    ([1, 1], "weights must be 3 non-negative numbers"),
    ([1, -1, 1], "non-negative"),
    ([0, 0, 0], "positive sum"),
    ("fastest", "weights must be 'auto', 'compute_units', 'measured' or numbers"),
])
def test_manager_rejects_bad_weights(profile, subs, weights, match):
    with pytest.raises(ValueError, match=match):
        oc.DeviceManager([profile, *subs], weights=weights)


@pytest.mark.parametrize("weights, match", [
    ([np.inf, 1, 1], "weights must be finite"),
    ([np.nan, 1, 1], "weights must be finite"),
    (["a", 1, 1], "weights must be 3 non-negative numbers"),
    ([[1, 1, 1]], "weights must be 3 non-negative numbers"),
], ids=["inf", "nan", "not-numbers", "nested"])
def test_manager_rejects_unrepresentable_weights(profile, subs, weights, match):
    with pytest.raises(ValueError, match=match):
        oc.DeviceManager([profile, *subs], weights=weights)


@pytest.mark.parametrize("weights, expected", [
    ([1e308, 1e308], [1, 1]), ([4e307, 4e307], [1, 1]), ([3e307, 1e308], [3, 10]),
    ([1e-320, 0], [1, 0]), ([1e-320, 3e-320], [1, 3]),
], ids=["sum-overflows", "rows-x-weight-overflows", "huge-ratio", "subnormal",
        "subnormal-ratio"])
def test_extreme_weights_split_rows_as_they_say(subs, weights, expected):
    """Proportions are what count: weights near the float limits split the
    rows as ordinary ones would (not 2 of N rows, the rest nowhere)."""
    data = oc.DeviceManager(subs, weights=weights).scatter(random_data())
    try:
        assert list(data.rows_per_device.values()) == split(expected, data.block_rows)
    finally:
        data.close()


@pytest.mark.parametrize("budget, error, match", [
    (float("nan"), ValueError, "memory_budget must be a finite number of bytes"),
    (float("inf"), ValueError, "memory_budget must be a finite number of bytes"),
    (1e30, ValueError, "memory_budget must be a finite number of bytes"),
    (0, ValueError, "memory_budget must be a finite number of bytes"),
    (-5, ValueError, "memory_budget must be a finite number of bytes"),
    ("1GB", TypeError, "memory_budget must be a number of bytes"),
    (True, TypeError, "memory_budget must be a number of bytes"),
], ids=["nan", "inf", "1e30", "zero", "negative", "string", "bool"])
def test_manager_rejects_bad_memory_budgets(profile, budget, error, match):
    with pytest.raises(error, match=match):
        oc.DeviceManager([profile], memory_budget=budget)


def test_a_float_memory_budget_is_bytes(profile):
    assert oc.DeviceManager([profile], memory_budget=2.5e6).memory_budget == 2_500_000


def test_the_same_device_twice_is_refused(profile, subs):
    """Two shares of one device would share its queue and its name in
    devices_ (half the rows reported): refused, as sub_devices is the way
    to split a device."""
    for devices in ([profile, profile], [profile, *subs, subs[1]]):
        with pytest.raises(ValueError, match="twice: a device takes one share"):
            oc.DeviceManager(devices)
    with pytest.raises(ValueError, match="twice"):
        oc.KMeans(2, devices=[profile, profile]).fit(random_data())


def test_manager_of_a_manager_is_refused(profile):
    with pytest.raises(ValueError, match="already a DeviceManager"):
        oc.DeviceManager(oc.DeviceManager([profile]))


@pytest.mark.parametrize("weights", [None, [1, 2, 5], [3, 0, 1]],
                         ids=["compute-units", "explicit", "explicit-zero"])
def test_rows_follow_the_weights(profile, subs, weights):
    devices = [profile, *subs]
    mgr = oc.DeviceManager(devices, **({} if weights is None else {"weights": weights}))
    km = fit(mgr)
    expected = weights if weights is not None else [p.compute_units for p in devices]
    if weights is None:
        assert expected == [2, 1, 1] or profile.compute_units != 2
    assert list(km.devices_) == [str(p) for p in devices]
    assert_fit_rows(km, expected)
    assert sum(rows(km)) == N and km.reshards_ == 0
    assert_same_fit(km, reference(profile))


def _lloyd_pass(k=K):
    """A calibration: one Lloyd pass over the sample partition."""
    def one_pass(part):
        # not Array.fill: pyopencl's fill kernel would build (and log) on each device's thread
        labels = cla.to_device(part.queue, np.full(part.n, -1, np.int32))
        lp = lloyd.LloydPass(part, k)
        return lambda: lp.run(np.zeros((k, part.d)), labels)
    return one_pass


def test_measured_weights_follow_speed(profile, subs, monkeypatch):
    """A device made slow in the calibration pass gets few rows: the rows
    follow the measured rows per second (none under the share rule:
    shares.kept_rates)."""
    devices = [profile, *subs]
    slow = subs[1]
    real = _lloyd_pass()
    calls = collections.Counter()

    def calibration(part):
        one_pass = real(part)

        def counted():
            calls[part.profile] += 1
            if part.profile == slow:
                time.sleep(0.2)
            one_pass()
        return counted
    timed = []
    original = DeviceData._timed_rates

    def spy(self, *args, **kwargs):
        timed.append(np.array(original(self, *args, **kwargs)))
        return timed[-1]
    monkeypatch.setattr(DeviceData, "_timed_rates", spy)
    mgr = oc.DeviceManager(devices, weights="measured")
    data = mgr.scatter(random_data(), None, calibration)
    try:
        # once to build, then timed over at least a quarter second (the slow
        # device's 0.2 s passes: twice; the others as often as that takes)
        assert set(calls) == set(devices) and calls[slow] == 3
        assert all(calls[p] > 3 for p in devices if p != slow)
        assert len(timed) == 1 and timed[0].shape == (3,)
        assert np.all(np.isfinite(timed[0]) & (timed[0] > 0))
        assert timed[0][2] < min(timed[0][:2]) / 5
        measured = np.asarray(mgr.measured)
        np.testing.assert_array_equal(measured, kept_rates(timed[0]))
        counts = list(data.rows_per_device.values())
        assert counts == split(measured, data.block_rows) and sum(counts) == N
        assert counts[2] < min(counts[:2]) / 5
        assert mgr.left_out == ([slow] if measured[2] == 0 else [])
    finally:
        data.close()


def test_measured_fit_equals_single_device(profile, subs):
    devices = [profile, *subs]
    mgr = oc.DeviceManager(devices, weights="measured")
    seen = []
    original = DeviceData._calibrate

    def spy(self, fn, rows=None):
        original(self, fn, rows)
        seen.append(np.array(self.manager.measured))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DeviceData, "_calibrate", spy)
        km = fit(mgr, weighted=True)
    assert len(seen) == 1
    assert seen[0].shape == (3,) and np.all(np.isfinite(seen[0]) & (seen[0] > 0))
    assert sum(rows(km)) == N and list(km.devices_) == [str(p) for p in devices]
    assert_same_fit(km, reference(profile, weighted=True))
    assert mgr.measured is None          # the user's manager is left as it was


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_rebalancing_between_iterations_keeps_the_result(profile, subs, monkeypatch, dtype):
    """Timings that differ make the manager re-split between iterations (the
    labels move along); the model is the same as without any re-split.  A
    re-split happens only where the rows move (the measured rates may give
    the same whole blocks again).  The fit starts from equal rates: timed
    ones (or a rate an earlier test left) on a loaded host may leave a
    device out, and the pattern would then move rows between two only."""
    forget_rates()
    monkeypatch.setattr(DeviceData, "_timed_rates",
                        lambda self, fn, profiles, rows=None: [1.0] * len(profiles))
    original = DeviceData.rebalance
    pattern = itertools.cycle([[1.0, 0.2, 0.2], [0.2, 1.0, 0.5], [0.3, 0.3, 1.0]])
    layouts = []   # (before, after) each rebalance

    def forced(self, *args, **kwargs):
        if self.last_times is not None:
            self.last_times = next(pattern)[:len(self.shards)]
        before = tuple(self.rows_per_device.values())
        saved = original(self, *args, **kwargs)
        layouts.append((before, tuple(self.rows_per_device.values())))
        return saved
    monkeypatch.setattr(DeviceData, "rebalance", forced)
    X = random_data(dtype, n=8 * N)     # enough blocks for the timings to move some
    km = fit(oc.DeviceManager([profile, *subs], weights="measured"), dtype, X=X)
    assert len({after for _, after in layouts}) > 2        # re-split several times
    assert km.reshards_ == sum(before != after for before, after in layouts)
    assert sum(rows(km)) == len(X)
    assert_same_fit(km, fit([profile], dtype, X=X))


def test_rebalance_keeps_labels(profile, subs):
    mgr = oc.DeviceManager([profile, *subs], weights="measured")
    X = random_data()
    data = mgr.scatter(X)
    try:
        passes = LloydShards(data, K)
        centres = random_data(n=K, seed=5)
        passes.run(centres)
        before = passes.labels()
        data.last_times = [1.0, 0.1, 0.1]       # the first device was slowest
        passes.rebalance()
        # (a device whose share rounds to no block of rows holds no shard)
        counts = list(data.rows_per_device.values())
        assert counts[0] < counts[1] and sum(counts) == N
        # rows kept by a device were copied on it, the others uploaded: all in place
        np.testing.assert_array_equal(np.concatenate([c.x.get(c.queue) for c in data.chunks]),
                                      X)
        np.testing.assert_array_equal(passes.labels(), before)
        assert passes.run(centres).n_changed == 0    # the moved labels are the old ones
        assert mgr.reshards == 1
        # every device finished at the time the measured rates predict: no re-split
        data.last_times = [N / mgr.measured.sum()] * len(data.shards)
        passes.rebalance()
        assert list(data.rows_per_device.values()) == counts
        assert mgr.reshards == 1
    finally:
        data.close()


# ------------------------------------------------------- streamed vs resident
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("which", ["single", "3"])
@pytest.mark.covering(1)
def test_streamed_equals_resident(profile, subs, which, dtype):
    devices = layout(profile, subs, which)
    X = random_data(dtype)
    sw = sample_weights(dtype)
    mgr = streamed_manager(devices, dtype)
    data = mgr.scatter(X, sw)
    try:
        assert_streamed(data)
        assert sum(c.n for c in data.chunks) == N
    finally:
        data.close()
    km = fit(mgr, dtype, weighted=True, X=X)
    ref = reference(profile, dtype, weighted=True)
    assert_same_fit(km, ref)
    assert_fit_rows(km, [p.compute_units for p in devices], dtype)
    Y = random_data(dtype, n=N, seed=9)
    np.testing.assert_array_equal(km.predict(Y), ref.predict(Y))
    np.testing.assert_allclose(km.transform(Y), ref.transform(Y), rtol=RTOL)
    assert km.score(Y, sample_weight=sw) == pytest.approx(ref.score(Y, sample_weight=sw),
                                                          rel=RTOL)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_budget_too_small_even_to_stream(profile, subs, dtype):
    """Only a budget under one row is refused (the per-row state is not counted)."""
    devices = [profile, *subs]
    row = D * np.dtype(dtype).itemsize
    mgr = oc.DeviceManager(devices, memory_budget=row - 1)
    match = (rf"rows do not fit .* memory budget of {row - 1} bytes even streamed: "
             rf"one row takes {row} bytes")
    with pytest.raises(MemoryError, match=match):
        mgr.scatter(random_data(dtype))
    with pytest.raises(MemoryError, match=match):
        fit(mgr, dtype)


@pytest.mark.parametrize("rows, buffers", [(1, 1), (2, 2), (N // 16, 2)])
def test_the_smallest_budgets_stream(profile, rows, buffers):
    """A budget of one row streams row by row through one staging buffer; of
    two rows or 1/8 of the data, through two: the model of the resident fit."""
    dtype = np.float32
    budget = rows * D * np.dtype(dtype).itemsize + (rows == 1)   # 1 byte short of 2 rows
    n = 400 if rows < 8 else N   # a pass per row is slow: fewer rows
    X = random_data(dtype, n=n)
    mgr = oc.DeviceManager([profile], memory_budget=budget)
    data = mgr.scatter(X)
    shard, = data.shards
    assert shard.streamed and len(shard.staging) == buffers
    assert len(shard.chunks) == -(-n // max(1, rows // buffers))
    data.close()
    km = oc.KMeans(K, random_state=0, devices=mgr, max_iter=5, n_init=1).fit(X)
    ref = oc.KMeans(K, random_state=0, devices=[profile], max_iter=5, n_init=1).fit(X)
    assert_same_fit(km, ref, rtol=0)
    np.testing.assert_array_equal(km.labels_, ref.labels_)


# ------------------------------------------------------------ device failures
def _fail_on(monkeypatch, where, failing, on_call):
    """Make every device of *failing* raise at its *on_call*-th call of *where*."""
    calls = collections.Counter()

    def should_fail(profile):
        if profile in failing:
            calls[profile] += 1
            return calls[profile] >= on_call
        return False
    if where == "run":   # every pass is launched (run is launch, then collect)
        original = lloyd.LloydPass.launch

        def launch(self, *args, **kwargs):
            if should_fail(self.part.profile):
                raise cl.RuntimeError("injected fault: kernel launch failed")
            return original(self, *args, **kwargs)
        monkeypatch.setattr(lloyd.LloydPass, "launch", launch)
        shared_launch = lloyd_shared.SharedCenters.launch   # several devices' shared update

        def launch_shared(self, *args, **kwargs):
            if should_fail(self.resident.lloyd.part.profile):
                raise cl.RuntimeError("injected fault: kernel launch failed")
            return shared_launch(self, *args, **kwargs)
        monkeypatch.setattr(lloyd_shared.SharedCenters, "launch", launch_shared)
    elif where == "build":
        original = lloyd.plan

        def plan(profile, *args, **kwargs):
            if should_fail(profile):
                raise KernelBuildError("injected fault: build failed")
            return original(profile, *args, **kwargs)
        monkeypatch.setattr(lloyd, "plan", plan)
        # an earlier fit's pooled passes (lloyd_shards' pool) were built already: a build
        # fails on a device's first fit of a shape, so the fit starts without them (the
        # earlier fits' states collected first: each goes back to the pool when collected)
        gc.collect()
        monkeypatch.setattr(lloyd_shards, "_LLOYD_POOL", {})
    else:   # k-means++
        original = kmeanspp.ChunkSeeding.potentials

        def potentials(self, rows):
            if should_fail(self.part.profile):
                raise cl.RuntimeError("injected fault: k-means++ kernel failed")
            return original(self, rows)
        monkeypatch.setattr(kmeanspp.ChunkSeeding, "potentials", potentials)
    return calls


@pytest.mark.parametrize("where, on_call", [("run", 3), ("build", 1), ("kmeans++", 3)])
@pytest.mark.parametrize("failing", [0, 2])
def test_failed_device_is_dropped(profile, subs, monkeypatch, failing, where, on_call):
    devices = [profile, *subs]
    bad = devices[failing]
    ref = reference(profile, weighted=True)             # before the faults are armed
    calls = _fail_on(monkeypatch, where, {bad}, on_call)
    mgr = oc.DeviceManager(devices)
    with pytest.warns(RuntimeWarning, match=re.escape(str(bad))) as record:
        km = fit(mgr, weighted=True)
    assert calls[bad] >= on_call                        # the fault did happen
    assert sum("failed" in str(w.message) for w in record) == 1
    assert str(bad) not in km.devices_ and km.reshards_ == 1
    assert list(km.devices_) == [str(p) for p in devices if p != bad]
    assert sum(rows(km)) == N
    assert_same_fit(km, ref)
    assert mgr.profiles == devices                      # the user's manager is untouched
    assert mgr.reshards == 0 and mgr.measured is None
    monkeypatch.undo()                                  # the device works again
    np.testing.assert_array_equal(km.predict(random_data()), km.labels_)


def test_predict_survives_a_failed_device(profile, subs, monkeypatch):
    devices = [profile, *subs]
    km = fit(oc.DeviceManager(devices))
    _fail_on(monkeypatch, "run", {subs[1]}, 1)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        labels = km.predict(random_data())
    np.testing.assert_array_equal(labels, km.labels_)
    assert any(str(subs[1]) in str(w.message) for w in record)


def test_no_device_left(profile, subs, monkeypatch):
    devices = [profile, *subs]
    _fail_on(monkeypatch, "run", set(devices), 1)
    with pytest.warns(RuntimeWarning, match="failed"):
        with pytest.raises(RuntimeError, match="no OpenCL device left"):
            fit(oc.DeviceManager(devices))


# ------------------------------------------- the manager as an estimator param
def test_manager_as_devices_param_clone_and_pickle(profile, subs):
    mgr = oc.DeviceManager([profile, *subs], weights=[1, 1, 2])
    km = oc.KMeans(K, n_init=1, random_state=2, devices=mgr)
    assert km.get_params()["devices"] is mgr
    twin = clone(km)
    assert twin.devices is not mgr and isinstance(twin.devices, oc.DeviceManager)
    assert twin.devices.profiles == mgr.profiles
    np.testing.assert_array_equal(twin.devices.weights, mgr.weights)
    X = random_data()
    km.fit(X)
    twin.fit(X)
    assert_same_fit(twin, km, rtol=0)
    assert_fit_rows(km, [1, 1, 2])
    again = pickle.loads(pickle.dumps(km))
    assert isinstance(again.devices, oc.DeviceManager) and again.devices.profiles == mgr.profiles
    assert again.devices_ == km.devices_
    np.testing.assert_array_equal(again.cluster_centers_, km.cluster_centers_)
    Y = random_data(n=500, seed=7)
    np.testing.assert_array_equal(again.predict(Y), km.predict(Y))
    assert copy.deepcopy(mgr).profiles == mgr.profiles
    assert_same_fit(km, reference(profile))


# ----------------------------------------------------------- DeviceData parts
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning",
                            "ignore:overflow encountered:RuntimeWarning")   # NaN, inf rows
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("how", ["3", "single-streamed", "3-streamed"])
def test_moments_over_chunks(profile, subs, how, dtype):
    devices = layout(profile, subs, how.split("-")[0])
    mgr = (streamed_manager(devices, dtype) if how.endswith("streamed")
           else oc.DeviceManager(devices))
    X = random_data(dtype) + np.arange(D).astype(dtype) * 10    # means far from 0
    x64 = X.astype(np.float64)
    rtol = 1e-12 if dtype == np.float64 else 1e-6
    data = mgr.scatter(X)
    try:
        assert len(data.chunks) > 2
        if how.endswith("streamed"):
            assert_streamed(data)
        mean, var, finite = data.mean_var_finite()
    finally:
        data.close()
    np.testing.assert_allclose(mean, x64.mean(0), rtol=rtol)
    np.testing.assert_allclose(var, x64.var(0), rtol=rtol)
    assert finite
    for bad in (np.nan, np.inf):           # in the last chunk's rows, not the first
        Y = X.copy()
        Y[-2, 3] = bad
        data = mgr.scatter(Y)
        try:
            assert not data.mean_var_finite()[2]
        finally:
            data.close()


def test_passes_run_on_all_devices_at_once(profile, subs):
    """map() drives every device from its own thread at the same time (each
    waits on a barrier that only all three together pass) and returns the
    chunks' results in row order."""
    data = oc.DeviceManager([profile, *subs]).scatter(random_data())
    try:
        barrier = threading.Barrier(len(data.shards), timeout=20)

        def meet(chunk):
            barrier.wait()
            return chunk.offset, chunk.n
        got = data.map(meet)
        assert [o for o, _ in got] == sorted(o for o, _ in got)
        assert np.cumsum([0] + [n for _, n in got])[:-1].tolist() == [o for o, _ in got]
        assert sum(n for _, n in got) == N
    finally:
        data.close()


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("how", ["3", "pair", "single-streamed", "3-streamed"])
def test_kmeanspp_over_devices_and_chunks(profile, subs, how, weighted):
    X = random_data(np.float64)
    w = sample_weights(np.float64) if weighted else None
    host_w = np.ones(N) if w is None else w

    def pick(mgr, layout_check=None):
        data = mgr.scatter(X, w)
        try:
            if layout_check:
                layout_check(data)
            rs = np.random.RandomState(11)
            return oc.kmeans_plusplus(data, 16, rs, host_w).tolist(), rs.randint(1 << 30)
        finally:
            data.close()
    devices = layout(profile, subs, how.split("-")[0])
    streamed = how.endswith("streamed")
    mgr = streamed_manager(devices, np.float64) if streamed else oc.DeviceManager(devices)
    mine = pick(mgr, assert_streamed if streamed else None)
    one = pick(oc.DeviceManager([profile]))
    assert mine == one
    rs = np.random.RandomState(11)
    _, theirs = sk_kmeans_plusplus(X, 16, sample_weight=w, random_state=rs)
    assert mine == (theirs.tolist(), rs.randint(1 << 30))


def test_a_rebalance_costs_only_the_rows_that_move(profile, subs):
    """Rent-or-buy prices a re-split by the rows that change device (the
    others are copied on the device), not by a whole new layout."""
    mgr = oc.DeviceManager([profile, *subs], weights=[1, 1, 1])
    data = mgr.scatter(random_data())
    try:
        counts = [sum(c.n for c in s.chunks) for s in data.shards]
        mgr.measured = np.array(counts, dtype=np.float64)
        assert data._move_seconds() == 0
        block = data.block_rows   # the split moves whole blocks
        assert counts == split([1, 1, 1], block)
        mgr.measured = np.array([counts[0] + 10, counts[1] - 10, counts[2]], np.float64)
        assert data._move_seconds() == 0     # too few rows to move a block
        mgr.measured = np.array([counts[0] + block, counts[1] - block, counts[2]], np.float64)
        assert data._move_seconds() == pytest.approx(block * data.row_seconds)
    finally:
        data.close()
