"""Model files: a fitted estimator saved and loaded predicts the same; the
file holds no pickle; damaged or foreign files give a clear error."""
import json
import zipfile

import numpy as np
import pytest

import oclclust as oc
from oclclust.io.modelio import ModelFileError, load_model, save_model


def test_kmeans_round_trip(devices, blobs, tmp_path):
    X, _ = blobs
    km = oc.KMeans(n_clusters=4, random_state=0, devices=devices).fit(X)
    save_model(km, tmp_path / "m.npz")
    back = load_model(tmp_path / "m.npz")
    assert type(back) is oc.KMeans and back.n_clusters == 4 and back.random_state == 0
    np.testing.assert_array_equal(back.cluster_centers_, km.cluster_centers_)
    assert back.inertia_ == km.inertia_ and back.n_iter_ == km.n_iter_
    back.set_params(devices=devices)
    assert (back.predict(X) == km.predict(X)).all()
    with np.load(tmp_path / "m.npz", allow_pickle=False) as npz:   # no object arrays
        assert json.loads(str(npz["__meta__"]))["version"] == 1


def test_array_init_is_kept(devices, blobs, tmp_path):
    X, _ = blobs
    init = X[:4].copy()
    km = oc.KMeans(n_clusters=4, init=init, n_init=1, devices=devices).fit(X)
    save_model(km, tmp_path / "m.npz")
    np.testing.assert_array_equal(load_model(tmp_path / "m.npz").init, init)


@pytest.mark.parametrize("start", ["fit", "partial_fit"])
def test_minibatch_goes_on_from_its_file_as_the_live_model(start, devices, blobs, tmp_path):
    """The centres' counts, the rows since the last reassignment and the
    random stream are in the file: partial_fit after load_model makes the
    live model's centres, bit for bit."""
    X, _ = blobs
    X = X.astype(np.float32)
    live = oc.MiniBatchKMeans(n_clusters=4, batch_size=50, random_state=0,
                              reassignment_ratio=0.5, devices=devices)
    if start == "fit":
        live.fit(X)
    else:
        for chunk in np.array_split(X[:300], 3):
            live.partial_fit(chunk)
    save_model(live, tmp_path / "m.npz")
    back = load_model(tmp_path / "m.npz")
    back.set_params(devices=devices)
    for chunk in np.array_split(X[300:], 4):
        live.partial_fit(chunk)
        back.partial_fit(chunk)
        np.testing.assert_array_equal(back.cluster_centers_, live.cluster_centers_)


