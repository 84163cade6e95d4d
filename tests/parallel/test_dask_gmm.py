"""GaussianMixture on a Dask cluster's workers (parallel/dask.py): a
LocalCluster of 2 worker processes, started once for the module.

Every init leaves its responsibilities on the workers: one-hot rows of the
"kmeans" init's labels (its KMeans fit of the same blocks, whose labels
stay on the devices), of k rows (k-means++, random_from_data), or uniform
rows each block draws on its worker from the fit's random stream moved to
its first row ("random").  The model is the one-device numpy fit's bit for
bit (split-free sums: runtime.exact_sums), and no array of the rows' size
travels either way between the client and the workers.
"""
import numpy as np
import pytest

import oclclust as oc

dask = pytest.importorskip("dask")   # the [dask] extra: tools/setup.sh installs it
import dask.array as da  # noqa: E402
from distributed import get_task_stream  # noqa: E402

from dask_cluster import BLOCK, K, Transfers, blobs  # noqa: E402

from oclclust.parallel.dask import workers_info  # noqa: E402

N = 16 * BLOCK   # 16 blocks, 8 on each worker: n bytes are more than any statistics'


def held(client):
    od = oc.parallel.dask
    return client.run(lambda: len(od._BLOCKS))


# every init once, full and diag and both dtypes among them (a case costs a fit on the
# workers and one here, each building its kernels: CI time), and the other shapes
CASES = [("kmeans", "full", np.float32), ("k-means++", "diag", np.float64),
         ("random", "full", np.float64), ("random_from_data", "diag", np.float32),
         ("k-means++", "tied", np.float64),   # the tied start's X'X: every row in component 0
         ("random_from_data", "tied", np.float32), ("random", "spherical", np.float64)]


@pytest.mark.parametrize("init_params,cov,dtype", CASES,
                         ids=[f"{i}-{c}-{np.dtype(t).name}" for i, c, t in CASES])
@pytest.mark.covering(1)
def test_every_init_equals_the_numpy_fit_and_no_row_sized_array_travels(
        client, devices, init_params, cov, dtype, monkeypatch):
    X = blobs(dtype, n=N)
    kw = dict(n_components=K, covariance_type=cov, random_state=2, max_iter=8, tol=0,
              init_params=init_params)
    moved = Transfers(client, monkeypatch)
    with get_task_stream(client) as stream:   # (by name: one GPU a worker on a host of several)
        gm = oc.GaussianMixture(devices=devices[0].platform, **kw).fit(X)
    monkeypatch.undo()
    ran = {t["worker"] for t in stream.data if str(t["key"]).startswith("_on_block")}
    assert ran == set(workers_info(client)), ran   # the passes ran on both
    for way in ("sent", "received"):
        size, array = moved.most(way)
        # not a byte a row, no array of a block's rows (n x k draws, n labels: far more)
        assert size < N and array < BLOCK, (way, size, array)
    assert not any(held(client).values())   # the fit freed its blocks
    ref = oc.GaussianMixture(devices=devices[:1], **kw).fit(X.compute())
    for name in ("weights_", "means_", "covariances_", "precisions_cholesky_"):
        got, want = getattr(gm, name), getattr(ref, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
    assert gm.lower_bound_ == ref.lower_bound_ and gm.n_iter_ == ref.n_iter_


ESTIMATORS = {
    "KMeans": lambda devices: oc.KMeans(K, n_init=1, random_state=0, devices=devices),
    "MiniBatchKMeans": lambda devices: oc.MiniBatchKMeans(K, batch_size=256, random_state=0,
                                                          devices=devices),
    "EnsembleKMeans": lambda devices: oc.EnsembleKMeans([3, K], n_models=2, random_state=0,
                                                        devices=devices),
    "FuzzyCMeans": lambda devices: oc.FuzzyCMeans(K, random_state=0, max_iter=20,
                                                  devices=devices),
    "GaussianMixture": lambda devices: oc.GaussianMixture(K, random_state=0, max_iter=10,
                                                          devices=devices),
}
PER_ROW = [("KMeans", "predict"), ("KMeans", "transform"), ("MiniBatchKMeans", "predict"),
           ("MiniBatchKMeans", "transform"), ("EnsembleKMeans", "predict"),
           ("FuzzyCMeans", "predict"), ("FuzzyCMeans", "predict_proba"),
           ("GaussianMixture", "predict"), ("GaussianMixture", "predict_proba"),
           ("GaussianMixture", "score_samples")]


@pytest.mark.parametrize("name,method", PER_ROW, ids=[f"{n}.{m}" for n, m in PER_ROW])
@pytest.mark.covering(1)
def test_per_row_outputs_of_a_dask_array_stay_on_the_workers(client, devices, name, method,
                                                             monkeypatch):
    """A model's per-row output of a dask array is a dask array made on the
    workers (nothing of the rows' size comes to the client before the user
    computes it), equal to the numpy array's output."""
    X = blobs(n=N)
    host = X.compute()
    est = ESTIMATORS[name](devices).fit(host)
    moved = Transfers(client, monkeypatch)
    out = getattr(est, method)(X)
    monkeypatch.undo()
    assert isinstance(out, da.Array), type(out)
    assert moved.most("received")[1] < BLOCK and moved.most("sent")[0] < N
    with dask.config.set(scheduler=client.get):
        got = out.compute()
    want = getattr(est, method)(host)
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_fit_predict_and_labels_of_a_dask_array_stay_on_the_workers(client, devices, name,
                                                                    monkeypatch):
    X = blobs(n=N)
    moved = Transfers(client, monkeypatch)
    labels = ESTIMATORS[name](devices).fit_predict(X)
    monkeypatch.undo()
    assert isinstance(labels, da.Array)
    size, array = moved.most("received")
    assert size < N and array < BLOCK, (size, array)
    ref = ESTIMATORS[name](devices).fit(X)
    assert np.array_equal(labels.compute(), ref.predict(X).compute())


def test_gmm_score_of_a_dask_array_is_a_number(client, devices):
    X = blobs(n=N)
    gm = ESTIMATORS["GaussianMixture"](devices).fit(X.compute())
    score = gm.score(X)
    assert isinstance(score, np.floating) and score.dtype == gm.means_.dtype
    assert np.isclose(score, gm.score(X.compute()), rtol=1e-12 if score.dtype == np.float64
                      else 1e-6, atol=0)
