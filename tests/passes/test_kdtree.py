"""KD-tree pruning (issue 5): the tree, the leaf -> candidate mapping, and
the three leaf mappings' statistics equal to brute force bit for bit."""
import itertools

import numpy as np
import pytest

from oclclust.cluster.kmeans.ensemble import fixed_point, data_moments
from oclclust.passes.ensemble import EnsemblePass
from oclclust.passes.kdtree import MAPPINGS, KDTreePass, build_tree, candidates
from oclclust.parallel.manager import DeviceManager


def test_build_tree_leaves_and_boxes():
    X = np.random.RandomState(0).randn(1000, 3)
    perm, starts, lo, hi = build_tree(X, 37)
    assert sorted(perm) == list(range(1000))
    sizes = np.diff(starts)
    assert sizes.max() <= 37 and sizes.min() > 0 and starts[-1] == 1000
    for leaf in range(len(sizes)):
        pts = X[perm[starts[leaf]:starts[leaf + 1]]]
        np.testing.assert_array_equal(pts.min(0), lo[leaf])
        np.testing.assert_array_equal(pts.max(0), hi[leaf])


def test_candidates_keep_every_nearest_centroid():
    rng = np.random.RandomState(1)
    X = rng.rand(3000, 2)
    perm, starts, lo, hi = build_tree(X, 50)
    centers = rng.rand(3 * 6, 2)
    off = np.array([0, 6, 12, 18])
    cand, count = candidates(lo, hi, centers, off, 1e-12)
    assert count.min() >= 1 and count.mean() < 6 * 0.7          # it prunes
    leaf_of = np.repeat(np.arange(len(lo)), np.diff(starts))
    Xp = X[perm]
    for m in range(3):
        c = centers[off[m]:off[m + 1]]
        nearest = np.argmin(((Xp[:, None] - c[None]) ** 2).sum(-1), 1) + off[m]
        lists = cand[leaf_of, m]
        kept = (lists == nearest[:, None]) & (np.arange(6)[None] < count[leaf_of, m][:, None])
        assert kept.any(1).all()
        # ascending order within each list (the lowest-index tie rule)
        for leaf in range(len(lo)):
            assert np.all(np.diff(cand[leaf, m, :count[leaf, m]]) > 0)


def grid_with_ties(n, d, seed):
    """Integer points and centroids: many points equidistant from two centroids."""
    rng = np.random.RandomState(seed)
    return rng.randint(0, 6, (n, d)).astype(np.float32)


@pytest.mark.parametrize("d, weighted", [(2, True), (5, False)])
def test_mappings_equal_brute_force(devices, d, weighted):
    X = grid_with_ties(2000, d, d)
    w = np.random.RandomState(2).uniform(0.5, 2, len(X)).astype(np.float32) if weighted else None
    rng = np.random.RandomState(3)
    ks = [3, 7, 5]
    centers = [rng.randint(0, 6, (k, d)).astype(np.float64) + 0.5 * (rng.rand(k, d) < 0.3)
               for k in ks]
    data = DeviceManager(devices[:1]).scatter(X, w)
    try:
        host_w = np.ones(len(X)) if w is None else w
        fixed = fixed_point(data, host_w, data_moments(data)[0])
        part = data.chunks[0]
        brute = EnsemblePass(part, "task", fixed).stats(centers)
        assert (brute[1] >= 0).all() and brute[1].any()
        for order in (True, False):      # distributed and uniform model order
            got = EnsemblePass(part, "concatenated", fixed, order).stats(centers)
            np.testing.assert_array_equal(got[0], brute[0])
            np.testing.assert_array_equal(got[1], brute[1])
        for (mapping, order), leaf_size in zip(itertools.product(MAPPINGS, (True, False)),
                                               (16, 100, 16, 100, 16, 100)):
            kd = KDTreePass(part, mapping, fixed, leaf_size, order)
            got = kd.stats(centers)
            assert kd.pruned_fraction < 1
            np.testing.assert_array_equal(got[0], brute[0], err_msg=mapping)
            np.testing.assert_array_equal(got[1], brute[1], err_msg=mapping)
    finally:
        data.close()


def test_device_mapping_equals_host_reference(devices):
    rng = np.random.RandomState(4)
    X = rng.rand(3000, 3)
    ks = [4, 6, 5]
    centers = [rng.rand(k, 3) for k in ks]
    data = DeviceManager(devices[:1]).scatter(X, None)
    try:
        fixed = fixed_point(data, np.ones(len(X)), data_moments(data)[0])
        kd = KDTreePass(data.chunks[0], "direct", fixed, 40)
        kd.stats(centers)
        cand, count = kd.lists()
        ref_cand, ref_count = candidates(kd.lo, kd.hi, np.concatenate(centers),
                                         np.array([0, 4, 10, 15]), kd.eps, kd.tiny)
        np.testing.assert_array_equal(count, ref_count)
        for leaf, m in zip(*np.nonzero(count)):
            np.testing.assert_array_equal(cand[leaf, m, :count[leaf, m]],
                                          ref_cand[leaf, m, :count[leaf, m]])
        assert 0 < kd.pruned_fraction < 0.5
    finally:
        data.close()
