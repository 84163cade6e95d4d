"""The "mma" Lloyd variant (oclclust/passes/lloyd_mma.py): the split of the centres
on every runtime, and the tensor-core pass against numpy where tensor cores
are (elsewhere the same cases check that the planner falls back to gemm);
the fast precisions ("tf32", "bf16") against numpy's float64 argmin within
their documented bound (tests/harness/tie_checks.py) on tensor cores, and
everywhere with the products emulated; planned elsewhere, bit for bit the
float32 pass.
"""
import dataclasses

import numpy as np
import pytest

from oclclust.passes.lloyd import LloydSpec, candidate_specs
from oclclust.passes.lloyd_mma import (MANTISSA_BITS, bound_terms, mma_specs, rounded,
                                       rounding_bound, tensor_cores)
from mma_layout import bf16, check_split, tf32
from test_lloyd import check_against_reference, planned_variant, run_pass
from tie_checks import FACTORS, check_contract, distances, rows_about_ties


@pytest.mark.parametrize("d, k", [(5, 10), (16, 17), (37, 30), (128, 20)])
def test_split_matches_its_layout(queue, d, k):
    """Odd and even numbers of k8 steps (swizzled rows), ragged d and k,
    magnitudes 1e-3 to 1e3."""
    rng = np.random.default_rng(d)
    check_split(queue, (rng.standard_normal((k, d))
                        * 10.0 ** rng.integers(-3, 4, (k, 1))).astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda t: t.__name__)
def test_offered_only_with_tensor_cores(profile, dtype):
    """Without tensor cores the "mma" variant's candidates are the gemm
    variant's (test_lloyd_update runs "mma" only where there are some)."""
    specs = list(candidate_specs(profile.replace(lloyd_variant="mma"),
                                 dtype, 32, 100, True, False))
    mma = tensor_cores(profile) and dtype == np.float32
    assert (specs[0].variant == "mma") == mma
    assert {s.variant for s in specs[1:]} <= {"mma", "gemm", "tiled", "rowwise"}
    if not mma:
        assert specs == list(candidate_specs(profile.replace(lloyd_variant="gemm"),
                                             dtype, 32, 100, True, False))


# several chunks and row tiles, ragged d and k, d above MAX_D (gemm)
SHAPES = [(3001, 128, 300), (1000, 37, 33), (517, 8, 17), (700, 129, 20), (4099, 64, 1000)]


@pytest.mark.parametrize("n, d, k", SHAPES)
def test_pass_matches_numpy(profile, make_blobs, n, d, k):
    prof = profile.replace(lloyd_variant="mma")
    X, _ = make_blobs(n=n, d=d, k=k, seed=d, dtype=np.float32)
    w = np.random.RandomState(2).uniform(0, 3, n).astype(np.float32)
    spec = check_against_reference(prof, X, X[:k] + np.float32(0.25), w, 1e-12)
    assert spec.variant == planned_variant(prof, np.float32, d)


def test_exact_ties_go_to_the_lowest_index(profile, make_blobs):
    """Duplicate centres in other lanes, fragments and chunks: the lowest
    index wins, as numpy's argmin."""
    prof = profile.replace(lloyd_variant="mma")
    X, _ = make_blobs(n=300, d=12, k=5, seed=6, dtype=np.float32)
    base = X[:5] + np.float32(0.1)
    order = np.random.RandomState(3).randint(0, 5, 40)
    centres = base[order]
    ref = ((X[:, None].astype(np.float64) - centres[None]) ** 2).sum(-1).argmin(1)
    stats, labels, lloyd = run_pass(prof, X, centres)
    assert lloyd.spec.variant == planned_variant(prof, np.float32, 12)
    np.testing.assert_array_equal(labels.get(), ref)


# ------------------------------------------------------------ precision modes
FAST = ["tf32", "bf16"]


@pytest.mark.parametrize("precision", FAST)
@pytest.mark.parametrize("d, k", [(5, 3), (40, 17), (128, 20)])
def test_fast_split_matches_its_layout(queue, d, k, precision):
    """The bf16 layout: one slot group (plain rows), ragged, two and four
    (swizzled); magnitudes 1e-3 to 1e3; both modes' rounding terms."""
    rng = np.random.default_rng(d)
    check_split(queue, (rng.standard_normal((k, d))
                        * 10.0 ** rng.integers(-3, 4, (k, 1))).astype(np.float32), precision)


