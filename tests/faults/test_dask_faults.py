"""A Dask worker killed during a fit (parallel/dask.py): the fit goes on.

A LocalCluster of 2 worker processes (the ``client`` fixture, once for the
module; each worker's nanny starts another after a kill).  One worker is
killed with SIGKILL at one of 3 points of a fit of every iterative
estimator that fits dask arrays: while the blocks load, mid-fit, and at
the fit's last pass to the workers.  Its blocks are computed anew on the
workers left and their passes' states rebuilt, and the fit ends with the
model of an undisturbed Dask fit, bit for bit (the sums are split-free).
With no worker left, WorkerLostError names the lost one within seconds.
Every fit runs in a thread joined with a timeout: a hang fails in SECONDS.
"""
import os
import signal
import threading
import time

import numpy as np
import pytest

import oclclust as oc

dask = pytest.importorskip("dask")   # the [dask] extra: tools/setup.sh installs it
import dask.array as da  # noqa: E402

import oclclust.parallel.dask as od  # noqa: E402
from oclclust.parallel.dask import workers_info  # noqa: E402
from dask_cluster import K, N, blobs  # noqa: E402

SECONDS = 60   # a fit here takes a few: a hang fails at the join's timeout

ESTIMATORS = {
    "kmeans": lambda devices: oc.KMeans(K, init="random", n_init=1, random_state=0, tol=0,
                                        max_iter=6, devices=devices),
    "minibatch": lambda devices: oc.MiniBatchKMeans(K, batch_size=256, n_init=1,
                                                    random_state=0, max_iter=2,
                                                    devices=devices),
    "ensemble": lambda devices: oc.EnsembleKMeans([3, K], n_models=2, random_state=0,
                                                  max_iter=4, devices=devices),
    "cmeans": lambda devices: oc.FuzzyCMeans(K, random_state=0, tol=0, max_iter=5,
                                             devices=devices),
    "gmm": lambda devices: oc.GaussianMixture(K, covariance_type="diag",
                                              init_params="random", random_state=0, tol=0,
                                              max_iter=5, devices=devices),
}
POINTS = ["loading", "mid-fit", "last pass"]


def fitted(est):
    """{attribute: value} of a fitted estimator, dask arrays computed."""
    out = {}
    for name, value in vars(est).items():
        if name.endswith("_") and not name.startswith("_") and name not in (
                "devices_", "history_", "timings_"):
            out[name] = value.compute() if isinstance(value, da.Array) else value
    return out


def same(a, b):
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b, equal_nan=np.asarray(a).dtype.kind == "f")
    return a == b


def in_thread(fn):
    """fn()'s (result, error, the time it ended), a hang failing the test."""
    outcome = {}

    def run():
        try:
            outcome["result"] = fn()
        except Exception as exc:   # noqa: BLE001 -- what the test inspects
            outcome["error"] = exc
        outcome["at"] = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=SECONDS)
    assert not thread.is_alive(), f"the fit hangs ({SECONDS} s)"
    return outcome.get("result"), outcome.get("error"), outcome.get("at")


class Passes:
    """Counts a fit's waits on its blocks (DaskData._watched: the load, every
    pass, every rows' read); with *kill_at*, SIGKILLs a worker at that wait,
    its tasks already sent: *victim*, or the worker of the first block
    waited for.  *moves*: (block, from, to) of the blocks moved."""

    def __init__(self, client, monkeypatch, kill_at=None, victim=None):
        self.count, self.kill_at, self.killed, self.moves = 0, kill_at, None, []
        real = od.DaskData._watched
        passes = self

        def watched(data, futures, wanted, of_lost):
            if passes.count == passes.kill_at:
                doomed = victim or data.workers[min(futures)]
                os.kill(client.run(os.getpid, workers=[doomed])[doomed], signal.SIGKILL)
                passes.killed, passes.at = doomed, time.monotonic()
            passes.count += 1
            got = real(data, futures, wanted, of_lost)
            passes.moves = data.moves
            return got
        monkeypatch.setattr(od.DaskData, "_watched", watched)


