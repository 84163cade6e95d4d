"""FuzzyCMeans' u_ and labels_ (issue 18): the final pass leaves the
memberships on the devices and the first read brings them to the host --
the same values as the host path (CMeansShards.run with write_u, as
predict_proba), labels_ their argmax; pickling and model files read them."""
import pickle

import numpy as np
import pytest

import oclclust as oc
from oclclust.io.modelio import load_model, save_model
from oclclust.cluster.mixture.cmeans_shards import Memberships


def data(dtype):
    rng = np.random.RandomState(4)
    X = rng.normal(size=(900, 5)) + np.repeat(rng.uniform(-6, 6, (6, 5)), 150, axis=0)
    return X.astype(dtype)


def fitted(X, devices):
    return oc.FuzzyCMeans(6, max_iter=8, tol=0, random_state=2, devices=devices).fit(X)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda t: t.__name__)
def test_read_when_first_asked_and_as_the_host_path(devices, dtype):
    X = data(dtype)
    fc = fitted(X, devices)
    assert isinstance(fc.__dict__["_u"], Memberships)        # nothing copied by the fit
    u = fc.u_
    assert isinstance(fc.__dict__["_u"], np.ndarray) and fc.u_ is u
    assert u.dtype == dtype and u.shape == (len(X), 6) and u.flags.c_contiguous
    np.testing.assert_array_equal(u, fc.predict_proba(X))
    np.testing.assert_array_equal(fc.labels_, u.argmax(axis=1))
    np.testing.assert_array_equal(fc.predict(X), fc.labels_)
    assert fc.objective_ == -fc.score(X)


def test_labels_first_then_u(devices):
    X = data(np.float64)
    one, two = fitted(X, devices), fitted(X, devices)
    labels = one.labels_
    np.testing.assert_array_equal(labels, two.u_.argmax(axis=1))
    np.testing.assert_array_equal(one.u_, two.u_)


def test_pickle_and_model_files_before_any_read(devices, tmp_path):
    X = data(np.float32)
    ref = fitted(X, devices)
    back = pickle.loads(pickle.dumps(fitted(X, devices)))
    np.testing.assert_array_equal(back.u_, ref.u_)
    np.testing.assert_array_equal(back.labels_, ref.labels_)
    save_model(fitted(X, devices), tmp_path / "fcm.npz")
    loaded = load_model(tmp_path / "fcm.npz")
    np.testing.assert_array_equal(loaded.u_, ref.u_)
    np.testing.assert_array_equal(loaded.labels_, ref.labels_)


def test_not_fitted_has_neither():
    fc = oc.FuzzyCMeans(3)
    assert not hasattr(fc, "u_") and not hasattr(fc, "labels_")


def test_labels_taken_on_the_devices(devices):
    """labels_ read first (u_ still on the devices) and predict: the device's
    argmax, equal to numpy's of the memberships, ties and all."""
    X = data(np.float32)
    X[:50] = X[0]                  # equal rows
    fc = fitted(X, devices)
    labels = fc.labels_
    assert isinstance(fc.__dict__["_u"], Memberships) and labels.dtype == np.int64
    np.testing.assert_array_equal(labels, fc.u_.argmax(axis=1))
    np.testing.assert_array_equal(fc.predict(X), fc.predict_proba(X).argmax(axis=1))
    np.testing.assert_array_equal(fc.predict(X), labels)
