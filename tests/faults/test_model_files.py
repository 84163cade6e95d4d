"""Damaged and hostile model files: each is refused with a ModelFileError
naming the problem, before anything is set on an estimator; save_model
writes oclclust's own estimators only."""
import json

import numpy as np
import pytest

import oclclust as oc
from oclclust.io.modelio import ModelFileError, load_model, save_model

MODELS = {
    "KMeans": lambda devices: oc.KMeans(n_clusters=4, random_state=0, devices=devices),
    "FuzzyCMeans": lambda devices: oc.FuzzyCMeans(n_clusters=4, random_state=0,
                                                  devices=devices),
    "EnsembleKMeans": lambda devices: oc.EnsembleKMeans(n_clusters=4, n_models=3,
                                                        random_state=0, devices=devices),
    "GaussianMixture": lambda devices: oc.GaussianMixture(n_components=4, random_state=0,
                                                          devices=devices),
    "AgglomerativeClustering": lambda devices: oc.AgglomerativeClustering(
        n_clusters=4, linkage="average", devices=devices),
    "DBSCAN": lambda devices: oc.DBSCAN(eps=1.0, min_samples=5, devices=devices),
    "HDBSCAN": lambda devices: oc.HDBSCAN(min_cluster_size=10, devices=devices),
}


@pytest.fixture(scope="module")
def saved(devices, blobs, tmp_path_factory):
    """{class name: path of its fitted model file} on the platform under test."""
    folder = tmp_path_factory.mktemp("models")
    paths = {}
    for name, make in MODELS.items():
        paths[name] = folder / f"{name}.npz"
        save_model(make(devices).fit(blobs[0]), paths[name])
    return paths


def contents(path):
    """(metadata, {name: array}) of a model file."""
    with np.load(path, allow_pickle=False) as npz:
        files = {k: npz[k] for k in npz.files}
    return json.loads(str(files.pop("__meta__"))), files


def edited(source, target, edit):
    """*source* with edit(meta, files) applied, written to *target*: edit
    changes meta and files in place and returns the metadata to write (a
    JSON value, or an array stored as it is)."""
    meta, files = contents(source)
    meta = edit(meta, files)
    files["__meta__"] = meta if isinstance(meta, np.ndarray) else np.array(json.dumps(meta))
    np.savez(target, **files)
    return target


def _set(section, key, value):
    def edit(meta, files):
        meta[section][key] = value
        return meta
    return edit


def _array(key, change):
    def edit(meta, files):
        files[key] = change(files[key])
        return meta
    return edit


def _drop(key):
    def edit(meta, files):
        del meta[key]
        return meta
    return edit


def _as_json(key):
    """Array *key* moved into the metadata's JSON attributes."""
    def edit(meta, files):
        meta["attributes"][key] = files.pop(key).tolist()
        meta["arrays"].remove(key)
        return meta
    return edit


def _new_array(key, value):
    def edit(meta, files):
        files[key] = value
        meta["arrays"].append(key)
        return meta
    return edit


def _with(array, index, value):
    out = array.copy()
    out[index] = value
    return out


def _lacks(key):
    def edit(meta, files):
        del files[key]
        meta["arrays"].remove(key)
        return meta
    return edit


def _absent_array(meta, files):
    del files["cluster_centers_"]
    return meta


def _unnamed_array(meta, files):
    files["extra"] = np.ones(3)
    return meta


def _absent_array_param(meta, files):
    meta["array_params"] = ["init"]
    return meta


def _init_array(shape):
    def edit(meta, files):
        meta["params"].pop("init")
        meta["array_params"] = ["init"]
        files["param:init"] = np.zeros(shape)
        return meta
    return edit


def _twice(meta, files):
    meta["attributes"]["cluster_centers_"] = files["cluster_centers_"].tolist()
    return meta


