"""Split-free sums of the mixtures (runtime/exact_sums.py): FuzzyCMeans and
GaussianMixture (every covariance type) fit the same bits, every fitted
attribute np.array_equal, on one device, on two CPU sub-devices, streamed
a block of rows at a time under a small memory budget, and split by given
or measured device weights; their passes' sums (the tensor-core forms
emulated too) the same over a partition and over its halves.  (Their MPI ranks and Dask workers:
tests/parallel/test_split_free.py.)"""
import numpy as np
import pytest

import oclclust as oc
from conftest import split_or_skip
from oclclust.cluster.mixture import mdl
from oclclust.passes import cmeans, gmm as gmm_pass, gmm_mma
from oclclust.runtime import exact_fold, exact_sums
from oclclust.runtime.partition import DevicePartition

N, D = 5000, 4
LAYOUTS = ["subs", "streamed", "weights", "measured"]


@pytest.fixture(scope="module")
def subs(profile):
    """The device under test split in two 1-unit sub-devices (skipped where
    the device cannot be split: NVIDIA GPUs)."""
    return split_or_skip(profile)


def devices_of(layout, profile, subs, block_bytes):
    """The devices (or DeviceManager) a fit of *layout* runs on (a row
    block takes *block_bytes*)."""
    return {"one": lambda: [profile],
            "subs": lambda: list(subs),
            # two staging buffers of a block each (a budget under a block's
            # rows streams chunks of less: not split-free, shard.py)
            "streamed": lambda: oc.DeviceManager([profile], memory_budget=2 * block_bytes),
            "weights": lambda: oc.DeviceManager(list(subs), weights=[1, 3]),
            "measured": lambda: oc.DeviceManager([profile, *subs], weights="measured"),
            }[layout]()


def blobs(dtype):
    """Overlapping blobs off the origin: EM and c-means take several
    iterations, and any split-dependent rounding would show."""
    rng = np.random.RandomState(3)
    centers = rng.uniform(-4, 4, (4, D)) + 10
    X = centers[rng.randint(0, 4, N)] + rng.randn(N, D) * rng.uniform(0.5, 2, D)
    return X.astype(dtype)


ESTIMATORS = {
    "cmeans": (lambda devices: oc.FuzzyCMeans(n_clusters=4, tol=1e-7, max_iter=25,
                                              init="random", random_state=0, devices=devices),
               ["cluster_centers_", "u_", "labels_", "objective_", "n_iter_"]),
    **{f"gmm-{kind}": (lambda devices, kind=kind: oc.GaussianMixture(
        n_components=3, covariance_type=kind, tol=1e-8, max_iter=15,
        init_params="random_from_data", random_state=0, devices=devices),
        ["means_", "covariances_", "weights_", "precisions_cholesky_", "precisions_",
         "lower_bound_", "lower_bounds_", "n_iter_", "converged_"])
       for kind in ("full", "diag", "tied", "spherical")},
}


def fitted(name, layout, profile, subs, X):
    make, attributes = ESTIMATORS[name]
    est = make(None)
    block = exact_sums.block_rows_for(D, X.dtype.itemsize, est._stat_values(D))
    est.set_params(devices=devices_of(layout, profile, subs, block * D * X.dtype.itemsize))
    est.fit(X)
    out = {a: np.asarray(getattr(est, a)) for a in attributes}
    out["predict"] = est.predict(X)
    return out


_REFERENCE = {}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.covering(2)
def test_same_bits_however_split(name, dtype, layout, profile, subs):
    if not profile.fp64:
        pytest.skip("split-free sums need fp64")
    X = blobs(dtype)
    key = (name, np.dtype(dtype).name, profile.key)
    if key not in _REFERENCE:   # the one-device fit, once for every layout
        _REFERENCE[key] = fitted(name, "one", profile, subs, X)
    ref, got = _REFERENCE[key], fitted(name, layout, profile, subs, X)
    for attribute, value in ref.items():
        assert np.array_equal(got[attribute], value), (attribute, got[attribute], value)


