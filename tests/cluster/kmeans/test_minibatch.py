"""oc.MiniBatchKMeans against scikit-learn's MiniBatchKMeans from the same
random_state: the same draws (inits, validation rows, batches,
reassignments), so the same centres, steps, labels and inertia."""
import numpy as np
import pytest
from sklearn.cluster import MiniBatchKMeans as SKMiniBatchKMeans
from sklearn.datasets import make_blobs

import oclclust as oc
from conftest import SAMPLE_WEIGHT_XFAIL, sklearn_checks


def blobs(n=2000, d=5, seed=0):
    return make_blobs(n, n_features=d, centers=8, random_state=seed)[0]


def assert_same(ours, ref, dtype):
    rtol = 1e-10 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=rtol,
                               atol=rtol)
    assert ours.cluster_centers_.dtype == ref.cluster_centers_.dtype


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("init", ["k-means++", "random", "array"])
@pytest.mark.parametrize("params", [dict(), dict(tol=1e-3), dict(reassignment_ratio=0.3),
                                    dict(max_no_improvement=None, max_iter=3)])
@pytest.mark.covering(2)
def test_fit_equals_sklearn(devices, dtype, init, params):
    X = blobs().astype(dtype)
    init = X[:8].copy() if init == "array" else init
    kw = dict(dict(n_clusters=8, init=init, batch_size=200, random_state=3, max_iter=20), **params)
    ours = oc.MiniBatchKMeans(devices=devices, **kw).fit(X)
    ref = SKMiniBatchKMeans(**kw).fit(X)
    assert ours.n_steps_ == ref.n_steps_ and ours.n_iter_ == ref.n_iter_
    assert_same(ours, ref, dtype)
    assert np.array_equal(ours.labels_, ref.labels_)
    assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-6)


def test_sample_weight_draws_as_sklearn(devices):
    X = blobs()
    w = np.random.default_rng(2).uniform(0.1, 3.0, len(X))
    kw = dict(n_clusters=8, batch_size=256, random_state=1, max_iter=10)
    ours = oc.MiniBatchKMeans(devices=devices, **kw).fit(X, sample_weight=w)
    ref = SKMiniBatchKMeans(**kw).fit(X, sample_weight=w)
    assert_same(ours, ref, np.float64)


def test_partial_fit_over_chunks_equals_sklearn(devices):
    X = blobs(3000)
    ours = oc.MiniBatchKMeans(8, random_state=0, devices=devices)
    ref = SKMiniBatchKMeans(8, random_state=0)
    for start in range(0, len(X), 500):
        ours.partial_fit(X[start:start + 500])
        ref.partial_fit(X[start:start + 500])
    assert ours.n_steps_ == ref.n_steps_ == 6
    assert_same(ours, ref, np.float64)
    assert np.array_equal(ours.predict(X), ref.predict(X))
    np.testing.assert_allclose(ours.transform(X[:20]), ref.transform(X[:20]), rtol=1e-10)
    assert ours.score(X) == pytest.approx(ref.score(X), rel=1e-10)


def test_quality_within_a_few_percent_of_sklearn(devices):
    X = blobs(20000, 8, seed=4)
    ours = oc.MiniBatchKMeans(16, batch_size=1024, random_state=7, devices=devices).fit(X)
    ref = SKMiniBatchKMeans(16, batch_size=1024, random_state=7).fit(X)
    assert ours.inertia_ <= 1.03 * ref.inertia_


@pytest.mark.parametrize("params,X,match", [
    (dict(batch_size=0), blobs(50), "batch_size"),
    (dict(n_clusters=100), blobs(50), "n_samples=50 should be >= n_clusters=100"),
    (dict(reassignment_ratio=-1.0), blobs(50), "reassignment_ratio"),
    (dict(), np.array([[np.nan, 1.0]] * 20), "NaN"),
])
def test_bad_input_is_refused(devices, params, X, match):
    with pytest.raises(ValueError, match=match):
        oc.MiniBatchKMeans(devices=devices, **params).fit(X)


