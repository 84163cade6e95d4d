"""Greedy k-means++ on the device picks the rows scikit-learn's picks.

The random draws are made on the host with scikit-learn's calls, so from the
same RandomState both choose the same indices (and leave the stream in the
same state, so n_init restarts see the same seeds).
"""
import dataclasses

import numpy as np
import pytest
from sklearn.cluster import kmeans_plusplus as sk_kmeans_plusplus

import oclclust as oc
from conftest import split_or_skip
from oclclust.passes import kmeanspp
from oclclust.runtime import exact_sums
from oclclust.runtime.partition import DevicePartition

FLOATS = [np.float32, np.float64]


def weights_for(X, kind):
    if kind == "unweighted":
        return None
    w = np.random.RandomState(1).rand(len(X))
    w[::7] = 0   # a zero weight is never picked
    return w.astype(X.dtype)


def ours(profile, X, k, seed, w=None, n_local_trials=None):
    rs = np.random.RandomState(seed)
    host_w = np.ones(len(X), X.dtype) if w is None else w
    data = oc.DeviceManager([profile]).scatter(X, w)
    try:
        idx = oc.kmeans_plusplus(data, k, rs, host_w, n_local_trials)
    finally:
        data.close()
    return idx, rs


def theirs(X, k, seed, w=None, n_local_trials=None):
    rs = np.random.RandomState(seed)
    centres, idx = sk_kmeans_plusplus(X, k, sample_weight=w, random_state=rs,
                                      n_local_trials=n_local_trials)
    np.testing.assert_array_equal(centres, X[idx])
    return idx, rs


@pytest.mark.parametrize("weighting", ["unweighted", "weighted"])
@pytest.mark.parametrize("k", [1, 4, 25])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_same_indices_as_sklearn(profile, make_blobs, dtype, k, weighting):
    X, _ = make_blobs(n=2000, d=5, k=4, seed=3, dtype=dtype)
    w = weights_for(X, weighting)
    mine, my_rs = ours(profile, X, k, 7, w)
    ref, ref_rs = theirs(X, k, 7, w)
    np.testing.assert_array_equal(mine, ref)
    assert my_rs.randint(1 << 30) == ref_rs.randint(1 << 30)   # stream left alike
    if w is not None:
        assert (w[mine] > 0).all()


@pytest.mark.parametrize("n_local_trials", [1, 7])
def test_local_trials(profile, blobs, n_local_trials):
    X = blobs[0]
    mine, _ = ours(profile, X, 8, 0, n_local_trials=n_local_trials)
    np.testing.assert_array_equal(mine, theirs(X, 8, 0, n_local_trials=n_local_trials)[0])


def test_one_centre_per_blob(profile, make_blobs):
    X, y = make_blobs(n=900, d=2, k=6, seed=5)
    mine, _ = ours(profile, X, 6, 1)
    assert sorted(y[mine]) == list(range(6))


@pytest.mark.parametrize("seed", range(3))
def test_kahan_sums_without_fp64(profile, make_blobs, seed):
    """On a device without fp64 the distances and prefix sums are float; the
    picks on small, well-spread data still equal scikit-learn's."""
    X, _ = make_blobs(n=500, d=3, k=4, seed=seed, dtype=np.float32)
    no_fp64 = dataclasses.replace(profile, fp64=False)
    mine, _ = ours(no_fp64, X, 10, seed)
    np.testing.assert_array_equal(mine, theirs(X, 10, seed)[0])


def device_greedy(profile, X, k, seed, w=None, trials=None):
    """DeviceGreedy's picks (k-means||'s weighted k-means++, every step on
    the device) with kmeans_plusplus's draws from RandomState(*seed*): the
    first row by weight, then trials uniforms a step, all drawn up front."""
    rs = np.random.RandomState(seed)
    host_w = np.ones(len(X), X.dtype) if w is None else w
    trials = trials or 2 + int(np.log(k))
    first = int(rs.choice(len(X), p=host_w / host_w.sum()))
    uniforms = rs.uniform(size=(k - 1) * trials)
    part = DevicePartition(profile, X, w)
    return kmeanspp.DeviceGreedy(part, trials).run(first, uniforms, k), rs


