"""The "mma" Lloyd variant (oclclust/passes/lloyd_mma.py): the split of the centres
on every runtime, and the tensor-core pass against numpy where tensor cores
are (elsewhere the same cases check that the planner falls back to gemm).
"""

import numpy as np
import pytest

from oclclust.passes.lloyd import candidate_specs
from oclclust.passes.lloyd_mma import tensor_cores
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
