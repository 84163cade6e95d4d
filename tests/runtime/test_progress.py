"""Progress: a bar only on a terminal when asked; every step logged."""
import logging

import numpy as np
import pytest

import oclclust as oc
from oclclust.runtime import progress


def test_steps_are_logged_and_no_bar_off_a_terminal(caplog):
    with caplog.at_level(logging.DEBUG, logger="oclclust"):
        with progress.Progress(3, "demo", enabled=True) as p:
            assert p.bar is None          # pytest's stderr is no terminal
            p.step(inertia=1.5, shift=0.25)
    assert "demo 1: inertia 1.5, shift 0.25" in caplog.text


def test_bar_on_a_terminal(monkeypatch):
    pytest.importorskip("tqdm")
    monkeypatch.setattr(progress, "_terminal", lambda: True)
    with progress.Progress(3, "demo", enabled=True) as p:
        p.step(inertia=2.0)
        assert p.bar is not None and p.bar.n == 1
    assert p.bar is None
    with progress.Progress(3, "demo", enabled=False) as p:
        assert p.bar is None


def test_kmeans_history_and_log(devices, blobs, caplog):
    X, _ = blobs
    with caplog.at_level(logging.DEBUG, logger="oclclust"):
        km = oc.KMeans(n_clusters=4, random_state=0, devices=devices, verbose=1).fit(X)
    assert len(km.history_) == km.n_iter_
    assert [h["iteration"] for h in km.history_] == list(range(1, km.n_iter_ + 1))
    assert all(h["seconds"] > 0 and sum(h["rows_per_device"]) == len(X) for h in km.history_)
    inertias = [h["inertia"] for h in km.history_]
    assert inertias == sorted(inertias, reverse=True)      # Lloyd never increases it
    assert "k-means 1: inertia" in caplog.text


@pytest.mark.parametrize("name,params,objective", [
    ("FuzzyCMeans", dict(n_clusters=4, random_state=0), "objective"),
    ("GaussianMixture", dict(n_components=4, random_state=0), "lower_bound"),
    ("GaussianMixture", dict(n_components=6, min_components=3, random_state=0),
     "lower_bound"),
    ("EnsembleKMeans", dict(n_clusters=4, n_models=3, random_state=0), "models_moving")])
def test_history_of_the_other_estimators(name, params, objective, devices, blobs, caplog):
    X, _ = blobs
    with caplog.at_level(logging.DEBUG, logger="oclclust"):
        model = getattr(oc, name)(devices=devices, verbose=1, **params).fit(X)
    assert len(model.history_) >= np.max(model.n_iter_) > 0
    assert all(h["seconds"] > 0 and sum(h["rows_per_device"]) == len(X) and objective in h
               for h in model.history_)
    if "min_components" in params:   # every order of the MDL path ran EM
        assert {h["n_components"] for h in model.history_} == {6, 5, 4, 3}
    assert f"{objective} " in caplog.text
