"""kernels_: every fitted estimator records the kernels its fit ran (per
device: pass, variant, template path, the spec's key values), from which
the pass module, its spec and the template file are one step each."""
import importlib

import numpy as np
import pytest

import oclclust as oc
from oclclust.runtime.resources import resource_dir

ESTIMATORS = [
    ("KMeans", dict(n_clusters=4, random_state=0)),
    ("MiniBatchKMeans", dict(n_clusters=4, random_state=0, batch_size=128)),
    ("EnsembleKMeans", dict(n_clusters=4, n_models=3, random_state=0)),
    ("FuzzyCMeans", dict(n_clusters=4, random_state=0)),
    ("GaussianMixture", dict(n_components=4, random_state=0)),
    ("DBSCAN", dict(eps=0.8, min_samples=5)),
    ("HDBSCAN", dict(min_cluster_size=8)),
    ("AgglomerativeClustering", dict(n_clusters=4)),
]


def fitted(name, params, devices, X):
    return getattr(oc, name)(devices=devices, **params).fit(X)


@pytest.mark.parametrize("name,params", ESTIMATORS, ids=[n for n, _ in ESTIMATORS])
def test_every_estimator_records_its_kernels(name, params, devices, blobs):
    X, _ = blobs
    model = fitted(name, params, devices, X)
    assert model.kernels_, "no kernel recorded"
    names = {p.name.strip() for p in devices}
    templates = resource_dir("templates")
    for record in model.kernels_:
        assert set(record) == {"device", "pass", "variant", "spec", "template", "key"}
        assert record["device"] in names
        assert (templates / record["template"]).is_file(), record["template"]
        # one step from the record to the pass module, its spec and the file
        module = importlib.import_module(
            f"oclclust.{record['pass']}" if record["pass"].startswith("runtime.")
            else f"oclclust.passes.{record['pass']}")
        spec = getattr(module, record["spec"])(**record["key"])
        assert spec.template == record["template"]
    assert model.kernels_ == sorted(model.kernels_, key=lambda r: (
        r["device"], r["pass"], r["template"], r["variant"], repr(r["key"])))
    # a second fit reuses the process's plans and pooled states: the same record
    assert fitted(name, params, devices, X).kernels_ == model.kernels_


def test_kmeans_records_its_lloyd_pass(devices, blobs):
    X, _ = blobs
    model = oc.KMeans(n_clusters=4, init=X[:4], n_init=1, devices=devices).fit(X)
    lloyd = [r for r in model.kernels_ if r["pass"] == "lloyd"]
    assert lloyd and all(r["spec"] == "LloydSpec" and r["variant"] == r["key"]["variant"]
                         and r["key"]["k"] == 4 and r["key"]["d"] == X.shape[1]
                         for r in lloyd)
    assert not [r for r in model.kernels_ if r["pass"] == "kmeanspp"]   # given centres


def test_partial_fit_adds_each_calls_kernels(devices, blobs):
    X, _ = blobs
    model = oc.MiniBatchKMeans(n_clusters=4, random_state=0, devices=devices)
    model.partial_fit(X[:200])
    first = model.kernels_
    model.partial_fit(X[200:].astype(np.float32))   # float32 rows: other kernels too
    assert first and all(r in model.kernels_ for r in first)
    assert len(model.kernels_) > len(first)
    assert {r["key"]["dtype"] for r in model.kernels_ if "dtype" in r["key"]} >= {
        "float32", "float64"}
