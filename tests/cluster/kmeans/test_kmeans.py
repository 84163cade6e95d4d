"""oc.KMeans against scikit-learn's KMeans from the same initial state.

Same init => labels equal, centres within 1e-4 relative, inertia within 1e-5
relative, same n_iter_.  The data are well-separated blobs (conftest), so no
point is near a tie between two centres and float32 rounding cannot flip a label.
"""
import dataclasses
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest
from scipy.spatial.distance import cdist
from sklearn.cluster import KMeans as SKMeans
from sklearn.exceptions import ConvergenceWarning, NotFittedError

import oclclust as oc
from conftest import SAMPLE_WEIGHT_XFAIL, sklearn_checks, split_or_skip
from oclclust.cluster import empty_clusters
from oclclust.cluster.kmeans import kmeans as kmeans_module
from oclclust.runtime.partition import DevicePartition

FLOATS = [np.float32, np.float64]
K = 4


def assert_same_fit(ours, theirs, centre_rtol=1e-4, inertia_rtol=1e-5):
    np.testing.assert_array_equal(ours.labels_, theirs.labels_)
    scale = np.abs(theirs.cluster_centers_).max()
    np.testing.assert_allclose(ours.cluster_centers_, theirs.cluster_centers_,
                               rtol=centre_rtol, atol=centre_rtol * scale)
    assert ours.inertia_ == pytest.approx(theirs.inertia_, rel=inertia_rtol)
    assert ours.n_iter_ == theirs.n_iter_


def bad_init(X):
    """Three centres in blob 0, one in blob 1: several iterations to converge."""
    return X[[0, 4, 8, 1]].copy()


# ------------------------------------------------------------ vs scikit-learn
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("init", ["k-means++", "random", "array"])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_matches_sklearn(devices, blobs, dtype, init, weighted):
    X = blobs[0].astype(dtype)
    sw = np.random.RandomState(1).randint(1, 4, len(X)).astype(dtype) if weighted else None
    init = bad_init(X) if init == "array" else init
    params = dict(n_clusters=K, init=init, n_init=1, random_state=3)
    ours = oc.KMeans(devices=devices, **params).fit(X, sample_weight=sw)
    theirs = SKMeans(**params).fit(X, sample_weight=sw)
    assert_same_fit(ours, theirs)
    assert ours.cluster_centers_.dtype == dtype
    assert ours.labels_.shape == (len(X),) and ours.n_features_in_ == X.shape[1]


@pytest.mark.parametrize("tol", [0.0, 1e-4, 1e-1, 10.0])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_tol_stops_as_sklearn(devices, blobs, dtype, tol):
    X = blobs[0].astype(dtype)
    params = dict(n_clusters=K, init=bad_init(X), n_init=1, tol=tol)
    ours = oc.KMeans(devices=devices, **params).fit(X)
    assert_same_fit(ours, SKMeans(**params).fit(X))


@pytest.mark.parametrize("max_iter", [1, 2, 300])
def test_max_iter(devices, blobs, max_iter):
    X = blobs[0]
    params = dict(n_clusters=K, init=bad_init(X), n_init=1, tol=0, max_iter=max_iter)
    ours = oc.KMeans(devices=devices, **params).fit(X)
    assert ours.n_iter_ == min(max_iter, 8)   # 8 iterations to converge from bad_init
    assert_same_fit(ours, SKMeans(**params).fit(X))


def test_n_init_picks_the_best_run(devices, make_blobs):
    X, _ = make_blobs(n=400, d=2, k=6, seed=2)
    params = dict(n_clusters=6, init="random", max_iter=50)
    rs = np.random.RandomState(5)   # one stream of seeds, as the n_init runs draw them
    singles = [oc.KMeans(devices=devices, n_init=1, random_state=rs, **params).fit(X).inertia_
               for _ in range(5)]
    assert max(singles) > 1.01 * min(singles), "the runs should reach different minima"
    best = oc.KMeans(devices=devices, n_init=5, random_state=5, **params).fit(X)
    assert best.inertia_ == pytest.approx(min(singles), rel=1e-12)
    assert_same_fit(best, SKMeans(n_init=5, random_state=5, **params).fit(X))


