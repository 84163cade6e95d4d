"""oc.DBSCAN over several devices (sub-devices of the CPU under test, a
DeviceManager's weights): the grid's rows cut in slabs of cells with halos
of eps.  The labels, core samples and components of one device and of
scikit-learn, whatever the split: clusters crossing the cuts, border rows
equidistant from two clusters near them, noise, weights."""
import numpy as np
import pytest
from sklearn.cluster import DBSCAN as SKDBSCAN

import oclclust as oc
from conftest import split_or_skip
from density_data import DATA, crossing, one_cell


def layouts(profile):
    """Device lists: two halves, the device beside a half, all three."""
    subs = split_or_skip(profile)
    return {"halves": list(subs), "device_and_half": [profile, subs[0]],
            "three": [profile, *subs]}


def assert_same(ours, ref):
    assert np.array_equal(ours.labels_, ref.labels_)
    assert np.array_equal(ours.core_sample_indices_, ref.core_sample_indices_)
    assert np.array_equal(ours.components_, ref.components_)


@pytest.mark.parametrize("data", ["crossing", "crossing_dense", "borders"])
@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "chebyshev"])
@pytest.mark.parametrize("layout", ["halves", "device_and_half", "three"])
def test_several_devices_equal_one_and_sklearns(profile, data, metric, layout):
    make, eps, min_samples = DATA[data]
    X = make()
    devices = layouts(profile)[layout]
    ours = oc.DBSCAN(eps, min_samples=min_samples, metric=metric, algorithm="grid",
                     devices=devices).fit(X)
    one = oc.DBSCAN(eps, min_samples=min_samples, metric=metric, algorithm="grid",
                    devices=[profile]).fit(X)
    ref = SKDBSCAN(eps=eps, min_samples=min_samples, metric=metric).fit(X)
    assert_same(one, ref)
    assert_same(ours, ref)
    assert len(set(ref.labels_)) > 3 and (ref.labels_ == -1).any()
    # every device answered for its share of the rows, and ran the grid's kernels
    assert set(ours.devices_) == {str(p) for p in devices}
    assert sum(ours.devices_.values()) == len(X) and min(ours.devices_.values()) > 0
    union = {r["device"] for r in ours.kernels_
             if r["template"] == "dbscan/dbscan_grid_union.cl.mako"}
    assert len(union) >= 1


@pytest.mark.parametrize("share", [0.05, 0.3, 0.5, 0.77, 0.95, 1.0])
@pytest.mark.parametrize("data", ["crossing", "borders"])
def test_any_split_by_weights_gives_the_same_labels(profile, share, data):
    """A DeviceManager's weights move the cut along the rows: the same
    labels wherever it falls (a weight 0: that device holds no slab)."""
    make, eps, min_samples = DATA[data]
    X = make()
    subs = split_or_skip(profile)
    manager = oc.DeviceManager(list(subs), weights=[share, 1 - share])
    ours = oc.DBSCAN(eps, min_samples=min_samples, algorithm="grid", devices=manager).fit(X)
    assert_same(ours, SKDBSCAN(eps=eps, min_samples=min_samples).fit(X))
    assert sum(ours.devices_.values()) == len(X)
    if share == 1.0:
        assert list(ours.devices_.values()) == [len(X)]


@pytest.mark.one_runtime
@pytest.mark.parametrize("weights", ["auto", "compute_units"])
def test_unlike_devices_of_a_manager(runtimes, weights):
    """A DeviceManager over unlike devices (two runtimes, as a GPU beside its
    host's CPU): "auto" gives rows to the devices alike the first alone (no
    pass measures DBSCAN's), compute units to both; the labels either way,
    and the user's manager keeps its state."""
    make, eps, min_samples = DATA["crossing"]
    X = make()
    manager = oc.DeviceManager(runtimes, weights=weights)
    ours = oc.DBSCAN(eps, min_samples=min_samples, algorithm="grid", devices=manager).fit(X)
    assert_same(ours, SKDBSCAN(eps=eps, min_samples=min_samples).fit(X))
    held = [n for n in ours.devices_.values() if n > 0]
    assert len(held) == (1 if weights == "auto" else 2) and sum(held) == len(X)
    assert manager.left_out == []


@pytest.mark.parametrize("low", [0, -2])
@pytest.mark.parametrize("eps", [0.4, 1.0])
def test_weights_count_alike_on_several_devices(profile, low, eps):
    X = crossing(3)
    w = np.random.default_rng(1).integers(low, 4, len(X)).astype(float)
    ours = oc.DBSCAN(eps, min_samples=6, algorithm="grid",
                     devices=layouts(profile)["three"]).fit(X, sample_weight=w)
    ref = SKDBSCAN(eps=eps, min_samples=6).fit(X, sample_weight=w)
    assert_same(ours, ref)


def test_one_cell_holds_every_row(profile):
    """Every row in one cell: one slab answers for them all, the others none."""
    X = one_cell()
    ours = oc.DBSCAN(1.0, min_samples=3, algorithm="grid",
                     devices=layouts(profile)["halves"]).fit(X)
    assert np.array_equal(ours.labels_, np.zeros(len(X)))
    assert list(ours.devices_.values()) == [len(X)]


@pytest.mark.parametrize("algorithm", ["brute", "auto"])
def test_brute_search_runs_on_one_of_the_devices(profile, algorithm):
    """The brute search (and auto where every row is near every other) on
    the list's preferred device alone: the same labels."""
    X = crossing()
    devices = layouts(profile)["three"]
    ours = oc.DBSCAN(100.0, min_samples=5, algorithm=algorithm, devices=devices).fit(X)
    assert np.array_equal(ours.labels_, np.zeros(len(X)))
    assert list(ours.devices_) == [str(profile)]


def test_a_device_listed_twice_is_refused(profile):
    """As every estimator's devices: a device takes one share of the rows."""
    with pytest.raises(ValueError, match="twice"):
        oc.DBSCAN(0.5, algorithm="grid", devices=[profile, profile]).fit(crossing())
