"""KMeans's centre update on the device (oclclust/passes/lloyd_update.py):
its shift and inertia are np.sum's bits, the next pass's inputs are the host
upload's, and a fit with it is the host-update fit bit for bit (centres,
labels, inertia, n_iter, history) for every Lloyd variant of the device (on
the CPU runtimes "mma" is "gemm"), dtype and weighting, through empty
clusters (the host's iteration), convergence by tol or by no label change,
and max_iter."""
import numpy as np
import pyopencl.array as cla
import pytest

import oclclust as oc
from conftest import PLATFORMS
from oclclust.cluster.kmeans import kmeans, lloyd_shards
from oclclust.cluster.empty_clusters import centers_update
from oclclust.passes import lloyd_update
from oclclust.passes.lloyd import LloydPass, LloydSpec
from oclclust.passes.lloyd_mma import mma_specs, tensor_cores
from oclclust.runtime.codegen import kernel
from oclclust.runtime.partition import DevicePartition

# "mma" where a device under test has tensor cores (NVIDIA): elsewhere the planner gives
# it the gemm variant's kernels (test_lloyd_mma checks that), whose cases it would repeat
VARIANTS = ["tiled", "rowwise", "blocked", "gemm"] + (
    ["mma"] if any(tensor_cores(p) for ps in PLATFORMS.values() for p in ps) else [])
# whole fits also with a small fit's update by one work-group (UpdateTerms)
GROUPED = "-group"
FIT_VARIANTS = VARIANTS + [v + GROUPED for v in VARIANTS if v in ("gemm", "mma")]


def needs_fp64(profile):
    if not profile.fp64:
        pytest.skip("the device update needs double precision; this device has none")


def values(rng, n):
    """Positive values over many magnitudes: any other order of summation
    rounds differently."""
    return rng.rand(n) * np.exp(rng.uniform(-30, 30, n))


@pytest.mark.parametrize("wg", [1, 4, 64, 256])
def test_summary_is_numpys_pairwise_sum(profile, queue, wg):
    needs_fp64(profile)
    wg = min(wg, profile.max_work_group_size)
    rng = np.random.RandomState(wg)
    k = 37
    spec = lloyd_update.SummarySpec(dtype="float32", acc_double=True, k=k, wg=wg)
    summarize = kernel(queue.context, spec, "summarize")
    sizes = [1, 2, 7, 8, 9, 15, 16, 17, 127, 128, 129, 135, 136, 255, 256, 257, 1000, 1031,
             4096 + 3, 8192, 8193, 33333, 100003]
    for n_moved, groups in zip(sizes, sizes[::-1]):
        moved, inertia = values(rng, n_moved), values(rng, groups)
        flags = rng.randint(0, 5, (groups, 2)).astype(np.int32)
        weights = rng.rand(k)
        if n_moved % 2:
            weights[rng.randint(k)] = 0
        # a fast precision's re-checked rows, counted in one case of two
        rechecked = rng.randint(0, 100, groups).astype(np.int32)
        counted = groups if groups % 2 else 0
        dev = [cla.to_device(queue, a) for a in (moved, inertia, flags.ravel(), weights,
                                                 rechecked)]
        R = lloyd_update.RESULTS
        result = cla.zeros(queue, 2 * R, np.float64)    # slot 1 of 2 written
        summarize(queue, (wg,), (wg,), dev[0].data, np.int64(n_moved), dev[1].data,
                  dev[2].data, np.int64(groups), dev[4].data, np.int64(counted),
                  dev[3].data, result.data, np.int64(1))
        got = result.get(queue)
        assert not got[:R].any()
        got = got[R:]
        want = [np.sum(moved), np.sum(inertia), flags[:, 0].sum(), flags[:, 1].sum(),
                float((weights == 0).any()), rechecked[:counted].sum()]
        assert got.tolist() == want, (n_moved, groups)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda t: t.__name__)