def test_rounding_and_bound_terms_follow_the_operand_formats():
    """rounded is the split's rounding (mma_layout: bf16 to nearest even,
    tf32 to nearest away), within u = 2^-(p+1) relative; gamma is the
    accumulation's 2 dp 2^-23; the key quantum 2^(q - 23), q index bits."""
    rng = np.random.default_rng(1)
    v = (rng.standard_normal(4096) * 10.0 ** rng.integers(-3, 4, 4096)).astype(np.float32)
    v[:4] = [1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1 + 2.0 ** -11, 0]   # ties, zero
    for precision, bits in (("bf16", bf16(v) << 16), ("tf32", tf32(v))):
        got = rounded(precision, v)
        np.testing.assert_array_equal(got.view(np.uint32), bits)
        u = 2.0 ** -(MANTISSA_BITS[precision] + 1)
        assert np.all(np.abs(got.astype(np.float64) - v) <= u * np.abs(v))
    assert bound_terms("bf16", 128, 4096) == (2 * 128 * 2.0 ** -23, 2.0 ** -11)
    assert bound_terms("tf32", 40, 17)[1] == 2.0 ** -18


def fast_pass(profile, X, C, precision):
    """(stats, labels, LloydPass) of *precision*'s mma pass: on tensor cores
    the planned one; elsewhere its products emulated in plain OpenCL (the
    kernel's every other line as it runs there), the tensor cores'
    truncating sums, work-groups of 128."""
    prof = profile.replace(lloyd_variant="mma")
    if tensor_cores(profile):
        out = run_pass(prof, X, C, precision=precision)
        assert out[2].spec.variant == "mma" and out[2].spec.precision == precision
        return out
    base = dict(dtype="float32", acc_double=profile.fp64, d=X.shape[1], k=len(C),
                update=True, weighted=False)
    spec = next(s for s in mma_specs(prof, base, LloydSpec, precision, emulate=True)
                if s.wg == 128)
    return run_pass(prof, X, C, precision=precision, spec=dataclasses.replace(spec, truncate=True))


def near_ties(d=48, n=2051, pairs=40, seed=0):
    """Rows about centres that come in pairs 1e-2 apart (whose distances
    differ by ~0.1: far above float32's rounding, below the fast modes'
    bounds), so many rows have a near tie; float32 data."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(-3, 3, (pairs, d))
    step = rng.standard_normal((pairs, d))
    centres = np.concatenate([base, base + 1e-2 * step / np.linalg.norm(step, axis=1)[:, None]])
    X = base[rng.integers(0, pairs, n)] + rng.standard_normal((n, d))
    return X.astype(np.float32), centres.astype(np.float32)


@pytest.mark.parametrize("precision", FAST)
def test_fast_modes_plan_float32_without_tensor_cores(profile, precision):
    """A fast mode plans its own mma pass on tensor cores; elsewhere the
    float32 pass: bit for bit, none re-checked."""
    prof = profile.replace(lloyd_variant="mma")
    X, C = near_ties()
    exact = run_pass(prof, X, C)
    fast = run_pass(prof, X, C, precision=precision)
    if tensor_cores(profile):
        assert fast[2].spec == dataclasses.replace(exact[2].spec, precision=precision,
                                                   dp=fast[2].spec.dp, mt=fast[2].spec.mt,
                                                   wg=fast[2].spec.wg, tm=fast[2].spec.tm)
        return
    assert fast[2].spec == exact[2].spec and fast[0].n_rechecked == 0
    np.testing.assert_array_equal(fast[1].get(), exact[1].get())
    np.testing.assert_array_equal(fast[0].sums, exact[0].sums)
    np.testing.assert_array_equal(fast[2].min_dist.get(), exact[2].min_dist.get())
    assert fast[0].inertia == exact[0].inertia


@pytest.mark.parametrize("precision", FAST)
def test_fast_modes_are_the_float64_argmin_off_ties(profile, precision):
    """Many near ties (centres in pairs 1e-2 apart): labels are numpy's
    float64 argmin but within the documented bound of a tie, rows are
    re-checked, and the winners' distances stay exact."""
    X, C = near_ties()
    stats, labels, lloyd = fast_pass(profile, X, C, precision)
    labels = labels.get()
    off = check_contract(precision, lloyd.spec.dp, lloyd.spec.kp, X, C, labels)
    assert off <= 0.01 * len(X), off
    assert 0 < stats.n_rechecked <= len(X)
    d2 = distances(X, C)
    np.testing.assert_allclose(lloyd.min_dist.get(), d2[np.arange(len(X)), labels],
                               rtol=1e-5, atol=1e-5)
    assert stats.n_changed == len(X) and stats.n_nonfinite == 0


