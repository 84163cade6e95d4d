"""Rows of 2-byte floats (float16; bfloat16 from ml_dtypes) kept on the device
at 2 bytes a value and widened there into float32 chunks (parallel/shard.py,
passes/widen.py): twice the rows a budget holds, the models of the float32
copy of the same values."""
import ml_dtypes
import numpy as np
import pyopencl.array as cla
import pytest

import oclclust as oc
from oclclust.passes.widen import widen_rows

KINDS = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)]
N, D = 6000, 12


def rows(kind, n=N, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, D)) + rng.integers(0, 4, (n, 1)) * 10).astype(kind)


def manager(devices, budget):
    return oc.DeviceManager(devices[:1], memory_budget=budget)


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_widening_is_exact_for_every_value(devices, queue, kind):
    bits = np.arange(1 << 16, dtype=np.uint16)
    src = cla.to_device(queue, bits)
    dst = cla.empty(queue, bits.size - 3, np.float32)
    widen_rows(queue, src, 3, bits.size - 3, dst, kind.name).wait()
    want = bits[3:].view(kind).astype(np.float32)
    got = dst.get()
    assert np.array_equal(np.isnan(got), np.isnan(want))
    same = ~np.isnan(want)
    assert np.array_equal(got[same].view(np.uint32), want[same].view(np.uint32))


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_a_budget_holds_twice_the_rows_packed(devices, kind):
    budget = N * D * 3                 # float32 rows (4 bytes a value) do not fit; 2 do
    packed = manager(devices, budget).scatter(rows(kind), None, dtype=np.float32)
    wide = manager(devices, budget).scatter(rows(kind).astype(np.float32), None)
    try:
        (shard,) = packed.shards
        assert shard.packed is not None and shard.packed.nbytes == N * D * 2
        assert len(shard.chunks) > 1 and all(c.dtype == np.float32 for c in shard.chunks)
        assert wide.shards[0].packed is None and wide.shards[0].streamed   # from the host
    finally:
        packed.close()
        wide.close()


@pytest.mark.parametrize("kind", KINDS, ids=str)
@pytest.mark.parametrize("make", [
    lambda init, devices: oc.KMeans(4, init=init, n_init=1, tol=0, max_iter=20, devices=devices),
    lambda init, devices: oc.FuzzyCMeans(4, init=init, tol=0, max_iter=10, devices=devices),
    lambda init, devices: oc.GaussianMixture(4, covariance_type="diag", means_init=init,
                                             tol=0, max_iter=5, devices=devices),
], ids=["kmeans", "cmeans", "gmm"])
def test_packed_fits_equal_the_float32_copy(devices, kind, make):
    X = rows(kind)
    X32 = X.astype(np.float32)
    # one row of each blob (blob j's rows average 10 j): EM from a start
    # without two components in one blob, where float32 rounding is not amplified
    init = np.array([X32[np.abs(X32.mean(axis=1) - 10 * j) < 2][0] for j in range(4)],
                    np.float64)
    budget = N * D * 3
    packed = make(init, manager(devices, budget)).fit(X)
    resident = make(init, devices[:1]).fit(X32)
    for attr in ("cluster_centers_", "means_"):
        if hasattr(resident, attr):
            assert getattr(packed, attr).dtype == np.float32
            np.testing.assert_allclose(getattr(packed, attr), getattr(resident, attr),
                                       rtol=1e-5, atol=1e-5)
    assert np.array_equal(packed.predict(X), resident.predict(X32))


def test_two_byte_rows_are_computed_in_float32_by_default(devices):
    km = oc.KMeans(3, n_init=1, random_state=0, devices=devices[:1]).fit(rows(np.float16))
    assert km.cluster_centers_.dtype == np.float32
    km64 = oc.KMeans(3, n_init=1, random_state=0, dtype="float64",
                     devices=devices[:1]).fit(rows(np.float16))
    assert km64.cluster_centers_.dtype == np.float64


def test_nonfinite_two_byte_rows_are_refused(devices):
    X = rows(np.float16)
    X[7, 3] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        oc.KMeans(3, devices=manager(devices, N * D * 3)).fit(X)
