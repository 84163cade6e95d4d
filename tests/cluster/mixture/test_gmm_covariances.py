"""GaussianMixture's 'tied' and 'spherical' covariance types and warm_start
(issue 23): the same fits as scikit-learn's from the same start, every init,
both precisions; warm-started sequences; scikit-learn's errors; model files."""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture as SkGMM

import oclclust as oc
from gmm_parity import assert_gmm_parity
from oclclust.io.modelio import load_model, save_model

FLOATS = [np.float32, np.float64]
POOLED = ["tied", "spherical"]
INITS = ["kmeans", "k-means++", "random", "random_from_data"]
K = 3


def blobs(n=240, d=3, seed=0, dtype=np.float64):
    """Overlapping blobs of unequal, correlated shapes: EM has work to do."""
    rng = np.random.RandomState(seed)
    centres = rng.uniform(-4, 4, (K, d))
    y = np.arange(n) % K
    shapes = rng.normal(size=(K, d, d)) * 0.6 + np.eye(d)
    X = centres[y] + np.einsum("nij,nj->ni", shapes[y], rng.normal(size=(n, d)))
    return X.astype(dtype)


def start(X, cov):
    """Fixed initial parameters of scikit-learn's shapes for *cov*."""
    d = X.shape[1]
    prec = {"tied": np.eye(d) * 0.5, "spherical": np.array([1.0, 0.5, 2.0])}[cov]
    return dict(weights_init=np.array([0.2, 0.3, 0.5]),
                means_init=X[:K].astype(np.float64) + 0.1, precisions_init=prec)


