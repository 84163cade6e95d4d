"""Spherical k-means (KMeans/EnsembleKMeans spherical=True) against a numpy
reference of the spherical Lloyd iteration from the same initial centres."""
import numpy as np
import pytest

import oclclust as oc
from oclclust.io.modelio import load_model, save_model


def directions(n=360, d=5, k=3, seed=0, zero_rows=0):
    """Rows around k directions at different lengths (what cosine ignores),
    with *zero_rows* rows of norm 0 at the end."""
    rng = np.random.RandomState(seed)
    axes = rng.normal(size=(k, d))
    X = (axes[np.arange(n) % k] + 0.3 * rng.normal(size=(n, d))) * rng.uniform(0.1, 50, (n, 1))
    return np.vstack([X, np.zeros((zero_rows, d))])


def reference(X, init, iters, w=None):
    """numpy's spherical Lloyd: unit rows (0 stays 0), labels the argmax of
    the dot products (first of equals), centres the renormalised weighted
    sums; (centres, labels of the last centres, inertia)."""
    w = np.ones(len(X)) if w is None else w
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    U = X / np.where(norms > 0, norms, 1)
    C = init / np.linalg.norm(init, axis=1, keepdims=True)
    for _ in range(iters):
        labels = (U @ C.T).argmax(1)
        S = np.array([(w[labels == j, None] * U[labels == j]).sum(0) for j in range(len(C))])
        C = S / np.linalg.norm(S, axis=1, keepdims=True)
    labels = (U @ C.T).argmax(1)
    return C, labels, float((w * ((U - C[labels]) ** 2).sum(1)).sum())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("zero_rows", [0, 3])
def test_kmeans_is_numpys_spherical_lloyd(devices, dtype, weighted, zero_rows):
    X = directions(zero_rows=zero_rows).astype(dtype)
    w = np.random.RandomState(1).uniform(0.5, 2, len(X)) if weighted else None
    init = X[[0, 1, 5]].astype(np.float64) * np.array([[1.0], [20.0], [0.5]])
    km = oc.KMeans(3, init=init, n_init=1, max_iter=4, tol=0, spherical=True,
                   devices=devices).fit(X, sample_weight=w)
    C, labels, inertia = reference(X.astype(np.float64), init, km.n_iter_, w)
    rtol = 1e-5 if dtype == np.float32 else 1e-10
    assert km.cluster_centers_.dtype == dtype
    np.testing.assert_allclose(km.cluster_centers_, C, rtol=rtol, atol=rtol)
    # a row of norm 0 is as far from every centre (1, to rounding): any label
    np.testing.assert_array_equal(km.labels_[:len(X) - zero_rows], labels[:len(X) - zero_rows])
    assert np.isclose(km.inertia_, inertia, rtol=rtol)
    np.testing.assert_allclose(np.linalg.norm(km.cluster_centers_, axis=1), 1, rtol=rtol)


def test_predict_transform_and_score_see_unit_rows(devices):
    X = directions()
    km = oc.KMeans(3, n_init=1, random_state=0, spherical=True, devices=devices).fit(X)
    scaled = X * np.random.RandomState(2).uniform(0.01, 100, (len(X), 1))
    np.testing.assert_array_equal(km.predict(scaled), km.labels_)
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    want = np.sqrt(((U[:, None] - km.cluster_centers_[None]) ** 2).sum(-1))
    np.testing.assert_allclose(km.transform(scaled), want, rtol=1e-9, atol=1e-12)
    assert np.isclose(-km.score(scaled), km.inertia_, rtol=1e-9)
    # the labels are the largest cosines
    np.testing.assert_array_equal(km.labels_, (U @ km.cluster_centers_.T).argmax(1))


def test_restarts_and_ensembles_renormalise_too(devices):
    """KMeans's restarts run as an ensemble (n_init > 1) and EnsembleKMeans:
    each model the numpy reference from its own start."""
    X = directions(k=4, seed=3)
    inits = [X[[0, 1, 2, 3]], X[[4, 9, 14, 19]]]
    ens = oc.EnsembleKMeans(4, n_models=2, init=inits, max_iter=3, tol=0, spherical=True,
                            devices=devices).fit(X)
    for model, init, iters in zip(ens.models_, inits, ens.n_iter_):
        np.testing.assert_allclose(model, reference(X, init, iters)[0], rtol=1e-10, atol=1e-12)
    km = oc.KMeans(4, n_init=3, random_state=0, spherical=True, devices=devices).fit(X)
    np.testing.assert_allclose(np.linalg.norm(km.cluster_centers_, axis=1), 1, rtol=1e-12)
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    np.testing.assert_array_equal(km.labels_, (U @ km.cluster_centers_.T).argmax(1))


def test_a_model_file_keeps_spherical(devices, tmp_path):
    X = directions()
    km = oc.KMeans(3, n_init=1, random_state=0, spherical=True, devices=devices).fit(X)
    save_model(km, tmp_path / "m.npz")
    back = load_model(tmp_path / "m.npz")
    assert back.spherical is True
    back.devices = devices
    np.testing.assert_array_equal(back.predict(X * 3), km.labels_)


def test_spherical_must_be_a_bool():
    with pytest.raises(ValueError, match="'spherical' parameter"):
        oc.KMeans(3, spherical="yes").fit(directions())