@pytest.mark.parametrize("precision", FAST)
def test_rows_about_ties_are_rechecked_within_the_bound_alone(profile, precision):
    """Rows on the bisecting hyperplane of two centres, moved off it by
    1e-4, 0.5, 3 and 12 times the pair's bound (E_a + E_b), and rows far
    from any tie: labels within the contract; every row at 1e-4 of its
    bound is re-checked, and no row whose gaps clear the bound twice over
    is -- the rows at 3x among them, which the operands' worst case
    (16 u ||x|| max||c||, the bound before the per-row one) covers: a
    pass re-checking by that would re-check them."""
    pad = 32 if precision == "bf16" else 8
    dp, kp = -(-48 // pad) * pad, 48
    X, C, factor = rows_about_ties(precision, dp, kp)
    stats, labels, lloyd = fast_pass(profile, X, C, precision)
    assert (lloyd.spec.dp, lloyd.spec.kp) == (dp, kp)
    check_contract(precision, dp, kp, X, C, labels.get())
    d2 = distances(X, C)
    rows, ranked = np.arange(len(X)), np.sort(d2, 1)
    E = rounding_bound(precision, dp, kp, X, C)
    own, most = E[rows, d2.argmin(1)], E.max(1)
    clear = ((ranked[:, 1] - ranked[:, 0] > 2.01 * (own + most))
             & (ranked[:, 2] - ranked[:, 0] > 2.01 * (own + 3 * most)))
    assert np.mean(clear[factor == 3]) > 0.9   # but where a third centre is near
    assert np.sum(factor == FACTORS[0]) <= stats.n_rechecked <= np.sum(~clear)
    u = 2.0 ** -(MANTISSA_BITS[precision] + 1)
    worst = 16 * u * np.linalg.norm(X, axis=1) * np.linalg.norm(C, axis=1).max()
    assert np.all(ranked[factor == 3, 1] - ranked[factor == 3, 0] < worst[factor == 3])


@pytest.mark.parametrize("n, d, k", [(517, 8, 17), (700, 37, 33)])
def test_emulated_float32_pass_matches_numpy(profile, make_blobs, n, d, k):
    """The 3xTF32 kernel with its products emulated (any runtime): labels,
    weighted sums and the winners' distances as numpy's float64."""
    X, _ = make_blobs(n=n, d=d, k=k, seed=d, dtype=np.float32)
    C = X[:k] + np.float32(0.25)
    w = np.random.RandomState(2).uniform(0, 3, n).astype(np.float32)
    base = dict(dtype="float32", acc_double=profile.fp64, d=d, k=k, update=True, weighted=True)
    spec = next(mma_specs(profile, base, LloydSpec, emulate=True))
    stats, labels, lloyd = run_pass(profile, X, C, w, spec=spec)
    d2 = distances(X, C)
    want = d2.argmin(1)
    np.testing.assert_array_equal(labels.get(), want)
    sums = np.stack([np.bincount(want, w * X[:, c], minlength=k) for c in range(d)], 1)
    np.testing.assert_allclose(stats.sums, sums, rtol=1e-6, atol=1e-6 * np.abs(sums).max())
    np.testing.assert_allclose(lloyd.min_dist.get(), d2[np.arange(n), want], rtol=1e-5)
    assert stats.n_rechecked == 0 and stats.n_changed == n


@pytest.mark.parametrize("precision", FAST)
def test_non_finite_rows_are_flagged_not_rechecked(profile, precision):
    """Rows holding a NaN have no finite key: flagged, never counted as
    near ties; the other rows re-checked as without them."""
    X, C = near_ties(n=600)
    bad = X.copy()
    bad[:5, 3] = np.nan
    clean = fast_pass(profile, X[5:], C, precision)[0]
    stats = fast_pass(profile, bad, C, precision)[0]
    assert stats.n_nonfinite == 5
    assert stats.n_rechecked == clean.n_rechecked > 0
