"""k-means|| seeding (cluster/inits.kmeans_parallel): determinism, the
candidates' weights against numpy, seeding quality against greedy k-means++,
the same centres over one device and two sub-devices, parameter errors."""
import numpy as np
import pytest

import oclclust as oc
from conftest import make_blobs, split_or_skip
from oclclust.cluster import inits


def seeded(devices, X, k, seed, **params):
    """The k-means|| centres of a fit (caught where they are drawn: a fit
    keeps only its final centres)."""
    got = {}
    real = inits.kmeans_parallel

    def spy(*args, **kwargs):
        got["centers"] = real(*args, **kwargs)
        return got["centers"]
    mp = pytest.MonkeyPatch()
    mp.setattr(inits, "kmeans_parallel", spy)
    try:
        oc.KMeans(k, init="k-means||", n_init=1, max_iter=1, random_state=seed,
                  devices=devices, **params).fit(X)
    finally:
        mp.undo()
    return got["centers"]


@pytest.mark.parametrize("factor, rounds", [(2.0, None), (0.5, 2), (3, 1)])
def test_the_same_seed_draws_the_same_centres(devices, factor, rounds):
    X, _ = make_blobs(n=500, d=3, k=6, seed=1)
    a = seeded(devices, X, 6, 7, oversampling_factor=factor, init_max_iter=rounds)
    b = seeded(devices, X, 6, 7, oversampling_factor=factor, init_max_iter=rounds)
    assert a.shape == (6, 3)
    np.testing.assert_array_equal(a, b)
    # the centres are rows of X, distinct ones (the blobs have no copies)
    assert all((X == c).all(axis=1).any() for c in a)
    assert len(np.unique(a, axis=0)) == 6


@pytest.mark.parametrize("weighted", [False, True])
def test_candidates_are_weighted_by_their_nearest_rows(devices, monkeypatch, weighted):
    """The weights handed to the weighted k-means++ are the (sample-weighted)
    counts of the rows nearest to each candidate, first of equals, as numpy
    finds them; every row counts once."""
    X, _ = make_blobs(n=400, d=4, k=5, seed=2)
    w = np.random.RandomState(3).uniform(0.5, 2, len(X)) if weighted else None
    seen = {}
    real = inits._weighted_plusplus

    def spy(data, candidates, weights, n_clusters, seed):
        seen.update(candidates=candidates, weights=weights)
        return real(data, candidates, weights, n_clusters, seed)
    monkeypatch.setattr(inits, "_weighted_plusplus", spy)
    oc.KMeans(5, init="k-means||", n_init=1, max_iter=1, random_state=0,
              devices=devices).fit(X, sample_weight=w)
    cand = seen["candidates"]
    assert len(cand) > 5   # several rounds of 3 draws (l = 0.5 k)
    assert len(np.unique(cand, axis=0)) == len(cand)
    nearest = ((X[:, None, :] - cand[None]) ** 2).sum(-1).argmin(1)
    want = np.bincount(nearest, weights=w, minlength=len(cand))
    np.testing.assert_allclose(seen["weights"], want, rtol=1e-6)
    assert np.isclose(seen["weights"].sum(), len(X) if w is None else w.sum())


@pytest.mark.parametrize("factor, rounds", [(None, None), (2.0, 3), (1.0, 2)],
                         ids=["defaults", "l=2k-3", "l=k-2"])
def test_inertia_after_lloyd_is_that_of_kmeans_plusplus(devices, factor, rounds):
    """Seeding quality: after Lloyd, k-means|| (its defaults, and fewer
    rounds of more candidates) ends within a few per cent of greedy
    k-means++ (the mean of a few seeds, on overlapping blobs)."""
    from sklearn.datasets import make_blobs as sk_blobs
    X, _ = sk_blobs(3000, 5, centers=25, cluster_std=2.0, random_state=0)
    X = X.astype(np.float32)
    params = {} if factor is None else {"oversampling_factor": factor, "init_max_iter": rounds}

    def inertia(init, **params):
        return np.mean([oc.KMeans(25, init=init, n_init=1, random_state=s, devices=devices,
                                  **params).fit(X).inertia_ for s in range(3)])
    assert inertia("k-means||", **params) <= 1.03 * inertia("k-means++")


def test_rounds_take_the_lloyd_passs_variant(profile, monkeypatch):
    """The rounds' distances come from the Lloyd pass the planner picks for
    the profile (row-wise, tiled or GEMM-tiled here; tensor cores on NVIDIA),
    one pass size a fit (the round's l candidates, no pass over all the
    candidates): the same centres from each variant."""
    from oclclust.passes import kmeanspp
    X, _ = make_blobs(n=800, d=4, k=6, seed=8)
    built = []
    real = kmeanspp.LloydPass

    def spy(part, k, update=True, spec=None):
        made = real(part, k, update, spec)
        built.append((k, update, made.spec.variant))
        return made
    monkeypatch.setattr(kmeanspp, "LloydPass", spy)
    got = {}
    for variant in ("rowwise", "tiled", "gemm"):
        built.clear()
        got[variant] = seeded([profile.replace(lloyd_variant=variant)], X, 6, 5)
        assert {b[:2] for b in built} == {(3, False)}   # l = ceil(0.5 x 6), no sums
        assert {b[2] for b in built} == {variant}
    np.testing.assert_array_equal(got["tiled"], got["rowwise"])
    np.testing.assert_array_equal(got["gemm"], got["rowwise"])


