"""The fused Lloyd pass (labels, partial sums, inertia) against numpy in float64.

Every kernel variant a profile can lead to is run: the profile's own, the
tiled one with centroids in local or in global memory, the row-wise one, and
Kahan-compensated float sums for devices without fp64.
"""
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

from oclclust.runtime.codegen import kernel
from oclclust.passes.lloyd import LloydPass, LloydSpec
from oclclust.passes.lloyd_gemm import (WALK_CELLS_PER_ITEM, WALK_STAGE_BYTES,
                                        AccumulateSpec, sums_plan)
from oclclust.passes.lloyd_mma import MAX_D, tensor_cores
from oclclust.runtime.partition import DevicePartition
from oclclust.runtime.reduce import partial_buffer

FLOATS = [np.float32, np.float64]

VARIANTS = {   # profile tweaks: name -> replace(profile, **tweak)
    "shipped": {},
    "tiled": dict(lloyd_variant="tiled"),
    "tiled-global": dict(lloyd_variant="tiled", local_mem_size=800, local_memory_fraction=1.0),
    "rowwise": dict(lloyd_variant="rowwise"),
    "kahan": dict(fp64=False),
    "tiled-kahan": dict(fp64=False, lloyd_variant="tiled"),
    "gemm": dict(lloyd_variant="gemm"),
    "gemm-kahan": dict(fp64=False, lloyd_variant="gemm"),
    "gemm-scalar": dict(lloyd_variant="gemm", lloyd_vector_width=1),
    "gemm-walk": dict(lloyd_variant="gemm", lloyd_sums_walk=1),   # sums of few cells walked
    "gemm-walk-kahan": dict(fp64=False, lloyd_variant="gemm", lloyd_sums_walk=1),
    "mma": dict(lloyd_variant="mma"),     # tensor cores where there are, else gemm
    # register blocks of 3 rows x 3 vectors of centroids, chunks of 2 blocks:
    # k=13 pads a panel, n=1001 leaves a ragged block and chunk
    "blocked": dict(lloyd_variant="blocked", blocked_rows=3, blocked_vectors=3,
                    blocked_unroll=3, blocked_chunk=2),
    "blocked-kahan": dict(fp64=False, lloyd_variant="blocked", blocked_rows=3,
                          blocked_chunk=5),
}


def planned_variant(profile, dtype, d):
    """The variant the planner must pick for *profile* (its own choice)."""
    if profile.term("lloyd_variant") != "mma":
        return profile.term("lloyd_variant")
    mma = tensor_cores(profile) and np.dtype(dtype) == np.float32 and d <= MAX_D
    return "mma" if mma else "gemm"


def variant(profile, name):
    return profile.replace(**VARIANTS[name])


def reference(X, centres, w):
    """Labels, k x d sums, k weights, inertia and distances in float64."""
    X64, C64 = X.astype(np.float64), centres.astype(np.float64)
    w = np.ones(len(X)) if w is None else w.astype(np.float64)
    d2 = ((X64[:, None, :] - C64[None]) ** 2).sum(-1)
    labels = d2.argmin(1)
    k = len(centres)
    sums = np.stack([np.bincount(labels, w * X64[:, c], minlength=k)
                     for c in range(X.shape[1])], axis=1)
    own = d2[np.arange(len(X)), labels]
    return labels, sums, np.bincount(labels, w, minlength=k), float((w * own).sum()), own


def run_pass(profile, X, centres, w=None, update=True, labels=None, precision="float32",
             spec=None):
    part = DevicePartition(profile, X, w)
    if labels is None:
        labels = cla.empty(part.queue, part.n, np.int32)
        cl.enqueue_fill_buffer(part.queue, labels.data, np.int32(-1), 0, labels.nbytes)
    lloyd = LloydPass(part, len(centres), update=update, spec=spec, precision=precision)
    stats = lloyd.run(centres.astype(np.float64), labels)
    return stats, labels, lloyd