@pytest.mark.parametrize("layout", ["subs", "weights", "measured"])
def test_gmm_statistics_of_several_devices_are_added_on_one(layout, profile, subs,
                                                            monkeypatch):
    """Several devices of one process, each its rows' one resident chunk:
    every iteration's M statistics are added and rounded on the first
    device (GmmPass.total_mstats), none on the host; measured weights
    (chunks laid out anew) keep the host's total.  The bits are the one
    device's either way (test_same_bits_however_split)."""
    if not profile.fp64:
        pytest.skip("split-free sums need fp64")
    calls = []
    original = gmm_pass.GmmPass.total_mstats

    def counted(self, k, words, own):
        calls.append((len(words), own))
        return original(self, k, words, own)
    monkeypatch.setattr(gmm_pass.GmmPass, "total_mstats", counted)
    est = ESTIMATORS["gmm-diag"][0](devices_of(layout, profile, subs, 1 << 30))
    est.fit(blobs(np.float64))
    if layout == "measured":
        assert calls == []
    else:
        assert calls and set(calls) == {(2, 0)} and len(calls) >= est.n_iter_


# ------------------------------------------- the passes, tensor-core forms too
def split_partitions(profile, X, w, block_rows):
    """[the whole], [its rows cut at a block boundary]: partitions of the
    same blocks and the same magnitudes (as a ShardedPass gives its chunks)."""
    whole = DevicePartition(profile, X, w, block_rows=block_rows)
    cut = block_rows * (exact_sums.blocks_of(len(X), block_rows) // 2)
    halves = [DevicePartition(profile, X[a:b], None if w is None else w[a:b], offset=a,
                              block_rows=block_rows) for a, b in ((0, cut), (cut, len(X)))]
    for part in halves:
        part.magnitudes = exact_fold.magnitudes_of(whole)
    return [whole], halves


def assert_same_sums(split_sums):
    """Each split's sums (a list per partition of ExactWords / ints / None),
    added over its partitions: the same bits for every split."""
    totals = [[exact_sums.settle(sum(parts)) if parts[0] is not None else None
               for parts in zip(*sums)] for sums in split_sums]
    for got in totals[1:]:
        for a, b in zip(got, totals[0]):
            assert np.array_equal(a, b), (a, b)


@pytest.mark.parametrize("form", ["portable", "emulated"])
def test_cmeans_pass_sums_are_split_free(profile, form):
    if not profile.fp64:
        pytest.skip("split-free sums need fp64")
    rng = np.random.RandomState(5)
    d, c, block = 5, 6, 256
    # float64 rows where they may be (float32 sums of few blocks add exactly anyway)
    dtype = np.float64 if form == "portable" else np.float32
    X = (rng.randn(3 * block + 77, d) * 3 + 20).astype(dtype)
    w = rng.uniform(0.5, 2, len(X)).astype(dtype)
    centers = X[:c].astype(np.float64) + 0.2
    spec = None if form == "portable" else next(cmeans.mma_specs(
        profile, np.float32, d, c, True, False, True, True, emulate=True))
    assert_same_sums([[cmeans.CMeansPass(part, c, 2.0, spec=spec).sums(centers)
                       for part in split] for split in split_partitions(profile, X, w, block)])


@pytest.mark.parametrize("form", ["portable", "emulated"])
@pytest.mark.parametrize("full", [False, True], ids=["diag", "full"])
def test_gmm_pass_sums_are_split_free(profile, form, full):
    if not profile.fp64:
        pytest.skip("split-free sums need fp64")
    if form == "emulated" and full:
        pytest.skip("the tensor-core kernels are diagonal")
    rng = np.random.RandomState(6)
    d, k, block = 5, 4, 256
    X = (rng.randn(3 * block + 77, d) * 3 + 20).astype(np.float32)
    cov = rng.uniform(0.5, 2, (k, d))
    cov = np.array([np.diag(v) for v in cov]) if full else cov
    model = mdl.Model(np.full(k, 1.0 / k), X[:k].astype(np.float64) + 0.3, cov,
                      mdl.precision_cholesky(cov, full))
    specs = None if form == "portable" else (
        next(gmm_mma.estep_specs(profile, np.float32, d, k, emulate=True)),
        next(gmm_mma.mstep_specs(profile, np.float32, d, emulate=True)))

    def sums(part):
        gp = gmm_pass.GmmPass(part, k, full, specs=specs, mma_mstep=form != "portable")
        ll, bad = gp.estep_sums(mdl.records(model, full))
        stats, raw = gp.mstep_sums(model.means)
        assert raw == (form == "emulated")
        return ll, bad, stats
    assert_same_sums([[sums(part) for part in split]
                      for split in split_partitions(profile, X, None, block)])
