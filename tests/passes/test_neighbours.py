"""k nearest distances on the device (passes/neighbours.py) against numpy:
every metric, k from 1 (the row itself) to n, ragged row counts."""
import numpy as np
import pytest
from scipy.spatial.distance import cdist

from oclclust.passes.neighbours import NEIGHBOUR_METRICS, core_distances, k_nearest_distances


@pytest.mark.parametrize("metric", NEIGHBOUR_METRICS)
@pytest.mark.parametrize("n, d, k", [(1, 2, 1), (37, 3, 5), (130, 8, 1), (70, 5, 70)])
def test_k_nearest_vs_numpy(profile, metric, n, d, k):
    X = np.random.RandomState(n + d).randn(n, d) + 0.5
    ref = np.sort(cdist(X, X, metric), axis=1)[:, :k]
    got = k_nearest_distances(profile, X, k, metric)
    rtol = 1e-12 if profile.fp64 else 1e-5
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol)


def test_core_distance_counts_the_row_itself(profile):
    X = np.array([[0.0], [1.0], [3.0], [3.0]])
    np.testing.assert_array_equal(core_distances(profile, X, 1), 0)
    np.testing.assert_array_equal(core_distances(profile, X, 2), [1, 1, 0, 0])


@pytest.mark.parametrize("k", [0, 5])
def test_bad_k(profile, k):
    with pytest.raises(ValueError, match="k must be"):
        k_nearest_distances(profile, np.zeros((4, 2)), k)
