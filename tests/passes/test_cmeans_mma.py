"""The tensor-core fuzzy c-means pass (oclclust/passes/cmeans_mma.py,
templates/cmeans_mma/cmeans_mma_pass.cl.mako) against a float64 numpy
reference on ragged shapes (n, d, c not multiples of the tiles): on NVIDIA
GPUs with tensor cores the PTX kernel as the planner picks it; elsewhere the
same cases check that the planner offers it nowhere else (the portable
kernels then meet the same reference), and the kernel with its products
emulated in plain OpenCL runs on every runtime.
"""
import dataclasses

import numpy as np
import pytest

import oclclust as oc
from oclclust.passes import cmeans, cmeans_mma
from oclclust.passes.lloyd_mma import tensor_cores
from oclclust.runtime import codegen
from oclclust.runtime.partition import DevicePartition


def reference(X, w, C, m):
    """(c x (d+1) statistics [sum w u^m x | sum w u^m], objective, n x c
    memberships) in float64, eq. 3 in ratios to the row's smallest distance."""
    X, C = X.astype(np.float64), C.astype(np.float64)
    d2 = ((X[:, None, :] - C[None]) ** 2).sum(-1)
    low = d2.min(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(low > 0, (low / d2) ** (1.0 / (m - 1.0)), (d2 == 0).astype(float))
    u = v / v.sum(axis=1, keepdims=True)
    um = w[:, None] * u ** m
    stats = np.concatenate([um.T @ X, um.sum(axis=0)[:, None]], axis=1)
    return stats, float((um * d2).sum()), u


def data(n, d, c, seed):
    """Blobs about c centres far from the origin (the shift keeps the
    expansion's digits), weights, and starting centres near c rows."""
    rng = np.random.RandomState(seed)
    centres = rng.uniform(-6, 6, (c, d)) + 40.0
    X = (centres[np.arange(n) % c] + rng.normal(size=(n, d))).astype(np.float32)
    w = rng.uniform(0.5, 2.0, n).astype(np.float32)
    return X, w, X[rng.choice(n, c, replace=False)].astype(np.float64) + 0.3


def near_pairs(n, d, c, seed):
    """c / 2 tight blobs far from the origin with two starting centres 0.2
    off each blob's centre: every row is fuzzy between two centres whose
    distances are ~1/200 of ||x'||^2 + ||c'||^2 (the expansion's error
    against the distance is largest there, and the statistics add it up)."""
    rng = np.random.RandomState(seed)
    blobs = rng.uniform(-6, 6, (c // 2, d)) + 40.0
    X = (blobs[np.arange(n) % (c // 2)] + 0.3 * rng.normal(size=(n, d))).astype(np.float32)
    w = rng.uniform(0.5, 2.0, n).astype(np.float32)
    C = np.concatenate([blobs + 0.2 * rng.normal(size=blobs.shape) for _ in range(2)])
    return X, w, C


def run(profile, X, w, C, m, update, write_u, spec=None, precision="float32"):
    part = DevicePartition(profile, X, w)
    p = cmeans.CMeansPass(part, C.shape[0], m, update=update, write_u=write_u, spec=spec,
                          precision=precision)
    stats, objective, bad = p.run(C)
    u = p.u.get(part.queue).reshape(len(X), -1) if write_u else None
    return p.spec, stats, objective, bad, u


def check(got, X, w, C, m):
    spec, stats, objective, bad, u = got
    want_stats, want_obj, want_u = reference(X, w.astype(np.float64), C, m)
    assert bad == 0
    assert objective == pytest.approx(want_obj, rel=2e-5)
    if stats is not None:
        scale = np.abs(want_stats).max(axis=0, keepdims=True)
        np.testing.assert_allclose(stats / scale, want_stats / scale, rtol=0, atol=2e-5)
    if u is not None:
        np.testing.assert_allclose(u, want_u, rtol=0, atol=2e-4)
    if u is not None and u.shape[1] > 1:
        top = np.sort(want_u, axis=1)[:, -2:]
        clear = top[:, 1] - top[:, 0] > 1e-3
        assert (u.argmax(axis=1) == want_u.argmax(axis=1))[clear].all()


def test_operands_give_the_distances():
    """||x'||^2 + ||c'||^2 - 2 x'.c' from the operands is ||x - c||^2
    (float64 on the float32 operands; zero padding past d and c)."""
    X, _, C = data(300, 37, 13, 3)
    dp, kp = 40, 16
    ops = cmeans_mma.operands(C, dp, kp).astype(np.float64)
    cp, cn = ops[:kp * dp].reshape(kp, dp), ops[kp * dp:kp * dp + kp]
    shift, raw = ops[kp * dp + kp:kp * dp + kp + dp], ops[kp * dp + kp + dp:]
    np.testing.assert_array_equal(raw, C.astype(np.float32).ravel())
    assert not cp[13:].any() and not cp[:, 37:].any() and not cn[13:].any()
    assert not shift[37:].any()
    xs = np.zeros((len(X), dp))
    xs[:, :37] = X - shift[:37]
    got = (xs * xs).sum(1)[:, None] + cn[None, :13] - 2 * xs @ cp[:13].T
    want = ((X[:, None, :].astype(np.float64) - C[None]) ** 2).sum(-1)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_offered_only_with_tensor_cores(profile):
    """First where cmeans_mma asks and the device has tensor cores; never
    for float64 or d above MAX_D, nor where the term is off."""
    on = profile.replace(cmeans_mma=1)
    first = next(cmeans.candidate_specs(on, np.float32, 24, 100, True, False, False, True))
    assert isinstance(first, cmeans.MmaCMeansSpec) == tensor_cores(profile)
    for dtype, d in ((np.float64, 24), (np.float32, cmeans_mma.MAX_D + 1)):
        spec = next(cmeans.candidate_specs(on, dtype, d, 100, True, False, False, True))
        assert not isinstance(spec, cmeans.MmaCMeansSpec)
    off = next(cmeans.candidate_specs(profile.replace(cmeans_mma=0), np.float32, 24, 100,
                                      True, False, False, True))
    assert not isinstance(off, cmeans.MmaCMeansSpec)


# several row tiles and warps' steps, d and c ragged against 8, 16 and 64;
# c=300 takes a smaller tile (its memberships in local memory)
SHAPES = [(203, 5, 13, 2.0), (1000, 37, 33, 2.0), (4099, 24, 100, 2.0), (517, 128, 17, 1.7),
          (3001, 64, 300, 2.0), (777, 9, 1, 2.0)]


@pytest.mark.parametrize("n, d, c, m", SHAPES)
def test_pass_matches_float64(profile, n, d, c, m):
    """Statistics, objective, memberships and labels within float32
    rounding of numpy's float64; the mma pass planned exactly where tensor
    cores are (else the portable one meets the same reference)."""
    X, w, C = data(n, d, c, n)
    codegen.forget_plans("cmeans")
    on = profile.replace(cmeans_mma=1)
    for update, write_u in ((True, False), (False, True)):
        got = run(on, X, w, C, m, update, write_u)
        assert isinstance(got[0], cmeans.MmaCMeansSpec) == tensor_cores(profile)
        if tensor_cores(profile):   # the statistics' GEMM where its tiles fit the registers
            assert got[0].stats_mma == (update and cmeans_mma.stats_slots(
                d, c, got[0].wg) <= cmeans_mma.MAX_SLOTS)
        check(got, X, w, C, m)


@pytest.mark.parametrize("emulate", [False, True], ids=["planned", "emulated"])
def test_rows_at_centres_are_exact(profile, emulate):
    """Rows that coincide with a centre have distance exactly 0 (the
    re-check near 0): membership exactly 1 there, 1/2 at two equal centres,
    0 elsewhere; as the portable pass gives them."""
    X, w, C = data(500, 21, 9, 11)
    C[:4] = X[[3, 50, 77, 77]]                  # rows 3, 50 at a centre; 77 at two
    spec = (next(cmeans.mma_specs(profile, np.float32, 21, 9, False, True, True, True,
                                  emulate=True)) if emulate else None)
    codegen.forget_plans("cmeans")
    got = run(profile.replace(cmeans_mma=1), X, w, C, 2.0, False, True, spec=spec)
    assert isinstance(got[0], cmeans.MmaCMeansSpec) == (emulate or tensor_cores(profile))
    u = got[4]
    np.testing.assert_array_equal(u[[3, 50]], np.eye(9, dtype=np.float32)[:2])
    np.testing.assert_array_equal(u[77], np.array([0, 0, .5, .5] + [0] * 5, np.float32))
    check(got, X, w, C, 2.0)


@pytest.mark.parametrize("emulate", [False, True], ids=["planned", "emulated"])
def test_float64_centres_as_float32(profile, emulate):
    """A pass at float64 centres gives the bits of one at the same centres
    made float32 (as the portable pass: the fit's final pass against
    predict_proba and score at cluster_centers_)."""
    X, w, C = data(400, 13, 11, 13)
    C = C + 1e-9 * np.arange(C.size).reshape(C.shape)     # not float32 values
    spec = (next(cmeans.mma_specs(profile, np.float32, 13, 11, False, True, True, True,
                                  emulate=True)) if emulate else None)
    codegen.forget_plans("cmeans")
    on = profile.replace(cmeans_mma=1)
    a = run(on, X, w, C, 2.0, False, True, spec=spec)
    b = run(on, X, w, C.astype(np.float32).astype(np.float64), 2.0, False, True, spec=spec)
    assert isinstance(a[0], cmeans.MmaCMeansSpec) == (emulate or tensor_cores(profile))
    assert a[2] == b[2]
    np.testing.assert_array_equal(a[4], b[4])


def test_nonfinite_rows_are_counted(profile):
    """A NaN row is counted as the portable pass counts it (not clamped)."""
    X, w, C = data(300, 11, 7, 5)
    X[17, 3] = np.nan
    codegen.forget_plans("cmeans")
    got = run(profile.replace(cmeans_mma=1), X, w, C, 2.0, True, False)
    assert got[3] > 0


def test_fit_matches_float64(profile):
    """A whole fit on the planner's pass (mma where tensor cores are) from
    the same start as numpy's float64 iteration: the same centres and
    objective within float32 rounding."""
    X, w, C = data(2000, 24, 10, 7)
    ref = C.copy()
    for _ in range(6):
        stats, _, _ = reference(X, np.ones(len(X)), ref, 2.0)
        ref = stats[:, :-1] / stats[:, -1:]
    _, obj, u = reference(X, np.ones(len(X)), ref, 2.0)
    fc = oc.FuzzyCMeans(10, init=C, max_iter=6, tol=0,
                        devices=oc.DeviceManager([profile.replace(cmeans_mma=1)])).fit(X)
    used = [plan[0] for key, plan in codegen.plans("cmeans").items()
            if key[0].term("cmeans_mma") and key[2] == 24 and key[3] == 10]
    assert used and all(isinstance(s, cmeans.MmaCMeansSpec) == tensor_cores(profile)
                        for s in used)
    np.testing.assert_allclose(fc.cluster_centers_, ref, rtol=0, atol=1e-4)
    assert fc.objective_ == pytest.approx(obj, rel=1e-5)
    np.testing.assert_allclose(fc.u_, u, atol=1e-4)


# the emulated products run slowly (two barriers a product): small shapes
EMULATED = [(203, 5, 13, 2.0), (300, 37, 33, 1.7)]


@pytest.mark.parametrize("n, d, c, m", EMULATED)
def test_emulated_pass_matches_float64(profile, n, d, c, m):
    """The tensor-core kernel with its products emulated in plain OpenCL
    (the PTX fragment layout through local memory), on every runtime: every
    line but the PTX against the float64 reference, each mode."""
    X, w, C = data(n, d, c, n + d)
    for update, write_u, stats_mma in ((True, False, True), (True, False, False),
                                       (False, True, False), (False, False, False)):
        spec = next(cmeans.mma_specs(profile, np.float32, d, c, update, write_u, True,
                                     m == 2.0, emulate=True))
        assert spec.emulate and spec.stats_mma == update
        spec = dataclasses.replace(spec, stats_mma=stats_mma)
        check(run(profile, X, w, C, m, update, write_u, spec=spec), X, w, C, m)
    if not profile.fp64:
        return
    # the statistics' Kahan pairs (devices without fp64), emulated
    spec = dataclasses.replace(spec, update=True, write_u=False, stats_mma=True,
                               acc_double=False)
    check(run(profile.replace(fp64=False), X, w, C, m, True, False, spec=spec), X, w, C, m)


@pytest.mark.parametrize("mode", ["planned", "emulated", "truncated"])
@pytest.mark.parametrize("n, d, c", [(300, 64, 8), (2000, 128, 10)])
@pytest.mark.covering(1)
def test_rows_near_two_centres(profile, mode, n, d, c):
    """Rows fuzzy between two near centres (near_pairs): their distances are
    re-checked exactly where the expansion's error bound is not small
    against them (cmeans_mma.recheck_ratio), so the statistics, objective
    and memberships meet the float64 reference.  "truncated": the products
    emulated as the tensor cores' truncating accumulation (aligned to the
    largest, cut toward zero: mma_fragments.cl.mako), under which the old
    re-check (only below 2^-12 of ||x'||^2 + ||c'||^2, the running dot
    product on the tensor cores) gave the objective 1.2e-4 off, as the H200
    gave 3001 x 64, c=300 (float fma's emulation passed); "planned": the PTX
    kernel on tensor cores (else the portable pass)."""
    if mode != "planned" and n > 300:
        pytest.skip("the emulated products run slowly: the small shape")
    X, w, C = near_pairs(n, d, c, n)
    codegen.forget_plans("cmeans")
    for update, write_u in ((True, False), (False, True)):
        spec = None
        if mode != "planned":
            spec = next(cmeans.mma_specs(profile, np.float32, d, c, update, write_u, True,
                                         True, emulate=True))
            spec = dataclasses.replace(spec, truncate=mode == "truncated")
        got = run(profile.replace(cmeans_mma=1), X, w, C, 2.0, update, write_u, spec=spec)
        assert isinstance(got[0], cmeans.MmaCMeansSpec) == (spec is not None or
                                                            tensor_cores(profile))
        check(got, X, w, C, 2.0)


def check_fast(got, X, w, C, m, precision):
    """A fast *precision* ("tf32", "bf16"): every distance within TARGET
    (2^-8, 2^-5; + OPERAND_ROUNDING) of float64's relatively, so each
    membership within cmeans_mma.membership_bound of float64's relatively
    (+ float32 rounding), u^m's within m times that, and the statistics and
    objective within their sums of |terms| times that, plus float32
    rounding; labels float64's where the largest membership is clear."""
    spec, stats, objective, bad, u = got
    want_stats, want_obj, want_u = reference(X, w.astype(np.float64), C, m)
    e = cmeans_mma.TARGET[precision] + cmeans_mma.OPERAND_ROUNDING
    rel_u = cmeans_mma.membership_bound(precision, m)
    assert bad == 0
    if u is not None:
        assert (np.abs(u - want_u) <= rel_u * want_u + 2e-6).all()
        top = np.sort(want_u, axis=1)[:, -2:]
        clear = top[:, 1] * (1 - rel_u) > top[:, 0] * (1 + rel_u) + 4e-6
        assert (u.argmax(axis=1) == want_u.argmax(axis=1))[clear].all()
    if stats is not None:
        um = reference(np.abs(X), w.astype(np.float64), C, m)[0]   # sums of |terms|
        scale = np.abs(want_stats).max(axis=0, keepdims=True)
        assert (np.abs(stats - want_stats) <= m * rel_u * um + 2e-5 * scale).all()
    assert abs(objective - want_obj) <= (m * rel_u + e) * want_obj + 1e-6 * want_obj


@pytest.mark.parametrize("precision", ["tf32", "bf16"])
@pytest.mark.parametrize("mode", ["planned", "emulated", "truncated"])
@pytest.mark.parametrize("n, d, c, m, pairs", [(203, 5, 13, 2.0, False), (300, 37, 33, 1.7, False),
                                               (300, 64, 8, 2.0, True),
                                               (3001, 64, 300, 2.0, False),
                                               (4099, 24, 100, 2.0, False),
                                               (2000, 128, 10, 1.5, True)])
@pytest.mark.covering(1)
def test_fast_within_its_bound(profile, mode, n, d, c, m, pairs, precision):
    """precision "tf32" / "bf16": one TF32 / BF16 product a step, its
    distances re-checked where the expansion's bound is not below 2^-8 /
    2^-5 of them; memberships, statistics and objective within check_fast's
    bounds of float64 (emulated on every runtime, small shapes; "planned":
    the PTX kernel on tensor cores, else the portable float32 pass, within
    them too)."""
    if mode != "planned" and n > 300:
        pytest.skip("the emulated products run slowly: the small shapes")
    if mode == "planned" and precision == "bf16" and not tensor_cores(profile):
        pytest.skip("the portable pass, as at tf32 (whose bound is the tighter)")
    X, w, C = (near_pairs if pairs else data)(n, d, c, n)
    codegen.forget_plans("cmeans")
    for update, write_u in ((True, False), (False, True)):
        spec = None
        if mode != "planned":
            spec = next(cmeans.mma_specs(profile, np.float32, d, c, update, write_u, True,
                                         m == 2.0, emulate=True, precision=precision))
            spec = dataclasses.replace(spec, truncate=mode == "truncated")
        got = run(profile.replace(cmeans_mma=1), X, w, C, m, update, write_u, spec=spec,
                  precision=precision)
        mma = spec is not None or tensor_cores(profile)
        assert isinstance(got[0], cmeans.MmaCMeansSpec) == mma
        assert not mma or got[0].precision == precision
        check_fast(got, X, w, C, m, precision)


def test_precision_modes():
    """Each mode is the pass's own (anything else float32); the re-check's
    ratio grows with d and is about 2^-2 for both fast modes; the stated
    membership bounds (docs/guide/precision.rst) at m = 2."""
    assert [cmeans_mma.precision_of(p) for p in ("float32", "tf32", "bf16", "float64")] == \
        ["float32", "tf32", "bf16", "float32"]
    lo, hi = (cmeans_mma.recheck_ratio("float32", d, -(-d // 8) * 8) for d in (1, 128))
    assert 0.02 < lo < hi < 0.1
    for fast in ("tf32", "bf16"):
        assert 0.25 < cmeans_mma.recheck_ratio(fast, 128, 128) < 0.27
    bounds = [cmeans_mma.membership_bound(p, 2.0) for p in ("float32", "tf32", "bf16")]
    assert 2.0 ** -12 < bounds[0] < 1.1 * 2.0 ** -12
    assert 2.0 ** -7 < bounds[1] < 1.1 * 2.0 ** -7
    assert 2.0 ** -4 < bounds[2] < 1.1 * 2.0 ** -4


@pytest.mark.parametrize("precision", ["tf32", "bf16"])
def test_fit_precision(profile, precision):
    """The estimator's precision reaches the pass: its one-product mode
    where tensor cores are (the memberships and objective at the fitted
    centres within check_fast's bounds of float64's); the portable pass
    elsewhere, the float32 fit's bits."""
    X, _, C = data(2000, 24, 10, 7)
    codegen.forget_plans("cmeans")
    devices = oc.DeviceManager([profile.replace(cmeans_mma=1)])
    fc = oc.FuzzyCMeans(10, init=C, max_iter=4, tol=0, precision=precision,
                        devices=devices).fit(X)
    used = [plan[0] for key, plan in codegen.plans("cmeans").items()
            if key[0].term("cmeans_mma") and key[2] == 24 and key[3] == 10]
    assert used and all(isinstance(s, cmeans.MmaCMeansSpec) == tensor_cores(profile)
                        for s in used)
    assert all(s.precision == cmeans_mma.precision_of(precision) for s in used
               if isinstance(s, cmeans.MmaCMeansSpec))
    check_fast((None, None, fc.objective_, 0, fc.u_), X, np.ones(len(X), np.float32),
               fc.cluster_centers_.astype(np.float64), 2.0, precision)
    if not tensor_cores(profile):
        ref = oc.FuzzyCMeans(10, init=C, max_iter=4, tol=0, devices=devices).fit(X)
        np.testing.assert_array_equal(fc.cluster_centers_, ref.cluster_centers_)
        assert fc.objective_ == ref.objective_
