"""Split-free Lloyd sums (runtime/exact_sums.py): every variant's sums,
weights and inertia the same bits over any block-aligned split of the rows,
and KMeans' fitted model the same over one device, two sub-devices,
streamed chunks and given device weights."""
import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import oclclust as oc
from oclclust.passes.lloyd import LloydPass, LloydStats, stat_values
from oclclust.runtime import exact_fold, exact_sums
from oclclust.runtime.partition import DevicePartition

TWEAKS = {   # every variant of the pass (as test_lloyd's: centroids in local or global memory)
    "tiled": dict(lloyd_variant="tiled"),
    "tiled-global": dict(lloyd_variant="tiled", local_mem_size=800, local_memory_fraction=1.0),
    "rowwise": dict(lloyd_variant="rowwise"),
    "blocked": dict(lloyd_variant="blocked", blocked_rows=3, blocked_vectors=3, blocked_chunk=2),
    "gemm": dict(lloyd_variant="gemm"),
    "gemm-walk": dict(lloyd_variant="gemm", lloyd_sums_walk=1),
    "mma": dict(lloyd_variant="mma"),     # tensor cores where there are, else gemm
}
EXACT_VARIANTS = list(TWEAKS)
FLOATS = [np.float32, np.float64]
K = 7


def needs_fp64(profile):
    if not profile.fp64:
        pytest.skip(f"{profile} has no fp64: its sums are Kahan's, not split-free")


def data(dtype, weighted, n=2900, d=5, seed=3):
    """Rows offset from the origin (the sums' bits depend on their order),
    weights or None, and centres from the rows."""
    rng = np.random.RandomState(seed)
    X = (rng.randn(n, d) * 3 + 50).astype(dtype)
    w = rng.uniform(0.5, 2.0, n).astype(dtype) if weighted else None
    return X, w, X[rng.choice(n, K, replace=False)].astype(np.float64)


def pass_stats(profile, X, w, centres, block_rows, magnitudes):
    """The raw (unsettled) LloydStats of one piece of the rows, its blocks
    and grids the fit's (as ShardedPass sets them on a chunk), its labels,
    and the pass: its stats are views of the pass's page-locked reads, which
    go back to the process's pool with it (a caller totals them first, as
    ShardedPass does: the passes live for the fit)."""
    part = DevicePartition(profile, X, w, block_rows=block_rows)
    part.magnitudes = magnitudes
    labels = cla.empty(part.queue, part.n, np.int32)
    cl.enqueue_fill_buffer(part.queue, labels.data, np.int32(-1), 0, labels.nbytes)
    lloyd = LloydPass(part, len(centres))
    assert lloyd.exact and lloyd.partials == exact_sums.blocks_of(part.n, block_rows)
    return lloyd.collect(lloyd.launch(centres, labels)), labels.get(part.queue), lloyd


def split_pass(profile, X, w, centres, cuts):
    """(settled LloydStats, labels) of the pass over the pieces of the rows
    cut at *cuts* (in blocks), summed as ShardedPass sums chunks."""
    B = exact_sums.block_rows_for(X.shape[1], X.dtype.itemsize, stat_values(K, X.shape[1]))
    whole = DevicePartition(profile, X, w)
    magnitudes = exact_fold.magnitudes_of(whole)
    bounds = [0] + [min(len(X), c * B) for c in cuts] + [len(X)]
    got = [pass_stats(profile, X[a:b], None if w is None else w[a:b], centres, B, magnitudes)
           for a, b in zip(bounds, bounds[1:])]
    total = LloydStats.total([g[0] for g in got])
    return total.from_flat(total.flat()).settled(), np.concatenate([g[1] for g in got])


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("name", EXACT_VARIANTS)
@pytest.mark.covering(1)
def test_pass_is_split_free(profile, name, dtype, weighted):
    """Whole, in two pieces, in four uneven ones: the same bits; within
    rounding of today's float64 reduction (exact sums disabled)."""
    needs_fp64(profile)
    prof = profile.replace(**TWEAKS[name])
    X, w, centres = data(dtype, weighted)
    whole, labels = split_pass(prof, X, w, centres, [])
    assert exact_sums.blocks_of(len(X), exact_sums.block_rows_for(
        X.shape[1], X.dtype.itemsize, stat_values(K, X.shape[1]))) >= 4   # pieces of blocks
    for cuts in ([2], [1, 2, 5]):
        split, split_labels = split_pass(prof, X, w, centres, cuts)
        np.testing.assert_array_equal(split_labels, labels)
        for field in ("sums", "weights", "inertia"):
            assert np.array_equal(getattr(split, field), getattr(whole, field)), (cuts, field)
    with exact_sums.disabled():
        part = DevicePartition(prof, X, w)
        lloyd = LloydPass(part, K)
        assert not lloyd.exact
        old = lloyd.run(centres, cla.zeros(part.queue, part.n, np.int32))
    np.testing.assert_allclose(old.sums, whole.sums, rtol=1e-12)
    np.testing.assert_allclose(old.weights, whole.weights, rtol=1e-12)
    np.testing.assert_allclose(old.inertia, whole.inertia, rtol=1e-12)


# ------------------------------------------------------------ KMeans fits
def sub_devices(profile):
    if profile.type != "cpu" or profile.compute_units < 2:
        pytest.skip(f"{profile} is not split into sub-devices here")
    return oc.sub_devices(profile, [1, 1])


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_kmeans_is_split_free(profile, dtype):
    """One device, two sub-devices (their own update and the host's),
    streamed chunks under a memory budget, uneven device weights: the same
    centres, labels, inertia and iterations, bit for bit."""
    from oclclust.cluster.kmeans import kmeans
    needs_fp64(profile)
    subs = sub_devices(profile)
    rng = np.random.RandomState(0)
    X = np.concatenate([rng.randn(1500, 6) + c for c in rng.uniform(-4, 4, (5, 6))]).astype(dtype)
    w = rng.uniform(0.5, 2.0, len(X))
    managers = {
        "one": oc.DeviceManager([profile]),
        "two": oc.DeviceManager(subs),
        "streamed": oc.DeviceManager([profile], memory_budget=X.nbytes // 3),
        "weights": oc.DeviceManager(subs, weights=[3, 1]),
    }
    fits = {}
    for name, manager in managers.items():
        for host_update in (False, True):
            saved = kmeans.DEVICE_UPDATE
            try:
                kmeans.DEVICE_UPDATE = not host_update
                km = oc.KMeans(6, n_init=1, random_state=1, tol=1e-6, devices=manager)
                fits[name, host_update] = km.fit(X, sample_weight=w)
            finally:
                kmeans.DEVICE_UPDATE = saved
    assert len(set(km.devices_.__repr__() for km in fits.values())) > 1   # splits differ
    ref = fits["one", False]
    for key, km in fits.items():
        assert np.array_equal(km.cluster_centers_, ref.cluster_centers_), key
        assert np.array_equal(km.labels_, ref.labels_), key
        assert km.inertia_ == ref.inertia_, key
        assert km.n_iter_ == ref.n_iter_, key