def test_new_centers_are_the_host_update_and_upload(profile, variant, dtype):
    """The new centres are centers_update's, the squared moves numpy's, and
    the next pass's inputs (layout, norms) what LloydPass.upload writes for
    them; a float32 norm past the range is inf on both."""
    needs_fp64(profile)
    rng = np.random.RandomState(3)
    n, d, k = 300, 7, 13
    X = rng.randn(n, d).astype(dtype)
    # new_centers' own kernel (not the one-group update's, UpdateTerms)
    part = DevicePartition(profile.replace(lloyd_variant=variant, lloyd_update_group=0), X)
    lp = LloydPass(part, k)
    assert lp.spec.variant == variant or (variant, lp.spec.variant) == ("mma", "gemm")
    resident = lloyd_update.ResidentCenters(lp)
    old = rng.randn(k, d) * 3
    sums, weights = rng.randn(k, d) * 50, rng.rand(k) * 20
    weights[[2, 5]] = 0
    if dtype == np.float32:
        sums[7] = 3e38 * weights[7]            # its norm overflows float32
    q = part.queue
    resident.start(old, cla.empty(q, n, np.int32))
    if lp.exact:   # the update rounds the folds' words: the values folded as one block's
        for name, values in (("sums", sums), ("weights", weights)):
            fold = lp.folds[name]
            fold.set_bounds(np.maximum(np.abs(values), 1.0).reshape(fold.shape))
            fold.enqueue(cla.to_device(q, values.ravel()), 1)
    else:
        resident.sums.set(sums.ravel(), q)
        resident.weights.set(weights, q)
    resident.new_centers(0)
    new = centers_update(sums, weights, old)
    for got, values in ((resident.sums, sums), (resident.weights, weights)):
        np.testing.assert_array_equal(got.get(q), values.ravel())   # what the summary reads
    np.testing.assert_array_equal(resident.buffers[1].get(q).reshape(k, d), new)
    np.testing.assert_array_equal(resident.moved.get(q).reshape(k, d), (new - old) ** 2)
    got = [a.get(q) for a in (lp.centers, lp.norms) + ((lp.center_rows,)
                                                       if lp.spec.labels_first else ())]
    lp.upload(new)
    want = [a.get(q) for a in (lp.centers, lp.norms) + ((lp.center_rows,)
                                                        if lp.spec.labels_first else ())]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert np.isinf(want[1][7]) == (dtype == np.float32)


def blobs(n, d, k, dtype, seed=0):
    rng = np.random.RandomState(seed)
    centres = rng.uniform(-3, 3, (k, d)) * 2
    return (centres[rng.randint(k, size=n)] + rng.randn(n, d)).astype(dtype)


def fit(profile, X, device, sw=None, variant=None, **params):
    """KMeans on *profile* (its Lloyd *variant* forced) with the device
    update on or off; returns the estimator and the device steps taken
    (True where flagged: the host's iteration); *ahead*, if given, gets
    whether each step enqueued the next iteration before its read; *depth*:
    the iterations the device update enqueues ahead (default_depth's else)."""
    steps = []
    original = lloyd_update.ResidentCenters.step
    default_depth = lloyd_update.default_depth

    def counted(self, ahead=0):
        out = original(self, ahead)
        steps.append(out[2])
        if spec is not None:
            spec.append(ahead > 0)
        return out
    spec = params.pop("ahead", None)
    depth = params.pop("depth", None)
    grouped = variant is not None and variant.endswith(GROUPED)
    prof = profile if variant is None else profile.replace(
        lloyd_variant=variant.removesuffix(GROUPED), lloyd_update_group=int(grouped))
    saved = kmeans.DEVICE_UPDATE
    try:
        kmeans.DEVICE_UPDATE = device
        lloyd_update.ResidentCenters.step = counted
        if depth is not None:
            lloyd_update.default_depth = lambda part, k: depth
        km = oc.KMeans(devices=[prof], n_init=1, **params).fit(X, sample_weight=sw)
    finally:
        kmeans.DEVICE_UPDATE = saved
        lloyd_update.ResidentCenters.step = original
        lloyd_update.default_depth = default_depth
    return km, steps


