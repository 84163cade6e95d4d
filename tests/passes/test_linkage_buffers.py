"""The condensed matrix across device buffers (passes/linkage.py Condensed,
templates/linkage/condensed.cl.mako): with the profile's linkage_buffer_bytes
small, N of a few hundred spans 2-3 buffers, and every linkage on it is the
one-buffer result bit for bit and scipy's; past the matrix budget a
MemoryError names the limit and the methods that run on the rows."""
import numpy as np
import pytest
from scipy.cluster import hierarchy
from scipy.spatial.distance import pdist

import oclclust as oc
from oclclust.cluster.hierarchy.linkage_matrix import METHODS, METRICS
from oclclust.passes.linkage import MAX_BUFFERS, Plan, condensed_distances

N = 300                                  # 44,850 entries
SPLITS = {1: 0, 2: 24000 * 8, 3: 16384 * 8}     # buffers: linkage_buffer_bytes


def data(kind, n=N, d=4, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "blobs":
        return rng.normal(size=(n, d)) + rng.integers(0, 5, (n, 1)) * 4
    if kind == "grid":                   # many equal distances: scipy's tie rules
        return rng.integers(0, 4, (n, 2)).astype(np.float64)
    half = rng.normal(size=(n // 2, d))  # every row twice
    return np.concatenate([half, half])[rng.permutation(2 * (n // 2))]


def split(devices, buffers, **changes):
    """The devices with a buffer limit that splits N's matrix in *buffers*;
    single linkage kept on the matrix (not the rows' MST)."""
    out = [p.replace(linkage_buffer_bytes=SPLITS[buffers], mst_single_rows_from=10**7,
                     **changes) for p in devices]
    assert Plan(out[0], np.float64).buffers(N) == buffers
    return out


@pytest.mark.parametrize("kind", ["blobs", "grid", "duplicates"])
@pytest.mark.covering(1)
def test_every_method_across_buffers_is_one_buffers_and_scipys(devices, linkage_strategy, kind):
    X = data(kind)
    for method in METHODS:
        one = oc.linkage(X, method, devices=split(devices, 1))
        ref = hierarchy.linkage(X, method)
        np.testing.assert_array_equal(one[:, [0, 1, 3]], ref[:, [0, 1, 3]])
        np.testing.assert_allclose(one[:, 2], ref[:, 2], rtol=1e-10, atol=1e-12)
        for buffers in (2, 3):
            np.testing.assert_array_equal(oc.linkage(X, method, devices=split(devices, buffers)),
                                          one, err_msg=f"{method}, {buffers} buffers")


def test_condensed_input_across_buffers(devices, linkage_strategy):
    y = pdist(data("blobs"), "cityblock")
    for method in METHODS:
        one = oc.linkage(y, method, devices=split(devices, 1))
        np.testing.assert_array_equal(one[:, [0, 1, 3]], hierarchy.linkage(y, method)[:, [0, 1, 3]])
        np.testing.assert_array_equal(oc.linkage(y, method, devices=split(devices, 3)), one)


@pytest.mark.parametrize("metric", METRICS)
def test_distances_across_buffers_are_pdists(devices, linkage_strategy, metric):
    """Every entry lands in its buffer at its offset: the matrix read back
    is pdist's exactly (float64), each buffer but the last full."""
    X = data("blobs", d=5) + 0.5
    plan = Plan(split(devices, 3)[0], np.float64)
    dist, n = condensed_distances(plan, X=X, metric=metric)
    assert n == N and [b.size for b in dist.buffers] == [16384, 16384, 44850 - 2 * 16384]
    np.testing.assert_array_equal(dist.get(), pdist(X, metric))


def test_past_the_largest_buffer_within_the_budget(devices):
    """Where the device's largest buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE) is
    smaller than the matrix but the budget holds it (NVIDIA: a quarter of
    the device), the matrix spans buffers: no MemoryError, scipy's tree; and
    AgglomerativeClustering routes there too."""
    from sklearn.cluster import AgglomerativeClustering as SK
    small = [p.replace(max_alloc_size=128 * 1024) for p in devices]
    assert Plan(small[0], np.float64).buffers(N) == 3
    X = data("blobs")
    for method in ("complete", "average", "weighted"):
        np.testing.assert_array_equal(oc.linkage(X, method, devices=small)[:, [0, 1, 3]],
                                      hierarchy.linkage(X, method)[:, [0, 1, 3]])
    for method in ("complete", "average"):
        ours = oc.AgglomerativeClustering(5, linkage=method, devices=small).fit(X)
        np.testing.assert_array_equal(ours.labels_, SK(5, linkage=method).fit(X).labels_)


@pytest.mark.parametrize("method", ["complete", "average", "weighted"])
def test_past_the_budget_names_the_limit_and_the_methods_that_scale(devices, method):
    tight = [p.replace(linkage_memory_fraction=2**-10, global_mem_size=2**26) for p in devices]
    X = data("blobs")                    # 359 KiB of matrix, 67 KiB of budget
    with pytest.raises(MemoryError, match=r"of 300 observations needs 350\.39 KiB, beyond .*"
                       r"memory budget for it of 64\.00 KiB .*single, ward, centroid and "
                       "median linkage of observations run past it on the rows"):
        oc.linkage(X, method, devices=tight)
    with pytest.raises(MemoryError, match="single, ward, centroid and median"):
        oc.linkage(pdist(X), method, devices=tight)
    for scales in ("single", "ward", "centroid", "median"):
        Z = oc.linkage(X, scales, devices=tight)
        np.testing.assert_array_equal(Z[:, [0, 1, 3]],
                                      hierarchy.linkage(X, scales)[:, [0, 1, 3]])


def test_more_buffers_than_kernels_take(devices):
    few = devices[0].replace(linkage_buffer_bytes=8 * 64)
    plan = Plan(few, np.float64)
    n = 90                               # 4005 entries: 63 buffers of 64
    assert plan.buffers(n) > MAX_BUFFERS and not plan.matrix_fits(n)
    with pytest.raises(MemoryError, match=f"more than {MAX_BUFFERS} buffers"):
        oc.linkage(data("blobs", n), "average", devices=[few])