def test_one_device_and_two_sub_devices_seed_alike(profile):
    X, _ = make_blobs(n=600, d=3, k=5, seed=4)
    subs = split_or_skip(profile, (1, 1))
    whole = seeded([profile], X, 5, 11)
    split = seeded(subs, X, 5, 11)
    np.testing.assert_array_equal(whole, split)
    a = oc.KMeans(5, init="k-means||", n_init=1, random_state=11, devices=[profile]).fit(X)
    b = oc.KMeans(5, init="k-means||", n_init=1, random_state=11, devices=subs).fit(X)
    # the same labels; the centres' sums in float64 by chunk: equal to rounding
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-12)


def test_fewer_distinct_rows_than_clusters(devices):
    """All rows become candidates (the potential reaches 0): the centres are
    every distinct row, then repeats, with scikit-learn's warning."""
    X = np.repeat(np.arange(3.0)[:, None] * 10, 20, axis=0)
    with pytest.warns(UserWarning, match="Number of distinct clusters"):
        km = oc.KMeans(5, init="k-means||", n_init=1, random_state=0, devices=devices).fit(X)
    assert set(np.unique(km.cluster_centers_)) == {0.0, 10.0, 20.0}


def test_ensemble_takes_kmeans_parallel(devices):
    X, _ = make_blobs(n=500, d=3, k=4, seed=5)
    ens = oc.EnsembleKMeans(4, n_models=2, init="k-means||", random_state=0,
                            devices=devices).fit(X)
    again = oc.EnsembleKMeans(4, n_models=2, init="k-means||", random_state=0,
                              devices=devices).fit(X)
    np.testing.assert_array_equal(ens.models_, again.models_)
    ref = oc.KMeans(4, n_init=1, random_state=0, devices=devices).fit(X)
    assert np.isclose(ens.inertia_, ref.inertia_, rtol=1e-6)   # the blobs' one optimum


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("make", [oc.KMeans, lambda **p: oc.EnsembleKMeans(n_models=2, **p)],
                         ids=["KMeans", "EnsembleKMeans"])
@pytest.mark.parametrize("param, value, match", [
    ("oversampling_factor", 0, "positive finite"),
    ("oversampling_factor", -1.0, "'oversampling_factor' parameter"),
    ("oversampling_factor", float("inf"), "positive finite"),
    ("oversampling_factor", float("nan"), "'oversampling_factor' parameter"),
    ("oversampling_factor", "2", "'oversampling_factor' parameter"),
    ("init_max_iter", 0, "'init_max_iter' parameter"),
    ("init_max_iter", 1.5, "'init_max_iter' parameter"),
    ("init", "k-means|", "'init' parameter"),
])
def test_bad_parameters_are_refused_before_device_work(make, param, value, match,
                                                       monkeypatch):
    def no_devices(*args, **kwargs):
        raise AssertionError("device work before the parameters were checked")
    monkeypatch.setattr("oclclust.cluster._base.fit_data", no_devices)
    X, _ = make_blobs(n=50)
    with pytest.raises(ValueError, match=match):
        make(n_clusters=3, **{"init": "k-means||", param: value}).fit(X)


def test_a_round_reads_one_potential_a_chunk(profile, monkeypatch):
    """A round's Lloyd pass, the lowering of the closest and nearest and
    their prefix sums run on the device; of them the host reads the chunk's
    potential, one number (the draws' search and rows are read apart)."""
    import pyopencl as cl
    from oclclust.passes import kmeanspp
    X, _ = make_blobs(n=500, d=3, k=5, seed=6)
    reads, inside = [], []
    real_lower, real_copy = kmeanspp.ChunkOversampling.lower, cl.enqueue_copy

    def lower(self, centers, base):
        reads.append([])
        inside.append(True)
        try:
            return real_lower(self, centers, base)
        finally:
            inside.pop()

    def copy(queue, dest, src, **kwargs):   # every device-to-host read goes through it
        if inside and isinstance(dest, np.ndarray) and isinstance(src, cl.MemoryObjectHolder):
            reads[-1].append(dest.size)
        return real_copy(queue, dest, src, **kwargs)
    monkeypatch.setattr(kmeanspp.ChunkOversampling, "lower", lower)
    monkeypatch.setattr(cl, "enqueue_copy", copy)
    monkeypatch.setattr(inits, "_weighted_plusplus", lambda d, c, w, k, seed: np.arange(k))
    seeded([profile], X, 5, 3)
    assert len(reads) == 5                       # the default rounds, one chunk
    assert all(r == [1] for r in reads)