CASES = [
    # the metadata itself
    ("KMeans", "meta-list", lambda meta, files: [], "metadata is a JSON array, not an object"),
    ("KMeans", "meta-null", lambda meta, files: None, "metadata is a JSON null, not an object"),
    ("KMeans", "meta-number", lambda meta, files: 5, "metadata is a JSON number"),
    ("KMeans", "meta-int-array", lambda meta, files: np.array(5), "no oclclust metadata"),
    ("KMeans", "meta-nested-deep", lambda meta, files: np.array("[" * 100_000),
     "metadata is not JSON"),
    ("KMeans", "version-0", lambda meta, files: {**meta, "version": 0},
     "no model format version"),
    ("KMeans", "lacks-params", _drop("params"), "metadata lacks 'params'"),
    ("KMeans", "lacks-attributes", _drop("attributes"), "metadata lacks 'attributes'"),
    ("KMeans", "lacks-arrays", _drop("arrays"), "metadata lacks 'arrays'"),
    ("KMeans", "params-a-list", lambda meta, files: {**meta, "params": []},
     "'params' is a JSON array, not an object"),
    ("KMeans", "attributes-null", lambda meta, files: {**meta, "attributes": None},
     "'attributes' is a JSON null, not an object"),
    ("KMeans", "arrays-not-names", lambda meta, files: {**meta, "arrays": [1]},
     "'arrays' is not a list of names"),
    ("KMeans", "names-absent-array", _absent_array,
     "names arrays the archive lacks: ['cluster_centers_']"),
    ("KMeans", "names-absent-param-array", _absent_array_param,
     "names arrays the archive lacks: ['param:init']"),
    ("KMeans", "unnamed-array", _unnamed_array, "does not name: ['extra']"),
    ("KMeans", "named-twice", _twice, "['cluster_centers_'] given twice"),
    # names a model file may not set
    ("KMeans", "attr-dunder-class", _set("attributes", "__class__", "KMeans"),
     "attribute(s) ['__class__'] are not among a KMeans's"),
    ("KMeans", "attr-dunder-dict", _set("attributes", "__dict__", {}),
     "attribute(s) ['__dict__'] are not among"),
    ("KMeans", "attr-predict", _set("attributes", "predict", 1),
     "attribute(s) ['predict'] are not among"),
    ("KMeans", "attr-private", _set("attributes", "_parameter_rules", {}),
     "attribute(s) ['_parameter_rules'] are not among"),
    ("KMeans", "attr-unknown-fitted", _set("attributes", "score_", 1.0),
     "attribute(s) ['score_'] are not among"),
    ("KMeans", "array-predict", _new_array("predict", np.ones(3)),
     "attribute(s) ['predict'] are not among"),
    ("KMeans", "param-runtime", _set("params", "devices", "all"),
     "parameter(s) ['devices'] are not among a KMeans's saved ones"),
    # types, shapes and values against the parameters
    ("KMeans", "one-centre-n_clusters-4", _array("cluster_centers_", lambda a: a[:1]),
     "cluster_centers_ has shape (1, 3), expected (n_clusters=4, n_features_in_=3)"),
    ("KMeans", "n_clusters-contradicts", _set("params", "n_clusters", 3),
     "cluster_centers_ has shape (4, 3), expected (n_clusters=3, n_features_in_=3)"),
    ("KMeans", "n_features-contradicts", _set("attributes", "n_features_in_", 5),
     "cluster_centers_ has shape (4, 3), expected (n_clusters=4, n_features_in_=5)"),
    ("KMeans", "centres-1d", _array("cluster_centers_", np.ravel),
     "cluster_centers_ has shape (12,), expected"),
    ("KMeans", "centres-int", _array("cluster_centers_", lambda a: a.astype(np.int64)),
     "cluster_centers_ has dtype int64, not float"),
    ("KMeans", "centres-float16", _array("cluster_centers_", lambda a: a.astype(np.float16)),
     "cluster_centers_ has dtype float16, not float"),
    ("KMeans", "centres-big-endian", _array("cluster_centers_", lambda a: a.astype(">f8")),
     "cluster_centers_ has dtype >f8, not float"),
    ("KMeans", "centres-nan", _array("cluster_centers_", lambda a: _with(a, (0, 0), np.nan)),
     "cluster_centers_ holds NaN or infinity"),
    ("KMeans", "centres-as-json", _as_json("cluster_centers_"),
     "cluster_centers_ is list"),
    ("KMeans", "lacks-centres", _lacks("cluster_centers_"), "lacks cluster_centers_"),
    ("KMeans", "labels-out-of-range", _array("labels_", lambda a: _with(a, 0, 9)),
     "labels_ holds 9, not below 4"),
    ("KMeans", "labels-negative", _array("labels_", lambda a: _with(a, 0, -1)),
     "labels_ holds -1, below 0"),
    ("KMeans", "labels-float", _array("labels_", lambda a: a.astype(np.float64)),
     "labels_ has dtype float64, not int"),
    ("KMeans", "n_clusters-string", _set("params", "n_clusters", "4"),
     "n_clusters is str '4', not an integer"),
    ("KMeans", "n_features-string", _set("attributes", "n_features_in_", "3"),
     "n_features_in_ is str '3', not an integer"),
    ("KMeans", "n_iter-bool", _set("attributes", "n_iter_", True),
     "n_iter_ is bool True, not an integer"),
    ("KMeans", "inertia-string", _set("attributes", "inertia_", "low"),
     "inertia_ is str 'low', not a number"),
    ("KMeans", "history-string", _set("attributes", "history_", "x"),
     "history_ is str 'x', not a list"),
    ("KMeans", "devices-negative", _set("attributes", "devices_", {"gpu": -1}),
     "devices_ ['gpu'] is -1, below 0"),
    ("KMeans", "init-wrong-shape", _init_array((2, 3)),
     "init has shape (2, 3), expected (n_clusters=4, n_features_in_=3)"),
    ("FuzzyCMeans", "m-one", _set("params", "m", 1), "m is 1, not above 1"),
    ("FuzzyCMeans", "memberships-shape", _array("u_", lambda a: a[:, :2]),
     "u_ has shape (600, 2), expected (n_samples=600, n_clusters=4)"),
    ("FuzzyCMeans", "memberships-rows", _array("u_", lambda a: a[1:]),   # u_ binds n_samples
     "labels_ has shape (600,), expected (n_samples=599)"),
    ("EnsembleKMeans", "best-index-out", _set("attributes", "best_index_", 7),
     "best_index_ is 7, not below 3"),
    ("EnsembleKMeans", "models-shape", _array("models_", lambda a: a[:, :2]),
     "models_ has shape (3, 2, 3), expected (n_models=3, k_common=4, n_features_in_=3)"),
    ("EnsembleKMeans", "n_iter-as-json", _as_json("n_iter_"), "n_iter_ is list"),
    ("EnsembleKMeans", "n_clusters-list-length", _set("params", "n_clusters", [4, 4]),
     "n_clusters has 2 items, not n_models=3"),
    ("EnsembleKMeans", "n_clusters-string", _set("params", "n_clusters", "4"),
     "n_clusters is str '4', not an integer or a list or an array"),
    ("GaussianMixture", "diag-param-full-arrays", _set("params", "covariance_type", "diag"),
     "covariances_ has shape (4, 3, 3), expected (n_components_=4, n_features_in_=3)"),
    ("GaussianMixture", "tied-param-full-arrays", _set("params", "covariance_type", "tied"),
     "covariances_ has shape (4, 3, 3), expected (n_features_in_=3, n_features_in_=3)"),
    ("GaussianMixture", "spherical-param-full-arrays",
     _set("params", "covariance_type", "spherical"),
     "covariances_ has shape (4, 3, 3), expected (n_components_=4)"),
    ("GaussianMixture", "covariance-type-unknown", _set("params", "covariance_type", "sphere"),
     "covariance_type is str 'sphere', not one of ['full', 'diag', 'tied', 'spherical']"),
    ("GaussianMixture", "n_components_-above", _set("attributes", "n_components_", 9),
     "n_components_ is 9, above 4"),
    ("GaussianMixture", "weights-negative", _array("weights_", lambda a: _with(a, 0, -1)),
     "weights_ holds -1.0, below 0"),
    ("GaussianMixture", "mdl-path-bad", _set("attributes", "mdl_path_", [[1]]),
     "mdl_path_ [0] is list [1], not a list of 2 items"),
    ("AgglomerativeClustering", "children-shape", _array("children_", lambda a: a[:-1]),
     "children_ has shape (598, 2), expected (n_merges=599, 2)"),
    ("AgglomerativeClustering", "children-out-of-range",
     _array("children_", lambda a: _with(a, (0, 0), 10 ** 6)),
     "children_ holds 1000000, not below 1198"),
    ("AgglomerativeClustering", "labels-length", _array("labels_", lambda a: a[:-1]),
     "labels_ has shape (599,), expected (n_leaves_=600)"),
    ("AgglomerativeClustering", "n_clusters_-above-leaves",
     _set("attributes", "n_clusters_", 601), "n_clusters_ is 601, above 600"),
    ("DBSCAN", "core-index-past-n",
     _array("core_sample_indices_", lambda a: _with(a, 0, 600)),
     "core_sample_indices_ holds 600, not below 600"),
    ("HDBSCAN", "probabilities-all-nan",
     _array("probabilities_", lambda a: np.full_like(a, np.nan)),
     "probabilities_ holds NaN outside its missing_rows"),
]