def check_against_reference(profile, X, centres, w, sum_rtol, predict=True):
    ref_labels, ref_sums, ref_w, ref_inertia, ref_dist = reference(X, centres, w)
    stats, labels, lloyd = run_pass(profile, X, centres, w)
    np.testing.assert_array_equal(labels.get(), ref_labels)
    scale = np.abs(ref_sums).max()
    np.testing.assert_allclose(stats.sums, ref_sums, rtol=sum_rtol, atol=sum_rtol * scale)
    np.testing.assert_allclose(stats.weights, ref_w, rtol=sum_rtol)
    assert stats.inertia == pytest.approx(ref_inertia, rel=1e-5)
    np.testing.assert_allclose(lloyd.min_dist.get(), ref_dist, rtol=1e-5,
                               atol=1e-6 * ref_dist.max())
    assert stats.n_changed == len(X) and stats.n_nonfinite == 0
    again = lloyd.run(centres.astype(np.float64), labels)   # the labels it left: no change
    assert again.n_changed == 0
    np.testing.assert_array_equal(again.sums, stats.sums)   # deterministic
    if predict:   # the assignment-only kernel of predict/score
        predicted, plabels, _ = run_pass(profile, X, centres, w, update=False)
        np.testing.assert_array_equal(plabels.get(), ref_labels)
        assert predicted.sums is None
        assert predicted.inertia == pytest.approx(ref_inertia, rel=1e-5)
    return lloyd.spec


# Not the full grid: each case is a kernel build, and cold builds are slow on PoCL.
PASS_CASES = [("shipped", np.float32, False), ("shipped", np.float64, False),
              ("shipped", np.float32, True), ("shipped", np.float64, True),
              ("tiled", np.float32, False), ("tiled", np.float64, True),
              ("tiled-global", np.float32, True),
              ("rowwise", np.float32, False), ("rowwise", np.float64, True),
              ("kahan", np.float32, False), ("kahan", np.float32, True),
              ("tiled-kahan", np.float32, True),
              ("gemm", np.float32, False), ("gemm", np.float64, True),
              ("gemm", np.float32, True), ("gemm-kahan", np.float32, True),
              ("gemm-scalar", np.float32, False), ("mma", np.float32, False),
              ("mma", np.float32, True), ("mma", np.float64, False),
              ("blocked", np.float32, False), ("blocked", np.float64, True),
              ("blocked-kahan", np.float32, True)]


@pytest.mark.parametrize("name, dtype, weighted", [
    pytest.param(*case, id=f"{case[0]}-{case[1].__name__}{'-weighted' * case[2]}")
    for case in PASS_CASES])
@pytest.mark.covering(1)
def test_pass_matches_numpy(profile, make_blobs, name, dtype, weighted):
    prof = variant(profile, name)
    X, _ = make_blobs(n=1001, d=5, k=13, seed=1, dtype=dtype)   # k=13: ragged tiles
    centres = X[:13] + dtype(0.25)   # a point of each blob: no near-ties
    w = np.random.RandomState(0).uniform(0, 3, len(X)).astype(dtype) if weighted else None
    spec = check_against_reference(prof, X, centres, w, 1e-12 if prof.fp64 else 1e-6)
    assert spec.acc_double == prof.fp64
    if name.startswith(("tiled", "rowwise", "blocked", "gemm", "mma")):
        assert spec.variant == planned_variant(prof, dtype, X.shape[1])
    if name == "tiled-global":
        assert not spec.stage_centers


@pytest.mark.parametrize("dtype, d", [(np.float32, 19), (np.float64, 19), (np.float32, 32)],
                         ids=["float32-d19", "float64-d19", "float32-d32"])