def fit_both(devices, X, dtype, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sk = SkGMM(K, **params).fit(X)
        ours = oc.GaussianMixture(K, devices=devices, **params).fit(X.astype(dtype))
    return ours, sk


def assert_parity(ours, sk, X, dtype):
    """test_gmm.py's parity, and the pooled types' shapes and counts."""
    for name in ("covariances_", "precisions_cholesky_", "precisions_"):
        assert getattr(ours, name).shape == getattr(sk, name).shape, name
    assert ours.weights_.dtype == dtype
    assert_gmm_parity(ours, sk, X, dtype)
    f32 = dtype == np.float32
    np.testing.assert_allclose(ours.precisions_, sk.precisions_,
                               rtol=1e-3 if f32 else 1e-8, atol=1e-3 if f32 else 1e-9)
    assert ours._n_parameters() == sk._n_parameters()


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("cov", POOLED)
def test_parity_from_given_parameters(devices, cov, dtype):
    X = blobs()
    ours, sk = fit_both(devices, X, dtype, covariance_type=cov, max_iter=8, tol=0,
                        **start(X, cov))
    assert_parity(ours, sk, X, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("init", INITS)
@pytest.mark.parametrize("cov", POOLED)
def test_parity_from_every_init(devices, cov, init, dtype):
    """The same seed draws the same start as scikit-learn's (k-means on
    well-separated blobs, where float32 and float64 agree)."""
    X = blobs(seed=1)
    ours, sk = fit_both(devices, X, dtype, covariance_type=cov, max_iter=6, tol=0,
                        init_params=init, random_state=3)
    assert_parity(ours, sk, X, dtype)


@pytest.mark.parametrize("cov", POOLED)
def test_parity_until_converged(devices, cov):
    X = blobs(seed=2)
    ours, sk = fit_both(devices, X, np.float64, covariance_type=cov, max_iter=300,
                        tol=1e-7, **start(X, cov))
    assert ours.converged_ and ours.n_iter_ < 300
    assert_parity(ours, sk, X, np.float64)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("cov", ["full", "diag", "tied", "spherical"])
def test_warm_start_sequence(devices, cov, dtype):
    """Each fit goes on from the last one's parameters, one init, as scikit-learn's."""
    X = blobs(seed=5)
    params = dict(covariance_type=cov, max_iter=2, tol=0, warm_start=True, n_init=3,
                  init_params="random", random_state=0)
    sk = SkGMM(K, **params)
    ours = oc.GaussianMixture(K, devices=devices, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in range(3):
            sk.fit(X)
            ours.fit(X.astype(dtype))
            assert_parity(ours, sk, X, dtype)
    cold = oc.GaussianMixture(K, devices=devices, **dict(params, warm_start=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cold.fit(X.astype(dtype))
    assert cold.lower_bound_ != ours.lower_bound_   # the warm fits went further


@pytest.mark.parametrize("cov", POOLED)
def test_warm_start_converges_as_sklearn(devices, cov):
    """A warm fit's first change is from the last fit's lower bound: one
    iteration a fit, converged (tol) in the same fit as scikit-learn's."""
    X = blobs(seed=6)
    params = dict(covariance_type=cov, max_iter=1, tol=1e-4, warm_start=True,
                  init_params="random", random_state=1)
    sk, ours = SkGMM(K, **params), oc.GaussianMixture(K, devices=devices, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in range(200):
            sk.fit(X)
            ours.fit(X)
            assert ours.converged_ == sk.converged_
            assert ours.lower_bounds_ == pytest.approx(sk.lower_bounds_, rel=1e-10)
            if sk.converged_:
                break
    assert ours.converged_ and ours.n_iter_ == 1
    assert_parity(ours, sk, X, np.float64)
    ours.set_params(max_iter=0).fit(X)   # no iteration: scikit-learn's -inf
    assert ours.lower_bound_ == sk.set_params(max_iter=0).fit(X).lower_bound_ == -np.inf


def test_warm_start_on_other_shapes_raises(devices):
    X = blobs()
    gm = oc.GaussianMixture(K, warm_start=True, max_iter=2, devices=devices)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gm.fit(X)
        with pytest.raises(ValueError, match="warm_start"):
            gm.fit(X[:, :2])


@pytest.mark.parametrize("params, match", [
    (dict(covariance_type="tied", precisions_init=-np.eye(3)),
     "'tied precision' should be symmetric, positive-definite"),
    (dict(covariance_type="tied", precisions_init=np.triu(np.ones((3, 3)))),
     "'tied precision' should be symmetric, positive-definite"),
    (dict(covariance_type="spherical", precisions_init=np.array([1.0, 0.0, 2.0])),
     "'spherical precision' should be positive"),
    (dict(covariance_type="tied", precisions_init=np.stack([np.eye(3)] * K)),
     "Found array with dim 3, while dim <= 2 is required"),
    (dict(covariance_type="spherical", precisions_init=np.ones((K, 3))),
     r"'spherical precision' should have the shape of \(3,\)"),
    (dict(warm_start=1), "warm_start"),
])
def test_bad_parameters_as_sklearn(devices, params, match):
    X = blobs()
    with pytest.raises(ValueError, match=match):
        SkGMM(K, **params).fit(X)
    with pytest.raises(ValueError, match=match):
        oc.GaussianMixture(K, devices=devices, **params).fit(X)


@pytest.mark.parametrize("cov", POOLED)
def test_mdl_order_selection_refuses_pooled_covariances(devices, cov):
    """Bouman's merge of two components leaves one that is neither tied nor spherical."""
    with pytest.raises(ValueError, match="min_components .* 'full' or 'diag'"):
        oc.GaussianMixture(K, covariance_type=cov, min_components=1,
                           devices=devices).fit(blobs())


@pytest.mark.parametrize("cov", POOLED)
def test_sample_equals_sklearn(devices, cov):
    X = blobs()
    ours, sk = fit_both(devices, X, np.float64, covariance_type=cov, max_iter=5, tol=0,
                        random_state=7, **start(X, cov))
    mine, labels = ours.sample(50)
    theirs, sk_labels = sk.sample(50)
    np.testing.assert_array_equal(labels, sk_labels)
    np.testing.assert_allclose(mine, theirs, atol=1e-8)


@pytest.mark.parametrize("cov", POOLED)
def test_model_file_round_trip(devices, cov, tmp_path):
    X = blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gm = oc.GaussianMixture(K, covariance_type=cov, warm_start=True, max_iter=5,
                                random_state=0, devices=devices, **start(X, cov)).fit(X)
    save_model(gm, tmp_path / "m.npz")
    back = load_model(tmp_path / "m.npz")
    assert back.covariance_type == cov and back.warm_start is True
    for name in ("weights_", "means_", "covariances_", "precisions_cholesky_", "precisions_"):
        np.testing.assert_array_equal(getattr(back, name), getattr(gm, name), err_msg=name)
    back.set_params(devices=devices)
    np.testing.assert_allclose(back.predict_proba(X), gm.predict_proba(X), atol=1e-12)
    with warnings.catch_warnings():   # a loaded model warm-starts as the fitted one
        warnings.simplefilter("ignore", ConvergenceWarning)
        np.testing.assert_array_equal(back.fit(X).means_, gm.fit(X).means_)
