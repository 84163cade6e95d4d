"""GaussianMixture against scikit-learn's fitted from the same start, at
the GMM tests' tolerances (float32: the rows rounded to float32):
tests/cluster/mixture/test_gmm.py and test_gmm_covariances.py."""
import numpy as np
import pytest


def assert_gmm_parity(ours, sk, X, dtype):
    f32 = dtype == np.float32
    np.testing.assert_allclose(ours.means_, sk.means_, atol=1e-3 if f32 else 1e-9)
    np.testing.assert_allclose(ours.weights_, sk.weights_, atol=1e-4 if f32 else 1e-10)
    np.testing.assert_allclose(ours.covariances_, sk.covariances_, atol=1e-3 if f32 else 1e-9)
    np.testing.assert_allclose(ours.precisions_cholesky_, sk.precisions_cholesky_,
                               rtol=1e-3 if f32 else 1e-8, atol=1e-3 if f32 else 1e-9)
    assert ours.lower_bound_ == pytest.approx(sk.lower_bound_, rel=1e-4 if f32 else 1e-10)
    assert ours.n_iter_ == sk.n_iter_ and ours.converged_ == sk.converged_
    Xd = X.astype(dtype)
    rel = 1e-5 if f32 else 1e-10
    assert ours.bic(Xd) == pytest.approx(sk.bic(X), rel=rel)
    assert ours.aic(Xd) == pytest.approx(sk.aic(X), rel=rel)
    np.testing.assert_allclose(ours.predict_proba(Xd), sk.predict_proba(X),
                               atol=1e-4 if f32 else 1e-9)
    np.testing.assert_allclose(ours.score_samples(Xd), sk.score_samples(X),
                               rtol=1e-5 if f32 else 1e-10)
    np.testing.assert_array_equal(ours.predict(Xd), sk.predict(X))