def test_blocked_vector_epilogue_matches_numpy(profile, make_blobs, dtype, d):
    """The blocked variant's per-row epilogue in vectors: the winner's exact
    distance and its sums a vector of dimensions at a time, d = 19 leaving a
    scalar tail of both (16 or 8 lanes, sums 8 a vector), weighted rows."""
    prof = profile.replace(lloyd_variant="blocked", blocked_rows=3, blocked_vectors=2,
                           blocked_chunk=2)
    X, _ = make_blobs(n=517, d=d, k=37, seed=d, dtype=dtype)
    centres = X[:37] + dtype(0.25)
    w = np.random.RandomState(2).uniform(0, 3, len(X)).astype(dtype)
    spec = check_against_reference(prof, X, centres, w, 1e-12, predict=False)
    assert (spec.variant, spec.rb) == ("blocked", 3)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_blocked_exact_ties_go_to_the_lowest_index(profile, make_blobs, dtype):
    """Duplicate centres in neighbouring lanes, in the same lane of other
    vectors and in other panels: the lanes' minima, reduced in halves, give
    the lowest index, as numpy's argmin and the rowwise variant."""
    prof = profile.replace(lloyd_variant="blocked", blocked_rows=2, blocked_vectors=2,
                           blocked_chunk=3)
    X, _ = make_blobs(n=301, d=6, k=5, seed=7, dtype=dtype)
    base = X[:5] + dtype(0.1)
    order = np.random.RandomState(3).randint(0, 5, 70)
    order[:5] = [4, 3, 2, 1, 0]
    centres = base[order]
    ref = ((X[:, None].astype(np.float64) - centres[None]) ** 2).sum(-1).argmin(1)
    stats, labels, lloyd = run_pass(prof, X, centres)
    assert lloyd.spec.variant == "blocked" and lloyd.spec.kp > lloyd.spec.cv * lloyd.spec.vw
    np.testing.assert_array_equal(labels.get(), ref)
    assert set(ref) <= set(range(5))
    _, rowwise, _ = run_pass(profile.replace(lloyd_variant="rowwise"), X, centres)
    np.testing.assert_array_equal(labels.get(), rowwise.get())


SHAPES = {   # n, d, k
    "one-point": (1, 3, 1),
    "fewer-points-than-work-items": (3, 1, 2),
    "wide": (300, 67, 5),
    "many-clusters": (700, 2, 130),
}