@pytest.mark.parametrize("weighting", ["unweighted", "weighted"])
@pytest.mark.parametrize("k", [1, 2, 25])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_device_greedy_picks_the_host_loops_rows(profile, make_blobs, dtype, k, weighting):
    """The device loop picks what the host-driven loop (kmeans_plusplus)
    and scikit-learn pick from the same draws, and uses up the same
    numbers of the stream."""
    X, _ = make_blobs(n=3000, d=5, k=4, seed=3, dtype=dtype)
    w = weights_for(X, weighting)
    mine, my_rs = device_greedy(profile, X, k, 7, w)
    host, host_rs = ours(profile, X, k, 7, w)
    ref, _ = theirs(X, k, 7, w)
    np.testing.assert_array_equal(mine, host)
    np.testing.assert_array_equal(mine, ref)
    assert my_rs.randint(1 << 30) == host_rs.randint(1 << 30)
    if w is not None:
        assert (w[mine] > 0).all()


@pytest.mark.parametrize("blocks", [1, 4])
@pytest.mark.parametrize("fp64", [True, False], ids=["fp64", "kahan"])
def test_device_greedy_over_groups_of_many_rows(profile, monkeypatch, make_blobs, blocks,
                                                fp64):
    """Fewer candidate groups than the rows need (a group's rows walked in
    draw_trials), and float sums with Kahan compensation: the same picks."""
    monkeypatch.setattr(kmeanspp.DeviceGreedy, "BLOCKS", blocks)
    X, _ = make_blobs(n=700, d=3, k=5, seed=1, dtype=np.float32)
    w = weights_for(X, "weighted")
    dev = dataclasses.replace(profile, fp64=fp64)
    greedy = kmeanspp.DeviceGreedy(DevicePartition(dev, X, w), 4)
    assert greedy.groups == min(blocks, 11) and greedy.rows_per_group * greedy.groups >= 700
    mine, _ = device_greedy(dev, X, 12, 2, w, trials=4)
    np.testing.assert_array_equal(mine, theirs(X, 12, 2, w, n_local_trials=4)[0])


def test_device_greedy_of_copies(profile):
    """Rows that are all copies of fewer points than k: once every point is
    chosen the potential is 0 and the draws take the first row, as
    scikit-learn's searchsorted does."""
    X = np.repeat(np.eye(3), 10, axis=0)
    mine, _ = device_greedy(profile, X, 5, 0)
    np.testing.assert_array_equal(mine, theirs(X, 5, 0)[0])


def test_device_greedy_reads_the_host_once(profile, make_blobs, monkeypatch):
    """The k steps enqueue kernels only: the one read is of the k indices."""
    import pyopencl as cl
    import pyopencl.array as cla
    X, _ = make_blobs(n=500, d=3, k=4, seed=2)
    greedy = kmeanspp.DeviceGreedy(DevicePartition(profile, X), 3)
    reads, inside_get = [], []
    real_get, real_copy = cla.Array.get, cl.enqueue_copy

    def get(self, *args, **kwargs):
        reads.append(self.size)
        inside_get.append(True)   # its own copy is not another read
        try:
            return real_get(self, *args, **kwargs)
        finally:
            inside_get.pop()

    def copy(queue, dest, src, **kwargs):
        if isinstance(dest, np.ndarray) and not inside_get:   # device to host
            reads.append(dest.size)
        return real_copy(queue, dest, src, **kwargs)
    monkeypatch.setattr(cla.Array, "get", get)
    monkeypatch.setattr(cl, "enqueue_copy", copy)
    idx = greedy.run(0, np.random.RandomState(0).uniform(size=9 * 3), 10)
    assert len(idx) == 10 and len(set(idx.tolist())) == 10
    assert reads == [10]


