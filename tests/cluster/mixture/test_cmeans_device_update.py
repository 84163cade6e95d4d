"""FuzzyCMeans with its centres kept on the devices between passes
(passes/cmeans_update.py through cmeans_shards.CMeansShards.device_step):
the same model as the host's update bit for bit -- centres, objective,
n_iter, history (shifts, objectives), memberships and labels -- on one
device (0, 1 or 3 iterations enqueued ahead), on two devices sharing one
update (two sub-devices, the device beside one of them, both CPU runtimes'
devices) and under one MPI rank; stopped by tol and by max_iter, with a
centre of no weight (den == 0: it keeps its place), weighted, without
split-free sums, and raising on non-finite rows as the host's does."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import oclclust as oc
from conftest import mpiexec, split_or_skip
from oclclust.cluster._base import ConvergenceWarning
from oclclust.cluster.mixture import cmeans, cmeans_shards
from oclclust.runtime import exact_sums


def needs_fp64(profile):
    if not profile.fp64:
        pytest.skip("the device update needs double precision; this device has none")


def blobs(n, d, k, dtype, seed=0):
    rng = np.random.RandomState(seed)
    centres = rng.uniform(-3, 3, (k, d)) * 2
    return (centres[rng.randint(k, size=n)] + rng.randn(n, d)).astype(dtype)


def fit(devices, X, device, sw=None, depth=None, **params):
    """FuzzyCMeans over *devices* with the device update on or off: the
    estimator and, per device step, whether the next iteration's pass was
    enqueued before its numbers were read (*depth*: one device's passes
    ahead; default_depth's else)."""
    steps, original = [], cmeans_shards.CMeansShards.device_step
    saved_depth = cmeans_shards.default_depth

    def counted(self, centers, iterations_left=None):
        out = original(self, centers, iterations_left)
        if self.shared_update:
            steps.append(self._next is not None)
        else:
            steps.append(bool(self.state(self.data.chunks[0])["resident"].pending))
        return out
    saved = cmeans.DEVICE_UPDATE
    try:
        cmeans.DEVICE_UPDATE, cmeans_shards.CMeansShards.device_step = device, counted
        if depth is not None:
            cmeans_shards.default_depth = lambda part, c: depth
        with warnings.catch_warnings():   # max_iter's: both alike
            warnings.simplefilter("ignore", ConvergenceWarning)
            fc = oc.FuzzyCMeans(devices=devices, **params).fit(X, sample_weight=sw)
    finally:
        cmeans.DEVICE_UPDATE, cmeans_shards.CMeansShards.device_step = saved, original
        cmeans_shards.default_depth = saved_depth
    return fc, steps


def assert_same_fit(a, b, layout=True):
    """*layout* False: their devices differ (history_'s rows per device)."""
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert a.objective_ == b.objective_ and a.n_iter_ == b.n_iter_
    other = {"seconds"} if layout else {"seconds", "rows_per_device"}
    strip = [[{k: v for k, v in h.items() if k not in other} for h in m.history_]
             for m in (a, b)]
    assert strip[0] == strip[1]
    np.testing.assert_array_equal(a.u_, b.u_)
    np.testing.assert_array_equal(a.labels_, b.labels_)


def case(name, dtype):
    """(X, sample_weight, FuzzyCMeans parameters) of a way a fit goes."""
    if name == "tol":
        return blobs(1500, 5, 6, dtype, seed=2), None, dict(n_clusters=6, random_state=0,
                                                            tol=1e-3, max_iter=300)
    if name == "max_iter":
        return blobs(1200, 17, 9, dtype, seed=3), None, dict(n_clusters=9, m=1.5,
                                                             random_state=1, tol=0, max_iter=4)
    if name == "weighted":
        X = blobs(1300, 3, 5, dtype, seed=4)
        sw = np.random.RandomState(5).uniform(0.5, 2, len(X)).astype(dtype)
        sw[::9] = 0
        return X, sw, dict(n_clusters=5, m=3.0, random_state=2, tol=1e-4, max_iter=40)
    # "no weight": a centre so far from every row that its memberships to
    # the power m underflow to 0 (den == 0): it keeps its place
    X = blobs(800, 2, 3, dtype, seed=6)
    init = np.vstack([X[:3], np.full((1, 2), 1e17 if dtype == np.float32 else 1e100)])
    return X, None, dict(n_clusters=4, init=init.astype(np.float64), tol=1e-4, max_iter=30)


CASES = ["tol", "max_iter", "weighted", "no weight"]
FLOATS = [np.float32, np.float64]


def check_case(name, X, params, fc):
    if name == "tol":
        assert 1 < fc.n_iter_ < params["max_iter"]
    if name == "max_iter":
        assert fc.n_iter_ == params["max_iter"]
    if name == "no weight":   # den == 0 every iteration: the fourth centre stays
        np.testing.assert_array_equal(fc.cluster_centers_[3], params["init"][3].astype(X.dtype))


@pytest.mark.parametrize("depth", [0, 1, 3])
@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
@pytest.mark.covering(2)
def test_one_device_is_the_host_fit(profile, dtype, name, depth):
    needs_fp64(profile)
    X, sw, params = case(name, dtype)
    host, none = fit([profile], X, False, sw, **params)
    device, steps = fit([profile], X, True, sw, depth=depth, **params)
    assert not none and len(steps) == device.n_iter_
    check_case(name, X, params, device)
    assert_same_fit(device, host)
    # a pass ahead of every read but the last one max_iter allows
    last = params["max_iter"] - device.n_iter_ > 0
    assert steps == [depth > 0] * (len(steps) - 1) + [depth > 0 and last]


@pytest.mark.parametrize("layout", ["sub-devices", "device+sub-device"])
@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_two_devices_are_the_host_fit(profile, dtype, name, layout):
    """Two sub-devices, or the device beside one of its sub-devices: one
    shared update."""
    needs_fp64(profile)
    subs = split_or_skip(profile)
    X, sw, params = case(name, dtype)
    devices = subs if layout == "sub-devices" else [profile, subs[0]]
    manager = oc.DeviceManager(devices, weights="compute_units")
    host, none = fit(manager, X, False, sw, **params)
    shared, steps = fit(manager, X, True, sw, **params)
    assert not none and len(steps) == shared.n_iter_ and len(shared.devices_) == 2
    check_case(name, X, params, shared)
    assert_same_fit(shared, host)
    assert steps == [True] * (len(steps) - 1) + [params["max_iter"] > shared.n_iter_]
    one, _ = fit([profile], X, True, sw, **params)   # split-free: one device's model too
    assert_same_fit(shared, one, layout=False)


@pytest.mark.one_runtime
@pytest.mark.parametrize("name", CASES)
def test_unlike_runtimes_share_the_update(runtimes, name):
    """PoCL's and Intel's devices of one host in one fit: each computes the
    same centres from the same totals (IEEE double arithmetic, no
    contraction), and the model is the host update's."""
    X, sw, params = case(name, np.float64)
    manager = oc.DeviceManager(runtimes, weights="compute_units")
    host, _ = fit(manager, X, False, sw, **params)
    shared, steps = fit(manager, X, True, sw, **params)
    assert len(steps) == shared.n_iter_ and len(shared.devices_) == 2
    assert_same_fit(shared, host)


@pytest.mark.parametrize("layout", ["one device", "two sub-devices"])
def test_without_split_free_sums(profile, layout):
    """The partials' float64 reduction (exact_sums.disabled): the host's bits too."""
    needs_fp64(profile)
    devices = [profile] if layout == "one device" else oc.DeviceManager(
        split_or_skip(profile), weights="compute_units")
    X, sw, params = case("weighted", np.float32)
    with exact_sums.disabled():
        host, _ = fit(devices, X, False, sw, **params)
        device, steps = fit(devices, X, True, sw, depth=1, **params)
    assert steps and len(steps) == device.n_iter_
    assert_same_fit(device, host)


@pytest.mark.parametrize("layout", ["one device", "two sub-devices"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, 3e38])
def test_non_finite_rows_raise_as_on_the_host(profile, layout, bad):
    needs_fp64(profile)
    devices = [profile] if layout == "one device" else oc.DeviceManager(
        split_or_skip(profile), weights="compute_units")
    X = blobs(700, 3, 4, np.float32)
    X[650, 1] = bad      # 3e38: finite, its squared distances overflow float32
    for device in (False, True):
        with pytest.raises(ValueError, match="(?i)infinity|nan|finite"):
            fit(devices, X, device, depth=1, n_clusters=4, init=X[:4].astype(np.float64),
                max_iter=5)


def test_where_the_centres_stay_on_the_devices(profile):
    """One resident device or several devices each with its rows in one
    chunk, fp64: on the devices; streamed rows, measured weights, no fp64
    and the tensor-core pass: the host's update."""
    needs_fp64(profile)
    subs = split_or_skip(profile)
    X = blobs(600, 3, 3, np.float64)

    def shards(devices, **kw):
        data = oc.DeviceManager(devices, **kw).scatter(X, None)
        return data, cmeans_shards.CMeansShards(data, 3, 2.0, device_update=True)
    made = {name: shards(devs, **kw) for name, devs, kw in (
        ("one", [profile], {}), ("two", subs, dict(weights="compute_units")),
        ("streamed", [profile], dict(memory_budget=100 * 24)),
        ("measured", subs, dict(weights="measured")))}
    try:
        assert made["one"][1].device_update and not made["one"][1].shared_update
        assert made["two"][1].device_update and made["two"][1].shared_update
        assert not made["streamed"][1].device_update
        assert not made["measured"][1].device_update
        data = made["one"][0]
        assert not cmeans_shards.CMeansShards(data, 3, 2.0).device_update
    finally:
        for data, _ in made.values():
            data.close()
    no_fp64 = oc.DeviceManager([profile.replace(fp64=False)]).scatter(X.astype(np.float32),
                                                                       None)
    try:
        assert not cmeans_shards.CMeansShards(no_fp64, 3, 2.0, device_update=True).device_update
    finally:
        no_fp64.close()


def test_a_checkpoint_keeps_the_host_update(profile, tmp_path):
    needs_fp64(profile)
    X, sw, params = case("max_iter", np.float64)
    seen = []
    original = cmeans_shards.CMeansShards.device_step
    cmeans_shards.CMeansShards.device_step = lambda self, *a: seen.append(1) or original(self,
                                                                                         *a)
    try:
        fc = oc.FuzzyCMeans(devices=[profile], checkpoint=str(tmp_path / "c.npz"),
                            **params).fit(X)
    finally:
        cmeans_shards.CMeansShards.device_step = original
    host, _ = fit([profile], X, False, **params)
    assert not seen
    assert_same_fit(fc, host)


ONE_RANK = """
import sys
import numpy as np
from mpi4py import MPI
import oclclust as oc
from oclclust.cluster.mixture import cmeans, cmeans_shards
steps, original = [], cmeans_shards.CMeansShards.device_step
cmeans_shards.CMeansShards.device_step = lambda self, *a: steps.append(1) or original(self, *a)
X = np.load("X.npy")
for device in (False, True):
    cmeans.DEVICE_UPDATE = device
    fc = oc.FuzzyCMeans(6, random_state=0, tol=1e-3, devices=sys.argv[1],
                        comm=MPI.COMM_WORLD).fit(X)
    np.savez(f"fit{int(device)}.npz", centers=fc.cluster_centers_, u=fc.u_,
             objective=fc.objective_, n_iter=fc.n_iter_, steps=len(steps),
             shifts=[h["center_shift"] for h in fc.history_],
             objectives=[h["objective"] for h in fc.history_])
"""


def test_one_mpi_rank_is_the_host_fit(profile, devices, tmp_path):
    """mpiexec -n 1: a communicator of one rank keeps the centres on the
    device, with the host update's model (its rank sums: over_ranks)."""
    needs_fp64(profile)
    np.save(tmp_path / "X.npy", case("tol", np.float64)[0])
    (tmp_path / "fit.py").write_text(ONE_RANK)
    env = {k: v for k, v in os.environ.items() if k != "OCLCLUST_DEVICES"}
    proc = subprocess.run([mpiexec(), "-n", "1", sys.executable, "fit.py", devices[0].platform],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    host, device = (np.load(tmp_path / f"fit{i}.npz") for i in (0, 1))
    assert int(host["steps"]) == 0 and int(device["steps"]) == int(device["n_iter"]) > 1
    for key in ("centers", "u", "objective", "n_iter", "shifts", "objectives"):
        np.testing.assert_array_equal(device[key], host[key], err_msg=key)
