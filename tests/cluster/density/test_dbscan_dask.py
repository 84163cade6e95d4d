"""oc.DBSCAN on a Dask cluster's workers (cluster/density/dbscan/dask_slabs.py),
a LocalCluster of 2 worker processes (conftest's ``client``): the grid's
slabs, one a worker holding rows, labelled as one process labels the same
rows, bit for bit, the rows never on the client.  Bad input raises at the
client before any slab is made; a lost worker raises WorkerLostError."""
import os
import signal
import threading
import time

import numpy as np
import pytest
import scipy.sparse
from sklearn.cluster import DBSCAN as SKDBSCAN

import oclclust as oc

dask = pytest.importorskip("dask")   # the [dask] extra: tools/setup.sh installs it
import dask.array as da  # noqa: E402
from distributed import get_task_stream  # noqa: E402

from conftest import split_or_skip  # noqa: E402
from dask_cluster import BLOCK, D, N, Transfers, blobs  # noqa: E402

from oclclust.parallel.dask import WorkerLostError, workers_info  # noqa: E402

EPS, MIN_SAMPLES = 0.8, 8   # blobs(): 6 clusters, border rows and noise


def one_cell_and_spread(seed=3):
    """Most rows in the grid's first cell, the rest spread: the cut between
    the two slabs falls at that cell's key, so the first slab has no rows."""
    rng = da.random.RandomState(seed)
    near = rng.uniform(0, 0.2, size=(1700, D), chunks=(BLOCK, D))
    far = rng.uniform(1, 30, size=(700, D), chunks=(350, D))
    return da.concatenate([near, far]).rechunk((BLOCK, D))


# (rows, eps, min_samples, metric, weights): each compared with the numpy fit
CASES = {
    "blocks-two-a-worker": (blobs, EPS, MIN_SAMPLES, "euclidean", None),
    "uneven-blocks": (lambda: blobs().rechunk(((100, 1300, 0, 50, 950), (1, 3))), EPS,
                      MIN_SAMPLES, "manhattan", None),
    "one-block": (lambda: blobs().rechunk((N, D)), EPS, MIN_SAMPLES, "chebyshev", None),
    "numpy-weights": (blobs, EPS, MIN_SAMPLES, "euclidean", "numpy"),
    # (an empty block: on a worker, whole rows already)
    "dask-weights": (lambda: blobs(np.float32).rechunk(((600, 0, 1200, 600), D)), EPS,
                     MIN_SAMPLES, "euclidean", "dask"),
    "empty-slab": (one_cell_and_spread, 2.0, 5, "euclidean", None),
    "eps-past-the-spread": (blobs, 1000.0, MIN_SAMPLES, "euclidean", None),
    "all-noise": (blobs, EPS, N + 1, "euclidean", None),
}


def weights_for(kind):
    """Weights, a few negative (DBSCAN's signed weights), as numpy or dask."""
    w = da.random.RandomState(7).uniform(-0.2, 2.0, size=N, chunks=700)
    return None if kind is None else w if kind == "dask" else w.compute()


def spread(client, X):
    """X with its row blocks made on the two workers in turn (Dask may make
    a rechunked array's blocks on one), from X's graph: a slab a worker.
    (The workers asked of the scheduler: Client.scheduler_info()'s copy is
    replaced every 2 s by an identity without workers, which PoCL's CI run
    read here once.)"""
    client.wait_for_workers(2, timeout=60)
    workers = sorted(workers_info(client))
    made = [[client.compute(part, workers=[workers[i % 2]]) for part in row]
            for i, row in enumerate(X.to_delayed())]
    return da.block([[da.from_delayed(f, shape=(rows, cols), dtype=X.dtype)
                      for f, cols in zip(row, X.chunks[1])]
                     for row, rows in zip(made, X.chunks[0])])


def held(client):
    """{worker: slabs of DBSCAN fits its registry holds}."""
    from oclclust.cluster.density.dbscan import dask_slab_tasks as tasks
    return client.run(lambda: len(tasks._HELD))


def test_without_a_client_the_rows_are_computed_here(devices):
    """First: before the module's cluster (and its default Client) starts."""
    assert oc.parallel.dask.active_client() is None
    X = blobs()
    est = oc.DBSCAN(EPS, min_samples=MIN_SAMPLES, devices=devices).fit(X)
    ref = oc.DBSCAN(EPS, min_samples=MIN_SAMPLES, devices=devices).fit(X.compute())
    assert isinstance(est.labels_, np.ndarray)
    assert np.array_equal(est.labels_, ref.labels_)


