"""Fits on a Dask cluster's workers (parallel/dask.py): a LocalCluster of 2
worker processes, started once for the module.

The workers' blocks of rows are moved to whole blocks of the fit's sums
(runtime.exact_sums: split-free sums), so a dask fit is the numpy fit on
one device bit for bit, however the user chunked the rows.
"""
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import oclclust as oc

dask = pytest.importorskip("dask")   # the [dask] extra: tools/setup.sh installs it
import dask.array as da  # noqa: E402
from distributed import get_task_stream  # noqa: E402

import oclclust.parallel.dask  # noqa: E402
from oclclust.parallel.dask import workers_info  # noqa: E402
from dask_cluster import BLOCK, D, K, N, blobs  # noqa: E402

def fitted_on_workers(client, make, X, monkeypatch, **fit):
    """make().fit(X) on the workers; checks the statistics tasks ran on both
    workers and that nothing the client gathered came near a block of rows."""
    gathered = []
    real = client.gather

    def gather(futures, *args, **kwargs):
        out = real(futures, *args, **kwargs)
        gathered.append(dask.sizeof.sizeof(out))
        return out
    monkeypatch.setattr(client, "gather", gather)
    with get_task_stream(client) as stream:
        est = make().fit(X, **fit)
    monkeypatch.undo()
    ran = {t["worker"] for t in stream.data if str(t["key"]).startswith("_on_block")}
    assert ran == set(workers_info(client)), ran
    row_bytes = X.shape[1] * X.dtype.itemsize
    assert max(gathered) < BLOCK * row_bytes / 2, gathered   # not even half a block
    assert not any(held(client).values())   # the fit freed its blocks
    return est


def held(client):
    """{worker: blocks of fits its registry holds}."""
    od = oc.parallel.dask
    return client.run(lambda: len(od._BLOCKS))


def test_without_a_client_the_rows_are_computed_here(devices):
    """First: before the module's cluster (and its default Client) starts."""
    assert oc.parallel.dask.active_client() is None
    X = blobs()
    km = oc.KMeans(K, random_state=0, devices=devices).fit(X)
    ref = oc.KMeans(K, random_state=0, devices=devices).fit(X.compute())
    assert np.array_equal(km.cluster_centers_, ref.cluster_centers_)
    assert isinstance(km.labels_, np.ndarray)


def test_workers_of_a_host_take_one_gpu_each(client, profile):
    """As MPI's local ranks: the workers of a host, by address, one GPU each."""
    local = oc.parallel.dask.local_indices(client)
    assert sorted(local.values()) == [(0, 2), (1, 2)]
    gpus = [profile.replace(type="gpu", device_index=i) for i in range(2)]
    bind = oc.parallel.placement.bind_by_index
    assert [bind(gpus + [profile], *local[w]) for w in sorted(local)] == [gpus[:1], gpus[1:]]
    assert bind([profile], 0, 2) == [profile]   # CPU workers share the CPU