@pytest.fixture
def two_workers(client):
    """The module's cluster with 2 workers again: a killed worker's nanny
    starts another (on a loaded host it was seen not to: one more then)."""
    from distributed.exceptions import WorkerStartTimeoutError
    try:
        client.wait_for_workers(2, timeout=SECONDS / 3)
    except WorkerStartTimeoutError:
        client.cluster.scale(len(client.cluster.worker_spec) + 1)
        client.wait_for_workers(2, timeout=SECONDS)
    return client


@pytest.fixture(scope="module")
def undisturbed():
    """{estimator: (its fitted attributes, the waits of its fit)}, each made once."""
    return {}


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.covering(1)
def test_a_worker_killed_mid_fit_leaves_the_undisturbed_model(two_workers, devices, name,
                                                               point, undisturbed,
                                                               monkeypatch):
    client, make, X = two_workers, ESTIMATORS[name], blobs()
    if name not in undisturbed:
        counted = Passes(client, monkeypatch)
        ref, error, _ = in_thread(lambda: fitted(make(devices).fit(X)))
        assert error is None, repr(error)
        undisturbed[name] = ref, counted.count
        monkeypatch.undo()
    ref, waits = undisturbed[name]
    kill_at = {"loading": 0, "mid-fit": waits // 2, "last pass": waits - 1}[point]
    passes = Passes(client, monkeypatch, kill_at)
    got, error, _ = in_thread(lambda: fitted(make(devices).fit(X)))
    assert error is None, repr(error)
    assert passes.killed is not None, "no worker was killed"
    assert any(was == passes.killed for _, was, _ in passes.moves), passes.moves
    assert got.keys() == ref.keys()
    differ = [k for k in ref if not same(got[k], ref[k])]
    assert not differ, f"{differ} differ from the undisturbed fit's"
    assert not any(client.run(lambda: len(od._BLOCKS)).values())   # the blocks freed


def test_per_row_values_lost_after_the_fit_raise(two_workers, devices):
    """A worker killed after the fit with the only copy of some labels:
    computing them raises at once (the fit's pins on them lifted, Dask
    makes them elsewhere, where their block's states are not)."""
    client = two_workers
    est = ESTIMATORS["kmeans"](devices).fit(blobs())
    has = client.has_what()
    alone = [w for w, keys in has.items() for k in keys if str(k).startswith("_rows_of_block")
             and sum(k in theirs for theirs in has.values()) == 1]
    assert alone, has
    os.kill(client.run(os.getpid, workers=[alone[0]])[alone[0]], signal.SIGKILL)
    _, error, _ = in_thread(lambda: est.labels_.compute())
    assert isinstance(error, RuntimeError) and "left with their worker" in str(error), error


def test_no_worker_left_raises_naming_it(devices, monkeypatch):
    """A cluster of its own, of one worker whose nanny does not restart it."""
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        (nanny,) = cluster.workers.values()
        nanny.close_gracefully()   # the worker's end is the nanny's: no restart
        passes = Passes(client, monkeypatch, kill_at=1)
        _, error, at = in_thread(lambda: ESTIMATORS["kmeans"](devices).fit(blobs()))
    assert isinstance(error, od.WorkerLostError), repr(error)
    assert passes.killed in str(error) and "no worker is left" in str(error)
    assert at - passes.at < od.NO_WORKER_SECONDS + 10


def test_a_block_that_cannot_be_computed_again_raises(two_workers, devices, monkeypatch):
    """Rows scattered to the killed worker alone: its blocks have no graph."""
    client = two_workers
    victim = sorted(workers_info(client))[0]
    rows = blobs().compute()
    X = da.concatenate([da.from_delayed(client.scatter(rows[lo:lo + N // 2], workers=[victim]),
                                        shape=(N // 2, rows.shape[1]), dtype=rows.dtype)
                        for lo in (0, N // 2)])
    passes = Passes(client, monkeypatch, kill_at=2, victim=victim)
    _, error, at = in_thread(lambda: ESTIMATORS["kmeans"](devices).fit(X))
    assert isinstance(error, od.WorkerLostError), repr(error)
    assert passes.killed in str(error) and "rebuilt" in str(error)
    assert at - passes.at < 15