@pytest.mark.parametrize("case", sorted(CASES))
def test_labels_equal_the_one_process_fit(client, devices, case):
    make, eps, min_samples, metric, weighted = CASES[case]
    X = spread(client, make())
    w = weights_for(weighted)
    est = oc.DBSCAN(eps, min_samples=min_samples, metric=metric, devices=devices)
    with get_task_stream(client) as stream:
        labels = est.fit_predict(X, sample_weight=w)
    ref = oc.DBSCAN(eps, min_samples=min_samples, metric=metric, devices=devices).fit(
        X.compute(), sample_weight=None if w is None else np.asarray(w))
    assert isinstance(est.labels_, da.Array) and labels is est.labels_
    assert est.labels_.chunks == (X.chunks[0],) and est.labels_.dtype == ref.labels_.dtype
    got = est.labels_.compute()
    assert got.dtype == ref.labels_.dtype and np.array_equal(got, ref.labels_)
    assert np.array_equal(est.core_sample_indices_, ref.core_sample_indices_)
    components = est.components_.compute()
    assert components.dtype == ref.components_.dtype
    assert np.array_equal(components, ref.components_)
    assert est.n_features_in_ == D
    # a slab a worker holding rows, every row answered for once; a slab cut
    # at the key of a cell holding most rows, or every row, answers for none
    slabs = {t["worker"] for t in stream.data if str(t["key"]).startswith("_hold")}
    assert len(slabs) == (1 if case == "one-block" else 2), slabs
    assert sum(est.devices_.values()) == N
    answering = {where.split()[0] for where in est.devices_}
    empty = case in ("empty-slab", "eps-past-the-spread")
    assert answering <= slabs and len(answering) == len(slabs) - empty, est.devices_
    assert not any(held(client).values())   # the fit freed its slabs
    if case == "all-noise":
        assert (got == -1).all() and components.shape == (0, D)
    if case == "eps-past-the-spread":
        assert (got == 0).all()


def test_each_worker_cuts_its_slab_over_its_devices(client, profile):
    """A list of devices (two halves of the CPU) is each worker's: its
    slab cut again over them (GridNeighbourhoods' slabs), the same labels."""
    halves = split_or_skip(profile)
    X = blobs()
    est = oc.DBSCAN(EPS, min_samples=MIN_SAMPLES, devices=halves).fit(X)
    ref = oc.DBSCAN(EPS, min_samples=MIN_SAMPLES, devices=[profile]).fit(X.compute())
    assert np.array_equal(est.labels_.compute(), ref.labels_)
    assert np.array_equal(est.core_sample_indices_, ref.core_sample_indices_)
    assert len(est.devices_) == 4 and sum(est.devices_.values()) == N, est.devices_


def test_scikit_learns_labels(client, devices):
    X = blobs()
    est = oc.DBSCAN(EPS, min_samples=MIN_SAMPLES, devices=devices).fit(X)
    ref = SKDBSCAN(eps=EPS, min_samples=MIN_SAMPLES).fit(X.compute())
    assert np.array_equal(est.labels_.compute(), ref.labels_)
    assert np.array_equal(est.core_sample_indices_, ref.core_sample_indices_)
    assert np.array_equal(est.components_.compute(), ref.components_)
    border = np.setdiff1d(np.flatnonzero(ref.labels_ >= 0), ref.core_sample_indices_)
    assert len(border) and (ref.labels_ < 0).any() and ref.labels_.max() > 1


def test_the_client_never_holds_the_rows(client, devices, monkeypatch):
    """What the client sends with its tasks and gathers: the bounds, key
    samples, cuts, links, least rows and core indices, none near a block
    of rows (N x D made on the workers, blocks of BLOCK rows)."""
    X = blobs()
    moved = Transfers(client, monkeypatch)
    with get_task_stream(client) as stream:
        est = oc.DBSCAN(EPS, min_samples=MIN_SAMPLES, devices=devices).fit(X)
    monkeypatch.undo()
    ran = {t["worker"] for t in stream.data if str(t["key"]).startswith("_hold")}
    assert ran == set(workers_info(client)), ran
    block_bytes = BLOCK * D * 8
    for way in ("sent", "received"):
        size, elements = moved.most(way)
        assert size < block_bytes / 2 and elements < BLOCK * D / 2, (way, size, elements)
    assert len(moved.received) > 0 and len(moved.sent) > 0
    assert est.labels_.compute().max() > 1