@pytest.mark.one_runtime   # the imports alone
def test_import_oclclust_does_not_import_dask():
    code = ("import sys, oclclust; import oclclust.cluster.kmeans.kmeans; "
            "sys.exit(any(m.split('.')[0] in ('dask', 'distributed') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.parametrize("init,dtype", [("k-means++", np.float64), ("random", np.float32)])
def test_kmeans_equals_the_one_device_fit(client, devices, init, dtype, monkeypatch):
    X = blobs(dtype)
    host = X.compute()
    kw = dict(n_clusters=K, init=init, n_init=1, random_state=3, tol=0, max_iter=30)
    # the platform's name, as users give it: a worker of several on a host of several GPUs
    # takes one of them (a list is each worker's whole)
    km = fitted_on_workers(client, lambda: oc.KMeans(devices=devices[0].platform, **kw), X,
                           monkeypatch)
    ref = oc.KMeans(devices=devices[:1], **kw).fit(host)
    assert np.array_equal(km.cluster_centers_, ref.cluster_centers_)
    assert km.inertia_ == ref.inertia_ and km.n_iter_ == ref.n_iter_
    assert isinstance(km.labels_, da.Array)
    assert np.array_equal(km.labels_.compute(), ref.labels_)
    assert len(km.devices_) == 2 and sum(km.devices_.values()) == N   # each worker's device


def test_kmeans_relocates_empty_clusters_as_the_numpy_fit(client, devices):
    X = blobs()
    init = np.vstack([X[:K - 1].compute(), np.full((1, D), 1e4)])   # one centre far off
    kw = dict(n_clusters=K, init=init, n_init=1, tol=0, max_iter=20)
    km = oc.KMeans(devices=devices, **kw).fit(X)
    ref = oc.KMeans(devices=devices[:1], **kw).fit(X.compute())
    assert np.array_equal(km.cluster_centers_, ref.cluster_centers_)
    assert km.inertia_ == ref.inertia_


@pytest.mark.parametrize("make", [
    lambda devices: oc.KMeans(K, n_init=1, random_state=3, tol=0, max_iter=20, devices=devices),
    lambda devices: oc.EnsembleKMeans([3, K], n_models=2, random_state=4, max_iter=20,
                                      devices=devices)], ids=["kmeans", "ensemble"])
def test_one_block_fits_on_its_worker(client, devices, make):
    # one block is one chunk, as one local device's rows are, but on another
    # process: the fit's centres cannot stay on the client's device
    X = blobs().rechunk((N, D))
    est = make(devices).fit(X)
    ref = make(devices).fit(X.compute())
    assert np.allclose(est.cluster_centers_, ref.cluster_centers_, rtol=1e-12, atol=0)
    assert np.array_equal(est.labels_.compute(), ref.labels_)


@pytest.mark.parametrize("make", [
    lambda devices: oc.KMeans(K, init="random", n_init=3, random_state=4, tol=0, max_iter=20,
                              devices=devices),
    lambda devices: oc.EnsembleKMeans([3, K], n_models=2, random_state=4, max_iter=20,
                                      devices=devices)], ids=["restarts", "ensemble"])
def test_ensembles_equal_the_one_device_fit(client, devices, make):
    X = blobs()
    est = make(devices).fit(X)
    ref = make(devices[:1]).fit(X.compute())
    assert np.array_equal(est.cluster_centers_, ref.cluster_centers_)
    assert est.inertia_ == ref.inertia_
    assert np.array_equal(est.n_iter_, ref.n_iter_)
    assert isinstance(est.labels_, da.Array)
    assert np.array_equal(est.labels_.compute(), ref.labels_)
    pred = est.predict(X)
    assert isinstance(pred, da.Array) and np.array_equal(pred.compute(), ref.labels_)


def test_a_fit_that_fails_frees_its_blocks(client, devices):
    X = da.where(da.arange(N, chunks=BLOCK)[:, None] == N - 1, np.nan, blobs())
    with pytest.raises(ValueError, match="NaN"):
        oc.KMeans(K, devices=devices).fit(X)
    assert not any(held(client).values())


def test_predict_and_fit_predict_stay_on_the_workers(client, devices):
    X = blobs()
    km = oc.KMeans(K, random_state=0, devices=devices)
    labels = km.fit_predict(X)
    assert isinstance(labels, da.Array)
    pred = km.predict(X)
    assert isinstance(pred, da.Array) and pred.dtype == np.int32
    assert np.array_equal(pred.compute(), km.predict(X.compute()))
    assert np.array_equal(labels.compute(), pred.compute())
    dist = km.transform(X)
    assert np.array_equal(dist.compute(), km.transform(X.compute()))
    w = da.random.RandomState(1).uniform(size=N, chunks=BLOCK)
    assert np.isclose(km.score(X, sample_weight=w),
                      km.score(X.compute(), sample_weight=w.compute()), rtol=1e-12, atol=0)


def test_fuzzy_cmeans_equals_the_one_device_fit(client, devices):
    X = blobs()
    kw = dict(n_clusters=K, random_state=1, max_iter=15, tol=0)
    cm = oc.FuzzyCMeans(devices=devices, **kw).fit(X)
    ref = oc.FuzzyCMeans(devices=devices[:1], **kw).fit(X.compute())
    assert np.array_equal(cm.cluster_centers_, ref.cluster_centers_)
    assert cm.objective_ == ref.objective_
    assert isinstance(cm.u_, da.Array) and np.array_equal(cm.u_.compute(), ref.u_)
    assert np.array_equal(cm.labels_.compute(), ref.labels_)
    assert np.array_equal(cm.predict_proba(X).compute(), ref.predict_proba(X.compute()))
    assert np.isclose(cm.score(X), ref.score(X.compute()), rtol=1e-12, atol=0)


def test_per_row_values_are_made_on_their_blocks_worker(client, devices):
    """Twelve blocks on one worker, the other idle, the per-row values' tasks
    slow: Dask's work stealing moves a task placed loosely to the idle
    worker, where its block is not (the fit raised there); pinned, they
    stay.  (A worker killed mid-fit left its blocks so, beside its idle
    replacement: tests/faults/test_dask_faults.py.)"""
    holder = sorted(workers_info(client))[0]
    rows = blobs(n=12 * BLOCK).compute()
    X = da.concatenate([da.from_delayed(client.scatter(rows[lo:lo + BLOCK], workers=[holder]),
                                        shape=(BLOCK, D), dtype=rows.dtype)
                        for lo in range(0, len(rows), BLOCK)])
    dask_blocks = oc.parallel.dask_blocks

    def slow_rows(seconds):   # on the workers (a closure: pickled by value)
        real = getattr(dask_blocks._rows_of_block, "real", dask_blocks._rows_of_block)

        def slow(*args):
            time.sleep(seconds)
            return real(*args)
        slow.real = real
        dask_blocks._rows_of_block = slow if seconds else real
    client.run(slow_rows, 0.3)
    try:
        km = oc.KMeans(K, init="random", n_init=1, random_state=0, tol=0, max_iter=4,
                       devices=devices).fit(X)
    finally:
        client.run(slow_rows, 0)
    assert {where.split()[0] for where in km.devices_} == {holder}
    ref = oc.KMeans(K, init="random", n_init=1, random_state=0, tol=0, max_iter=4,
                    devices=devices[:1]).fit(rows)
    assert np.array_equal(km.labels_.compute(), ref.labels_)


@pytest.mark.parametrize("make", [
    lambda devices: oc.KMeans(64, init="random", n_init=1, random_state=0, tol=0,
                              max_iter=40, devices=devices),
    lambda devices: oc.GaussianMixture(8, covariance_type="diag", init_params="random",
                                       random_state=0, tol=0, max_iter=40,
                                       devices=devices)], ids=["kmeans", "gmm"])
def test_a_worker_that_dies_mid_fit_is_replaced(client, devices, make, monkeypatch):
    """Last: it kills one of the module's workers (its nanny starts another)
    while the fit iterates: its blocks move to the worker left (or the new
    one) and the fit ends as the undisturbed one.  (tests/faults/
    test_dask_faults.py kills at given passes, and with no worker left.)"""
    client.wait_for_workers(2, timeout=60)   # the last kill's worker back
    X = da.random.RandomState(5).uniform(size=(40000, 2), chunks=(10000, 2))
    ref = make(devices).fit(X)
    outcome, moves = {}, []
    close = oc.parallel.dask.DaskData.close

    def closing(data):
        moves.extend(data.moves)
        close(data)
    monkeypatch.setattr(oc.parallel.dask.DaskData, "close", closing)

    def fit():
        try:
            outcome["fitted"] = make(devices).fit(X)
        except Exception as exc:   # noqa: BLE001 -- what the test inspects
            outcome["error"] = exc
    thread = threading.Thread(target=fit)
    thread.start()
    while thread.is_alive() and not all(held(client).values()):
        time.sleep(0.1)   # until both workers hold blocks: the fit iterates
    pids = client.run(os.getpid)
    victim = sorted(pids)[0]
    os.kill(pids[victim], signal.SIGKILL)
    thread.join(timeout=60)
    assert not thread.is_alive(), "the fit hangs after its worker died"
    assert "error" not in outcome, outcome
    assert any(was == victim for _, was, _ in moves), moves
    est = outcome["fitted"]
    for name in ("cluster_centers_", "means_", "covariances_", "n_iter_", "inertia_"):
        if hasattr(ref, name):
            assert np.array_equal(getattr(est, name), getattr(ref, name)), name


def test_pyopencl_devices_travel_as_their_profiles(client, devices):
    """pyopencl Devices do not pickle: the workers receive their profiles,
    and the fit and predict equal those given the profiles themselves."""
    X = blobs()
    want = oc.KMeans(K, n_init=1, random_state=0, devices=devices[:1]).fit(X)
    got = oc.KMeans(K, n_init=1, random_state=0, devices=[devices[0].cl_device()]).fit(X)
    np.testing.assert_array_equal(got.cluster_centers_, want.cluster_centers_)
    np.testing.assert_array_equal(got.predict(X).compute(), want.predict(X).compute())


@pytest.mark.parametrize("init", ["k-means||", "k-means++"])
def test_spherical_and_kmeans_parallel_on_the_workers(client, devices, init, monkeypatch):
    """The rows normalised lazily block by block, k-means|| seeded over the
    workers' blocks: the one-device fit, bit for bit."""
    X = blobs()
    host = X.compute()
    kw = dict(n_clusters=K, init=init, n_init=1, random_state=3, tol=0, max_iter=30,
              spherical=init == "k-means++")
    # the platform's name, as users give it: a worker of several on a host of several GPUs
    # takes one of them (a list is each worker's whole)
    km = fitted_on_workers(client, lambda: oc.KMeans(devices=devices[0].platform, **kw), X,
                           monkeypatch)
    ref = oc.KMeans(devices=devices[:1], **kw).fit(host)
    assert np.array_equal(km.cluster_centers_, ref.cluster_centers_)
    assert km.inertia_ == ref.inertia_
    assert np.array_equal(km.predict(X).compute(), ref.labels_)
