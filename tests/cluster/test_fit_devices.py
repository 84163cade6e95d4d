"""``devices_`` on every fitted estimator: {device: rows} of the devices the
fit ran on (cluster/_base.fit_devices for the one-device fits: hierarchy,
HDBSCAN, DBSCAN; the rows' placement for MiniBatchKMeans)."""
import numpy as np
import pytest

import oclclust as oc

X = np.random.RandomState(0).normal(size=(300, 3))

ONE_DEVICE = {
    "agglomerative": lambda d: oc.AgglomerativeClustering(3, devices=d),
    "agglomerative-single": lambda d: oc.AgglomerativeClustering(3, linkage="single", devices=d),
    "hdbscan": lambda d: oc.HDBSCAN(devices=d),
    "dbscan": lambda d: oc.DBSCAN(eps=0.5, devices=d),
}


@pytest.mark.parametrize("name", sorted(ONE_DEVICE))
def test_a_one_device_fit_names_its_device_and_rows(name, devices):
    fitted = ONE_DEVICE[name](devices).fit(X)
    assert fitted.devices_ == {str(oc.select_devices(devices)[0]): 300}


def test_hdbscan_counts_the_rows_it_clustered(devices):
    """Rows with missing values are not clustered (label -3): not the device's."""
    rows = X.copy()
    rows[:7, 1] = np.nan
    fitted = oc.HDBSCAN(devices=devices).fit(rows)
    assert fitted.devices_ == {str(oc.select_devices(devices)[0]): 293}


def manhattan(a, b):
    return float(np.abs(a - b).sum())


@pytest.mark.parametrize("make,precomputed", [
    (lambda d: oc.DBSCAN(eps=0.5, metric=manhattan, devices=d), False),
    (lambda d: oc.HDBSCAN(metric="precomputed", devices=d), True),
    (lambda d: oc.DBSCAN(eps=0.5, metric="precomputed", devices=d), True),
], ids=["dbscan-callable-metric", "hdbscan-precomputed", "dbscan-precomputed"])
def test_a_fit_on_the_host_alone_names_no_device(make, precomputed, devices):
    rows = X[:60]
    if precomputed:
        rows = np.sqrt(((rows[:, None] - rows[None]) ** 2).sum(-1))
    assert make(devices).fit(rows).devices_ == {}


@pytest.mark.parametrize("compute_labels", [True, False])
def test_minibatch_kmeans_names_its_devices(compute_labels, devices):
    """Every row's (the labels' pass) with compute_labels, else the last batch's
    (like-named devices, two GPUs of a model, told apart by " #index")."""
    fitted = oc.MiniBatchKMeans(3, batch_size=64, compute_labels=compute_labels,
                                random_state=0, devices=devices).fit(X)
    profiles = oc.select_devices(devices)
    named = [str(p) for p in profiles]
    names = {f"{name} #{p.device_index}" if named.count(name) > 1 else name
             for name, p in zip(named, profiles)}
    assert fitted.devices_ and set(fitted.devices_) <= names
    assert sum(fitted.devices_.values()) in ((300,) if compute_labels else (64, 300))
    fitted.partial_fit(X[:50])
    assert set(fitted.devices_) <= names and sum(fitted.devices_.values()) == 50
