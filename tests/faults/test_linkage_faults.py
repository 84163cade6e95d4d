"""Bad data in the hierarchical paths (issue 24): negative, NaN and inf
distances, asymmetric and non-hollow precomputed matrices, overflowing rows
and a DeviceManager for ``devices``.  Each case does what the installed
scipy / scikit-learn do with it (the same Z, or the same error), never an
out-of-bounds write or a silently wrong tree."""
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy.cluster import hierarchy

import oclclust as oc
from oclclust.cluster.hierarchy import linkage_matrix
from oclclust.passes.linkage import Plan

sklearn = pytest.importorskip("sklearn")
from sklearn.cluster import AgglomerativeClustering as SkAgglomerative

NO_NEIGHBOUR = "find_min_dist cannot find any neighbors closer than inf away"


def test_scipy_gh21011_does_not_abort(profile):
    """scipy's regression test for its gh-21011 aborted Python with "double
    free or corruption": a kernel wrote out of its buffer.  In a subprocess,
    so an abort fails the test instead of ending the run."""
    code = ("import oclclust as oc\n"
            "try:\n"
            f"    oc.linkage([0, 0, -1], method='centroid', devices={profile.platform!r})\n"
            "except ValueError as exc:\n"
            "    print('ValueError:', exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ValueError: " + NO_NEIGHBOUR in proc.stdout


NEGATIVE = [[0, 0, -1], [1, 2, -1], [-1, -2, -3], [1, 2, 3, -4, 5, 6]]


@pytest.mark.parametrize("y", NEGATIVE, ids=str)
@pytest.mark.parametrize("method", linkage_matrix.METHODS)
def test_negative_distances_as_scipy(devices, method, y):
    """scipy's linkage takes negative distances: the same Z (NaN heights
    included: its ward of [0, 0, -1]), or the same ValueError where its
    find_min_dist finds no neighbour (centroid and median)."""
    try:
        ref = hierarchy.linkage(y, method)
    except ValueError as exc:
        with pytest.raises(ValueError, match=str(exc)[:40]):
            oc.linkage(y, method, devices=devices)
        return
    np.testing.assert_array_equal(oc.linkage(y, method, devices=devices), ref)


def test_row_of_nan_updates_stays_in_range(devices):
    """A chain top whose every update came out NaN (ward's sqrt of a
    negative) still names an active cluster: a valid tree of n-1 merges,
    each cluster merged once, where scipy's own Z repeats a cluster."""
    y = [0, 0, 0, 0, 0, -1, -1, 2, 3, -5]
    Z = oc.linkage(y, "ward", devices=devices)
    assert np.isnan(Z[-1, 2])
    ids = Z[:, :2].astype(int).ravel()
    assert len(set(ids.tolist())) == len(ids) and ids.max() < 2 * 5 - 2
    assert Z[-1, 3] == 5


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("method", ["single", "average", "centroid"])
def test_non_finite_condensed_refused(devices, method, bad):
    y = np.array([1.0, bad, 2.0])
    with pytest.raises(ValueError, match="must contain only finite values") as scipy_error:
        hierarchy.linkage(y, method)
    with pytest.raises(ValueError, match=str(scipy_error.value)):
        oc.linkage(y, method, devices=devices)


PRECOMPUTED = {
    "negative": [[0, -1, 2], [-1, 0, 3], [2, 3, 0]],
    "asymmetric": [[0, 1, 2], [1.5, 0, 3], [2, 3, 0]],
    "non-hollow": [[1, 1, 2], [1, 0, 3], [2, 3, 0]],
    "negative-4": [[0, 1, -2, 4], [1, 0, 3, 1], [-2, 3, 0, 2], [4, 1, 2, 0]],
}


@pytest.mark.parametrize("name", sorted(PRECOMPUTED))
@pytest.mark.parametrize("linkage", ["single", "complete", "average"])
def test_precomputed_as_sklearn(devices, linkage, name):
    """scikit-learn takes negative, asymmetric and non-hollow precomputed
    matrices (it reads the upper triangle): the same tree and labels."""
    D = np.array(PRECOMPUTED[name], np.float64)
    ref = SkAgglomerative(2, metric="precomputed", linkage=linkage,
                          compute_distances=True).fit(D)
    got = oc.AgglomerativeClustering(2, metric="precomputed", linkage=linkage,
                                     compute_distances=True, devices=devices).fit(D)
    np.testing.assert_array_equal(got.children_, ref.children_)
    np.testing.assert_array_equal(got.distances_, ref.distances_)
    np.testing.assert_array_equal(got.labels_, ref.labels_)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_precomputed_non_finite_refused(devices, bad):
    D = np.array([[0, bad, 2], [bad, 0, 3], [2, 3, 0]])
    with pytest.raises(ValueError, match="Input X contains"):
        SkAgglomerative(2, metric="precomputed", linkage="average").fit(D)
    with pytest.raises(ValueError, match="Input X contains NaN or infinity"):
        oc.AgglomerativeClustering(2, metric="precomputed", linkage="average",
                                   devices=devices).fit(D)


@pytest.mark.parametrize("linkage", ["ward", "complete", "average", "single"])
def test_rows_near_float32_max_as_sklearn(devices, linkage):
    """1e38 float32 rows: distances in float64 on an fp64 device, as
    scikit-learn's; the same tree and heights."""
    if not oc.runtime.devices.preferred(devices)[0].fp64:
        pytest.skip("the device has no fp64: test_float32_overflow_refused covers it")
    X = np.array([[1e38, 0], [0, 0], [-1e38, 1], [3e38, 2]], np.float32)
    ref = SkAgglomerative(2, linkage=linkage, compute_distances=True).fit(X)
    got = oc.AgglomerativeClustering(2, linkage=linkage, compute_distances=True,
                                     devices=devices).fit(X)
    np.testing.assert_array_equal(got.children_, ref.children_)
    np.testing.assert_allclose(got.distances_, ref.distances_, rtol=1e-12)


@pytest.fixture
def float32_plans(monkeypatch):
    """Every linkage on a float32 plan: a device without fp64."""
    plan = linkage_matrix.plan_for
    monkeypatch.setattr(linkage_matrix, "plan_for", lambda devices: Plan(plan(devices).profile,
                                                                         np.float32))


OVERFLOWS = [
    ("rows", np.array([[1e38, 0], [0, 0], [-1e38, 1]], np.float32), "ward",
     "finite float32 observations overflow"),
    ("rows-single", np.array([[2e19, 0], [0, 0], [-2e19, 1]]), "single",
     "finite float32 observations overflow"),
    ("condensed", np.array([1e39, 1, 2]), "average", "beyond float32's range"),
    ("lance-williams", np.array([3e38, 3e38, 1]), "centroid", "heights overflow float32"),
    ("ward-update", np.array([2e38, 3e38, 1]), "ward", "heights overflow float32"),
]


@pytest.mark.parametrize("what, data, method, match", OVERFLOWS, ids=[o[0] for o in OVERFLOWS])
def test_float32_overflow_refused(devices, float32_plans, what, data, method, match):
    """Values, distances or Lance-Williams updates beyond float32: a
    ValueError naming the overflow, never a tree with inf/NaN heights."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=match):
            oc.linkage(data, method, devices=devices)


def test_float64_overflow_refused(devices):
    """Squares of finite float64 distances overflow in centroid's update:
    scipy's find_min_dist error there becomes one naming the overflow."""
    y = [1e200, 1e200, 1.0]
    with pytest.raises(ValueError, match=NO_NEIGHBOUR):
        hierarchy.linkage(y, "centroid")
    with pytest.raises(ValueError, match="heights overflow float64"):
        oc.linkage(y, "centroid", devices=devices)


def test_device_manager(devices):
    """devices= a DeviceManager, as the estimators take it."""
    X = np.random.RandomState(0).randn(30, 3)
    manager = oc.DeviceManager(devices)
    np.testing.assert_array_equal(oc.linkage(X, "average", devices=manager),
                                  oc.linkage(X, "average", devices=devices))
    labels = oc.AgglomerativeClustering(3, devices=manager).fit(X).labels_
    np.testing.assert_array_equal(labels, SkAgglomerative(3).fit(X).labels_)