def assert_same_fit(a, b):
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.inertia_ == b.inertia_ and a.n_iter_ == b.n_iter_
    strip = [[{k: v for k, v in h.items() if k != "seconds"} for h in m.history_]
             for m in (a, b)]
    assert strip[0] == strip[1]


# (n, d, k): the shift's sum a single block; split over the work-group; over
# many blocks an item
SHAPES = [(900, 3, 5), (2500, 17, 40), (3000, 40, 70)]


@pytest.mark.covering(1)
@pytest.mark.parametrize("precision", ["float32", "tf32", "bf16"])
@pytest.mark.parametrize("depth", [0, 1])
def test_group_update_splits_the_mma_centres(profile, precision, depth):
    """The one-group update of an "mma" pass (its products emulated where
    there are no tensor cores) writes split_centers' tiles and rounding
    terms, the new centres and the numbers of the separate kernels, bit
    for bit, through iterations that move the centres."""
    needs_fp64(profile)
    rng = np.random.RandomState(5)
    n, d, k = 700, 37, 13
    X = rng.randn(n, d).astype(np.float32) * 3
    got = []
    for group in (0, 1):
        prof = profile.replace(lloyd_variant="mma", lloyd_update_group=group)
        part = DevicePartition(prof, X)
        spec = None
        if not tensor_cores(profile):
            base = dict(dtype="float32", acc_double=True, d=d, k=k, update=True, weighted=False)
            spec = next(s for s in mma_specs(prof, base, LloydSpec, precision, emulate=True)
                        if s.wg == 128)
        lp = LloydPass(part, k, spec=spec, precision=precision)
        assert (lp.spec.variant, lp.spec.precision) == ("mma", precision)
        resident = lloyd_update.ResidentCenters(lp, depth=depth)
        assert bool(resident.groups) == bool(group) and (resident.split is None) == bool(group)
        labels = cla.zeros(part.queue, n, np.int32) - 1
        resident.start(X[:k].astype(np.float64), labels)
        steps = [resident.step() for _ in range(3)]
        tiles = [lp.centers.get()] + ([lp.center_rounding.get()] if precision != "float32" else [])
        got.append((steps, tiles, labels.get(), resident.centers_to_host()))
    (steps, tiles, labels, centres), (g_steps, g_tiles, g_labels, g_centres) = got
    assert [(s.inertia, s.n_changed, shift, flagged) for s, shift, flagged in steps] == \
        [(s.inertia, s.n_changed, shift, flagged) for s, shift, flagged in g_steps]
    for a, b in zip(tiles, g_tiles):
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
    np.testing.assert_array_equal(labels, g_labels)
    np.testing.assert_array_equal(centres, g_centres)


@pytest.mark.parametrize("variant", FIT_VARIANTS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda t: t.__name__)
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_resident_fit_is_the_host_fit(profile, variant, shape, dtype, weighted):
    n, d, k = shape
    X = blobs(n, d, k, dtype)
    sw = np.random.RandomState(1).uniform(0.5, 2, n).astype(dtype) if weighted else None
    params = dict(n_clusters=k, random_state=0, max_iter=300, tol=1e-4)
    host, none = fit(profile, X, False, sw, variant, **params)
    device, steps = fit(profile, X, True, sw, variant, **params)
    assert not none
    assert_same_fit(device, host)
    grouped = "lloyd_update/lloyd_update_group.cl.mako" in {r["template"]
                                                            for r in device.kernels_}
    assert grouped == (variant.endswith(GROUPED) and profile.fp64 and not weighted)
    if profile.fp64:
        assert len(steps) == device.n_iter_ and not any(steps)
    else:
        assert not steps


