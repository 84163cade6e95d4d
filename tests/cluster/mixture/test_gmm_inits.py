"""GaussianMixture's data-driven starts on the device (issue 18): every
init_params gives the model of the old host path -- n x K one-hot (or
uniform random) responsibilities built on the host and uploaded whole, the
"kmeans" labels from a KMeans fit of its own placement, their M pass on the
devices -- on one device, sub-devices and rows streamed in chunks: bit for
bit, and the one-hot starts on k rows, whose statistics are now the rows'
own (mdl.row_stats, float64), to that M pass's rounding."""
import warnings

import numpy as np
import pytest

import oclclust as oc
from conftest import split_or_skip
from oclclust.cluster.mixture import gmm as gmm_module, gmm_starts
from oclclust.cluster.inits import kmeans_plusplus

INITS = ["kmeans", "k-means++", "random", "random_from_data"]
ROW_INITS = ("k-means++", "random_from_data")   # one row a component
ROW_RTOL = 1e-5   # float32 rows: the old M pass took x - mu in float32


def old_initial_resp(self, gm, data, rng, host_w):
    """cluster/mixture/gmm.py's host path before the device inits (the reference)."""
    k, dtype, ranks = self.n_components, data.dtype, self._ranks
    if self.init_params == "random":
        resp = rng.uniform(size=(ranks.n, k))[ranks.offset:ranks.offset + data.n]
        resp /= resp.sum(axis=1)[:, None]
        gm.map(lambda chunk, gp: gp.set_resp(
            resp[chunk.offset:chunk.offset + chunk.n].astype(dtype)))
        return
    if self.init_params == "kmeans":
        labels = oc.KMeans(n_clusters=k, n_init=1, random_state=rng, devices=self.devices,
                           dtype=dtype, comm=self.comm).fit(data.source).labels_
        idx, cols = np.arange(data.n), labels
    else:
        if self.init_params == "random_from_data":
            idx = rng.choice(ranks.n, size=k, replace=False)
        else:
            idx = np.asarray(kmeans_plusplus(data, k, rng, host_w, ranks=ranks))
        idx, cols = idx - ranks.offset, np.arange(k)

    def put(chunk, gp):
        start, stop = chunk.offset, chunk.offset + chunk.n
        out = np.zeros((stop - start, k), dtype)
        sel = (idx >= start) & (idx < stop)
        out[idx[sel] - start, cols[sel]] = 1
        gp.set_resp(out)
    gm.map(put)


def old_initial_stats(self, gm, data, rng, host_w):
    old_initial_resp(self, gm, data, rng, host_w)
    return gm.resp_stats


def data(dtype):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(700, 4)) + np.repeat(rng.uniform(-5, 5, (5, 4)), 140, axis=0)
    return X.astype(dtype)


def fit(X, devices, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return oc.GaussianMixture(5, n_init=2, max_iter=4, tol=0, random_state=3,
                                  devices=devices, **params).fit(X)


def assert_same(a, b, init=None):
    """Bit for bit; after a start on k rows, to the old M pass's rounding."""
    for name in ("weights_", "means_", "covariances_", "precisions_cholesky_"):
        if init in ROW_INITS:
            np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=ROW_RTOL,
                                       atol=ROW_RTOL, err_msg=name)
        else:
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.n_iter_ == b.n_iter_
    assert (a.lower_bound_ == pytest.approx(b.lower_bound_, rel=ROW_RTOL)
            if init in ROW_INITS else a.lower_bound_ == b.lower_bound_)


def old_way(monkeypatch, X, devices, **params):
    with monkeypatch.context() as m:
        m.setattr(gmm_module.GaussianMixture, "_initial_stats", old_initial_stats)
        return fit(X, devices, **params)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda t: t.__name__)
@pytest.mark.parametrize("cov", ["full", "diag"])
@pytest.mark.parametrize("init", INITS)
def test_every_init_gives_the_host_paths_model(devices, init, cov, dtype, monkeypatch):
    X = data(dtype)
    new = fit(X, devices, covariance_type=cov, init_params=init)
    old = old_way(monkeypatch, X, devices, covariance_type=cov, init_params=init)
    assert_same(new, old, init)
    if init in ROW_INITS:
        np.testing.assert_allclose(new.predict_proba(X), old.predict_proba(X), atol=ROW_RTOL)
    else:
        np.testing.assert_array_equal(new.predict_proba(X), old.predict_proba(X))


@pytest.mark.parametrize("init", INITS)
def test_sub_devices_and_streamed_chunks(profile, init, monkeypatch):
    """Several chunks (two sub-devices; one device streaming four chunks),
    the random draws in small blocks across the chunks' ends."""
    X = data(np.float64)
    streamed = oc.DeviceManager([profile], memory_budget=2 * 90 * 4 * 8)   # 90 rows a chunk
    monkeypatch.setattr(gmm_starts, "RANDOM_BLOCK", 5 * 37)   # 37 rows a block
    for devices in (split_or_skip(profile), streamed):
        new = fit(X, devices, covariance_type="diag", init_params=init)
        assert_same(new, old_way(monkeypatch, X, devices, covariance_type="diag",
                                 init_params=init), init)
    layout = streamed.scatter(X)
    assert layout.shards[0].streamed and len(layout.shards[0].chunks) > 2
    layout.close()


def test_kmeans_init_runs_on_the_fits_rows(devices, monkeypatch):
    """The "kmeans" init places no second copy of the rows."""
    X = data(np.float32)
    placed = []
    scatter = oc.DeviceManager.scatter

    def counting(self, *args, **kwargs):
        placed.append(1)
        return scatter(self, *args, **kwargs)
    monkeypatch.setattr(oc.DeviceManager, "scatter", counting)
    fit(X, devices, covariance_type="diag", init_params="kmeans")
    assert len(placed) == 1
