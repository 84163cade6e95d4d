"""passes/cmeans.py's row_labels (templates/cmeans/cmeans_labels.cl.mako): numpy's
argmax of the memberships -- the first of equal values, NaN the largest."""
import numpy as np
import pyopencl.array as cla
import pytest

from oclclust.passes.cmeans import row_labels
from oclclust.runtime.partition import DevicePartition


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda t: t.__name__)
@pytest.mark.parametrize("c", [1, 2, 100])
def test_row_labels_are_numpys_argmax(profile, dtype, c):
    rng = np.random.RandomState(c)
    n = 1003
    part = DevicePartition(profile, rng.normal(size=(n, 2)).astype(dtype))
    u = rng.randint(0, 4, (n, c)).astype(dtype)            # many ties
    u[10:20] = rng.uniform(size=(10, c))
    u[30, 0] = u[31, -1] = u[32, c // 2] = u[33, :] = np.nan
    got = row_labels(profile, part.queue, cla.to_device(part.queue, u.ravel()), n, c).get(
        part.queue)
    np.testing.assert_array_equal(got, u.argmax(axis=1))