# iterations enqueued ahead of the one read: a CPU runtime's, a GPU's long
# passes', and a GPU's short passes'
DEPTHS = [0, 1, 4]


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("variant", FIT_VARIANTS)
@pytest.mark.parametrize("stop", ["tol", "no change", "max_iter"])
@pytest.mark.covering(2)
def test_every_way_to_stop(profile, variant, stop, depth):
    """Stopped by the shift (tol), by a pass that changes no label (tol=0:
    the inertia is that pass's) and by max_iter (the final pass's); the
    passes enqueued past the stop change nothing the fit returns."""
    X = blobs(2000, 5, 12, np.float32, seed=2)
    params = dict(n_clusters=12, random_state=1, tol={"tol": 1e-2}.get(stop, 0.0),
                  max_iter=4 if stop == "max_iter" else 300)
    host, _ = fit(profile, X, False, None, variant, **params)
    ahead = []
    device, steps = fit(profile, X, True, None, variant, ahead=ahead, depth=depth, **params)
    assert_same_fit(device, host)
    assert (host.n_iter_ == 4) == (stop == "max_iter")
    assert (host.history_[-1]["n_changed"] == 0) == (stop == "no change")
    assert len(steps) == (host.n_iter_ if profile.fp64 else 0)
    if profile.fp64:   # one ahead but past max_iter: else the last read drops a pass
        assert ahead == [True] * (len(steps) - 1) + [stop != "max_iter"]


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("variant", FIT_VARIANTS)
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.covering(1)
def test_empty_clusters_first_iteration(profile, variant, weighted, depth):
    """Centres far from every row: the first iteration's clusters are
    empty, that iteration is the host's (relocation), the others the device's."""
    X = blobs(800, 3, 6, np.float64, seed=3)
    sw = np.random.RandomState(4).randint(1, 4, len(X)).astype(float) if weighted else None
    init = X[:6].copy()
    init[-2:] = 1e4 + np.arange(2)[:, None]
    params = dict(n_clusters=6, init=init, tol=0.0)
    host, _ = fit(profile, X, False, sw, variant, **params)
    device, steps = fit(profile, X, True, sw, variant, depth=depth, **params)
    assert_same_fit(device, host)
    if profile.fp64:
        assert steps[0] and len(steps) == host.n_iter_ and not any(steps[1:])


@pytest.mark.parametrize("variant", FIT_VARIANTS)
def test_empty_clusters_in_the_last_iteration(profile, variant):
    """max_iter=1 with an empty cluster: the only iteration is flagged with
    no pass ahead (the statistics read from the device, not run again)."""
    X = blobs(600, 3, 5, np.float32, seed=6)
    init = X[:5].astype(np.float64)
    init[2] = 1e4
    params = dict(n_clusters=5, init=init, max_iter=1)
    host, _ = fit(profile, X, False, None, variant, **params)
    ahead = []
    device, steps = fit(profile, X, True, None, variant, ahead=ahead, **params)
    assert_same_fit(device, host)
    if profile.fp64:
        assert steps == [True] and ahead == [False]


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("variant", FIT_VARIANTS)
@pytest.mark.parametrize("seed", [51, 66, 120])
@pytest.mark.covering(2)
def test_empty_clusters_mid_fit(profile, variant, seed, depth):
    """A cluster that empties after device iterations (found by search: 12
    centres near 40 rows): the host takes that iteration, then the device
    again."""
    rng = np.random.RandomState(seed)
    X = (rng.rand(40, 2) ** 2).astype(np.float32)
    init = X[rng.choice(40, 12, replace=False)].astype(np.float64) + rng.randn(12, 2) * 0.05
    params = dict(n_clusters=12, init=init, tol=0.0)
    host, _ = fit(profile, X, False, None, variant, **params)
    device, steps = fit(profile, X, True, None, variant, depth=depth, **params)
    assert_same_fit(device, host)
    if profile.fp64:
        pattern = "".join("F" if s else "." for s in steps)
        assert ".F." in pattern and len(steps) == host.n_iter_


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("variant", FIT_VARIANTS)
def test_a_flagged_iteration_ahead_runs_no_pass_again(profile, monkeypatch, variant,
                                                      weighted):
    """One pass ahead over unweighted rows: a flagged iteration's labels,
    distances and statistics are the copies made before the pass ahead, no
    pass runs again, and the fit is the host's; weighted rows keep no copies
    (the memory budget's room) and run it again."""
    needs_fp64(profile)
    rng = np.random.RandomState(51)     # test_empty_clusters_mid_fit's seed 51
    X = (rng.rand(40, 2) ** 2).astype(np.float32)
    init = X[rng.choice(40, 12, replace=False)].astype(np.float64) + rng.randn(12, 2) * 0.05
    sw = np.random.RandomState(4).randint(1, 4, len(X)).astype(np.float32) if weighted \
        else None
    params = dict(n_clusters=12, init=init, tol=0.0)
    host, _ = fit(profile, X, False, sw, variant, **params)
    again, run = [], LloydPass.run
    monkeypatch.setattr(LloydPass, "run", lambda self, *a, **k: (
        again.append(self.update), run(self, *a, **k))[1])
    device, steps = fit(profile, X, True, sw, variant, depth=1, **params)
    assert_same_fit(device, host)
    assert any(steps) and any(again) == weighted    # (the finish's pass: no update)


