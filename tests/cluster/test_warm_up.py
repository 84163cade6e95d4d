"""oclclust.warm_up: after it, a fit of a warmed shape builds no program and
makes no plan of its own, whatever its number of rows; bad shapes are
refused before any device work."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import oclclust as oc
from oclclust.runtime import codegen


@pytest.fixture
def fresh_process(monkeypatch):
    """This process's programs, kernels and plans forgotten (the on-disk
    cache still serves), as in a fresh process; the programs built counted."""
    for memo in ("_PROGRAMS", "_KERNELS", "_PLANS", "_PLANS_FETCHED"):
        monkeypatch.setattr(codegen, memo, {})
    built = []
    build = codegen.build

    def counted(context, spec, *args, **kwargs):
        before = len(codegen._PROGRAMS)
        program = build(context, spec, *args, **kwargs)
        if len(codegen._PROGRAMS) > before:
            built.append(spec)
        return program
    monkeypatch.setattr(codegen, "build", counted)
    return built


# shapes of their own (13 features), so that no other test's programs serve them
@pytest.mark.parametrize("shape, fit", [
    (("KMeans", 13, 11), lambda devices: oc.KMeans(11, devices=devices)),
    ((oc.GaussianMixture(5, covariance_type="diag"), 13),
     lambda devices: oc.GaussianMixture(5, covariance_type="diag", max_iter=4,
                                        devices=devices)),
    (("FuzzyCMeans", 13, 6), lambda devices: oc.FuzzyCMeans(6, max_iter=5, devices=devices)),
    (("MiniBatchKMeans", 13, 7), lambda devices: oc.MiniBatchKMeans(7, max_iter=3,
                                                                    devices=devices)),
], ids=["KMeans", "GaussianMixture", "FuzzyCMeans", "MiniBatchKMeans"])
def test_a_warmed_shape_fits_without_building(devices, fresh_process, shape, fit):
    assert oc.warm_up(devices, [shape]) == list(devices)
    assert fresh_process, "the warm-up built nothing"
    fresh_process.clear()
    X = np.random.default_rng(3).standard_normal((30000, 13)).astype(np.float32)
    fit(devices).fit(X)
    assert fresh_process == []


# a fresh process: warm_up of a platform and two shapes, then what a first fit
# would pay counted through fits of them: the platforms and devices asked of
# the runtime, the programs, plans and (contexts') queues made
AFTER_WARM_UP = textwrap.dedent("""
    import json, sys
    import numpy as np
    import pyopencl as cl
    import oclclust as oc
    from oclclust.runtime import codegen, devices
    platform = sys.argv[1]
    oc.warm_up(platform, [("KMeans", 9, 5), ("GaussianMixture", 9, 5)])
    calls = {"get_platforms": 0, "get_devices": 0}
    def counted(owner, name):
        real = getattr(owner, name)
        def call(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        setattr(owner, name, call)
    counted(cl, "get_platforms")
    counted(cl.Platform, "get_devices")
    made = [len(codegen._PROGRAMS), len(codegen._PLANS), len(devices._QUEUES)]
    X = np.random.default_rng(1).standard_normal((5000, 9)).astype(np.float32)
    oc.KMeans(5, devices=platform).fit(X)
    oc.GaussianMixture(5, devices=platform).fit(X)
    calls["programs"], calls["plans"], calls["queues"] = [
        now - then for now, then in zip([len(codegen._PROGRAMS), len(codegen._PLANS),
                                          len(devices._QUEUES)], made)]
    print(json.dumps(calls))
""")


def test_after_warm_up_a_first_fit_discovers_makes_and_builds_nothing(profile):
    """In a fresh process, warm_up leaves a first fit of its shapes no
    platform to discover, no context or queue to make, no program to build
    and no plan to make."""
    env = {k: v for k, v in os.environ.items() if k != "OCLCLUST_DEVICES"}
    out = subprocess.run([sys.executable, "-c", AFTER_WARM_UP, profile.platform],
                         capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr
    calls = json.loads(out.stdout.strip().splitlines()[-1])
    assert calls == {"get_platforms": 0, "get_devices": 0, "programs": 0, "plans": 0,
                     "queues": 0}


def test_without_shapes_the_devices_are_made_ready(devices, fresh_process):
    assert oc.warm_up(devices) == list(devices)
    assert fresh_process == []


@pytest.mark.parametrize("shapes, error, match", [
    (("KMeans", 8, 3), TypeError, "shapes must be a list"),
    ([["KMeans", 8, 3]], TypeError, "each shape must be a tuple"),
    ([("KMeans", 8)], TypeError, "give \\(name, n_features, n_clusters\\)"),
    ([("Kmeans", 8, 3)], ValueError, "unknown estimator 'Kmeans'"),
    ([("KMeans", 0, 3)], ValueError, "n_features must be a positive integer"),
    ([("KMeans", 8, 2.5)], ValueError, "n_clusters must be a positive integer"),
    ([(object(), 8)], TypeError, "is not an oclclust estimator"),
    ([(oc.KMeans(3), 8, 3)], TypeError, "give \\(estimator, n_features\\)"),
])
def test_bad_shapes_are_refused_before_any_device_work(devices, fresh_process, shapes, error,
                                                        match):
    with pytest.raises(error, match=match):
        oc.warm_up(devices, shapes)
    assert fresh_process == []


def test_a_dtype_other_than_float_is_refused(devices):
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        oc.warm_up(devices, [("KMeans", 8, 3)], dtype=np.int32)
