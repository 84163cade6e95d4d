"""EnsembleKMeans (issue 5): every strategy and KD-tree mapping gives the same
models from the same init, each model is the fit an independent KMeans makes
from its own init, and the estimator follows scikit-learn's contract."""
import dataclasses

import numpy as np
import pytest

import oclclust as oc
from conftest import SAMPLE_WEIGHT_XFAIL, sklearn_checks
from oclclust.cluster.kmeans.ensemble import EnsembleKMeans, choose, fit_ensemble
from oclclust.passes.ensemble import staged_bytes
from oclclust.parallel.placement import fit_data

VARIANTS = [("task", None), ("data", None), ("concatenated", None),
            ("concatenated", "direct"), ("concatenated", "distributed"),
            ("concatenated", "replicated")]
M, K = 5, 7          # neither a multiple of any work-group size


def blobs(n, d, seed=0, dtype=np.float32):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) + rng.randint(0, 5, (n, 1)) * 3.0
    return X.astype(dtype)


def inits(X, m, k, seed=1):
    rng = np.random.RandomState(seed)
    return np.stack([X[rng.choice(len(X), k, replace=False)] for _ in range(m)]).astype(
        np.float64)


@pytest.mark.parametrize("d", [2, 8])
def test_all_variants_identical_and_equal_kmeans(devices, d):
    X = blobs(1500, d)
    init = inits(X, M, K)
    fits = {v: EnsembleKMeans(K, M, strategy=v[0], kdtree=v[1], init=init,
                              devices=devices).fit(X) for v in VARIANTS}
    ref = fits[("task", None)]
    assert ref.models_.shape == (M, K, d) and ref.n_iter_.shape == (M,)
    for v, fit in fits.items():
        np.testing.assert_array_equal(fit.models_, ref.models_, err_msg=str(v))
        np.testing.assert_array_equal(fit.n_iter_, ref.n_iter_, err_msg=str(v))
        np.testing.assert_array_equal(fit.labels_, ref.labels_, err_msg=str(v))
        np.testing.assert_allclose(fit.inertias_, ref.inertias_, rtol=1e-12)
    assert len(set(ref.n_iter_)) > 1          # models do stop at their own iteration
    for m in range(M):
        km = oc.KMeans(K, init=init[m], n_init=1, devices=devices).fit(X)
        assert km.n_iter_ == ref.n_iter_[m]
        np.testing.assert_allclose(ref.models_[m], km.cluster_centers_, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ref.inertias_[m], km.inertia_, rtol=1e-5)
    best = int(np.argmin(ref.inertias_))
    assert ref.best_index_ == best and ref.inertia_ == ref.inertias_[best]
    np.testing.assert_array_equal(ref.cluster_centers_, ref.models_[best])
    np.testing.assert_array_equal(ref.predict(X), ref.labels_)