def test_non_finite_rows_raise_as_on_the_host(profile):
    X = blobs(500, 3, 4, np.float32)
    X[7, 1] = 3e38                    # its squared distances overflow float32
    for device in (True, False):
        with pytest.raises(ValueError, match="NaN or infinity"):
            fit(profile, X, device, None, None, n_clusters=4, init=X[[0, 100, 200, 300]])


def test_used_on_one_resident_device_with_fp64_only(profile):
    """One resident chunk with double precision: the device's update;
    several chunks (a small largest buffer), rows streamed through a
    budget, or no fp64: the host's."""
    from oclclust.cluster.kmeans.lloyd_shards import LloydShards
    X = blobs(500, 3, 3, np.float64)
    one = oc.DeviceManager([profile]).scatter(X, None)
    two = oc.DeviceManager([profile.replace(max_alloc_size=250 * 24)]).scatter(X, None)
    # the budget holds a quarter of the rows (24 bytes each): streamed
    streamed = oc.DeviceManager([profile], memory_budget=125 * 24).scatter(X)
    no_fp64 = oc.DeviceManager([profile.replace(fp64=False)]).scatter(X.astype(np.float32))
    try:
        assert LloydShards(one, 3).device_update == profile.fp64
        assert not LloydShards(one, 3, device_update=False).device_update
        assert len(two.chunks) == 2 and not LloydShards(two, 3).device_update
        assert any(s.streamed for s in streamed.shards)
        assert not LloydShards(streamed, 3).device_update
        assert not LloydShards(no_fp64, 3).device_update
    finally:
        for data in (one, two, streamed, no_fp64):
            data.close()


def test_without_fp64_the_host_updates(profile):
    X = blobs(800, 4, 5, np.float32, seed=7)
    host, steps = fit(profile.replace(fp64=False), X, True, n_clusters=5, random_state=0)
    assert not steps and host.n_iter_ > 1


def pooled_states():
    return {id(s): s for free in lloyd_shards._LLOYD_POOL.values() for s in free}


def test_a_later_fit_takes_the_pooled_state(profile, monkeypatch):
    """A warm fit takes the buffers, queue and kernels an earlier fit of the
    same shape left (the same model, bit for bit); a pooled state holds no
    reference to the rows; chunks over POOL_MAX_ROWS leave none."""
    import gc
    X = blobs(700, 3, 4, np.float32, seed=8)
    params = dict(n_clusters=4, init=X[[0, 200, 400, 600]].astype(np.float64), tol=0.0)
    first, _ = fit(profile, X, True, **params)
    gc.collect()
    before = pooled_states()
    assert before and all(lp.part is None for s in before.values() for lp in s.passes.values())
    second, steps = fit(profile, X, True, **params)
    gc.collect()
    assert_same_fit(second, first)
    assert pooled_states().keys() == before.keys()   # taken, then given back
    if profile.fp64:
        assert steps and any(s.resident is not None for s in before.values())
    monkeypatch.setattr(lloyd_shards, "POOL_MAX_ROWS", 100)
    Y = blobs(701, 3, 4, np.float32, seed=8)          # a new shape: a new state
    fit(profile, Y, True, **params)
    gc.collect()
    assert pooled_states().keys() == before.keys()