@pytest.mark.parametrize("bad,expected", [
    ("nan", "NaN or infinity.*block 3 of the dask array, rows 1800 to 2399"),
    ("inf", "NaN or infinity.*block 1 "),
    ("one-dimensional", "Expected 2D array"),
    ("unknown-chunks", "row chunks must be known"),
    ("weights-shape", r"sample_weight.shape == \(10,\)"),
    ("weights-nan", "sample_weight contains NaN.*block 2 "),
    ("weights-zero", "at least one non-zero"),
    ("eps", "eps"),
    ("sparse-blocks", "dense blocks"),
    ("sparse-blocks-unsaid", "dense blocks.*block 0 "),
])
def test_bad_input_raises_at_the_client_before_any_slab(client, devices, bad, expected):
    X, w, eps = blobs(), None, EPS
    row = da.arange(N, chunks=BLOCK)[:, None]
    if bad == "nan":
        X = da.where(row == N - 1, np.nan, X)
    elif bad == "inf":
        X = da.where(row == BLOCK + 3, np.inf, X)
    elif bad == "one-dimensional":
        X = X[:, 0]
    elif bad == "unknown-chunks":
        X = X[X[:, 0] > 0]
    elif bad == "weights-shape":
        w = da.ones(10, chunks=5)
    elif bad == "weights-nan":
        w = da.where(row[:, 0] == 2 * BLOCK, np.nan, da.ones(N, chunks=BLOCK))
    elif bad == "weights-zero":
        w = da.zeros(N, chunks=BLOCK)
    elif bad == "sparse-blocks":   # said by the dask array's meta, or found in a block
        X = X.map_blocks(scipy.sparse.csr_matrix, meta=scipy.sparse.csr_matrix((0, 0)))
    elif bad == "sparse-blocks-unsaid":
        X = X.map_blocks(scipy.sparse.csr_matrix, meta=np.empty((0, 0)))
    else:
        eps = -1.0
    error = TypeError if bad.startswith("sparse") else ValueError
    with get_task_stream(client) as stream, pytest.raises(error, match=expected):
        oc.DBSCAN(eps, min_samples=MIN_SAMPLES, devices=devices).fit(X, sample_weight=w)
    assert not [t for t in stream.data if str(t["key"]).startswith(("_hold", "_block_grid"))]
    assert not any(held(client).values())


def test_brute_and_host_metrics_warn_and_compute_here(client, devices):
    """The brute search and the metrics the grid does not cut gather the
    rows to this process, saying so, and fit them as numpy rows."""
    X = blobs()
    for kw in (dict(algorithm="brute"), dict(metric="cosine", eps=0.01)):
        params = dict(eps=EPS, min_samples=MIN_SAMPLES, devices=devices) | kw
        with pytest.warns(UserWarning, match="computes the dask array's rows in this process"):
            est = oc.DBSCAN(**params).fit(X)
        ref = oc.DBSCAN(**params).fit(X.compute())
        assert isinstance(est.labels_, np.ndarray)
        assert np.array_equal(est.labels_, ref.labels_)


def test_a_lost_worker_raises_within_seconds(client, devices):
    """Last: it kills one of the module's workers while the fit's slabs
    wait (their links' task held up there): WorkerLostError, not a hang."""
    client.wait_for_workers(2, timeout=60)
    from oclclust.cluster.density.dbscan import dask_slab_tasks as tasks

    def hold_up(on):   # on the workers (a closure: pickled by value)
        real = getattr(tasks._link, "real", tasks._link)

        def waiting(*args):
            while getattr(tasks, "_held_up", False):
                time.sleep(0.05)
            return real(*args)
        waiting.real = real
        tasks._held_up = on
        tasks._link = waiting if on else real
    client.run(hold_up, True)
    outcome = {}

    def fit():
        try:
            oc.DBSCAN(EPS, min_samples=MIN_SAMPLES, devices=devices).fit(blobs())
        except Exception as exc:   # noqa: BLE001 -- what the test inspects
            outcome["error"], outcome["at"] = exc, time.monotonic()
    thread = threading.Thread(target=fit)
    try:
        thread.start()
        while thread.is_alive() and not all(held(client).values()):
            time.sleep(0.1)   # until both workers hold a slab
        pids = client.run(os.getpid)
        killed = time.monotonic()
        os.kill(pids[sorted(pids)[0]], signal.SIGKILL)
        thread.join(timeout=60)
    finally:
        client.run(hold_up, False)
    assert not thread.is_alive(), "the fit hangs after its worker died"
    assert isinstance(outcome.get("error"), WorkerLostError), outcome
    assert outcome["at"] - killed < 10
    client.wait_for_workers(2, timeout=60)
    assert not any(held(client).values())
