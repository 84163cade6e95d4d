"""GaussianMixture (issue 6): EM on the device against scikit-learn, MDL order
selection, several devices, bad input, scikit-learn's estimator checks."""
import dataclasses
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture as SkGMM

import oclclust as oc
from gmm_parity import assert_gmm_parity
from conftest import sklearn_checks, split_or_skip
from oclclust.passes import gmm as gmm_pass
from oclclust.passes import gmm_specs
from oclclust.runtime import codegen
from oclclust.cluster.mixture import mdl

FLOATS = [np.float32, np.float64]
COVS = ["full", "diag"]
K = 3


def blobs(n=300, d=3, k=K, seed=0, spread=4.0, dtype=np.float64):
    """Overlapping blobs with unequal, correlated shapes: EM has work to do."""
    rng = np.random.RandomState(seed)
    centres = rng.uniform(-spread, spread, (k, d))
    y = np.arange(n) % k
    shapes = rng.normal(size=(k, d, d)) * 0.6 + np.eye(d)
    X = centres[y] + np.einsum("nij,nj->ni", shapes[y], rng.normal(size=(n, d)))
    return X.astype(dtype), y


def start(X, cov, k=K):
    """Fixed initial parameters: equal weights, means near the first points, I."""
    d = X.shape[1]
    prec = np.stack([np.eye(d)] * k) if cov == "full" else np.ones((k, d))
    return dict(weights_init=np.full(k, 1.0 / k), means_init=X[:k].astype(np.float64) + 0.1,
                precisions_init=prec)