def test_a_collection_under_the_pool_lock_gives_back():
    """A chunk collected (its finalizer gives its state back) by a garbage
    collection that starts while this thread holds the pool's lock, as an
    allocation inside take_state may start one: no deadlock, the state pooled."""
    import gc
    import threading
    import weakref

    class Cycle:   # freed only by the cyclic collector, as a fit's chunks can be
        pass
    key = ("collected under the lock",)
    state = lloyd_shards.LloydState()
    garbage = Cycle()
    garbage.self = garbage
    weakref.finalize(garbage, lloyd_shards.give_state, key, state, 1)
    del garbage

    def collect_under_lock():
        with lloyd_shards._LLOYD_POOL_LOCK:
            gc.collect()
    worker = threading.Thread(target=collect_under_lock, daemon=True)
    worker.start()
    worker.join(30)
    try:
        assert not worker.is_alive(), "a finalizer deadlocked on the pool's lock"
        assert lloyd_shards.take_state(key) is state
    finally:
        lloyd_shards._LLOYD_POOL.pop(key, None)


# ---------------------------------------- several devices: one shared update
def two_devices(profile):
    """Two devices like *profile*: a CPU split in two 1-unit sub-devices
    (the CPU runtimes of CI), a GPU and another of its platform and name
    (a several-GPU host); else skipped."""
    if profile.type == "cpu" and profile.compute_units >= 2:
        return oc.sub_devices(profile, [1, 1])
    alike = [p for p in oc.select_devices(profile.platform)
             if p.name == profile.name and p.type == profile.type]
    if profile.type == "cpu" or len(alike) < 2:
        pytest.skip(f"{profile} has no second device like it here")
    return alike[:2]


def shared_fit(devices, X, device, variant, **params):
    """KMeans over *devices* (each its rows' one chunk) with the device
    update on or off: the estimator and, per shared step, whether it was
    flagged (the host's iteration)."""
    from oclclust.cluster.kmeans.lloyd_shards import LloydShards
    steps, original = [], LloydShards._shared_step
    ahead = shared_fit.ahead = []

    def counted(self, centers, iterations_left=None):
        out = original(self, centers, iterations_left)
        steps.append(out[2])
        ahead.append(self._next is not None)   # the next pass enqueued before the read
        return out
    saved = kmeans.DEVICE_UPDATE
    try:
        kmeans.DEVICE_UPDATE, LloydShards._shared_step = device, counted
        devs = [p.replace(lloyd_variant=variant) for p in devices]
        km = oc.KMeans(devices=oc.DeviceManager(devs, weights="compute_units"), n_init=1,
                       **params).fit(X)
    finally:
        kmeans.DEVICE_UPDATE, LloydShards._shared_step = saved, original
    return km, steps


def shared_case(name):
    """(X, KMeans parameters, the flag pattern the steps must show)."""
    if name == "blobs":
        X = blobs(3000, 17, 40, np.float32, seed=5)
        return X, dict(n_clusters=40, random_state=0, tol=1e-4), r"^\.+$"
    if name == "empty first":   # two centres far from every row
        X = blobs(800, 3, 6, np.float64, seed=3)
        init = X[:6].copy()
        init[-2:] = 1e4 + np.arange(2)[:, None]
        return X, dict(n_clusters=6, init=init, tol=0.0), r"^F\.+$"
    if name == "empty mid":     # test_empty_clusters_mid_fit's seed 51
        rng = np.random.RandomState(51)
        X = (rng.rand(40, 2) ** 2).astype(np.float32)
        init = X[rng.choice(40, 12, replace=False)].astype(np.float64) + rng.randn(12, 2) * 0.05
        # the same means, more rows than a block (exact_sums): both devices hold some
        return np.tile(X, (32, 1)), dict(n_clusters=12, init=init, tol=0.0), r"\.F\."
    X = blobs(2000, 5, 12, np.float32, seed=2)   # stopped by max_iter
    return X, dict(n_clusters=12, random_state=1, tol=0.0, max_iter=4), r"^\.{4}$"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", ["blobs", "empty first", "empty mid", "max_iter"])