def test_models_of_different_k_float64_weighted(devices):
    X = blobs(900, 3, seed=2, dtype=np.float64)
    w = np.random.RandomState(3).uniform(0.5, 2.0, len(X))
    ks = [3, 9, 5]
    init = [inits(X, 1, k, seed=k)[0] for k in ks]
    for strategy, kdtree in (("data", None), ("concatenated", "direct")):
        ens = EnsembleKMeans(ks, 3, strategy=strategy, kdtree=kdtree, init=init,
                             devices=devices).fit(X, sample_weight=w)
        assert isinstance(ens.models_, list) and ens.models_[0].dtype == np.float64
        for m, k in enumerate(ks):
            km = oc.KMeans(k, init=init[m], n_init=1, devices=devices).fit(X, sample_weight=w)
            assert km.n_iter_ == ens.n_iter_[m]
            np.testing.assert_allclose(ens.models_[m], km.cluster_centers_, rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(ens.inertias_[m], km.inertia_, rtol=1e-9)


def test_tiled_models_and_global_fallback(devices):
    """A local-memory budget too small for all models (tiles) and for one
    model (centroids and sums in global memory) changes nothing."""
    X = blobs(700, 4, seed=4)
    init = inits(X, M, K)
    ref = EnsembleKMeans(K, M, strategy="concatenated", init=init, devices=devices).fit(X)
    profile = oc.runtime.devices.preferred(devices)[0]
    for local in (staged_bytes(2 * K, 4, 4, models=2), 100):     # two models a tile; none fits
        small = dataclasses.replace(profile, local_mem_size=local, local_memory_fraction=1.0)
        for strategy, kdtree in VARIANTS:
            fit = EnsembleKMeans(K, M, strategy=strategy, kdtree=kdtree, init=init,
                                 devices=[small]).fit(X)
            np.testing.assert_array_equal(fit.models_, ref.models_)
            np.testing.assert_array_equal(fit.n_iter_, ref.n_iter_)


def test_empty_cluster_relocation_matches_kmeans(devices):
    X = blobs(400, 2, seed=5)
    init = inits(X, 2, 4)
    init[1, 3] = [1e3, 1e3]                    # far from every point: starts empty
    ens = EnsembleKMeans(4, 2, init=init, devices=devices).fit(X)
    for m in range(2):
        km = oc.KMeans(4, init=init[m], n_init=1, devices=devices).fit(X)
        assert km.n_iter_ == ens.n_iter_[m]
        np.testing.assert_allclose(ens.models_[m], km.cluster_centers_, rtol=1e-5, atol=1e-5)


def test_random_inits_and_fit_ensemble(devices):
    X = blobs(600, 2, seed=6)
    a = EnsembleKMeans(4, 3, init="k-means++", random_state=0, devices=devices).fit(X)
    b = EnsembleKMeans(4, 3, init="k-means++", random_state=0, devices=devices,
                       strategy="task").fit(X)
    np.testing.assert_array_equal(a.models_, b.models_)
    r = EnsembleKMeans(4, 3, init="random", random_state=1, devices=devices).fit(X)
    assert np.isfinite(r.inertias_).all()
    init = inits(X, 3, 4)
    data, host_w, _ = fit_data(X, None, devices, None)
    try:
        _, var, _ = data.mean_var_finite()
        out = fit_ensemble(data, list(init), 300, float(np.mean(var) * 1e-4), host_w,
                           strategy="concatenated", kdtree="direct")
    finally:
        data.close()
    for m, (centers, inertia, n_iter, labels) in enumerate(out):
        km = oc.KMeans(4, init=init[m], n_init=1, devices=devices).fit(X)
        assert n_iter == km.n_iter_ and labels.shape == (len(X),)
        np.testing.assert_allclose(centers, km.cluster_centers_, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(inertia, km.inertia_, rtol=1e-5)


def test_auto_choice(profile):
    assert choose(profile, 2, [10] * 8, 10 ** 6) == ("concatenated", "direct")
    assert choose(profile, 64, [10] * 8, 10 ** 6)[1] is None
    assert choose(profile, 2, [10] * 8, 100)[1] is None
    assert choose(profile, 2, [10], 10 ** 6, "task", None) == ("task", None)


@pytest.mark.parametrize("kwargs, X, match", [
    (dict(strategy="bogus"), None, "strategy"),
    (dict(kdtree="bogus"), None, "kdtree"),
    (dict(strategy="task", kdtree="direct"), None, "concatenated"),
    (dict(n_clusters=[2, 3]), None, "n_models"),
    (dict(init=np.zeros((4, 2, 2))), None, "init"),
    (dict(n_clusters=50), None, "n_samples"),
    (dict(), np.array([[0.0, np.nan]] * 20), "NaN"),
    (dict(), np.zeros(20), "2D"),
])
def test_bad_input(devices, kwargs, X, match):
    X = blobs(20, 2) if X is None else X
    with pytest.raises(ValueError, match=match):
        EnsembleKMeans(**{"n_clusters": 3, **kwargs}, devices=devices).fit(X)


def test_not_fitted(devices):
    with pytest.raises(oc.runtime.validation.NotFittedError):
        EnsembleKMeans(devices=devices).predict(blobs(5, 2))


@pytest.mark.parametrize("estimator, check", list(sklearn_checks(
    lambda name: EnsembleKMeans(n_models=2, devices=name), SAMPLE_WEIGHT_XFAIL)))
def test_sklearn_check_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("strategy, kdtree", VARIANTS)
def test_word_atomics_give_the_same_models(devices, strategy, kdtree):
    """Statistics added as 32-bit word pairs (carries, negative values) equal
    the 64-bit atomics bit for bit, for uniform and mixed K."""
    X = blobs(800, 3, seed=7)
    profile = oc.runtime.devices.preferred(devices)[0]
    words = profile.replace(ensemble_word_atomics=1)
    for ks in (K, [3, 7, 5, 4]):
        n_models = M if ks == K else len(ks)
        init = inits(X, M, K) if ks == K else [inits(X, 1, k, seed=k)[0] for k in ks]
        fits = [EnsembleKMeans(ks, n_models, strategy=strategy, kdtree=kdtree, init=init,
                               max_iter=5, devices=[p]).fit(X) for p in (profile, words)]
        for a, b in zip(fits[0].models_, fits[1].models_):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(fits[0].n_iter_, fits[1].n_iter_)


@pytest.mark.parametrize("make", [lambda d: oc.EnsembleKMeans(2, n_models=3, random_state=0,
                                                                devices=d),
                                  lambda d: oc.KMeans(2, n_init=3, random_state=0, devices=d)],
                         ids=["EnsembleKMeans", "KMeans-restarts"])
def test_float32_rows_whose_squares_overflow_are_refused(make, devices, blobs):
    """As KMeans's one run: no fixed point resolves rows of 3e38 and the
    others at once (their sums would round to 0)."""
    X = blobs[0].astype(np.float32)
    X[7, 1] = 3e38
    with pytest.raises(ValueError, match="overflow float32"):
        make(devices).fit(X)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("kdtree", [None, "direct"])
def test_inertia_per_model_is_split_free(profile, dtype, weighted, kdtree):
    """The labels pass's inertia of every model (runtime/exact_sums.py: a
    block's per-model sums, added exactly): the same bits over the whole
    rows and over block-aligned pieces of them (whatever the pieces' own
    work-groups), within rounding of the float64 partials' sum (exact sums
    disabled).  The fits over every split: tests/passes/test_kmeanspp.py."""
    from oclclust.passes.kdtree import KDTreePass
    from oclclust.passes.ensemble import EnsemblePass, FixedPoint
    from oclclust.runtime import exact_sums
    from oclclust.runtime.partition import DevicePartition
    if not profile.fp64:
        pytest.skip(f"{profile} has no fp64: its sums are Kahan's, not split-free")
    X = blobs(5000, 3, seed=2, dtype=dtype) + 40
    w = np.random.RandomState(3).uniform(0.1, 3, len(X)).astype(dtype) if weighted else None
    centres = list(inits(X, M, K))
    mean = X.mean(axis=0, dtype=np.float64)   # the KD-trees' fixed-point statistics
    fixed = FixedPoint.for_bounds(mean, len(X), 3.0, float(np.abs(X - mean).max()))
    B = exact_sums.block_rows_for(3, X.dtype.itemsize, M)

    def inertia(cuts, exact=True):
        bounds = [0] + [c * B for c in cuts] + [len(X)]
        total = 0
        for a, b in zip(bounds, bounds[1:]):
            part = DevicePartition(profile, X[a:b], None if w is None else w[a:b],
                                   block_rows=B)
            pas = (EnsemblePass(part, "concatenated", fixed) if kdtree is None
                   else KDTreePass(part, kdtree, fixed, 16))
            total = total + pas.assign(centres, labels=False)[0]
        return exact_sums.settle(total)
    whole = inertia([])
    for cuts in ([3], [1, 2, 7]):
        assert np.array_equal(inertia(cuts), whole), cuts
    with exact_sums.disabled():
        np.testing.assert_allclose(inertia([]), whole, rtol=1e-12 if dtype == np.float64 else 1e-6)