def test_same_seed_same_result(devices, make_blobs):
    X, _ = make_blobs(n=3000, d=5, k=8, seed=4, dtype=np.float32)
    fits = [oc.KMeans(8, n_init=2, random_state=11, devices=devices).fit(X) for _ in range(2)]
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    assert fits[0].inertia_ == fits[1].inertia_
    other = oc.KMeans(8, n_init=2, random_state=12, devices=devices).fit(X)
    assert not np.array_equal(other.cluster_centers_, fits[0].cluster_centers_)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("n_far", [1, 2])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_empty_cluster_relocation(devices, blobs, dtype, n_far, weighted):
    """Centres far from every point get no points; both relocate them to the
    points farthest from their centres."""
    X = blobs[0].astype(dtype)
    sw = np.random.RandomState(1).randint(1, 4, len(X)).astype(dtype) if weighted else None
    init = bad_init(X)
    init[-n_far:] = 1e4 + np.arange(n_far)[:, None]
    params = dict(n_clusters=K, init=init, n_init=1)
    ours = oc.KMeans(devices=devices, **params).fit(X, sample_weight=sw)
    assert_same_fit(ours, SKMeans(**params).fit(X, sample_weight=sw))
    assert len(np.unique(ours.labels_)) == K


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("n_far", [1, 2, 5])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
@pytest.mark.covering(2)
def test_farthest_rows_found_on_the_devices(profile, blobs, monkeypatch, dtype, n_far,
                                            weighted):
    """Past HOST_SELECTION_ROWS rows the devices find the rows the empty
    clusters take, in order of distance, then row: the host's selection in
    that order, bit for bit, on one device, on two (sub-devices) and
    streamed through an eighth of the rows; with one or two empty clusters
    that is argpartition's order, so scikit-learn's fit."""
    X = blobs[0].astype(dtype)
    sw = np.random.RandomState(1).randint(1, 4, len(X)).astype(dtype) if weighted else None
    init = np.concatenate([bad_init(X), 1e4 + np.arange(n_far)[:, None] + 0 * X[:n_far]])
    params = dict(n_clusters=len(init), init=init, n_init=1, max_iter=6, tol=0)
    in_order = lambda dist, take: np.lexsort((np.arange(len(dist)), -dist))[:take]  # noqa: E731
    fits = []
    for devices in ([profile], split_or_skip(profile),
                    oc.DeviceManager([profile], memory_budget=X.nbytes // 8)):
        with monkeypatch.context() as m:    # the host's selection, in the devices' order
            m.setattr(empty_clusters, "farthest_rows", in_order)
            host = oc.KMeans(devices=devices, **params).fit(X, sample_weight=sw)
        with monkeypatch.context() as m:
            m.setattr(empty_clusters, "HOST_SELECTION_ROWS", 0)
            found = oc.KMeans(devices=devices, **params).fit(X, sample_weight=sw)
        np.testing.assert_array_equal(found.cluster_centers_, host.cluster_centers_)
        np.testing.assert_array_equal(found.labels_, host.labels_)
        assert found.inertia_ == host.inertia_ and found.n_iter_ == host.n_iter_
        fits.append(found)
    # one device and two: the same model (resident rows' sums are split-free)
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    if n_far <= 2:
        assert_same_fit(fits[0], SKMeans(**params).fit(X, sample_weight=sw))


@pytest.mark.parametrize("variant", ["rowwise", "tiled"])
@pytest.mark.parametrize("rows", [[0, 0, 1, 2], [1, 2, 0, 0], [0, 1, 2, 3] + [0] * 16],
                         ids=["first", "last", "sixteen"])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
@pytest.mark.covering(2)
def test_exact_ties_go_to_the_lowest_index(profile, blobs, dtype, rows, variant):
    """Duplicate initial centres tie exactly: as in scikit-learn the lower index
    wins, the duplicates stay empty and are relocated."""
    X = blobs[0].astype(dtype)
    params = dict(n_clusters=len(rows), init=X[rows], n_init=1, max_iter=1)
    tuned = profile.replace(lloyd_variant=variant)
    ours = oc.KMeans(devices=[tuned], **params).fit(X)
    assert_same_fit(ours, SKMeans(**params).fit(X))


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_blocked_variant_matches_sklearn_and_rowwise(profile, make_blobs, dtype, weighted):
    """The register-blocked variant on a ragged shape (n, d, k no multiple
    of its 4-row x 2-vector blocks, 3-block chunks or of a panel):
    scikit-learn's model from
    the same initial centres, and the rowwise variant's labels."""
    X, _ = make_blobs(n=1203, d=7, k=37, seed=2, dtype=dtype)
    sw = np.random.RandomState(1).uniform(0.5, 3, len(X)).astype(dtype) if weighted else None
    params = dict(n_clusters=37, init=X[:37].copy(), n_init=1, max_iter=6, tol=0)
    blocked = profile.replace(lloyd_variant="blocked", blocked_rows=4, blocked_vectors=2,
                              blocked_chunk=3)
    ours = oc.KMeans(devices=[blocked], **params).fit(X, sample_weight=sw)
    assert_same_fit(ours, SKMeans(**params).fit(X, sample_weight=sw))
    rowwise = oc.KMeans(devices=[profile.replace(lloyd_variant="rowwise")], **params)
    np.testing.assert_array_equal(ours.labels_, rowwise.fit(X, sample_weight=sw).labels_)


@pytest.mark.parametrize("rows, init", [
    ([0, 0, 1, 1], [0, 0, 1, 1]), ([0.25, 0.25], [0.25, 0.25]), ([1, 1, 1], [5, 1, 1]),
    ([2, 2, 3, 3, 3], [2, 3, 3, 9, 2])], ids=["pairs", "one-row-twice", "far-first", "far-last"])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_empty_clusters_with_no_row_to_take_sit_where_sklearn_puts_them(devices, rows, init,
                                                                        dtype):
    """No more distinct rows than clusters: every row sits on its centre,
    none moves, and scikit-learn puts the empty clusters on the heaviest."""
    X, init = np.array(rows, dtype)[:, None], np.array(init, dtype)[:, None]
    params = dict(n_clusters=len(init), init=init, n_init=1, max_iter=5, tol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ours = oc.KMeans(devices=devices, **params).fit(X)
        theirs = SKMeans(**params).fit(X)
    np.testing.assert_array_equal(ours.cluster_centers_, theirs.cluster_centers_)
    np.testing.assert_array_equal(ours.labels_, theirs.labels_)


@pytest.mark.parametrize("count_rows", [None, 0], ids=["host-counts", "device-counts"])
def test_duplicate_points_warn_as_sklearn(devices, monkeypatch, count_rows):
    """The sizes behind the warning: counted on the host (few rows) or on the devices."""
    if count_rows is not None:
        monkeypatch.setattr(kmeans_module, "HOST_COUNT_ROWS", count_rows)
    X = np.repeat(np.arange(3.0)[:, None], 10, axis=0)
    with pytest.warns(ConvergenceWarning, match="Number of distinct clusters"):
        oc.KMeans(5, n_init=1, random_state=0, devices=devices).fit(X)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_predict_transform_score_as_sklearn(devices, blobs, make_blobs, dtype):
    X = blobs[0].astype(dtype)
    Y = make_blobs(n=200, seed=0)[0][::-1].astype(dtype) + dtype(0.1)
    params = dict(n_clusters=K, init=bad_init(X), n_init=1)
    ours = oc.KMeans(devices=devices, **params).fit(X)
    theirs = SKMeans(**params).fit(X)
    np.testing.assert_array_equal(ours.predict(Y), theirs.predict(Y))
    dist = ours.transform(Y)
    assert dist.dtype == dtype
    # sklearn's float32 transform expands |x|^2 - 2x.c + |c|^2 (cancellation near a
    # centre); ours takes the difference: compare both to the exact distances
    exact = cdist(Y.astype(np.float64), ours.cluster_centers_.astype(np.float64))
    np.testing.assert_allclose(dist, exact, rtol=1e-6)
    np.testing.assert_allclose(dist, theirs.transform(Y), rtol=1e-5, atol=1e-5 * exact.max())
    assert ours.score(Y) == pytest.approx(theirs.score(Y), rel=1e-5)
    w = np.linspace(0, 2, len(Y))
    assert ours.score(Y, sample_weight=w) == pytest.approx(theirs.score(Y, sample_weight=w),
                                                           rel=1e-5)
    np.testing.assert_array_equal(oc.KMeans(devices=devices, **params).fit_predict(X),
                                  ours.labels_)
    np.testing.assert_allclose(oc.KMeans(devices=devices, **params).fit_transform(X),
                               ours.transform(X), rtol=1e-6)


# -------------------------------------------------------------------- inputs
def _memmap(X, tmp_path):
    np.save(tmp_path / "x.npy", X)
    return np.load(tmp_path / "x.npy", mmap_mode="r")


INPUTS = {
    "int": lambda X, tmp: np.rint(X).astype(np.int64),
    "int32": lambda X, tmp: np.rint(X).astype(np.int32),
    "fortran": lambda X, tmp: np.asfortranarray(X),
    "strided": lambda X, tmp: np.repeat(X, 2, axis=1)[:, ::2],
    "memmap": _memmap,
    "list": lambda X, tmp: X.tolist(),
}


@pytest.mark.parametrize("kind", INPUTS)
def test_host_inputs(devices, blobs, tmp_path, kind):
    X = blobs[0]
    Xin = INPUTS[kind](X, tmp_path)
    Xref = np.asarray(Xin, dtype=np.float64)
    params = dict(n_clusters=K, init=bad_init(Xref), n_init=1)
    ours = oc.KMeans(devices=devices, **params).fit(Xin)
    assert ours.cluster_centers_.dtype == np.float64
    assert_same_fit(ours, SKMeans(**params).fit(Xref))
    np.testing.assert_array_equal(ours.predict(Xin), ours.labels_)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_device_array_input(devices, profile, queue, blobs, dtype):
    X = blobs[0].astype(dtype)
    Xd = cla.to_device(queue, X)
    assert DevicePartition(profile, Xd).x is Xd   # used in place, no host round trip
    params = dict(n_clusters=K, init=bad_init(X), n_init=1)
    ours = oc.KMeans(devices=devices, **params).fit(Xd)
    assert ours.cluster_centers_.dtype == dtype
    assert_same_fit(ours, oc.KMeans(devices=devices, **params).fit(X), 1e-12, 1e-12)
    np.testing.assert_array_equal(ours.predict(Xd), ours.labels_)
    np.testing.assert_allclose(ours.transform(Xd), ours.transform(X), rtol=1e-6)
    sw = np.linspace(0.5, 2, len(X))
    assert_same_fit(oc.KMeans(devices=devices, **params).fit(Xd, sample_weight=sw),
                    SKMeans(**params).fit(X, sample_weight=sw))
    other = oc.KMeans(devices=devices, dtype="float32" if dtype == np.float64 else "float64",
                      **params).fit(Xd)   # converted on the device
    np.testing.assert_array_equal(other.labels_, ours.labels_)


def test_device_array_uses_the_given_profile(profile, queue, blobs):
    """A device array stays on its device, tuned by the profile passed for it."""
    no_fp64 = dataclasses.replace(profile, fp64=False)
    Xd = cla.to_device(queue, blobs[0])
    with pytest.warns(RuntimeWarning, match="no fp64: computing in float32"):
        km = oc.KMeans(K, n_init=1, random_state=0, devices=[no_fp64]).fit(Xd)
    assert km.cluster_centers_.dtype == np.float32


def test_device_array_in_the_callers_own_context(profile, blobs):
    """A program holding its data in its own context embeds oclclust: the
    fit runs in that context, with no copy through the host."""
    ctx = cl.Context([profile.cl_device()])
    queue = cl.CommandQueue(ctx)
    X = blobs[0]
    Xd = cla.to_device(queue, X)
    params = dict(n_clusters=K, init=bad_init(X), n_init=1)
    ours = oc.KMeans(devices=[profile], **params).fit(Xd)
    assert_same_fit(ours, SKMeans(**params).fit(X))
    np.testing.assert_array_equal(ours.predict(Xd), ours.labels_)


def test_device_array_without_a_queue_is_refused(profile, blobs):
    Xd = cla.to_device(profile.queue(), blobs[0]).with_queue(None)
    with pytest.raises(ValueError, match="needs a queue"):
        oc.KMeans(K, devices=[profile]).fit(Xd)


def test_float64_on_a_device_without_fp64(profile, blobs):
    no_fp64 = dataclasses.replace(profile, fp64=False)
    X = blobs[0]
    with pytest.raises(ValueError, match="does not support float64"):
        oc.KMeans(K, dtype="float64", devices=[no_fp64]).fit(X)
    params = dict(n_clusters=K, init=bad_init(X), n_init=1)
    with pytest.warns(RuntimeWarning, match="no fp64: computing in float32"):
        ours = oc.KMeans(devices=[no_fp64], **params).fit(X)
    assert ours.cluster_centers_.dtype == np.float32
    assert_same_fit(ours, SKMeans(**params).fit(X.astype(np.float32)))


# ---------------------------------------------------------------- bad inputs
def _with(value):
    def make(X):
        X = X.copy()
        X[5, 1] = value
        return X
    return make


BAD_DATA = {
    "nan": (_with(np.nan), ValueError, "NaN or infinity"),
    "inf": (_with(np.inf), ValueError, "NaN or infinity"),
    "-inf": (_with(-np.inf), ValueError, "NaN or infinity"),
    "float32-overflow": (lambda X: X.astype(np.float32) * np.float32(1e30), ValueError,
                         "overflow float32"),
    "empty": (lambda X: X[:0], ValueError, "0 sample"),
    "no-features": (lambda X: X[:, :0], ValueError, "0 feature"),
    "1d": (lambda X: X[:, 0], ValueError, "Expected 2D array, got 1D"),
    "3d": (lambda X: X[None], ValueError, "Expected 2D array, got 3D"),
    "k>n": (lambda X: X[:K - 1], ValueError, f"n_samples={K - 1} should be >= n_clusters={K}"),
    "complex": (lambda X: X + 1j, ValueError, "Complex data not supported"),
    "strings": (lambda X: np.array([["a", "b"]] * 10), ValueError, "could not convert"),
    "object": (lambda X: np.array([[{}, 1.0]] * 10, dtype=object), TypeError, "real number"),
}


@pytest.mark.parametrize("case", BAD_DATA)
def test_bad_data(devices, blobs, case):
    make, exc, match = BAD_DATA[case]
    with pytest.raises(exc, match=match):
        oc.KMeans(K, devices=devices).fit(make(blobs[0]))


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_nonfinite_device_array(devices, queue, blobs, value):
    Xd = cla.to_device(queue, _with(value)(blobs[0]).astype(np.float32))
    with pytest.raises(ValueError, match="NaN or infinity"):
        oc.KMeans(K, devices=devices).fit(Xd)


@pytest.mark.parametrize("method", ["predict", "transform", "score"])
def test_bad_data_after_fit(devices, blobs, method):
    X = blobs[0]
    km = oc.KMeans(K, n_init=1, random_state=0, devices=devices).fit(X)
    with pytest.raises(ValueError, match="X has 2 features, but KMeans is expecting 3"):
        getattr(km, method)(X[:, :2])
    with pytest.raises(ValueError, match="NaN or infinity"):
        getattr(km, method)(_with(np.nan)(X))
    with pytest.raises(NotFittedError):
        getattr(oc.KMeans(K, devices=devices), method)(X)


BAD_PARAMS = {
    "n_clusters=0": (dict(n_clusters=0), "'n_clusters' parameter"),
    "n_clusters=2.5": (dict(n_clusters=2.5), "'n_clusters' parameter"),
    "max_iter=0": (dict(max_iter=0), "'max_iter' parameter"),
    "n_init=0": (dict(n_init=0), "'n_init' parameter"),
    "tol<0": (dict(tol=-1e-3), "'tol' parameter"),
    "init=bogus": (dict(init="bogus"), "'init' parameter"),
    "init-shape": (dict(init=np.zeros((K, 2))), r"shape of the initial centers \(4, 2\)"),
    "init-k": (dict(init=np.zeros((K + 1, 3))), r"shape of the initial centers \(5, 3\)"),
    "init-nan": (dict(init=np.full((K, 3), np.nan)), "initial centers contain NaN"),
    "dtype=int32": (dict(dtype="int32"), "'dtype' parameter"),
    "dtype=np.int32": (dict(dtype=np.int32), "dtype must be float32 or float64"),
    "devices=nothing": (dict(devices="no such device"), "no OpenCL device matches"),
    "devices=5": (dict(devices=5), "'devices' parameter"),
}


@pytest.mark.parametrize("case", BAD_PARAMS)
def test_bad_params(devices, blobs, case):
    params, match = BAD_PARAMS[case]
    params = {"n_clusters": K, "devices": devices, **params}
    with pytest.raises(ValueError, match=match):
        oc.KMeans(**params).fit(blobs[0])


BAD_WEIGHTS = {
    "negative": (lambda n: -np.ones(n), "Negative values"),
    "short": (lambda n: np.ones(n - 1), r"sample_weight.shape == \(599,\), expected \(600,\)"),
    "2d": (lambda n: np.ones((n, 1)), "sample_weight.shape"),
    "nan": (lambda n: np.full(n, np.nan), "sample_weight contains NaN"),
    "zero": (lambda n: np.zeros(n), "at least one non-zero"),
}


@pytest.mark.parametrize("case", BAD_WEIGHTS)
def test_bad_sample_weight(devices, blobs, case):
    make, match = BAD_WEIGHTS[case]
    X = blobs[0]
    with pytest.raises(ValueError, match=match):
        oc.KMeans(K, devices=devices).fit(X, sample_weight=make(len(X)))


def test_array_init_with_n_init_warns(devices, blobs):
    X = blobs[0]
    with pytest.warns(RuntimeWarning, match="performing only one init"):
        km = oc.KMeans(K, init=bad_init(X), n_init=3, devices=devices).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same_fit(oc.KMeans(K, init=bad_init(X).tolist(), devices=devices).fit(X), km)


# ---------------------------------------------------- scikit-learn's contract
@pytest.mark.parametrize("estimator, check", list(sklearn_checks(
    lambda name: oc.KMeans(devices=name),
    # sparse rows too, as scikit-learn's own KMeans expects of itself
    dict(SAMPLE_WEIGHT_XFAIL, check_sample_weight_equivalence_on_sparse_data=SAMPLE_WEIGHT_XFAIL[
        "check_sample_weight_equivalence_on_dense_data"]))))
def test_sklearn_check_estimator(estimator, check):
    check(estimator)
