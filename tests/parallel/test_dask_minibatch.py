"""MiniBatchKMeans on a Dask cluster's workers: a LocalCluster of 2 worker
processes, started once for the module.

Each step's batch is drawn on the client (the numpy fit's random stream);
the workers assign the batch rows their blocks hold and fold the sums block
after block in row order (cluster/kmeans/minibatch_sums.py), as the numpy fit folds the
whole batch: the same bits.  The final labels and inertia are a Lloyd pass
over the blocks, summed in block order, as the numpy fit's over chunks of
the block size (streamed): both fits take that manager.
"""
import numpy as np
import pytest

import oclclust as oc

dask = pytest.importorskip("dask")   # the [dask] extra: tools/setup.sh installs it
import dask.array as da  # noqa: E402
from distributed import get_task_stream  # noqa: E402

import oclclust.parallel.dask  # noqa: E402
from oclclust.parallel.dask import workers_info  # noqa: E402
from dask_cluster import BLOCK, D, K, N, blobs  # noqa: E402
from oclclust.cluster.kmeans.minibatch_sums import BatchTotals, fold  # noqa: E402

def streamed(devices, dtype):
    """One device, its rows streamed in chunks of BLOCK rows (a block's)."""
    return oc.DeviceManager(devices[:1], memory_budget=2 * D * np.dtype(dtype).itemsize * BLOCK)


def held(client):
    od = oc.parallel.dask
    return client.run(lambda: len(od._BLOCKS))


def assert_same_model(got, ref):
    assert np.array_equal(got.cluster_centers_, ref.cluster_centers_)
    assert got.cluster_centers_.dtype == ref.cluster_centers_.dtype
    assert got.n_steps_ == ref.n_steps_ and got.n_iter_ == ref.n_iter_
    assert got.inertia_ == ref.inertia_
    assert isinstance(got.labels_, da.Array)
    assert np.array_equal(got.labels_.compute(), ref.labels_)


def test_without_a_client_the_rows_are_computed_here(devices):
    """First: before the module's cluster (and its default Client) starts."""
    assert oc.parallel.dask.active_client() is None
    X = blobs()
    kw = dict(n_clusters=K, random_state=0, batch_size=200, max_iter=1, devices=devices)
    mb = oc.MiniBatchKMeans(**kw).fit(X)
    ref = oc.MiniBatchKMeans(**kw).fit(X.compute())
    assert np.array_equal(mb.cluster_centers_, ref.cluster_centers_)
    assert isinstance(mb.labels_, np.ndarray)


def test_a_batch_folded_block_after_block_is_the_whole_batch_folded():
    rng = np.random.RandomState(0)
    rows, w = rng.normal(size=(500, 3)) * 1e3, rng.uniform(0.1, 2, 500)
    labels, dist = rng.randint(0, 4, 500), rng.uniform(size=500)
    whole = fold(BatchTotals.zeros(4, 3), rows, w, labels, dist)
    parts = BatchTotals.zeros(4, 3)
    for lo, hi in [(0, 7), (7, 300), (300, 301), (301, 500)]:
        parts = fold(parts, rows[lo:hi], w[lo:hi], labels[lo:hi], dist[lo:hi])
    assert np.array_equal(parts.sums, whole.sums)
    assert np.array_equal(parts.weights, whole.weights) and parts.inertia == whole.inertia
    # and its sums are a row-order float64 sum (not numpy's pairwise one)
    for c in range(4):
        acc = np.zeros(3)
        for i in np.flatnonzero(labels == c):
            acc = acc + rows[i] * w[i]
        assert np.array_equal(whole.sums[c], acc)


@pytest.mark.parametrize("dtype,kw", [
    (np.float64, dict(batch_size=100, n_init=1)),                      # init on 300 rows
    (np.float32, dict(batch_size=200, n_init=3, init="random")),       # 3 inits compared
    (np.float64, dict(batch_size=1024, reassignment_ratio=0.0, max_iter=3)),  # init on all
    (np.float64, dict(n_clusters=8, batch_size=64, reassignment_ratio=0.5, tol=1e-4,
                      max_no_improvement=None, max_iter=2)),   # reassignments, tol's stop
    (np.float64, dict(batch_size=128, compute_labels=False)),
    (np.float32, dict(batch_size=100, init="array")),
], ids=["f64", "f32-random-3", "all-rows-init", "reassign-tol", "no-labels", "array-init"])
def test_fit_equals_the_numpy_fit(client, devices, dtype, kw):
    X = blobs(dtype)
    kw = dict(dict(n_clusters=K, random_state=3, max_iter=1), **kw)
    if kw.get("init") == "array":   # given centres: no seeding, no rows to the client
        kw["init"] = np.random.RandomState(1).uniform(-20, 20, size=(K, D))
    gathered, real = [], client.gather

    def gather(futures, *args, **kwargs):
        out = real(futures, *args, **kwargs)
        gathered.append(dask.sizeof.sizeof(out))
        return out
    client.gather = gather
    try:
        with get_task_stream(client) as stream:
            mb = oc.MiniBatchKMeans(devices=streamed(devices, dtype), **kw).fit(X)
    finally:
        del client.gather
    ref = oc.MiniBatchKMeans(devices=streamed(devices, dtype), **kw).fit(X.compute())
    assert ref.n_steps_ > 3
    if kw.get("compute_labels", True):
        assert_same_model(mb, ref)
    else:
        assert np.array_equal(mb.cluster_centers_, ref.cluster_centers_)
        assert mb.inertia_ == ref.inertia_ and mb.n_steps_ == ref.n_steps_
    # the batches were assigned on both workers; the client held no more rows
    # at once than the init's sample (3 x batch_size, if fewer than all rows)
    # or, seeding on the workers, half a block
    ran = {t["worker"] for t in stream.data if str(t["key"]).startswith("_with_block")}
    assert ran == set(workers_info(client)), ran
    row_bytes = D * np.dtype(dtype).itemsize
    sample = 3 * mb._batch_size if 3 * mb._batch_size < N else 0
    assert max(gathered) < max(sample * row_bytes + 4096, BLOCK * row_bytes / 2), gathered
    assert not any(held(client).values())