def test_shared_update_over_devices_is_the_host_fit(profile, variant, case):
    """Two devices sharing one update (lloyd_update.SharedCenters): every
    iteration the devices', except the flagged ones (empty clusters), and
    the model the host update's over the same devices, bit for bit."""
    import re
    needs_fp64(profile)
    subs = two_devices(profile)
    X, params, pattern = shared_case(case)
    host, none = shared_fit(subs, X, False, variant, **params)
    shared, steps = shared_fit(subs, X, True, variant, **params)
    assert not none and len(steps) == shared.n_iter_
    # every unflagged step but max_iter's last enqueued the next pass ahead
    assert shared_fit.ahead == [not flagged and (case != "max_iter" or i < len(steps) - 1)
                                for i, flagged in enumerate(steps)]
    assert re.search(pattern, "".join("F" if s else "." for s in steps)), steps
    assert_same_fit(shared, host)


@pytest.mark.parametrize("count", ["one", "two"])
def test_a_warm_fit_too_large_to_pool_page_locks_nothing(profile, count, monkeypatch):
    """A chunk over POOL_MAX_ROWS keeps no pooled state, so its passes,
    resident or shared update and folds are made anew each fit: their
    page-locked arrays come from the process's pool, and a warm fit maps
    no new page-locked memory (page-locking is slow on NVIDIA's runtime);
    the same model, bit for bit."""
    import gc
    import pyopencl as cl
    needs_fp64(profile)
    monkeypatch.setattr(lloyd_shards, "POOL_MAX_ROWS", 0)
    devs = two_devices(profile) if count == "two" else [profile]
    X = blobs(3000, 17, 40, np.float32, seed=5)
    params = dict(n_clusters=40, init=X[:40].astype(np.float64), tol=0.0, max_iter=5)
    first, _ = shared_fit(devs, X, True, "tiled", **params)
    gc.collect()   # the first fit's passes gone: their arrays to the pool
    maps, map_buffer = [], cl.enqueue_map_buffer

    def counted(queue, buf, *args, **kwargs):
        maps.append(buf.size)
        return map_buffer(queue, buf, *args, **kwargs)
    monkeypatch.setattr(cl, "enqueue_map_buffer", counted)
    second, steps = shared_fit(devs, X, True, "tiled", **params)
    assert maps == [], maps
    assert_same_fit(second, first)


def test_shared_update_only_where_every_device_holds_its_rows(profile):
    """Shared: several devices, each its rows in one resident chunk, fp64,
    one process; not with measured weights, streamed rows, one device or
    no fp64."""
    from oclclust.cluster.kmeans.lloyd_shards import LloydShards
    needs_fp64(profile)
    subs = two_devices(profile)
    X = blobs(600, 3, 3, np.float64)
    made = {name: oc.DeviceManager(devs, **kw).scatter(X, None) for name, devs, kw in (
        ("two", subs, {}), ("one", subs[:1], {}),
        ("streamed", subs, dict(memory_budget=100 * 24)),
        ("no fp64", [p.replace(fp64=False) for p in subs], {}))}
    made["no fp64"].close()
    made["no fp64"] = oc.DeviceManager([p.replace(fp64=False) for p in subs]).scatter(
        X.astype(np.float32), None)
    try:
        assert LloydShards(made["two"], 3).shared_update
        assert LloydShards(made["two"], 3).device_update
        assert not LloydShards(made["two"], 3, device_update=False).shared_update
        assert not LloydShards(made["one"], 3).shared_update
        assert LloydShards(made["one"], 3).device_update   # its own resident update
        assert not LloydShards(made["streamed"], 3).shared_update
        assert not LloydShards(made["no fp64"], 3).shared_update
    finally:
        for data in made.values():
            data.close()
    measured = oc.DeviceManager(subs, weights="measured")
    assert not LloydShards(measured.scatter(X, None), 3).shared_update
