"""Parameters and rows that once gave misleading messages, silently wrong
results or an out-of-memory kill (the fault campaign of issue 37): each now
a ValueError naming the problem, before any state is set."""
import numpy as np
import pytest

import oclclust as oc
from conftest import make_blobs, mpirun

ESTIMATORS = {
    "KMeans": lambda **kw: oc.KMeans(3, n_init=1, random_state=0, **kw),
    "MiniBatchKMeans": lambda **kw: oc.MiniBatchKMeans(3, random_state=0, **kw),
    "FuzzyCMeans": lambda **kw: oc.FuzzyCMeans(3, random_state=0, **kw),
    "AgglomerativeClustering": lambda **kw: oc.AgglomerativeClustering(3, **kw),
    "DBSCAN": lambda **kw: oc.DBSCAN(eps=1.0, **kw),
    "HDBSCAN": lambda **kw: oc.HDBSCAN(**kw),
}


@pytest.fixture(scope="module")
def rows():
    return make_blobs(300, 3, 3, dtype=np.float32)[0]


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_devices_of_a_wrong_type_name_the_parameter(name, rows):
    with pytest.raises(ValueError, match=f"The 'devices' parameter of {name} must be one of"):
        ESTIMATORS[name](devices=123).fit(rows)


@pytest.mark.parametrize("name", ["KMeans", "MiniBatchKMeans", "FuzzyCMeans"])
def test_initial_centres_must_be_numbers(name, rows, devices):
    init = np.array([["a", "b", "c"]] * 3)
    with pytest.raises(ValueError, match="initial centers given as init must be numeric"):
        ESTIMATORS[name](init=init, devices=devices).fit(rows)


EPS = "'eps' parameter of DBSCAN must be one of Real in (0, None)"


@pytest.mark.parametrize("make,value,message", [
    (lambda v: oc.DBSCAN(eps=v), -1.0, EPS),
    (lambda v: oc.DBSCAN(eps=v), 0.0, EPS),
    (lambda v: oc.DBSCAN(p=v), 0.0, "'p' parameter of DBSCAN must be one of Real in (0, None]"),
    (lambda v: oc.HDBSCAN(alpha=v), 0.0,
     "'alpha' parameter of HDBSCAN must be one of float in (0, None)"),
], ids=["eps-negative", "eps-zero", "p-zero", "alpha-zero"])
def test_an_open_interval_is_stated_as_one(make, value, message, rows, devices):
    estimator = make(value)
    estimator.set_params(devices=devices)
    with pytest.raises(ValueError) as exc:
        estimator.fit(rows)
    assert message in str(exc.value)


@pytest.fixture(scope="module")
def overflowing(rows):
    """float32 rows whose squares overflow float32 (each value finite)."""
    return (rows * np.float32(1e20)).astype(np.float32)


@pytest.mark.parametrize("name", ["KMeans", "MiniBatchKMeans"])
@pytest.mark.parametrize("method", ["predict", "score"])
def test_inference_on_overflowing_rows_names_the_overflow(name, method, rows, overflowing,
                                                           devices):
    fitted = ESTIMATORS[name](devices=devices).fit(rows)
    with pytest.raises(ValueError, match="squares overflow float32"):
        getattr(fitted, method)(overflowing)


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_minibatch_refuses_rows_whose_squares_overflow(method, overflowing, devices):
    estimator = ESTIMATORS["MiniBatchKMeans"](devices=devices)
    with pytest.raises(ValueError, match="squares overflow float32"):
        getattr(estimator, method)(overflowing)
    assert not hasattr(estimator, "cluster_centers_")   # nothing fitted


class CountingState(np.random.RandomState):
    """A RandomState that records the sizes of its uniform draws."""

    def __init__(self, seed):
        super().__init__(seed)
        self.sizes = []

    def uniform(self, low=0.0, high=1.0, size=None):
        self.sizes.append(int(np.prod(size)) if size is not None else 1)
        return super().uniform(low, high, size)


def test_kmeans_parallel_draws_at_most_every_row(rows, devices):
    """A huge oversampling factor draws each round's candidates from all
    rows, no more (it once asked for 22 GiB at oversampling_factor=1e9)."""
    state = CountingState(0)
    km = oc.KMeans(3, init="k-means||", oversampling_factor=1e3, n_init=1, random_state=state,
                   devices=devices).fit(rows)
    assert max(state.sizes) == len(rows)
    assert np.isfinite(km.inertia_) and len(np.unique(km.labels_)) == 3


def test_rank_in_a_labels_name_under_mpiexec_without_mpi(devices, tmp_path):
    """mpiexec of two processes that fit alone (--mpi off): "{rank}" is each
    one's launcher rank, so each writes its own labels file."""
    np.save(tmp_path / "x.npy", make_blobs(200, 2, 3)[0])
    proc = mpirun(2, "fit", "x.npy", "-a", "dbscan", "--eps", "1.0", "--mpi", "off",
                  "--labels", "dl{rank}.npy", "--devices", devices[0].platform,
                  platform=devices[0].platform, cwd=tmp_path, module=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, second = np.load(tmp_path / "dl0.npy"), np.load(tmp_path / "dl1.npy")
    np.testing.assert_array_equal(first, second)   # the same fit, each process's own file
