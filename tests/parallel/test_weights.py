"""How a fit's rows are weighted over devices (parallel/shares.py and
DeviceData's measurement): "auto" (the default) splits alike devices by
compute units and measures unlike ones; a rate the profile knows replaces
the calibration pass; a device under the share rule (shares.MIN_SHARE) gets
no rows; a measured split fits the model of any other split, bit for bit.

Unlike devices here are the two CPU runtimes (PoCL and Intel's, two
platforms); alike ones the device under test beside its sub-devices."""

import numpy as np
import pyopencl as cl
import pytest

import oclclust as oc
from conftest import split_or_skip
from oclclust.passes import lloyd
from oclclust.parallel.calibration import forget_rates
from oclclust.parallel.device_data import DeviceData
from oclclust.parallel.shares import MIN_SHARE, alike, kept_rates, split_rows
from oclclust.runtime.profiles import ProfileError

N, D = 6000, 8
# the fits stop short (a few iterations suffice to tell models apart)
pytestmark = [pytest.mark.filterwarnings("ignore:Best performing initialization did not "
                                         "converge"),
              pytest.mark.filterwarnings("ignore:FuzzyCMeans did not converge")]

# estimator -> (made on devices, fitted attributes, its devices.yaml rate term)
ESTIMATORS = {
    "kmeans": (lambda devices: oc.KMeans(6, n_init=1, random_state=0, devices=devices),
               ["cluster_centers_", "labels_", "inertia_", "n_iter_"], "lloyd_rate"),
    "ensemble": (lambda devices: oc.EnsembleKMeans([3, 5], n_models=2, random_state=0,
                                                   devices=devices),
                 ["models_", "inertias_", "n_iter_", "labels_"], "lloyd_rate"),
    "cmeans": (lambda devices: oc.FuzzyCMeans(4, max_iter=12, init="random", random_state=0,
                                              devices=devices),
               ["cluster_centers_", "u_", "objective_", "n_iter_"], "cmeans_rate"),
    **{f"gmm-{kind}": (lambda devices, kind=kind: oc.GaussianMixture(
        3, covariance_type=kind, max_iter=8, tol=1e-8, init_params="random_from_data",
        random_state=0, devices=devices),
        ["means_", "covariances_", "weights_", "precisions_cholesky_", "lower_bound_",
         "n_iter_"], "gmm_rate") for kind in ("full", "diag")},
}


@pytest.fixture(scope="module")
def subs(profile):
    return split_or_skip(profile)


def data(seed=0, n=N):
    """Overlapping blobs: the fits take several iterations."""
    rng = np.random.RandomState(seed)
    centers = rng.uniform(-3, 3, (5, D))
    return (centers[rng.randint(0, 5, n)] + rng.randn(n, D)).astype(np.float64)


def with_rate(profiles, key, rates):
    """*profiles* whose profiles know their *key* rate (0: not known)."""
    return [p.replace(**{key: float(r)}) for p, r in zip(profiles, rates)]


@pytest.fixture
def timings(monkeypatch):
    """The calibrations timed in the test: a list of (profiles timed, their
    rates); the rates earlier tests measured forgotten first."""
    forget_rates()
    seen = []
    original = DeviceData._timed_rates

    def spy(self, fn, profiles, rows=None):
        rates = original(self, fn, profiles, rows)
        seen.append((list(profiles), np.array(rates)))
        return rates
    monkeypatch.setattr(DeviceData, "_timed_rates", spy)
    return seen


def scattered(estimator, manager, X):
    """(rows per device, the manager's measured rates and left-out devices)
    of *X* laid out for *estimator*'s fit on *manager*."""
    layout = manager.scatter(X, None, estimator._calibration(), X.dtype)
    try:
        return (list(layout.rows_per_device.values()), manager.measured, manager.left_out,
                layout.block_rows)
    finally:
        layout.close()


def assert_same_model(a, b, attributes):
    for name in attributes:
        got, want = getattr(a, name), getattr(b, name)
        if isinstance(want, list):
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)


# ------------------------------------------------------------- host rules
@pytest.mark.one_runtime
@pytest.mark.parametrize("rates, kept", [
    ([10, 10, 10], [10, 10, 10]),
    ([31, 1], [31, 1]),                       # 1/32 of the sum: kept (the rule is "under")
    ([32, 1], [32, 0]),                       # under 1/32: left out
    ([1000, 900, 20], [1000, 900, 0]),
    ([1, 1000], [0, 1000]),
    ([5, 0], [5, 0]),
    ([1e-300, 1e-301], [1e-300, 1e-301]),
], ids=["equal", "at-the-share", "under-the-share", "third-under", "first-under",
        "zero", "tiny-rates"])
def test_kept_rates(rates, kept):
    np.testing.assert_array_equal(kept_rates(rates), np.array(kept, dtype=np.float64))
    assert MIN_SHARE == 1 / 32