# ------------------------------------------------- split-free seeding
# (runtime/exact_sums.py): every draw of k-means++ and k-means|| made with
# the same bits -- the targets (a uniform times the total potential), the
# candidates' potentials and weights -- on one device, two sub-devices,
# rows streamed a block at a time and uneven device weights; hence the same
# fits, every fitted attribute bit for bit.
SPLIT_N, SPLIT_D, SPLIT_K = 5000, 4, 5
LAYOUTS = ["one", "subs", "streamed", "weights"]
SEEDING = {   # name: (estimator, its fitted attributes)
    "k-means++": (lambda devices: oc.KMeans(SPLIT_K, init="k-means++", n_init=1, max_iter=5,
                                            random_state=0, devices=devices),
                  ["cluster_centers_", "labels_", "inertia_", "n_iter_"]),
    "k-means||": (lambda devices: oc.KMeans(SPLIT_K, init="k-means||", n_init=1, max_iter=5,
                                            random_state=0, devices=devices),
                  ["cluster_centers_", "labels_", "inertia_", "n_iter_"]),
    "ensemble": (lambda devices: oc.EnsembleKMeans(SPLIT_K, n_models=3, max_iter=5,
                                                   random_state=0, devices=devices),
                 ["models_", "inertias_", "n_iter_", "best_index_", "cluster_centers_",
                  "labels_", "inertia_"]),
}


def split_data(dtype):
    """Overlapping blobs off the origin (the potentials' last bits differ
    between groupings) and uneven sample weights."""
    rng = np.random.RandomState(4)
    centres = rng.uniform(-3, 3, (SPLIT_K, SPLIT_D)) + 7
    X = centres[rng.randint(0, SPLIT_K, SPLIT_N)] + rng.randn(SPLIT_N, SPLIT_D)
    return X.astype(dtype), rng.uniform(0.1, 3.0, SPLIT_N)


def layout_devices(layout, profile, block_bytes):
    """The devices of a fit of *layout* (a row block takes *block_bytes*)."""
    if layout == "one":
        return [profile]
    subs = split_or_skip(profile)
    return {"subs": lambda: list(subs),
            # two staging buffers of a block each: chunks of whole blocks
            "streamed": lambda: oc.DeviceManager([profile], memory_budget=2 * block_bytes),
            "weights": lambda: oc.DeviceManager(list(subs), weights=[3, 1])}[layout]()


@pytest.fixture
def seeding_draws(monkeypatch):
    """[(targets, ...)] of every draw of the seeding (inits._pick's targets)
    and the k-means|| candidates' weights, recorded as the fit makes them."""
    from oclclust.cluster import inits
    seen = []
    pick, weighted = inits._pick, inits._weighted_plusplus

    def record_pick(data, seeds, ranks, targets, *args):
        seen.append(("targets", np.array(targets)))
        return pick(data, seeds, ranks, targets, *args)

    def record_weights(data, rows, weights, *args):
        seen.append(("weights", np.array(weights)))
        return weighted(data, rows, weights, *args)
    monkeypatch.setattr(inits, "_pick", record_pick)
    monkeypatch.setattr(inits, "_weighted_plusplus", record_weights)
    return seen


_FITS = {}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("name", sorted(SEEDING))
@pytest.mark.covering(2)
def test_seeded_fits_are_split_free(profile, seeding_draws, name, dtype, weighted, layout):
    """Each layout's fit: the draws (every target's bits, the k-means||
    weights) and every fitted attribute np.array_equal to one device's."""
    if not profile.fp64:
        pytest.skip(f"{profile} has no fp64: Kahan sums are not split-free")
    make, attributes = SEEDING[name]
    X, w = split_data(dtype)
    est = make(None)
    block = exact_sums.block_rows_for(SPLIT_D, X.dtype.itemsize, est._stat_values(SPLIT_D))
    assert exact_sums.blocks_of(SPLIT_N, block) >= 4   # the splits cut between blocks
    est.set_params(devices=layout_devices(layout, profile, block * SPLIT_D * X.dtype.itemsize))
    est.fit(X, sample_weight=w if weighted else None)
    got = {a: np.asarray(getattr(est, a)) for a in attributes}
    got["draws"] = list(seeding_draws)
    got["predict"] = est.predict(X)
    key = (str(profile), name, dtype, weighted)
    if layout == "one":
        _FITS[key] = got
    ref = _FITS.get(key)
    if ref is None:
        pytest.skip("the one-device fit did not run first")
    assert len(got["draws"]) == len(ref["draws"]) > 1
    for (kind, a), (_, b) in zip(got["draws"], ref["draws"]):
        assert np.array_equal(a, b), (kind, a - b)
    for attr in attributes + ["predict"]:
        assert np.array_equal(got[attr], ref[attr]), attr