def test_a_model_file_goes_on_with_partial_fit(devices, tmp_path):
    from oclclust.io.modelio import load_model, save_model
    X = blobs()
    km = oc.MiniBatchKMeans(8, random_state=0, devices=devices).fit(X)
    save_model(km, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    assert np.array_equal(loaded.predict(X), km.predict(X))
    loaded.partial_fit(X[:300])
    assert loaded.n_steps_ == km.n_steps_ + 1


@pytest.mark.parametrize("estimator, check", list(sklearn_checks(
    lambda name: oc.MiniBatchKMeans(devices=name), {
        **SAMPLE_WEIGHT_XFAIL,   # scikit-learn's MiniBatchKMeans expects both to fail too
        "check_sample_weight_equivalence_on_sparse_data":
            SAMPLE_WEIGHT_XFAIL["check_sample_weight_equivalence_on_dense_data"]})))
def test_sklearn_check_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weights", ["unit", "uniform", "skewed", "sparse", "one"])
def test_weighted_draws_are_numpys_choice(dtype, weights):
    """The batches' draws: numpy's choice with p, its cumulative table made
    once and searched from a coarse table of it."""
    from oclclust.cluster.kmeans.sampling import weighted_draws
    rng = np.random.default_rng(1)
    n = 1 if weights == "one" else 200_003
    w = {"unit": lambda: np.ones(n), "one": lambda: np.ones(n),
         "uniform": lambda: rng.uniform(0, 3, n),
         "skewed": lambda: rng.pareto(0.5, n),               # a few rows hold most weight
         "sparse": lambda: np.where(rng.random(n) < 0.001, rng.uniform(0, 3, n), 0.0)}[
        weights]().astype(dtype)
    ref, ours = np.random.RandomState(7), np.random.RandomState(7)
    draw = weighted_draws(ours, w / np.sum(w))
    for size in (1, 100, 4096):
        assert np.array_equal(ref.choice(n, size, p=w / np.sum(w), replace=True), draw(size))
    assert ref.random_sample() == ours.random_sample()   # the streams stay level


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("params", [dict(), dict(reassignment_ratio=0.3, tol=1e-3),
                                    dict(init="random", n_init=2)])
def test_device_batches_are_the_host_fold_bit_for_bit(devices, monkeypatch, dtype, params):
    """A fit's batches gathered, assigned and folded on the device
    (DeviceRows) give the host fold's model (HostRows) bit for bit."""
    import oclclust.cluster.kmeans.minibatch as minibatch
    X = blobs(3000, 6).astype(dtype)
    w = np.random.default_rng(3).uniform(0.5, 2.0, len(X))
    kw = dict(dict(n_clusters=8, batch_size=256, random_state=5, max_iter=5), **params)
    fits = []
    for on in (True, False):
        monkeypatch.setattr(minibatch, "DEVICE_BATCHES", on)
        fits.append(oc.MiniBatchKMeans(devices=devices, **kw).fit(X, sample_weight=w))
    device, host = fits
    assert np.array_equal(device.cluster_centers_, host.cluster_centers_)
    assert device.n_steps_ == host.n_steps_ and device.inertia_ == host.inertia_
    assert np.array_equal(device.labels_, host.labels_)


def test_device_fold_is_the_host_fold(devices):
    """passes/minibatch's fold kernel: the host fold's additions, in order."""
    from oclclust.passes.linkage import plan_for
    from oclclust.cluster.kmeans.minibatch_sums import BatchTotals, fold
    from oclclust.passes.minibatch import BatchPass
    from oclclust.runtime.partition import DevicePartition
    rng = np.random.default_rng(0)
    X = (rng.standard_normal((500, 7)) * 10 ** rng.uniform(-3, 3, (500, 1))).astype(np.float32)
    part = DevicePartition(plan_for(devices).profile, X)
    if not part.acc_double:
        pytest.skip("the device fold needs fp64")
    idx = np.sort(rng.integers(0, 500, 97))
    centers = X[:5].astype(np.float64)
    batch = BatchPass(part, 5, len(idx))
    labels, dist = batch.assign(idx, centers)
    weights = rng.uniform(0, 3, len(idx))
    total = BatchTotals(rng.standard_normal((5, 7)), np.zeros(5), 0.0)
    host = fold(total, X[idx], weights, labels, dist)
    assert np.array_equal(batch.fold(total.sums, labels, weights, np.argsort(labels, kind="stable")), host.sums)
    d2 = ((X[idx, None].astype(np.float64) - centers[None]) ** 2).sum(-1)
    assert np.array_equal(labels, d2.argmin(1))


@pytest.mark.parametrize("top", [1, 70_000, 10_000_000, 2 ** 40])
def test_index_order_is_a_stable_argsort(top):
    from oclclust.cluster.kmeans.minibatch_sums import grouped, index_order
    rng = np.random.default_rng(top)
    idx = rng.integers(0, top, 5000)
    assert np.array_equal(index_order(idx), np.argsort(idx, kind="stable"))
    for k in (300, 70_000):
        labels = rng.integers(0, k, 5000)
        assert np.array_equal(grouped(index_order(idx), labels), np.lexsort((idx, labels)))