def test_alike_devices(profile, subs, runtimes):
    assert alike([profile, *subs]) and alike([profile])
    assert not alike(runtimes)


# ------------------------------------------------------- alike: unchanged
@pytest.mark.parametrize("name", ["kmeans", "cmeans", "gmm-diag"])
def test_auto_over_alike_devices_splits_by_compute_units(profile, subs, timings, name):
    """The default over a device and its sub-devices: no calibration, the
    compute units' split, the model of weights="compute_units" bit for bit."""
    make, attributes, _ = ESTIMATORS[name]
    devices = [profile, *subs]
    X = data()
    fitted = make(devices).fit(X)
    given = make(oc.DeviceManager(devices, weights="compute_units")).fit(X)
    assert timings == []
    assert oc.DeviceManager(devices).weights == "auto"
    block = fitted.fit_block_rows(D)
    assert list(fitted.devices_.values()) == split_rows(
        N, [p.compute_units for p in devices], block).tolist()
    assert fitted.devices_ == given.devices_
    assert_same_model(fitted, given, attributes)


# ---------------------------------------------------- unlike: measured
@pytest.mark.one_runtime
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_auto_over_unlike_devices_measures_them(runtimes, timings, name):
    """Two runtimes' devices: each timed in the estimator's own pass, the
    rows split by those rates (a device under the share rule: none)."""
    make, _, _ = ESTIMATORS[name]
    X = data()
    rows, measured, left_out, block = scattered(make(None), oc.DeviceManager(runtimes), X)
    assert len(timings) == 1 and timings[0][0] == runtimes
    timed = timings[0][1]
    assert np.all(np.isfinite(timed) & (timed > 0))
    np.testing.assert_array_equal(measured, kept_rates(timed))
    assert left_out == [p for p, rate in zip(runtimes, measured) if rate == 0]
    # rates left to measure: split by them; else compute units over the one left
    weights = measured if not left_out else [rate > 0 for rate in measured]
    assert rows == split_rows(N, weights, block).tolist()


@pytest.mark.one_runtime
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_profile_rates_replace_the_calibration(runtimes, timings, name):
    """Rates the profiles know: no pass timed, the rows split by the rates
    (work per second over the estimator's work per row)."""
    make, _, key = ESTIMATORS[name]
    estimator = make(None)
    work = estimator._work_per_row(D)
    devices = with_rate(runtimes, key, [3e9, 1e9])
    rows, measured, left_out, block = scattered(estimator, oc.DeviceManager(devices), data())
    assert timings == [] and left_out == []
    np.testing.assert_allclose(measured, [3e9 / work, 1e9 / work], rtol=1e-15)
    assert rows == split_rows(N, measured, block).tolist()
    assert rows[0] > rows[1] > 0


@pytest.mark.one_runtime
def test_a_rate_the_profile_lacks_is_timed(runtimes, timings):
    """Only the device whose profile does not know its rate is timed."""
    devices = with_rate(runtimes, "lloyd_rate", [0, 5e9])
    estimator = ESTIMATORS["kmeans"][0](None)
    _, measured, _, _ = scattered(estimator, oc.DeviceManager(devices), data())
    assert [profiles for profiles, _ in timings] == [[devices[0]]]
    assert measured[1] == kept_rates([timings[0][1][0], 5e9 / estimator._work_per_row(D)])[1]


@pytest.mark.one_runtime
@pytest.mark.parametrize("weights", ["auto", "measured"])
@pytest.mark.parametrize("name", ["kmeans", "gmm-full"])
def test_a_device_under_the_share_rule_gets_no_rows(runtimes, timings, name, weights):
    """A device whose rate is under 1/32 of the sum holds no rows (devices_
    0, left out); the fit is that of the other device alone, bit for bit."""
    make, attributes, key = ESTIMATORS[name]
    devices = with_rate(runtimes, key, [4e9, 4e9 / 40])
    X = data()
    manager = oc.DeviceManager(devices, weights=weights)
    fitted = make(manager).fit(X)
    assert timings == []
    assert list(fitted.devices_.values()) == [N, 0]
    assert list(fitted.devices_) == [str(p) for p in devices]
    assert manager.measured is None and manager.left_out == []   # the user's: untouched
    rows, measured, left_out, _ = scattered(make(None), oc.DeviceManager(devices,
                                                                         weights=weights), X)
    assert left_out == [devices[1]] and measured[1] == 0 and rows == [N, 0]
    assert_same_model(fitted, make([runtimes[0]]).fit(X), attributes)


