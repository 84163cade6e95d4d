"""Split-free sums of the mixtures (runtime/exact_sums.py): FuzzyCMeans and
GaussianMixture (every covariance type) fit the same bits, every fitted
attribute np.array_equal, on one device, on two CPU sub-devices, streamed
a block of rows at a time under a small memory budget, and split by given
or measured device weights.  (Their MPI ranks and Dask workers:
tests/parallel/test_split_free.py.)"""
import numpy as np
import pytest

import oclclust as oc
from oclclust.runtime import exact_sums

N, D = 5000, 4
LAYOUTS = ["subs", "streamed", "weights", "measured"]


@pytest.fixture(scope="module")
def subs(profile):
    """The device under test split in two 1-unit sub-devices."""
    if profile.compute_units < 2:
        pytest.skip(f"{profile} has {profile.compute_units} compute unit: no sub-devices")
    return oc.sub_devices(profile, [1, 1])


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