def fit_both(devices, X, cov, dtype, max_iter=8, tol=0.0, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sk = SkGMM(K, covariance_type=cov, tol=tol, max_iter=max_iter, **params).fit(X)
        ours = oc.GaussianMixture(K, covariance_type=cov, tol=tol, max_iter=max_iter,
                                  devices=devices, **params).fit(X.astype(dtype))
    return ours, sk


# ------------------------------------------------------ parity with sklearn
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("cov", COVS)
def test_parity_from_given_parameters(devices, cov, dtype):
    X, _ = blobs()
    ours, sk = fit_both(devices, X, cov, dtype, **start(X, cov))
    assert ours.weights_.dtype == dtype and ours.n_features_in_ == 3
    assert_gmm_parity(ours, sk, X, dtype)


@pytest.mark.parametrize("init", ["random", "random_from_data"])
@pytest.mark.parametrize("cov", COVS)
def test_parity_from_random_inits(devices, cov, init):
    """scikit-learn's random inits draw the same numbers from the same seed."""
    X, _ = blobs(seed=1)
    ours, sk = fit_both(devices, X, cov, np.float64, max_iter=6, init_params=init,
                        random_state=3)
    assert_gmm_parity(ours, sk, X, np.float64)


def test_parity_until_converged(devices):
    X, _ = blobs(seed=2)
    ours, sk = fit_both(devices, X, "full", np.float64, max_iter=200, tol=1e-6,
                        **start(X, "full"))
    assert ours.converged_ and ours.n_iter_ < 200
    assert_gmm_parity(ours, sk, X, np.float64)


def test_kahan_sums_without_fp64(profile):
    """A device without fp64: float32 data, Kahan-compensated float sums."""
    X, _ = blobs(seed=4)
    no_fp64 = oc.DeviceManager([dataclasses.replace(profile, fp64=False)])
    ours, sk = fit_both(no_fp64, X, "full", np.float32, **start(X, "full"))
    assert_gmm_parity(ours, sk, X, np.float32)


# register tiles (tm, tn, rm, rn, kc, vw) of the tiled diag E step: n = 203,
# d = 5 or 37 and k = 13 leave ragged point, component and feature tiles
ESTEP_TILES = [(8, 4, 2, 2, 2, 2), (16, 8, 4, 2, 4, 1), (32, 32, 4, 4, 8, 4), (4, 16, 1, 4, 16, 1)]


def estep_outputs(profile, X, m, k, store):
    """(spec, lse, labels, resp or None, log-likelihood, bad rows) of one E step."""
    from oclclust.runtime.partition import DevicePartition
    codegen.forget_plans("gmm")
    part = DevicePartition(profile, X)
    gp = gmm_pass.GmmPass(part, k, False)
    ll, bad = gp.estep(mdl.records(m, False), store_resp=store)
    q = part.queue
    resp = gp.resp[:k * len(X)].get(q) if store else None
    return gp.espec, gp.lse.get(q), gp.labels.get(q), resp, ll, bad


@pytest.mark.parametrize("d", [5, 37])
@pytest.mark.parametrize("tiles", ESTEP_TILES, ids=lambda t: "x".join(map(str, t)))
@pytest.mark.covering(1)
def test_tiled_diag_estep_equals_per_point(profile, tiles, d):
    """Where the profile asks (gmm_distance_tiles), the diag E step
    takes its Mahalanobis terms from distance_tile.cl.mako (sqdiff_scaled):
    every point's lse, label and responsibilities are the per-point kernel's
    bit for bit, the log-likelihood equal to rounding."""
    tm, tn, rm, rn, kc, vw = tiles
    tiled = profile.replace(gmm_distance_tiles=1, gmm_mma=0, lloyd_tile_rows=tm,
                            lloyd_tile_centroids=tn, lloyd_reg_rows=rm,
                            lloyd_reg_centroids=rn, lloyd_depth=kc, lloyd_vector_width=vw)
    plain = profile.replace(gmm_distance_tiles=0, gmm_mma=0)   # (mma: test_gmm_mma.py)
    k, rng = 13, np.random.RandomState(d)
    X = (rng.randn(203, d) * 3).astype(np.float32)
    cov = rng.uniform(0.5, 2, (k, d))
    w = rng.uniform(0.5, 1.5, k)
    m = mdl.Model(w / w.sum(), X[:k].astype(np.float64) + 0.3, cov,
                  mdl.precision_cholesky(cov, False))
    for store in (True, False):
        got = estep_outputs(tiled, X, m, k, store)
        want = estep_outputs(plain, X, m, k, store)
        spec = got[0]
        assert spec.tiled and not want[0].tiled
        assert (spec.tm, spec.rm, spec.rn, spec.vw) == (tm, rm, rn, vw) and spec.tn <= tn
        assert spec.kc == min(kc, 1 << (d - 1).bit_length()) and got[5] == want[5] == 0
        for a, b in zip(got[1:4], want[1:4]):
            if b is not None:
                np.testing.assert_array_equal(a, b)
        assert got[4] == pytest.approx(want[4], rel=1e-6)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_tiled_diag_fit_equals_sklearn(profile, dtype):
    X, _ = blobs(seed=6)
    gemm = oc.DeviceManager([profile.replace(gmm_distance_tiles=1, gmm_mma=0)])
    ours, sk = fit_both(gemm, X, "diag", dtype, **start(X, "diag"))
    used = [plan[0] for key, plan in codegen.plans("gmm").items()
            if isinstance(plan[0], gmm_specs.EStepSpec) and key[0].term("gmm_distance_tiles")]
    assert used and all(spec.tiled for spec in used)
    assert_gmm_parity(ours, sk, X, dtype)


def test_no_underflow_d24_k100(devices):
    """Components far apart in d=24: every density underflows exp, the
    log-sum-exp does not; same scores and responsibilities as scikit-learn."""
    rng = np.random.RandomState(0)
    n, d, k = 400, 24, 100
    X = rng.uniform(-50, 50, (k, d))[np.arange(n) % k] + rng.normal(size=(n, d))
    prec = np.stack([np.eye(d) * 100.0] * k)
    w = rng.uniform(0.5, 1.5, k)
    params = dict(weights_init=w / w.sum(), means_init=X[:k] + 0.5, precisions_init=prec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # max_iter=0: the model is the given one, far from every point
        ours = oc.GaussianMixture(k, max_iter=0, devices=devices, **params).fit(X)
    sk = SkGMM(k)       # (its max_iter=0 fit fails without covariances_): set by hand
    sk.weights_, sk.means_ = params["weights_init"], params["means_init"]
    sk.precisions_cholesky_ = np.stack([np.eye(d) * 10.0] * k)
    sk.covariances_, sk.n_features_in_ = np.stack([np.eye(d) / 100] * k), d
    assert np.sum(sk.score_samples(X) < -746) > 250  # exp() of these is 0 in float64
    np.testing.assert_allclose(ours.score_samples(X), sk.score_samples(X), rtol=1e-10)
    np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), atol=1e-9)
    assert ours.n_iter_ == 0 and ours.lower_bound_ == -np.inf
    np.testing.assert_allclose(ours.precisions_cholesky_, sk.precisions_cholesky_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ours.set_params(max_iter=1, tol=0).fit(X)
        sk = SkGMM(k, max_iter=1, tol=0, **params).fit(X)
    assert ours.lower_bound_ == pytest.approx(sk.lower_bound_, rel=1e-10)
    np.testing.assert_allclose(ours.means_, sk.means_, atol=1e-9)


# ------------------------------------------------------------ estimator
@pytest.mark.parametrize("init", ["kmeans", "k-means++"])
@pytest.mark.parametrize("cov", COVS)
def test_device_inits_fit_the_blobs(devices, cov, init):
    X, y = blobs(spread=12, seed=5)
    gm = oc.GaussianMixture(K, covariance_type=cov, init_params=init, random_state=0,
                            tol=1e-9, max_iter=500, devices=devices).fit(X)
    assert gm.converged_
    labels = gm.predict(X)
    assert len(set(zip(labels, y))) == K          # each blob one component
    sk = SkGMM(K, covariance_type=cov, random_state=0, tol=1e-9, max_iter=500).fit(X)
    assert gm.lower_bound_ == pytest.approx(sk.lower_bound_, rel=1e-6)


def test_api(devices):
    X, _ = blobs(seed=6)
    gm = oc.GaussianMixture(K, n_init=2, random_state=1, devices=devices)
    labels = gm.fit_predict(X)
    np.testing.assert_array_equal(labels, gm.predict(X))
    proba = gm.predict_proba(X)
    assert proba.shape == (len(X), K) and np.allclose(proba.sum(1), 1)
    assert gm.score(X) == pytest.approx(gm.score_samples(X).mean())
    np.testing.assert_allclose(gm.precisions_, np.linalg.inv(gm.covariances_), rtol=1e-8)
    assert gm.mdl(X) == pytest.approx(-gm.score(X) * len(X) + 0.5 * (K * (1 + 3 + 6) - 1)
                                      * np.log(len(X) * 3))
    S, comp = gm.sample(50)
    assert S.shape == (50, 3) and comp.shape == (50,)
    with pytest.raises(ValueError, match="features"):
        gm.predict(X[:, :2])
    with pytest.warns(ConvergenceWarning):
        oc.GaussianMixture(K, max_iter=1, tol=0, devices=devices).fit(X)


# ----------------------------------------------------------- MDL selection
@pytest.mark.parametrize("cov", COVS)
def test_mdl_finds_the_true_number_of_components(devices, cov):
    X, _ = blobs(n=400, d=2, k=4, seed=7, spread=15)
    gm = oc.GaussianMixture(10, covariance_type=cov, min_components=1, random_state=0,
                            devices=devices).fit(X)
    assert gm.n_components_ == 4 and gm.means_.shape == (4, 2)
    ks = [k for k, _ in gm.mdl_path_]
    assert ks == list(range(10, 0, -1))
    best = min(gm.mdl_path_, key=lambda p: p[1])
    assert best[0] == 4 and gm.mdl(X) == pytest.approx(best[1], rel=1e-9)


def test_merge_cost_matches_bouman():
    """The pair closest in Bouman's distance is merged, moment-matched."""
    d, n = 2, 100.0
    covs = np.stack([np.eye(d), np.eye(d), np.eye(d) * 2])
    model = mdl.Model(np.array([0.25, 0.25, 0.5]), np.array([[0.0, 0], [0.5, 0], [9, 9]]),
                      covs, mdl.precision_cholesky(covs, True))
    merged = mdl.merge_closest(model, n, True)
    np.testing.assert_allclose(merged.means[-1], [0.25, 0])
    np.testing.assert_allclose(merged.covariances[-1], np.diag([1 + 0.0625, 1]))
    np.testing.assert_allclose(merged.weights, [0.5, 0.5])


@pytest.mark.one_runtime
@pytest.mark.parametrize("k, d", [(1, 1), (7, 5), (100, 24)])
def test_precision_cholesky_is_sklearns(k, d):
    """The host's precision factors are scikit-learn's (L^-1)^T to rounding,
    upper-triangular exactly; singular: ValueError."""
    from sklearn.mixture._gaussian_mixture import _compute_precision_cholesky
    rng = np.random.RandomState(k)
    a = rng.normal(size=(k, d, d)) * 0.3
    cov = a @ np.swapaxes(a, 1, 2) + np.eye(d)    # well conditioned: hosts' LAPACKs agree
    ours = mdl.precision_cholesky(cov, True)
    np.testing.assert_allclose(ours, _compute_precision_cholesky(cov, "full"), rtol=1e-13,
                               atol=1e-15)
    np.testing.assert_array_equal(np.tril(ours, -1), 0)
    cov[-1] = 0
    with pytest.raises(ValueError, match="ill-defined empirical covariance"):
        mdl.precision_cholesky(cov, True)


# --------------------------------------------------------- several devices
def test_sub_devices_and_streaming_equal_one_device(profile):
    subs = split_or_skip(profile)
    X, _ = blobs(n=500, seed=8)
    params = dict(max_iter=6, tol=0, **start(X, "full"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        one = oc.GaussianMixture(K, devices=[profile], **params).fit(X)
        item = X.itemsize
        streamed = oc.DeviceManager([profile], memory_budget=2 * 60 * 3 * item)
        layout = streamed.scatter(X)
        assert layout.shards[0].streamed and len(layout.shards[0].chunks) > 2
        layout.close()
        for devices in (subs, streamed):
            many = oc.GaussianMixture(K, devices=devices, **params).fit(X)
            np.testing.assert_allclose(many.means_, one.means_, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(many.covariances_, one.covariances_, rtol=1e-10)
            assert many.lower_bound_ == pytest.approx(one.lower_bound_, rel=1e-12)
            np.testing.assert_allclose(many.predict_proba(X), one.predict_proba(X), atol=1e-12)
    assert sum(many.devices_.values()) == len(X)


# --------------------------------------------------------------- bad input
def test_singular_covariances(devices):
    X, _ = blobs(seed=9)
    X[:, 1] = 2.5                                   # a constant feature
    X[:40] = X[0]                                   # duplicate points
    gm = oc.GaussianMixture(K, random_state=0, devices=devices).fit(X)   # reg_covar helps
    assert np.isfinite(gm.lower_bound_)
    with pytest.raises(ValueError, match="ill-defined empirical covariance"):
        oc.GaussianMixture(K, reg_covar=0, random_state=0, devices=devices).fit(X)
    with pytest.raises(ValueError, match="ill-defined empirical covariance"):
        oc.GaussianMixture(K, covariance_type="diag", reg_covar=0, random_state=0,
                           devices=devices).fit(X)


@pytest.mark.parametrize("pooled", [False, True], ids=["diag", "spherical"])
@pytest.mark.parametrize("reg_covar", [1e-6, 0.0])
def test_rounded_statistics_of_one_row_leave_no_negative_variance(pooled, reg_covar):
    """A component of one row that moved 6 from its mean: its float32
    statistics (S1 off by 3.6e-7 relative, as the H200's tensor-core sums of
    GaussianMixture diag 1M x 128 x 1024 at its 3rd iteration) cancel to a
    scatter of -2.6e-5, past reg_covar: the variance is reg_covar, as the
    exact sums give within their rounding; with reg_covar 0 the covariance
    is ill-defined as ever."""
    n, x = 1.0000058, np.array([[6.0, -3.0]])
    stats = np.concatenate([[[n]], n * x * (1 + 3.6e-7), n * x * x], axis=1)
    eps = float(np.finfo(np.float32).eps)
    if reg_covar == 0:
        with pytest.raises(ValueError, match="ill-defined empirical covariance"):
            mdl.m_step(stats, np.zeros((1, 2)), reg_covar, False, eps, True, pooled)
        return
    model = mdl.m_step(stats, np.zeros((1, 2)), reg_covar, False, eps, True, pooled)
    assert np.all(model.covariances >= reg_covar)
    np.testing.assert_allclose(model.means, x, rtol=1e-6)


@pytest.mark.parametrize("params, X, match", [
    (dict(n_components=5), np.ones((4, 2)), "n_samples >= n_components"),
    (dict(covariance_type="sphere"), None, "covariance_type"),
    (dict(tol=-1), None, "tol"),
    (dict(init_params="nope"), None, "init_params"),
    (dict(min_components=4), None, "min_components"),
    (dict(weights_init=[0.5, 0.6, -0.1]), None, "range"),
    (dict(weights_init=[0.2, 0.2, 0.2]), None, "normalized"),
    (dict(means_init=np.zeros((2, 3))), None, "shape"),
    (dict(precisions_init=-np.ones((K, 3)), covariance_type="diag"), None, "positive"),
    (dict(precisions_init=np.stack([-np.eye(3)] * K)), None, "positive-definite"),
    (dict(), np.ones((1, 3)), "1 sample"),
    (dict(), np.ones(5), "2D"),
    (dict(), np.zeros((0, 3)), "0 sample"),
])
def test_bad_parameters_and_input(devices, params, X, match):
    X = blobs()[0] if X is None else X
    with pytest.raises(ValueError, match=match):
        oc.GaussianMixture(**dict(dict(n_components=K, devices=devices), **params)).fit(X)


def test_nan_input(devices):
    X, _ = blobs()
    gm = oc.GaussianMixture(K, random_state=0, devices=devices).fit(X)
    X[5, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        oc.GaussianMixture(K, devices=devices).fit(X)
    with pytest.raises(ValueError, match="NaN"):
        gm.predict(X)


# --------------------------------------------------- scikit-learn's checks
@pytest.mark.parametrize("estimator, check", list(sklearn_checks(
    lambda name: oc.GaussianMixture(devices=name))))
def test_sklearn_check_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("cov, upper", [(cov, 0) for cov in COVS] + [("full", 1)])
def test_gpu_kernel_shapes_on_this_device(profile, cov, upper):
    """The kernels a GPU gets (records staged in local memory, two points per
    work-item, the tiled M step with register blocks, or with *upper* its
    symmetric blocks), at d=24, run on the device under test as if it were a
    GPU with 16 KiB of local memory (the 12 records staged in chunks, the M
    step in smaller tiles): same fit as scikit-learn's."""
    as_gpu = dataclasses.replace(profile, type="gpu", work_group_size=32,
                                 groups_per_compute_unit=2, local_mem_size=16384,
                                 local_memory_fraction=1.0).replace(gmm_mma=0,
                                                                    gmm_mstep_upper=upper)
    rng = np.random.RandomState(3)
    n, d, k = 600, 24, 12
    X = rng.uniform(-6, 6, (k, d))[np.arange(n) % k] + rng.normal(size=(n, d))
    w, m = np.full(k, 1.0 / k), X[:k] + 0.2
    prec = np.stack([np.eye(d)] * k) if cov == "full" else np.ones((k, d))
    params = dict(covariance_type=cov, max_iter=4, tol=0, weights_init=w, means_init=m,
                  precisions_init=prec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ours = oc.GaussianMixture(k, devices=oc.DeviceManager([as_gpu]), **params).fit(X)
        sk = SkGMM(k, **params).fit(X)
    # this fit's plans (the other covariance's, planned for an equal profile
    # by the other case, may be memoised beside them in this process)
    full = cov == "full"
    chosen = [plan[0] for key, plan in codegen.plans("gmm").items()
              if key[0] == as_gpu and getattr(plan[0], "full", full) == full]
    espec = next(s for s in chosen if isinstance(s, gmm_specs.EStepSpec))
    mspec = next(s for s in chosen if isinstance(s, (gmm_specs.MStepSpec,
                                                      gmm_specs.MStepUpperSpec)))
    # 16 KiB holds 41 diag records of d=24 (all 12 at once), 6 full ones
    assert espec.ppi == 2 and espec.stage_params and (espec.cchunk < k) == full
    assert (isinstance(mspec, gmm_specs.MStepUpperSpec) if upper else
            mspec.variant == "tiled") and mspec.tile < 64
    np.testing.assert_allclose(ours.means_, sk.means_, atol=1e-9)
    np.testing.assert_allclose(ours.covariances_, sk.covariances_, atol=1e-9)
    assert ours.lower_bound_ == pytest.approx(sk.lower_bound_, rel=1e-10)