@pytest.mark.one_runtime
@pytest.mark.parametrize("weights", ["auto", "measured", [1, 0]])
def test_a_device_left_out_takes_the_rows_when_the_other_fails(runtimes, timings, monkeypatch,
                                                                weights):
    """The only device that held rows fails: the one left out (or given no
    share) takes them, with a warning, and the fit is its own alone."""
    make, attributes, key = ESTIMATORS["kmeans"]
    devices = with_rate(runtimes, key, [4e9, 4e9 / 40])
    original = lloyd.LloydPass.launch

    def launch(self, *args, **kwargs):
        if self.part.profile == devices[0]:
            raise cl.RuntimeError("injected fault: kernel launch failed")
        return original(self, *args, **kwargs)
    X = data()
    alone = make([runtimes[1]]).fit(X)
    monkeypatch.setattr(lloyd.LloydPass, "launch", launch)
    with pytest.warns(RuntimeWarning, match="failed"):
        fitted = make(oc.DeviceManager(devices, weights=weights)).fit(X)
    assert fitted.devices_ == {str(devices[1]): N}
    assert_same_model(fitted, alone, attributes)


@pytest.mark.one_runtime
def test_auto_without_a_measure_keeps_the_devices_alike_the_first(runtimes, timings):
    """Nothing to time (a predict, MiniBatchKMeans) and no rate known: the
    devices alike the first take every row."""
    X = data()
    rows, measured, left_out, _ = scattered(oc.MiniBatchKMeans(4), oc.DeviceManager(runtimes),
                                            X)
    assert timings == [] and measured is None
    assert rows == [N, 0] and left_out == [runtimes[1]]
    km = oc.KMeans(4, n_init=1, random_state=0, devices=[runtimes[0]]).fit(X)
    km.devices = runtimes
    np.testing.assert_array_equal(km.predict(X), km.labels_)


@pytest.mark.one_runtime
@pytest.mark.parametrize("name", ["kmeans", "gmm-diag"])
def test_a_process_times_a_pass_and_shape_once(runtimes, timings, name):
    """The next fit of the same pass and shape starts from the rates the
    last one measured (its joint passes' where it rebalanced): nothing
    timed; another shape, or forget_rates, times them again."""
    make, _, _ = ESTIMATORS[name]
    X = data()
    first = make(runtimes).fit(X)
    assert [profiles for profiles, _ in timings] == [runtimes]
    second = make(runtimes).fit(X)
    assert len(timings) == 1
    assert sum(second.devices_.values()) == sum(first.devices_.values()) == N
    other = make(runtimes).set_params(**{"n_clusters" if name == "kmeans" else
                                         "n_components": 2})
    other.fit(X)
    assert len(timings) == 2
    forget_rates()
    make(runtimes).fit(X)
    assert len(timings) == 3


# --------------------------------------- a measured split: the same model
@pytest.mark.parametrize("name", ["gmm-full", "gmm-diag", "ensemble"])
def test_measured_fit_equals_compute_units(subs, timings, name):
    """weights="measured" times the estimator's own pass (GaussianMixture's
    E+M, the ensemble's models at once) and fits the model of
    weights="compute_units", bit for bit: the sums do not depend on the split.
    Two sub-devices (PoCL aborted once, in its own thread, with the ensemble
    on the device and both its sub-devices at once late in the suite)."""
    make, attributes, key = ESTIMATORS[name]
    devices = list(subs)
    X = data(n=4 * N)   # blocks enough for measured rates to split otherwise
    measured = make(oc.DeviceManager(devices, weights="measured")).fit(X)
    given = make(oc.DeviceManager(devices, weights="compute_units")).fit(X)
    assert len(timings) == 1 and timings[0][0] == devices
    assert sum(measured.devices_.values()) == 4 * N
    assert_same_model(measured, given, attributes)
    # rates that surely split otherwise (the profiles'; the joint passes'
    # timings may move the rows again)
    known = make(oc.DeviceManager(with_rate(devices, key, [1e8, 6e8]),
                                  weights="measured")).fit(X)
    assert len(timings) == 1
    assert_same_model(known, given, attributes)


# ------------------------------------------------------------- validation
@pytest.mark.one_runtime
@pytest.mark.parametrize("key", ["lloyd_rate", "cmeans_rate", "gmm_rate"])
@pytest.mark.parametrize("value, error, match", [
    (-1.0, ProfileError, "is outside"), (float("nan"), ProfileError, "is outside"),
    ("fast", ProfileError, "must be float"),
], ids=["negative", "nan", "string"])
def test_bad_rates_are_refused(profile, key, value, error, match):
    with pytest.raises(error, match=f"{key}.*{match}|{match}.*{key}"):
        profile.replace(**{key: value})


@pytest.mark.one_runtime
@pytest.mark.parametrize("weights", ["Auto", "fastest", ""])
def test_unknown_weightings_are_refused(profile, weights):
    with pytest.raises(ValueError, match="weights must be 'auto', 'compute_units', "
                                         f"'measured' or numbers, got '{weights}'"):
        oc.DeviceManager([profile], weights=weights)
