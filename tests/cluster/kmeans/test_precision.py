"""``precision=`` on the k-family: validated with the other parameters
(scikit-learn's message, before any device work); KMeans's fast modes
("tf32", "bf16") run as float32 -- bit for bit -- where no tensor cores
are, and on NVIDIA's record the re-checked rows in history_; the
estimators without a tensor-core path run every mode as float32."""
import numpy as np
import pytest
from sklearn.datasets import make_blobs

import oclclust as oc
from oclclust.cluster.kmeans import kmeans
from oclclust.passes.gmm_specs import mma_mstep_planned
from oclclust.passes.lloyd_mma import tensor_cores
from tie_checks import check_contract, distances

ESTIMATORS = [oc.KMeans, oc.MiniBatchKMeans, oc.EnsembleKMeans, oc.FuzzyCMeans,
              oc.GaussianMixture]
FAST = ["tf32", "bf16"]


def blobs(n=500, d=6, seed=0):
    return make_blobs(n, n_features=d, centers=5, random_state=seed)[0].astype(np.float32)


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: e.__name__)
@pytest.mark.parametrize("bad", ["fp16", "FLOAT32", None, 32])
def test_a_bad_precision_is_refused_before_device_work(estimator, bad):
    """scikit-learn's message; devices=[] would fail at device selection, so
    the error is the parameter's."""
    assert estimator().get_params()["precision"] == "float32"
    with pytest.raises(ValueError, match=r"The 'precision' parameter of "
                       rf"{estimator.__name__} must be one of 'float32', 'tf32', 'bf16'\. "
                       rf"Got {bad!r} instead\."):
        estimator(precision=bad, devices=["no such device"]).fit(blobs())


def equal_fits(a, b):
    for name in ("labels_", "cluster_centers_", "means_", "covariances_", "weights_"):
        if hasattr(a, name):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    for name in ("inertia_", "n_iter_", "lower_bound_", "inertias_"):
        if hasattr(a, name):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


@pytest.mark.parametrize("device_update", [True, False], ids=["device-update", "host-update"])
@pytest.mark.parametrize("precision", FAST)
def test_kmeans_fast_modes(devices, profile, precision, device_update):
    """No tensor cores: the float32 model bit for bit, each iteration's
    ``rechecked`` 0.  Tensor cores: the re-checked rows recorded, the labels
    the float64 argmin of the fit's centres but within the mode's bound of a
    tie (the runs part there, as any two float orders do)."""
    X = blobs(3000, 16)
    saved, kmeans.DEVICE_UPDATE = kmeans.DEVICE_UPDATE, device_update
    try:
        kw = dict(n_clusters=20, n_init=1, max_iter=8, tol=0.0, random_state=0,
                  devices=devices)
        ref = oc.KMeans(**kw).fit(X)
        fast = oc.KMeans(precision=precision, **kw).fit(X)
    finally:
        kmeans.DEVICE_UPDATE = saved
    assert all("rechecked" not in h for h in ref.history_)
    assert len(fast.history_) == fast.n_iter_
    if not tensor_cores(profile):
        equal_fits(fast, ref)
        assert [h["rechecked"] for h in fast.history_] == [0] * fast.n_iter_
        np.testing.assert_array_equal(fast.predict(X), ref.predict(X))
        assert fast.score(X) == ref.score(X)
    else:   # near ties part the runs' ways: each run's labels are its centres' argmin
        assert all(0 <= h["rechecked"] <= len(X) for h in fast.history_)
        assert sum(h["rechecked"] for h in fast.history_) > 0
        C = fast.cluster_centers_.astype(np.float32)   # as the pass reads them
        dp = -(-X.shape[1] // (32 if precision == "bf16" else 8)) * (32 if precision == "bf16"
                                                                    else 8)
        check_contract(precision, dp, -(-len(C) // 16) * 16, X, C, fast.labels_)
        d2 = distances(X, C)
        assert fast.inertia_ == pytest.approx(d2[np.arange(len(X)), fast.labels_].sum(),
                                              rel=1e-4)


@pytest.mark.parametrize("estimator, kw", [
    (oc.MiniBatchKMeans, dict(n_clusters=4, batch_size=128, max_iter=3)),
    (oc.EnsembleKMeans, dict(n_clusters=4, n_models=2, max_iter=4)),
    (oc.FuzzyCMeans, dict(n_clusters=4, max_iter=4)),
    (oc.GaussianMixture, dict(n_components=3, covariance_type="diag", max_iter=3)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_no_tensor_core_path_runs_float32(devices, profile, estimator, kw):
    """A fast mode where no tensor-core kernel reads it: the float32 fit, bit
    for bit.  The diagonal GaussianMixture's tensor-core kernels (NVIDIA)
    read it: one product a step in the E step, its values near each row's
    largest made again in float32 (the re-check), the M step's
    responsibilities rounded to TF32; the fit's lower bound within 1e-5 of
    float32's, relatively (docs/guide/precision.rst)."""
    X = blobs(400, 5)
    ref = estimator(random_state=0, devices=devices, **kw).fit(X)
    fast = estimator(random_state=0, devices=devices, precision="bf16", **kw).fit(X)
    if estimator is oc.GaussianMixture and mma_mstep_planned(profile, X.dtype, X.shape[1],
                                                             False):
        assert fast.lower_bound_ == pytest.approx(ref.lower_bound_, rel=1e-5)
        np.testing.assert_allclose(fast.means_, ref.means_, rtol=0, atol=1e-3)
        np.testing.assert_allclose(fast.weights_, ref.weights_, rtol=1e-4)
    else:
        equal_fits(fast, ref)
