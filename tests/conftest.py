"""Shared fixtures: the OpenCL platform under test and small, well-separated data.

tools/test.sh runs the suite once per platform with OCLCLUST_TEST_PLATFORM set
to the platform's full name; without it every platform is tested (its first
device).  Tests pass ``devices=devices`` to estimators rather than relying on
OCLCLUST_DEVICES, so the platform under test is never in doubt.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

# the tests read the shipped devices.yaml, not one this machine's user tuned
# (runtime/profiles.user_profiles_path): a config folder of their own, empty
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="oclclust-tests-config-")

import oclclust as oc  # noqa: E402

# the harness scripts (oclgrind driver and exercisers, the MPI script) import as modules
sys.path.insert(0, str(Path(__file__).resolve().parent / "harness"))
# a Python subprocess (mpiexec's ranks, the command line) imports the oclclust under
# test, not another one installed in the environment
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(Path(oc.__file__).resolve().parent.parent)] +
    [p for p in [os.environ.get("PYTHONPATH")] if p])


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "one_runtime: checks that do not depend on the OpenCL runtime under test "
        "(the host's code, the package, the docs' examples, the command line, whose fits are "
        "the estimators' the suite runs on every runtime; fits over both CPU runtimes, the "
        "runtimes fixture's, whatever the platform under test): tools/test.sh runs them on "
        "one runtime only")
    config.addinivalue_line(
        "markers", "covering(strength): a parametrized test whose cases that give each "
        "parameter each of its values (strength 1), or every two parameters each pair of "
        "their values (strength 2), are enough on a runtime whose kernels' compilation is "
        "most of the test (PoCL); its other cases are marked breadth")
    config.addinivalue_line(
        "markers", "breadth: a case of a covering test beyond those that cover its values: "
        "tools/test.sh leaves it out of PoCL's run (Intel's runtime and GPUs run every case)")


def _covered(item, strength):
    """The parameter values (strength 1) or pairs of them (2) a case gives."""
    values = sorted((name, repr(value)) for name, value in item.callspec.params.items())
    if strength == 1:
        return set(values)
    return {(a, b) for i, a in enumerate(values) for b in values[i + 1:]} or set(values)


@pytest.hookimpl(tryfirst=True)   # before -m selects by marks
def pytest_collection_modifyitems(config, items):
    """Of each covering test, keep (greedily) the cases that give the most
    values or pairs not yet given, until every one is; mark the others
    breadth."""
    tests = {}
    for item in items:
        mark = item.get_closest_marker("covering")
        if mark is not None and hasattr(item, "callspec"):
            tests.setdefault(item.nodeid.split("[")[0], []).append(
                (item, _covered(item, mark.args[0] if mark.args else 2)))
    for cases in tests.values():
        left = dict(cases)
        while left:
            best = max(left, key=lambda item: len(left[item]))
            if not left[best]:
                break
            given = left.pop(best)
            for item in left:
                left[item] -= given
        for item in left:
            item.add_marker(pytest.mark.breadth)


def platforms_under_test():
    """{platform name: [DeviceProfile, ...]} of the platforms under test."""
    by_platform = {}
    for profile in oc.list_devices():
        by_platform.setdefault(profile.platform, []).append(profile)
    want = os.environ.get("OCLCLUST_TEST_PLATFORM")
    if want:
        if want not in by_platform:
            raise pytest.UsageError(f"OCLCLUST_TEST_PLATFORM={want!r} names no OpenCL platform; "
                                    f"present: {sorted(by_platform)}")
        return {want: by_platform[want]}
    if not by_platform:
        raise pytest.UsageError("no OpenCL platform found: run tools/setup.sh --test")
    return {name: profiles[:1] for name, profiles in by_platform.items()}


PLATFORMS = platforms_under_test()


def _short(name):
    return "".join(c for c in name.split()[0].lower() if c.isalnum())


@pytest.fixture(scope="session")
def platform_devices():
    """Every DeviceProfile under test (all platforms' when none is named)."""
    return [p for profiles in PLATFORMS.values() for p in profiles]


@pytest.fixture(scope="session", params=sorted(PLATFORMS), ids=_short)
def devices(request):
    """The DeviceProfiles of one platform under test: pass as ``devices=devices``."""
    return PLATFORMS[request.param]


@pytest.fixture(scope="session")
def profile(devices):
    """The device a single-device fit on ``devices`` runs on."""
    return oc.runtime.devices.preferred(devices)[0]


@pytest.fixture(scope="session")
def queue(profile):
    return profile.queue()


def make_blobs(n=600, d=3, k=4, seed=0, dtype=np.float64):
    """Well-separated Gaussian blobs: no near-ties between centres, so labels
    are stable under float32 rounding and equal scikit-learn's exactly."""
    rng = np.random.RandomState(seed)
    while True:   # centres at least 20 standard deviations apart
        centres = rng.uniform(-5, 5, size=(k, d)) * k
        gaps = np.linalg.norm(centres[:, None] - centres[None], axis=-1)
        if k == 1 or gaps[np.triu_indices(k, 1)].min() > 10:
            break
    y = np.arange(n) % k
    X = centres[y] + rng.normal(scale=0.5, size=(n, d))
    return X.astype(dtype), y


@pytest.fixture(scope="session")
def blobs():
    return make_blobs()


@pytest.fixture(scope="session", name="make_blobs")
def make_blobs_fixture():
    return make_blobs


CPU_RUNTIMES = ["Portable Computing Language", "Intel(R) OpenCL"]


@pytest.fixture(scope="module")
def runtimes():
    """Both CPU runtimes' devices, unlike devices of one host (missing: a
    failure under CI=true, else a skip), whatever OCLCLUST_TEST_PLATFORM
    says: a test that asks for them alone is the same in each runtime's run
    (mark it one_runtime)."""
    found = []
    for name in CPU_RUNTIMES:
        try:
            found.append(oc.runtime.devices.preferred(oc.select_devices(name))[0])
        except ValueError as exc:
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail(f"CI=true but the OpenCL platform {name!r} is missing: {exc}")
            pytest.skip(f"the OpenCL platform {name!r} is not installed: {exc}")
    return found


def split_or_skip(profile, counts=(1, 1)):
    """Sub-devices of *profile* by compute-unit *counts*; the test is skipped
    on a device that cannot be split (NVIDIA GPUs), never on a CPU (both
    CPU runtimes of CI split by counts)."""
    if profile.compute_units < sum(counts):
        pytest.skip(f"{profile} has {profile.compute_units} compute unit(s): no sub-devices")
    subs = oc.sub_devices(profile, list(counts))
    try:
        subs[0].cl_device()
    except ValueError as exc:
        if profile.type == "cpu":
            raise
        pytest.skip(f"{profile} cannot be split into sub-devices: {exc}")
    return subs


def run_cli(*args, timeout=300):
    """``python -m oclclust ARGS`` in a subprocess (OCLCLUST_DEVICES unset)."""
    env = dict(os.environ)
    env.pop("OCLCLUST_DEVICES", None)
    return subprocess.run([sys.executable, "-m", "oclclust", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


# --------------------------------------------------- scikit-learn's contract
# scikit-learn marks its own KMeans as failing this check; the k-family fails it
# for the same reason (the weighted and the repeated data draw different inits)
SAMPLE_WEIGHT_XFAIL = {"check_sample_weight_equivalence_on_dense_data":
                       "sample_weight is not equivalent to removing/repeating samples."}
# checks that can only skip here: they need pandas / SCIPY_ARRAY_API with
# array-api-strict, optional packages the test extra does not install
NEEDS_MISSING_PACKAGES = {"check_sample_weights_pandas_series", "check_array_api_input"}
# the checks whose data reach the kernels in shapes, types or layouts the
# other tests seldom give (one row, one feature, float32/int, read-only,
# Fortran order, sparse, weights); the rest check the estimator's host
# contract (parameters, tags, pickles, errors before any device work), the
# same on every runtime: marked breadth, out of PoCL's run (about 3 of its
# 38 minutes in CI), run on Intel's and on GPUs
KERNEL_DATA_CHECKS = {
    "check_estimators_dtypes", "check_readonly_memmap_input", "check_f_contiguous_array_estimator",
    "check_sample_weight_equivalence_on_dense_data",
    "check_sample_weight_equivalence_on_sparse_data", "check_estimator_sparse_matrix",
    "check_clustering", "check_fit2d_1sample", "check_fit2d_1feature", "check_fit1d",
    "check_fit2d_predict1d", "check_methods_subset_invariance",
    "check_methods_sample_order_invariance", "check_fit_idempotent", "check_transformer_general"}


def sklearn_checks(make, expected_failed_checks=None):
    """pytest params (estimator, check) of scikit-learn's estimator checks of
    make(platform name) on every platform under test; an expected failure is
    strict (it must fail); the checks not in KERNEL_DATA_CHECKS marked
    breadth."""
    from sklearn.utils.estimator_checks import estimator_checks_generator
    for name in sorted(PLATFORMS):
        for entry in estimator_checks_generator(make(name), mark="xfail", xfail_strict=True,
                                                expected_failed_checks=expected_failed_checks):
            check = getattr(entry, "values", entry)[1]
            check_name = getattr(check, "func", check).__name__
            if check_name not in NEEDS_MISSING_PACKAGES:
                marks = list(getattr(entry, "marks", ()))
                if check_name not in KERNEL_DATA_CHECKS:
                    marks.append(pytest.mark.breadth)
                yield pytest.param(*getattr(entry, "values", entry), marks=marks,
                                   id=f"{name.split()[0]}-{check_name}")


# ------------------------------------------------------------------- MPI
def mpiexec():
    """The mpiexec of the [mpi] extra's mpich (beside this Python), else the
    one on PATH; missing, the test fails: tools/setup.sh --test installs it."""
    found = (shutil.which("mpiexec", path=str(Path(sys.executable).parent))
             or shutil.which("mpiexec"))
    if found is None:
        pytest.fail("no mpiexec: bash tools/setup.sh --test installs mpich (the [mpi] extra)")
    return found


MPI_SCRIPT = Path(__file__).resolve().parent / "harness" / "mpi_script.py"


def mpirun(ranks, *args, platform, cwd, timeout=120, module=False):
    """``mpiexec -n ranks`` of tests/harness/mpi_script.py (or ``-m oclclust``
    with *module*) on *platform*; a hang fails through the timeout."""
    env = dict(os.environ, OCLCLUST_TEST_PLATFORM=platform)
    env.pop("OCLCLUST_DEVICES", None)
    target = ["-m", "oclclust"] if module else [str(MPI_SCRIPT)]
    return subprocess.run([mpiexec(), "-n", str(ranks), sys.executable, *target, *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def client():
    """A Dask LocalCluster of 2 worker processes and its Client, once for the
    module that asks (tests/parallel/test_dask*.py)."""
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        yield c


@pytest.fixture(params=["persistent", "launches"])
def linkage_strategy(request, monkeypatch, devices):
    """Both device strategies: one launch for the whole run with one work-item
    per distance (CPUs' default; never chosen on a GPU, where NVIDIA's driver
    stops such a launch with OUT_OF_RESOURCES) and a few launches a merge
    with register-tiled distances (GPUs' default, on every device)."""
    if request.param == "persistent" and any(p.type == "gpu" for p in devices):
        pytest.skip("the one-launch strategy is for CPUs")
    from oclclust.passes.linkage import Plan
    init = Plan.__init__

    def forced(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.persistent = request.param == "persistent"
        self.tiled = request.param == "launches"
    monkeypatch.setattr(Plan, "__init__", forced)
    return request.param
