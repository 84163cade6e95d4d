"""The "mma" Lloyd variant (oclclust/passes/lloyd_mma.py): the split of the centres
on every runtime, and the tensor-core pass against numpy where tensor cores
are (elsewhere the same cases check that the planner falls back to gemm);
the fast precisions ("tf32", "bf16") against numpy's float64 argmin off
near ties there, and bit for bit the float32 pass elsewhere.
"""

import numpy as np
import pytest

from oclclust.passes.lloyd import candidate_specs
from oclclust.passes.lloyd_mma import tensor_cores, tie_bound
from mma_layout import check_split
from test_lloyd import check_against_reference, planned_variant, run_pass


@pytest.mark.parametrize("d, k", [(5, 10), (16, 17), (37, 30), (128, 20)])
def test_split_matches_its_layout(queue, d, k):
    """Odd and even numbers of k8 steps (swizzled rows), ragged d and k,
    magnitudes 1e-3 to 1e3."""
    rng = np.random.default_rng(d)
    check_split(queue, (rng.standard_normal((k, d))
                        * 10.0 ** rng.integers(-3, 4, (k, 1))).astype(np.float32))


def test_offered_only_with_tensor_cores(profile):
    specs = list(candidate_specs(profile.replace(lloyd_variant="mma"),
                             np.float32, 32, 100, True, False))
    assert (specs[0].variant == "mma") == tensor_cores(profile)
    assert {s.variant for s in specs[1:]} <= {"mma", "gemm", "tiled", "rowwise"}


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


@pytest.mark.parametrize("d, k", [(5, 3), (40, 17), (128, 20)])
def test_bf16_split_matches_its_layout(queue, d, k):
    """The bf16 layout: one slot group (plain rows), ragged, two and four
    (swizzled); magnitudes 1e-3 to 1e3."""
    rng = np.random.default_rng(d)
    check_split(queue, (rng.standard_normal((k, d))
                        * 10.0 ** rng.integers(-3, 4, (k, 1))).astype(np.float32), "bf16")


def test_tie_bound_follows_the_operand_rounding():
    """u = 2^-(p+1) for p mantissa bits; the gap bound is about 16 u ||x||
    max||c||, plus the keys' quantisation: 4 2^(q-23), q index bits."""
    for precision, bits in (("tf32", 10), ("bf16", 7)):
        u = 2.0 ** -(bits + 1)
        a, b = tie_bound(precision, 128, 64)
        assert 16 * u < a < 16 * u * 1.1 and b < 1e-4
        a, b = tie_bound(precision, 128, 4096)
        assert a - tie_bound(precision, 128, 64)[0] > 4 * (2.0 ** -11 - 2.0 ** -17)


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
def test_fast_modes_are_the_float64_argmin_off_ties(profile, precision):
    """With tensor cores: labels are numpy's float64 argmin except rows whose
    label is within the mode's bound of the best (a near tie), rows are
    re-checked, and the winners' distances stay exact.  Without: the
    float32 pass, bit for bit, and none re-checked."""
    prof = profile.replace(lloyd_variant="mma")
    X, C = near_ties()
    exact = run_pass(prof, X, C)
    fast = run_pass(prof, X, C, precision=precision)
    labels = fast[1].get()
    if not (tensor_cores(profile) and fast[2].spec.variant == "mma"):
        assert fast[2].spec == exact[2].spec and fast[0].n_rechecked == 0
        np.testing.assert_array_equal(labels, exact[1].get())
        np.testing.assert_array_equal(fast[0].sums, exact[0].sums)
        np.testing.assert_array_equal(fast[2].min_dist.get(), exact[2].min_dist.get())
        assert fast[0].inertia == exact[0].inertia
        return
    assert fast[2].spec.precision == precision
    X64, C64 = X.astype(np.float64), C.astype(np.float64)
    d2 = ((X64[:, None] - C64[None]) ** 2).sum(-1)
    best = d2.min(1)
    a, b = tie_bound(precision, X.shape[1], fast[2].spec.kp)
    cmax = np.sqrt((C64 ** 2).sum(1).max())
    bound = a * np.linalg.norm(X64, axis=1) * cmax + b * cmax ** 2
    off = labels != d2.argmin(1)
    assert np.all(d2[np.arange(len(X)), labels] - best <= bound)   # only near ties differ
    assert np.all(labels[bound < np.sort(d2, 1)[:, 1] - best] ==
                  d2.argmin(1)[bound < np.sort(d2, 1)[:, 1] - best])
    assert off.mean() < 0.01, off.sum()
    assert 0 < fast[0].n_rechecked <= len(X)
    np.testing.assert_allclose(fast[2].min_dist.get(), d2[np.arange(len(X)), labels],
                               rtol=1e-5)
    assert fast[0].n_changed == len(X) and fast[0].n_nonfinite == 0
