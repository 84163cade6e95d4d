"""runtime.group_maxima's largest: the take largest entries of a device
vector, largest first and of equals the first row, with their labels, as a
sort of the whole vector gives them; ties within and across groups, fewer
rows than groups, the portable work-group of one item and a GPU's."""
import numpy as np
import pyopencl.array as cla
import pytest

from oclclust.runtime import group_maxima
from oclclust.runtime.group_maxima import largest


def reference(values, labels, take):
    first = np.lexsort((np.arange(len(values)), -values.astype(np.float64)))[:take]
    return values[first].astype(np.float64), first, labels[first]


def vector(kind, n, dtype, rng):
    if kind == "distinct":
        return rng.permutation(n).astype(dtype) * dtype(0.5)
    if kind == "ties":            # few values: ties everywhere, across groups too
        return rng.integers(0, 5, n).astype(dtype)
    return np.full(n, 2.0, dtype)   # all equal: every group holds the maximum


@pytest.mark.parametrize("wg", [1, 64])
@pytest.mark.parametrize("kind", ["distinct", "ties", "equal"])
@pytest.mark.parametrize("n, groups", [(1, 4096), (7, 4096), (1000, 16), (50_003, 64)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda t: t.__name__)
def test_largest_is_a_sort(queue, monkeypatch, n, groups, kind, wg, dtype):
    monkeypatch.setattr(group_maxima, "GROUPS", groups)
    rng = np.random.default_rng(n + groups)
    values = vector(kind, n, dtype, rng)
    labels = rng.integers(0, 9, n).astype(np.int32)
    dev_values, dev_labels = cla.to_device(queue, values), cla.to_device(queue, labels)
    for take in sorted({1, 2, 3, 62, n, n + 5}):
        got = largest(queue, dev_values, dev_labels, n, take, wg=wg)
        for g, w in zip(got, reference(values, labels, take)):
            np.testing.assert_array_equal(g, w)
        assert got[0].dtype == np.float64 and got[1].dtype == np.int64


def test_nothing_to_take(queue):
    values = cla.to_device(queue, np.arange(5, dtype=np.float32))
    got = largest(queue, values, cla.to_device(queue, np.zeros(5, np.int32)), 5, 0)
    assert [len(g) for g in got] == [0, 0, 0]
