"""The ensemble's model update on the device (oclclust/passes/ensemble_update.py):
bit for bit the host's update, for every strategy, KD-tree mapping, K and
dtype; flagged iterations (empty clusters) go to the host and back; only
resident fits of one process with double precision use it, several chunks
(two buffers of one device, two sub-devices) through one shared update."""
import numpy as np
import pytest

import oclclust as oc
from conftest import split_or_skip
from oclclust.passes import ensemble_update
from oclclust.cluster.kmeans.ensemble import (EnsembleModels, data_moments, ensemble_passes,
                                              fixed_point)
from oclclust.cluster.kmeans.lloyd_loop import fit_lloyd

VARIANTS = [("task", None), ("data", None), ("concatenated", None),
            ("concatenated", "direct"), ("concatenated", "distributed"),
            ("concatenated", "replicated")]
# iterations enqueued ahead of the one read: a CPU runtime's, a GPU's
AHEADS = [0, ensemble_update.AHEAD]


def blobs(n, d, dtype, seed=0):
    rng = np.random.RandomState(seed)
    return (rng.randn(n, d) + rng.randint(0, 5, (n, 1)) * 3.0).astype(dtype)


def fit(profile, X, inits, device_update, strategy="concatenated", kdtree=None,
        max_iter=60, enqueued=None, ahead=None):
    """fit_lloyd's (centres, inertia, n_iter, labels) and the device
    update's steps (one chunk's or several chunks' shared): (taken,
    flagged); the passes enqueued appended to *enqueued*; *ahead*: the
    iterations enqueued ahead (the device's default_ahead's else).
    *profile*: a device, or a list of them."""
    data = oc.DeviceManager(profile if isinstance(profile, list) else [profile]).scatter(X, None)
    steps = []
    original, enqueue = ensemble_update.DeviceUpdate.step, ensemble_update.DeviceUpdate._enqueue
    shared = ensemble_update.SharedUpdate.step
    default_ahead = ensemble_update.default_ahead

    def counted(self, tol, ahead=ensemble_update.AHEAD):
        shifts, flags = original(self, tol, ahead)
        steps.append(bool(flags.any()))
        return shifts, flags

    def shared_counted(self, tol):
        stepped = shared(self, tol)   # (None: the devices differ; counted as flagged)
        steps.append(stepped is None or bool(stepped[1].any()))
        return stepped

    def enqueue_counted(self, tol):
        enqueue(self, tol)
        if enqueued is not None:
            enqueued.append(len(self.pending))
    try:
        ensemble_update.DeviceUpdate.step = counted
        ensemble_update.DeviceUpdate._enqueue = enqueue_counted
        ensemble_update.SharedUpdate.step = shared_counted
        if ahead is not None:
            ensemble_update.default_ahead = lambda profile: ahead
        host_w = np.ones(len(X))
        engine = ensemble_passes(data, fixed_point(data, host_w, data_moments(data)[0]),
                                 [len(c) for c in inits], strategy, kdtree,
                                 device_update=device_update)
        tol = float(np.mean(X.astype(np.float64).var(0))) * 1e-4
        out = fit_lloyd(EnsembleModels(engine), [c.copy() for c in inits], max_iter, tol, data,
                        host_w)
    finally:
        ensemble_update.DeviceUpdate.step, ensemble_update.DeviceUpdate._enqueue = \
            original, enqueue
        ensemble_update.SharedUpdate.step = shared
        ensemble_update.default_ahead = default_ahead
        data.close()
    return out, (len(steps), sum(steps))


def assert_same(got, want):
    for g, w in zip(got[0], want[0]):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_array_equal(got[3], want[3])


@pytest.mark.parametrize("ahead", AHEADS)
@pytest.mark.parametrize("strategy, kdtree", VARIANTS)
@pytest.mark.parametrize("dtype, ks", [(np.float32, (7, 7, 7, 7)), (np.float64, (3, 9, 5))])
def test_device_update_is_the_host_update(profile, strategy, kdtree, dtype, ks, ahead):
    X = blobs(1200, 3, dtype)
    rng = np.random.RandomState(1)
    inits = [X[rng.choice(len(X), k, replace=False)].astype(np.float64) for k in ks]
    host, (taken, _) = fit(profile, X, inits, False, strategy, kdtree)
    assert taken == 0
    device, (taken, flagged) = fit(profile, X, inits, True, strategy, kdtree, ahead=ahead)
    assert_same(device, host)
    assert (taken >= max(host[2]) if profile.fp64 else taken == 0) and flagged == 0
    assert len(set(host[2])) > 1          # models left the passes at their own iteration


@pytest.mark.parametrize("ahead", AHEADS)
def test_empty_clusters_go_to_the_host_and_back(profile, ahead):
    """A centroid far from every point: its cluster is empty, that
    iteration is the host's (relocation), the next ones the device's."""
    X = blobs(900, 2, np.float32, seed=4)
    rng = np.random.RandomState(5)
    inits = [X[rng.choice(len(X), 6, replace=False)].astype(np.float64) for _ in range(3)]
    inits[1][2] = 1e3
    host, _ = fit(profile, X, inits, False)
    device, (taken, flagged) = fit(profile, X, inits, True, ahead=ahead)
    assert_same(device, host)
    assert flagged >= 1 and taken > flagged or not profile.fp64