def test_sample_weight_and_spherical_equal_the_numpy_fit(client, devices):
    X = blobs()
    w = da.random.RandomState(1).uniform(0.1, 3.0, size=N, chunks=BLOCK)
    kw = dict(n_clusters=K, random_state=2, max_iter=4, batch_size=150)
    mb = oc.MiniBatchKMeans(devices=streamed(devices, np.float64), **kw).fit(
        X, sample_weight=w)
    ref = oc.MiniBatchKMeans(devices=streamed(devices, np.float64), **kw).fit(
        X.compute(), sample_weight=w.compute())
    assert_same_model(mb, ref)
    kw["spherical"] = True
    mb = oc.MiniBatchKMeans(devices=streamed(devices, np.float64), **kw).fit(X)
    ref = oc.MiniBatchKMeans(devices=streamed(devices, np.float64), **kw).fit(X.compute())
    assert_same_model(mb, ref)


def test_partial_fit_on_dask_chunks_equals_numpy_chunks(client, devices):
    X = blobs(n=3 * N)
    w = da.random.RandomState(4).uniform(0.5, 2.0, size=3 * N, chunks=BLOCK)
    mb = oc.MiniBatchKMeans(K, random_state=0, reassignment_ratio=0.2,
                            devices=streamed(devices, np.float64))
    ref = oc.MiniBatchKMeans(K, random_state=0, reassignment_ratio=0.2,
                             devices=streamed(devices, np.float64))
    host, hw = X.compute(), w.compute()
    for start in range(0, 3 * N, N):
        mb.partial_fit(X[start:start + N], sample_weight=w[start:start + N])
        ref.partial_fit(host[start:start + N], sample_weight=hw[start:start + N])
        assert np.array_equal(mb.cluster_centers_, ref.cluster_centers_)
        assert mb.inertia_ == ref.inertia_
        assert np.array_equal(mb.labels_.compute(), ref.labels_)
    assert mb.n_steps_ == ref.n_steps_ == 3
    assert not any(held(client).values())


def test_predict_transform_score_stay_on_the_workers(client, devices):
    X = blobs()
    mb = oc.MiniBatchKMeans(K, random_state=0, batch_size=200, devices=devices)
    labels = mb.fit_predict(X)
    assert isinstance(labels, da.Array)
    host = X.compute()
    pred = mb.predict(X)
    assert isinstance(pred, da.Array) and pred.dtype == np.int32
    assert np.array_equal(pred.compute(), mb.predict(host))
    assert np.array_equal(labels.compute(), pred.compute())
    dist = mb.transform(X)
    assert isinstance(dist, da.Array)
    assert np.array_equal(dist.compute(), mb.transform(host))
    w = da.random.RandomState(1).uniform(size=N, chunks=BLOCK)
    assert np.isclose(mb.score(X, sample_weight=w), mb.score(host, sample_weight=w.compute()),
                      rtol=1e-12, atol=0)


def test_bad_dask_input_is_refused(client, devices):
    with pytest.raises(ValueError, match="n_samples=2400 should be >= n_clusters=3000"):
        oc.MiniBatchKMeans(3000, devices=devices).fit(blobs())
    X = da.where(da.arange(N, chunks=BLOCK)[:, None] == N - 1, np.nan, blobs())
    with pytest.raises(ValueError, match="NaN"):
        oc.MiniBatchKMeans(K, devices=devices).fit(X)
    assert not any(held(client).values())
    mb = oc.MiniBatchKMeans(K, random_state=0, devices=devices).fit(blobs())
    with pytest.raises(ValueError, match="3 features"):
        mb.partial_fit(blobs()[:, :3])
