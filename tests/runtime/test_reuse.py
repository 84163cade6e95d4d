"""Per-process state (devices, contexts and queues, programs, kernels, plans)
is made once and shared by every later fit, from any thread."""
import sys
import threading

import numpy as np
import pyopencl as cl
import pytest

import oclclust as oc
from oclclust.runtime import codegen, devices as dv

ESTIMATORS = {
    "KMeans": lambda devs: oc.KMeans(5, n_init=1, random_state=0, devices=devs),
    "KMeans-restarts": lambda devs: oc.KMeans(5, n_init=3, random_state=1, devices=devs),
    "FuzzyCMeans": lambda devs: oc.FuzzyCMeans(4, random_state=0, devices=devs),
    "GaussianMixture": lambda devs: oc.GaussianMixture(3, covariance_type="diag",
                                                        random_state=0, devices=devs),
}


def _model(est):
    names = ("cluster_centers_", "labels_", "inertia_", "means_", "covariances_", "u_")
    return {n: getattr(est, n) for n in names if hasattr(est, n)}


def _same(a, b):
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_two_threads_fitting_at_once_get_the_sequential_models(name, devices, make_blobs):
    """The threads share the device's queue and every kernel object: each
    launch must carry its own fit's arguments.  The interpreter switches
    threads every microsecond, so that they interleave inside launches."""
    data = [make_blobs(n=3000, d=6, k=5, seed=s, dtype=np.float32)[0] for s in (0, 1)]
    alone = [_model(ESTIMATORS[name](devices).fit(X)) for X in data]
    start, got, errors = threading.Barrier(2), [None, None], []

    def fit(i):
        try:
            start.wait()
            for _ in range(4):   # many launches of each thread interleave
                got[i] = _model(ESTIMATORS[name](devices).fit(data[i]))
                _same(got[i], alone[i])
        except Exception as exc:   # noqa: BLE001 -- re-raised by the test thread
            errors.append(exc)
    threads = [threading.Thread(target=fit, args=(i,)) for i in (0, 1)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
    finally:
        sys.setswitchinterval(interval)
    assert not any(t.is_alive() for t in threads)
    if errors:
        raise errors[0]


def test_a_later_fit_builds_and_discovers_nothing(devices, make_blobs, monkeypatch):
    X, _ = make_blobs(n=500, d=4, k=3, dtype=np.float32)
    oc.KMeans(3, n_init=1, random_state=0, devices=devices).fit(X)
    programs, kernels, plans = (len(codegen._PROGRAMS), len(codegen._KERNELS),
                                len(codegen._PLANS))

    def no_discovery():
        raise AssertionError("the platforms were enumerated again")
    monkeypatch.setattr(cl, "get_platforms", no_discovery)
    oc.KMeans(3, n_init=1, random_state=0, devices=devices).fit(X)
    assert (len(codegen._PROGRAMS), len(codegen._KERNELS), len(codegen._PLANS)) == \
        (programs, kernels, plans)


def test_devices_are_discovered_again_when_a_profile_file_changes(profile, tmp_path,
                                                                   monkeypatch):
    first = dv.list_devices()
    assert dv.list_devices() == first   # the same profiles, from the memo
    user = tmp_path / "devices.yaml"
    user.write_text(f"- match: {{name: {profile.name!r}}}\n  work_group_size: 16\n")
    monkeypatch.setenv("OCLCLUST_DEVICES_YAML", str(user))
    mine = next(p for p in dv.list_devices() if p.key == profile.key)
    assert mine.work_group_size == 16
    user.write_text(f"- match: {{name: {profile.name!r}}}\n  work_group_size: 32\n")
    mine = next(p for p in dv.list_devices() if p.key == profile.key)
    assert mine.work_group_size == 32