def test_bad_files(devices, blobs, tmp_path):
    with pytest.raises(ValueError, match="not fitted"):
        save_model(oc.KMeans(), tmp_path / "x.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ModelFileError, match="junk.npz"):
        load_model(tmp_path / "junk.npz")
    np.savez(tmp_path / "plain.npz", a=np.ones(3))
    with pytest.raises(ModelFileError, match="no oclclust metadata"):
        load_model(tmp_path / "plain.npz")
    X, _ = blobs
    save_model(oc.KMeans(n_clusters=2, devices=devices).fit(X), tmp_path / "m.npz")
    for change, message in (({"version": 99}, "newer"), ({"class": "os.system"}, "unknown"),
                            ({"format": "other"}, "not an oclclust model")):
        with np.load(tmp_path / "m.npz") as npz:
            files = {k: npz[k] for k in npz.files}
        meta = json.loads(str(files["__meta__"]))
        meta.update(change)
        files["__meta__"] = np.array(json.dumps(meta))
        np.savez(tmp_path / "e.npz", **files)
        with pytest.raises(ModelFileError, match=message):
            load_model(tmp_path / "e.npz")
    assert zipfile.is_zipfile(tmp_path / "m.npz")


ESTIMATORS = [
    ("KMeans", dict(n_clusters=4, random_state=0)),
    ("EnsembleKMeans", dict(n_clusters=4, n_models=3, random_state=0)),
    ("FuzzyCMeans", dict(n_clusters=4, random_state=0)),
    ("GaussianMixture", dict(n_components=4, random_state=0)),
    ("GaussianMixture", dict(n_components=6, min_components=2, random_state=0)),
    ("GaussianMixture", dict(n_components=4, covariance_type="tied", random_state=0)),
    ("GaussianMixture", dict(n_components=4, covariance_type="spherical", random_state=0)),
    ("AgglomerativeClustering", dict(n_clusters=4, linkage="average")),
    ("HDBSCAN", dict(min_cluster_size=8, store_centers="both")),
]


@pytest.mark.parametrize("name,params", ESTIMATORS, ids=lambda v: v if isinstance(v, str) else "")
def test_every_estimator_round_trips(name, params, devices, blobs, tmp_path):
    """Saved and loaded, each estimator keeps its learned arrays and predicts
    the same labels (and memberships / responsibilities) on new data."""
    X, _ = blobs
    model = getattr(oc, name)(devices=devices, **params).fit(X)
    save_model(model, tmp_path / "m.npz")
    back = load_model(tmp_path / "m.npz")
    assert type(back) is type(model)
    assert back.get_params()["devices"] is None      # where it ran is not saved
    for key, value in vars(model).items():   # public ones: a model file keeps no private
        if key.endswith("_") and not key.startswith("_") and isinstance(value, np.ndarray):
            np.testing.assert_array_equal(getattr(back, key), value, err_msg=key)
    back.set_params(devices=devices)
    new = X[::7] + 0.1
    if hasattr(model, "predict"):
        np.testing.assert_array_equal(back.predict(new), model.predict(new))
    if hasattr(model, "predict_proba"):
        np.testing.assert_allclose(back.predict_proba(new), model.predict_proba(new),
                                   rtol=1e-6, atol=1e-12)


def test_a_schema_for_every_estimator():
    from oclclust.cluster.registry import ESTIMATORS as REGISTERED
    from oclclust.io.model_schema import SCHEMAS
    assert set(SCHEMAS) == set(REGISTERED)


@pytest.mark.parametrize("name,params", ESTIMATORS, ids=lambda v: v if isinstance(v, str) else "")
def test_the_schema_names_every_fitted_attribute(name, params, devices, blobs, tmp_path):
    """What fit sets, a model file keeps: an attribute an estimator gains
    must be added to its schema (io/model_schema.py)."""
    from oclclust.io.model_schema import SCHEMAS
    model = getattr(oc, name)(devices=devices, **params).fit(blobs[0])
    fitted = {k for k in vars(model) if k.endswith("_") and not k.startswith("_")}
    assert fitted <= set(SCHEMAS[name].attributes), fitted - set(SCHEMAS[name].attributes)
    save_model(model, tmp_path / "m.npz")
    assert fitted == {k for k in vars(load_model(tmp_path / "m.npz")) if k.endswith("_")}


def test_kernels_are_kept(devices, blobs, tmp_path):
    """kernels_ (the kernels the fit ran) round trips; a file written before
    fits kept them still loads, without it; a damaged record is refused."""
    X, _ = blobs
    km = oc.KMeans(n_clusters=4, random_state=0, devices=devices).fit(X)
    save_model(km, tmp_path / "m.npz")
    assert km.kernels_ and load_model(tmp_path / "m.npz").kernels_ == km.kernels_
    with np.load(tmp_path / "m.npz") as npz:
        files = {k: npz[k] for k in npz.files}
    meta = json.loads(str(files["__meta__"]))
    kernels = meta["attributes"].pop("kernels_")
    files["__meta__"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "before.npz", **files)
    back = load_model(tmp_path / "before.npz")
    assert not hasattr(back, "kernels_")
    np.testing.assert_array_equal(back.cluster_centers_, km.cluster_centers_)
    for damage, message in ((dict(template="../../x.cl.mako"), "not a relative path"),
                            (dict(key=[1]), "not an object"), (dict(extra=1), "keys")):
        meta["attributes"]["kernels_"] = [dict(kernels[0], **damage)]
        files["__meta__"] = np.array(json.dumps(meta))
        np.savez(tmp_path / "bad.npz", **files)
        with pytest.raises(ModelFileError, match=message):
            load_model(tmp_path / "bad.npz")


def test_model_files_leave_the_checkpoint_out(devices, tmp_path):
    """checkpoint and checkpoint_every say where a fit kept its state, not
    what it learned: a model file holds neither."""
    X = np.random.RandomState(0).normal(size=(100, 2))
    km = oc.KMeans(2, random_state=0, devices=devices, checkpoint=tmp_path / "c",
                   checkpoint_every="5s").fit(X)
    save_model(km, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    assert loaded.checkpoint is None and loaded.checkpoint_every == 1


@pytest.mark.parametrize("name,params", ESTIMATORS, ids=lambda v: v if isinstance(v, str) else "")
def test_feature_names_are_kept(name, params, devices, blobs, tmp_path):
    """A model fitted on named columns keeps their names (a JSON list, no
    pickle) and refuses other names after loading, as the live model does."""
    from named_table import Table
    X = blobs[0]
    model = getattr(oc, name)(devices=devices, **params).fit(Table(X, ["x", "y", "z"]))
    save_model(model, tmp_path / "m.npz")
    back = load_model(tmp_path / "m.npz")
    assert back.feature_names_in_.dtype == object
    assert list(back.feature_names_in_) == ["x", "y", "z"]
    if hasattr(back, "predict"):
        back.set_params(devices=devices)
        named = Table(X, ["x", "y", "z"])
        np.testing.assert_array_equal(back.predict(named), model.predict(named))
        with pytest.raises(ValueError, match="feature names should match"):
            back.predict(Table(X, ["x", "z", "y"]))
    with np.load(tmp_path / "m.npz") as npz:
        meta = json.loads(str(npz["__meta__"]))
    meta["attributes"]["feature_names_in_"] = ["x", "y"]   # fewer names than features
    files = dict(np.load(tmp_path / "m.npz"))
    files["__meta__"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "bad.npz", **files)
    with pytest.raises(ModelFileError, match="feature_names_in_"):
        load_model(tmp_path / "bad.npz")