@pytest.mark.parametrize("name", ["shipped", "tiled", "gemm", "gemm-walk", "mma", "blocked"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.covering(1)
def test_edge_shapes(profile, make_blobs, shape, name):
    n, d, k = SHAPES[shape]
    X, _ = make_blobs(n=n, d=d, k=k, seed=n, dtype=np.float32)
    centres = X[:k] + np.float32(0.01)   # a point of each blob: no near-ties
    check_against_reference(variant(profile, name), X, centres, None, 1e-12, predict=False)


# gemm tiles (tm, tn, rm, rn, kc, vw, prefetch): small, so that n, k and
# d = 5 or 67 leave ragged point, centroid and depth tiles; the rows' winners
# in the chunks' local memory (most) or in their own (8x4..x2 x0, 32x16..x2 x2)
GEMM_TILES = [(8, 4, 2, 2, 2, 2, 0), (4, 8, 1, 2, 4, 1, 1), (16, 16, 4, 2, 8, 2, 1),
              (32, 16, 4, 2, 16, 2, 0), (16, 32, 4, 8, 8, 4, 1), (16, 8, 2, 4, 8, 1, 0),
              (8, 4, 2, 2, 2, 2, 2), (4, 8, 1, 2, 4, 1, 2), (32, 16, 4, 2, 2, 2, 2),
              (16, 32, 4, 8, 8, 4, 2)]


@pytest.mark.parametrize("tiles", GEMM_TILES, ids=lambda t: "x".join(map(str, t)))
@pytest.mark.parametrize("d, k", [(5, 13), (67, 5)])
@pytest.mark.covering(1)
def test_gemm_tiles_match_numpy(profile, make_blobs, tiles, d, k):
    tm, tn, rm, rn, kc, vw, prefetch = tiles
    prof = profile.replace(lloyd_variant="gemm", lloyd_tile_rows=tm,
                           lloyd_tile_centroids=tn, lloyd_reg_rows=rm,
                           lloyd_reg_centroids=rn, lloyd_depth=kc, lloyd_vector_width=vw,
                           lloyd_prefetch=prefetch)
    X, _ = make_blobs(n=203, d=d, k=k, seed=d, dtype=np.float32)
    centres = X[:k] + np.float32(0.25)
    w = np.random.RandomState(1).uniform(0, 3, len(X)).astype(np.float32)
    spec = check_against_reference(prof, X, centres, w, 1e-12, predict=False)
    assert (spec.variant, spec.tm, spec.rm, spec.rn, spec.vw, spec.prefetch) == (
        "gemm", tm, rm, rn, vw, prefetch)
    assert spec.tn <= tn and spec.dp % spec.kc == 0 and spec.kp % spec.tn == 0


@pytest.mark.parametrize("vw", [1, 2])
def test_gemm_exact_ties_go_to_the_lowest_index(profile, make_blobs, vw):
    """Duplicate centres in other work-items' columns and other centroid
    tiles: the lowest index wins, as numpy's argmin."""
    prof = profile.replace(lloyd_variant="gemm", lloyd_tile_rows=8,
                           lloyd_tile_centroids=4, lloyd_reg_rows=2,
                           lloyd_reg_centroids=2, lloyd_depth=2, lloyd_vector_width=vw)
    X, _ = make_blobs(n=150, d=3, k=4, seed=5, dtype=np.float32)
    base = X[:4] + np.float32(0.1)
    centres = base[[3, 1, 1, 0, 2, 3, 0, 2, 1, 0, 3]]   # each one twice or more
    ref = ((X[:, None].astype(np.float64) - centres[None]) ** 2).sum(-1).argmin(1)
    stats, labels, lloyd = run_pass(prof, X, centres)
    assert lloyd.spec.variant == "gemm"
    np.testing.assert_array_equal(labels.get(), ref)
    assert set(ref) == {0, 1, 3, 4}


# rows per work-item of the sums kernel: the default (2 here), one, several
# passes over a chunk's member list (8: ~128 members, a list of 64) and a
# chunk of more rows than n (32 x 32 > 500)
@pytest.mark.parametrize("rows_per_item", [None, 1, 8, 32])
def test_gemm_accumulates_by_cluster_slices(profile, make_blobs, monkeypatch, rows_per_item):
    """Little local memory: each work-group of the sums kernel owns a few
    clusters, several slices and row segments."""
    if rows_per_item is not None:
        planned = LloydSpec.accumulate_spec
        monkeypatch.setattr(LloydSpec, "accumulate_spec", lambda spec: dataclasses.replace(
            planned(spec), rows_per_item=rows_per_item))
    prof = profile.replace(lloyd_variant="gemm", local_mem_size=4096,
                           local_memory_fraction=1.0, lloyd_tile_rows=8,
                           lloyd_tile_centroids=8, lloyd_reg_rows=4,
                           lloyd_reg_centroids=4, lloyd_depth=4)
    X, _ = make_blobs(n=500, d=20, k=40, seed=3, dtype=np.float32)
    spec = check_against_reference(prof, X, X[:40] + np.float32(0.1), None, 1e-12,
                                   predict=False)
    assert spec.variant == "gemm" and spec.slice < 40
    assert spec.accumulate_spec().rows_per_item == (rows_per_item or 2)


def launch_sums(queue, spec, x, w, labels, segments):
    """The sums kernel of *spec* on *segments* row segments, as LloydPass
    launches it: its (part_sums, part_weights) on the host."""
    n, d = x.shape
    slices = -(-spec.k // spec.slice)
    sums = partial_buffer(queue, segments, spec.k * d, spec.acc_double)
    weights = partial_buffer(queue, segments, spec.k, spec.acc_double)
    kernel(queue.context, spec, "accumulate_sums")(
        queue, (segments * slices * spec.acc_wg,), (spec.acc_wg,), x.data, np.int64(n),
        np.int64(d), (x if w is None else w).data, labels.data, sums.data, weights.data,
        np.int64(-(-n // segments)), np.int32(slices))
    return sums.get(queue), weights.get(queue)


@pytest.mark.parametrize("dtype, acc_double, weighted", [
    (np.float32, True, False), (np.float64, True, True), (np.float32, False, True)])
def test_gemm_sums_equal_bitwise_for_any_rows_per_item(profile, dtype, acc_double, weighted):
    """The sums kernel adds each cell's members in row order, whatever rows a
    work-item takes: every rows_per_item (scalar and 4-wide label reads,
    several passes over a chunk's member list when most rows fall in one
    slice, chunks past the end) and the walk kernel (cells a work-item one
    to several, slices or one, chunks of one row to past the end) give the
    same partial sums bit for bit, which match numpy."""
    n, d, k, segments = 1001, 5, 13, 3        # segments of 334 rows: not chunk-aligned
    rng = np.random.RandomState(7)
    X = (rng.randn(n, d) * 10).astype(dtype)
    w = rng.uniform(0.5, 2, n).astype(dtype) if weighted else None
    labels = rng.randint(0, k, n).astype(np.int32)
    labels[rng.rand(n) < 0.6] = 5             # most rows in one slice
    q = profile.queue()
    x, lab = cla.to_device(q, X), cla.to_device(q, labels)
    wd = None if w is None else cla.to_device(q, w)
    base = AccumulateSpec(dtype=np.dtype(dtype).name, acc_double=acc_double, d=d, k=k,
                          slice=4, acc_wg=8, weighted=weighted)   # slices of 4, 4, 4, 1
    variants = [dataclasses.replace(base, rows_per_item=r) for r in (1, 3, 4, 32)] + [
        dataclasses.replace(base, walk=True, slice=s, acc_wg=wg, rows_per_item=r)
        for s, wg, r in ((4, 8, 1), (13, 32, 3), (13, 8, 64), (13, 128, 0))]
    got = {spec: launch_sums(q, spec, x, wd, lab, segments) for spec in variants}
    first = got[variants[0]]
    for spec, (sums, weights) in got.items():
        np.testing.assert_array_equal(sums, first[0], err_msg=str(spec))
        np.testing.assert_array_equal(weights, first[1], err_msg=str(spec))
    def total(part, size):   # the segments' sums (Kahan: less their compensations)
        slabs = part.astype(np.float64).reshape(-1, segments, size).sum(axis=1)
        return slabs[0] - slabs[1] if len(slabs) == 2 else slabs[0]
    sums, weights = total(first[0], k * d), total(first[1], k)
    ww = np.ones(n) if w is None else w.astype(np.float64)
    want = np.zeros((k, d))
    np.add.at(want, labels, X.astype(np.float64) * ww[:, None])
    rtol = 1e-12 if acc_double else 1e-6
    np.testing.assert_allclose(sums.reshape(k, d), want, rtol=rtol, atol=rtol * np.abs(want).max())
    np.testing.assert_allclose(weights, np.bincount(labels, ww, k), rtol=rtol)


@pytest.mark.parametrize("dtype, weighted", [(np.float32, False), (np.float64, True)])
@pytest.mark.parametrize("name", ["gemm", "mma"])
def test_walked_sums_equal_the_member_lists(profile, make_blobs, name, dtype, weighted):
    """A pass whose sums are walked (lloyd_sums_walk 1, few cells) gives the
    member-list kernel's labels, sums, weights and inertia bit for bit."""
    rng = np.random.RandomState(5)
    X, _ = make_blobs(n=3001, d=4, k=7, seed=5, dtype=dtype)
    X += dtype(50)   # far from the origin: the sums' bits depend on their order
    w = rng.uniform(0.5, 2, len(X)).astype(dtype) if weighted else None
    centres = X[rng.choice(len(X), 7, replace=False)].astype(np.float64)
    got = {}
    for walk in (0, 1):
        stats, labels, lloyd = run_pass(variant(profile, name).replace(lloyd_sums_walk=walk),
                                        X, centres, w)
        assert lloyd.spec.labels_first and lloyd.spec.walk == bool(walk)
        got[walk] = stats, labels.get()
    np.testing.assert_array_equal(got[1][1], got[0][1])
    for field in ("sums", "weights", "inertia"):
        assert np.array_equal(getattr(got[1][0], field), getattr(got[0][0], field)), field


@pytest.mark.parametrize("walk, d, k, planned", [
    (0, 2, 3, False), (1, 2, 3, True), (1, 16, 32, True), (1, 8, 1000, False),
    (1, 128, 4, False)])
def test_sums_walk_is_planned_for_few_cells(profile, walk, d, k, planned):
    """lloyd_sums_walk plans the walk where each work-item's cells (at most
    WALK_CELLS_PER_ITEM) and a chunk's staged rows fit; else the lists."""
    slice_, acc_wg, walked = sums_plan(profile.replace(lloyd_sums_walk=walk), d, k)
    assert walked == planned
    if walked:
        assert slice_ == k and k * (d + 1) <= WALK_CELLS_PER_ITEM * acc_wg
        spec = AccumulateSpec(d=d, k=k, slice=slice_, acc_wg=acc_wg, walk=True, weighted=True)
        assert spec.local_bytes() <= min(WALK_STAGE_BYTES, profile.local_memory_budget)


def test_gemm_falls_back_when_it_does_not_fit(profile, make_blobs):
    prof = profile.replace(lloyd_variant="gemm", private_floats=16,
                           lloyd_reg_rows=8, lloyd_reg_centroids=8)
    X, _ = make_blobs(n=50, d=3, k=4, seed=4, dtype=np.float32)
    spec = check_against_reference(prof, X, X[:4] + np.float32(0.1), None, 1e-12,
                                   predict=False)
    assert spec.variant == "tiled"


@pytest.mark.parametrize("name", ["shipped", "gemm", "mma"])
def test_nonfinite_rows_are_counted(profile, name):
    X = np.random.RandomState(0).normal(size=(200, 3)).astype(np.float32)
    X[7, 2], X[150, 0] = np.nan, np.inf
    stats, _, _ = run_pass(variant(profile, name), X, X[[0, 1]])
    assert stats.n_changed == len(X)
    assert stats.n_nonfinite == 2


def shifted_blobs(n, seed, offset=1000.0):
    """float32 points far from the origin: plain float sums of them lose digits."""
    rng = np.random.RandomState(seed)
    centres = offset + np.array([[0, 0], [20, 0], [0, 20], [20, 20]], np.float64)
    X = np.empty((n, 2), np.float32)
    y = np.arange(n) % 4
    for c in range(2):   # in place, column by column: 10 million rows stay cheap
        X[:, c] = centres[y, c] + rng.standard_normal(n).astype(np.float32)
    return X, centres


@pytest.mark.parametrize("name", ["kahan", "tiled-kahan", "gemm-walk-kahan"])
def test_kahan_sums_keep_float64_accuracy(profile, name):
    """Without fp64, the sum of 2 million float32 values ~1000 stays within
    1e-5 relative of float64; a plain float sum of a quarter of them (one
    work-item's share on a 2-core CPU) is off by ~1e-3."""
    X, centres = shifted_blobs(2_000_000, seed=1)
    centre = X.astype(np.float64).mean(axis=0, keepdims=True)   # k=1: every row sums into it
    stats, labels, _ = run_pass(variant(profile, name), X, centre)
    ref = X.astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(stats.sums[0], ref, rtol=1e-5)
    assert stats.weights[0] == len(X)
    quarter = X[:len(X) // 4, 0]
    plain = np.cumsum(quarter, dtype=np.float32)[-1]   # sequential float additions
    assert abs(plain / quarter.astype(np.float64).sum() - 1) > 1e-4


@pytest.mark.parametrize("name", ["shipped", "kahan", "gemm-kahan"])
def test_centres_on_ten_million_points(profile, name):
    """The precision requirement: centres within 1e-5 relative of a float64
    reference on 10 million float32 points (one Lloyd update)."""
    X, centres = shifted_blobs(10_000_000, seed=2)
    stats, labels, _ = run_pass(variant(profile, name), X, centres)
    labels = labels.get()
    counts = np.bincount(labels, minlength=4)
    ref = np.stack([np.bincount(labels, X[:, c], minlength=4) for c in range(2)], axis=1)
    ref /= counts[:, None]
    np.testing.assert_array_equal(stats.weights, counts)
    np.testing.assert_allclose(stats.sums / stats.weights[:, None], ref, rtol=1e-5)