@pytest.mark.parametrize("name,edit,message", [(c[0], c[2], c[3]) for c in CASES],
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_a_damaged_or_hostile_file_is_refused(name, edit, message, saved, tmp_path):
    path = edited(saved[name], tmp_path / "hostile.npz", edit)
    with pytest.raises(ModelFileError) as exc:
        load_model(path)
    assert message in str(exc.value) and str(path) in str(exc.value)
    assert "\n" not in str(exc.value)


def _truncated(data):
    return data[:len(data) // 2]


def _flip(data, at):
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]


@pytest.mark.parametrize("damage", ["truncated", "member-bytes-flipped",
                                    "compressed-member-flipped"])
def test_a_damaged_archive_is_refused(damage, saved, tmp_path):
    """Cut short, a stored member's bytes changed (its CRC no longer fits),
    a compressed member's stream broken: not a readable model file."""
    source = saved["KMeans"]
    if damage == "compressed-member-flipped":
        meta, files = contents(source)
        np.savez_compressed(tmp_path / "packed.npz", __meta__=np.array(json.dumps(meta)),
                            **files)
        source = tmp_path / "packed.npz"
        assert load_model(source).n_clusters == 4   # compressed, it loads
    data = source.read_bytes()
    if damage == "truncated":
        data = _truncated(data)
    else:   # a byte in the middle of the centres' member (stored) or stream (compressed)
        at = data.find(b"cluster_centers_.npy") + len("cluster_centers_.npy") + 120
        data = _flip(data, at)
    (tmp_path / "bad.npz").write_bytes(data)
    with pytest.raises(ModelFileError, match="not a readable .npz model file"):
        load_model(tmp_path / "bad.npz")


def test_nothing_is_set_before_the_file_is_refused(saved, tmp_path, monkeypatch):
    """A file with valid attributes and one unknown name: none of them is
    set on an estimator before the refusal."""
    written = []
    real = oc.KMeans.__setattr__
    monkeypatch.setattr(oc.KMeans, "__setattr__",
                        lambda self, key, value: (written.append(key), real(self, key, value)))
    path = edited(saved["KMeans"], tmp_path / "h.npz", _set("attributes", "predict", 1))
    with pytest.raises(ModelFileError):
        load_model(path)
    assert [k for k in written if k.endswith("_") or k == "predict"] == []


def _sklearn_kmeans(blobs):
    from sklearn.cluster import KMeans
    return KMeans(n_clusters=2, n_init=1, random_state=0).fit(blobs[0])


def _same_name_subclass(blobs, devices):
    cls = type("KMeans", (oc.KMeans,), {})   # named as oclclust's, but not its class
    return cls(n_clusters=2, random_state=0, devices=devices).fit(blobs[0])


@pytest.mark.parametrize("make", [lambda blobs, devices: _sklearn_kmeans(blobs),
                                  _same_name_subclass], ids=["sklearn-KMeans", "subclass"])
def test_save_writes_oclclust_estimators_only(make, blobs, devices, tmp_path):
    with pytest.raises(TypeError, match="model files hold oclclust's estimators"):
        save_model(make(blobs, devices), tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()