@pytest.mark.parametrize("ahead", AHEADS)
def test_passes_run_ahead_but_not_past_max_iter(profile, ahead):
    """Iterations are enqueued *ahead* beyond the one read, none beyond
    max_iter: no pass is wasted when the fit stops there."""
    X = blobs(1500, 2, np.float32, seed=2)
    rng = np.random.RandomState(3)
    inits = [X[rng.choice(len(X), 40, replace=False)].astype(np.float64) for _ in range(2)]
    enqueued = []
    (_, _, n_iter, _), (taken, flagged) = fit(profile, X, inits, True, max_iter=6,
                                              enqueued=enqueued, ahead=ahead)
    assert list(n_iter) == [6, 6]
    if profile.fp64:
        assert (taken, flagged) == (6, 0)
        assert len(enqueued) == 6 and max(enqueued) == 1 + ahead
    else:
        assert taken == 0 and not enqueued


def two_chunks(profile, layout):
    """Several chunks of one process: two buffers of one device (its
    largest holds 600 rows of 3 float32) or two sub-devices."""
    if layout == "buffers":
        return profile.replace(max_alloc_size=600 * 3 * 4)
    return split_or_skip(profile)


LAYOUTS = ["buffers", "sub-devices"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("strategy, kdtree", [("task", None), ("concatenated", "direct")])
@pytest.mark.parametrize("dtype, ks", [(np.float32, (7, 7, 7, 7)), (np.float64, (3, 9, 5))])
def test_shared_update_is_the_host_update(profile, layout, strategy, kdtree, dtype, ks):
    """Several chunks' shared update: bit for bit the host update over the
    same chunks."""
    X = blobs(1200, 3, dtype)
    rng = np.random.RandomState(1)
    inits = [X[rng.choice(len(X), k, replace=False)].astype(np.float64) for k in ks]
    chunks = two_chunks(profile, layout)
    host, (taken, _) = fit(chunks, X, inits, False, strategy, kdtree)
    assert taken == 0
    shared, (taken, flagged) = fit(chunks, X, inits, True, strategy, kdtree)
    assert_same(shared, host)
    assert (taken >= max(host[2]) if profile.fp64 else taken == 0) and flagged == 0
    assert len(set(host[2])) > 1          # models left the passes at their own iteration


@pytest.mark.parametrize("layout", LAYOUTS)
def test_shared_empty_clusters_go_to_the_host_and_back(profile, layout):
    X = blobs(1200, 3, np.float32, seed=4)
    rng = np.random.RandomState(5)
    inits = [X[rng.choice(len(X), 6, replace=False)].astype(np.float64) for _ in range(3)]
    inits[1][2] = 1e3
    chunks = two_chunks(profile, layout)
    host, _ = fit(chunks, X, inits, False)
    shared, (taken, flagged) = fit(chunks, X, inits, True)
    assert_same(shared, host)
    assert flagged >= 1 and taken > flagged or not profile.fp64


def test_devices_that_differ_hand_the_fit_to_the_host(profile, monkeypatch):
    """A chunk whose update gives other shifts (a device that rounds
    otherwise): that iteration and the rest are the host update's, from
    the centres before it."""
    if not profile.fp64:
        pytest.skip("the device update needs double precision")
    X = blobs(1200, 3, np.float32)
    rng = np.random.RandomState(1)
    inits = [X[rng.choice(len(X), 7, replace=False)].astype(np.float64) for _ in range(3)]
    chunks = two_chunks(profile, "buffers")
    host, _ = fit(chunks, X, inits, False)
    take, first, rounds = ensemble_update.DeviceUpdate.take, [], []

    def differs(self):
        shifts, flags = take(self)
        first[:] = first or [self]
        if self is first[0]:
            rounds.append(self)
        elif len(rounds) == 3:   # the third iteration's other chunks
            shifts = shifts + 1.0
        return shifts, flags
    monkeypatch.setattr(ensemble_update.DeviceUpdate, "take", differs)
    shared, (steps, flagged) = fit(chunks, X, inits, True)
    assert_same(shared, host)
    assert (steps, flagged) == (3, 1) and len(rounds) == 3


def test_used_on_resident_chunks_of_one_process(profile):
    X = blobs(400, 2, np.float32)
    one = oc.DeviceManager([profile]).scatter(X, None)
    # two resident chunks of one device: its largest buffer holds 200 rows of 8 bytes
    two = oc.DeviceManager([profile.replace(max_alloc_size=200 * 8)]).scatter(X, None)
    try:
        assert ensemble_update.centers_can_stay_resident(one, None) == profile.fp64
        assert not ensemble_update.centers_can_be_shared(one, None)
        assert len(two.chunks) == 2 and not ensemble_update.centers_can_stay_resident(two, None)
        assert ensemble_update.centers_can_be_shared(two, None) == profile.fp64
    finally:
        one.close()
        two.close()
