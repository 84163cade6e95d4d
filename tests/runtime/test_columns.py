"""scikit-learn's column contract on every estimator (runtime/columns.py,
applied by cluster/_base.RecordsKernels): ``feature_names_in_`` from a fit
on named columns, scikit-learn's ValueError for other or reordered names and
its UserWarning for names on one side only, before any device work."""
import warnings

import numpy as np
import pytest

import oclclust as oc
from named_table import ProtocolTable, Table
from oclclust.runtime.columns import feature_names

NAMES = ["a", "b", "c"]
ESTIMATORS = [("KMeans", dict(n_clusters=3, random_state=0)),
              ("MiniBatchKMeans", dict(n_clusters=3, batch_size=64, random_state=0)),
              ("EnsembleKMeans", dict(n_clusters=3, n_models=2, random_state=0)),
              ("FuzzyCMeans", dict(n_clusters=3, random_state=0)),
              ("GaussianMixture", dict(n_components=3, random_state=0)),
              ("AgglomerativeClustering", dict(n_clusters=3)),
              ("DBSCAN", dict(eps=3.0)),
              ("HDBSCAN", dict(min_cluster_size=10))]
IDS = [name for name, _ in ESTIMATORS]
# those that take rows once fitted (the density and hierarchy ones, as scikit-learn's, do not)
PREDICTING = [(name, params) for name, params in ESTIMATORS
              if name not in ("AgglomerativeClustering", "DBSCAN", "HDBSCAN")]


def rows_methods(est):
    """The methods of *est* that take rows of a fitted model."""
    return [m for m in ("predict", "transform", "score", "predict_proba", "score_samples")
            if hasattr(est, m)]


def test_feature_names():
    X = np.zeros((4, 3))
    assert list(feature_names(Table(X, NAMES))) == NAMES
    assert feature_names(Table(X, NAMES)).dtype == object
    assert list(feature_names(ProtocolTable(X, NAMES))) == NAMES
    assert feature_names(X) is None
    assert feature_names(Table(X, [0, 1, 2])) is None     # numeric names: none, as sklearn
    with pytest.raises(TypeError, match=r"\['int', 'str'\] as feature name"):
        feature_names(Table(X, ["a", 1, "c"]))


@pytest.mark.parametrize("name,params", ESTIMATORS, ids=IDS)
def test_fit_records_the_names(name, params, devices, blobs):
    X = blobs[0]
    est = getattr(oc, name)(devices=devices, **params).fit(Table(X, NAMES))
    assert est.feature_names_in_.dtype == object and list(est.feature_names_in_) == NAMES
    assert est.n_features_in_ == 3
    est.fit(X)   # a fit without names forgets them (scikit-learn's reset)
    assert not hasattr(est, "feature_names_in_")
    assert list(getattr(oc, name)(devices=devices, **params)
                .fit(ProtocolTable(X, NAMES)).feature_names_in_) == NAMES


@pytest.mark.parametrize("name,params", PREDICTING, ids=[n for n, _ in PREDICTING])
def test_other_names_are_refused(name, params, devices, blobs, monkeypatch):
    X = blobs[0]
    est = getattr(oc, name)(devices=devices, **params).fit(Table(X, NAMES))
    methods = rows_methods(est)
    assert methods
    # before any device work: no pass may run
    monkeypatch.setattr(oc.DeviceManager, "scatter", lambda *a, **k: pytest.fail("ran"))
    for method in methods:
        with pytest.raises(ValueError, match="must be in the same order as they were in fit"):
            getattr(est, method)(Table(X, ["b", "a", "c"]))
        with pytest.raises(ValueError, match=r"(?s)unseen at fit time:\n- d\n.*"
                                             r"seen at fit time, yet now missing:\n- c"):
            getattr(est, method)(Table(X, ["a", "b", "d"]))


@pytest.mark.parametrize("name,params", PREDICTING, ids=[n for n, _ in PREDICTING])
def test_names_on_one_side_warn(name, params, devices, blobs):
    X = blobs[0]
    named = getattr(oc, name)(devices=devices, **params).fit(Table(X, NAMES))
    plain = getattr(oc, name)(devices=devices, **params).fit(X)
    for method in rows_methods(named):
        with pytest.warns(UserWarning, match=f"X does not have valid feature names, but "
                                             f"{name} was fitted with feature names"):
            getattr(named, method)(X)
        with pytest.warns(UserWarning, match=f"X has feature names, but {name} was fitted "
                                             "without feature names"):
            getattr(plain, method)(Table(X, NAMES))
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*feature names")
            np.testing.assert_array_equal(getattr(named, method)(Table(X, NAMES)),
                                          getattr(plain, method)(X))


def test_partial_fit_keeps_the_first_names(devices, blobs):
    X = blobs[0]
    mbk = oc.MiniBatchKMeans(3, batch_size=64, random_state=0, devices=devices)
    mbk.partial_fit(Table(X[:300], NAMES)).partial_fit(Table(X[300:], NAMES))
    assert list(mbk.feature_names_in_) == NAMES
    with pytest.raises(ValueError, match="same order"):
        mbk.partial_fit(Table(X, ["c", "b", "a"]))
    assert mbk.n_steps_ == 2   # the refused chunk changed nothing


def test_not_fitted_says_so_first(devices, blobs):
    from oclclust.runtime.validation import NotFittedError
    with pytest.raises(NotFittedError):
        oc.KMeans(3, devices=devices).predict(Table(blobs[0], NAMES))


def test_named_rows(devices, blobs):
    """NamedRows: named rows without pandas (the command line's CSV columns)."""
    from oclclust.runtime.columns import NamedRows
    X = blobs[0]
    km = oc.KMeans(3, random_state=0, devices=devices).fit(NamedRows(X, NAMES))
    assert list(km.feature_names_in_) == NAMES
    np.testing.assert_array_equal(np.asarray(NamedRows(X, NAMES), dtype=np.float32),
                                  X.astype(np.float32))
    with pytest.raises(ValueError, match="2 column names for rows of shape"):
        NamedRows(X, ["a", "b"])
