"""SPMD fits across MPI ranks (mpich's mpiexec from PyPI, real processes).

Each case runs tests/harness/mpi_script.py under ``mpiexec -n R`` on the platform
under test; every rank reports what it fitted or raised.  A hang fails the
test through the subprocess timeout.
"""
import json

import numpy as np
import pytest

import oclclust as oc
from conftest import mpirun
from oclclust.io.modelio import load_model

import mpi_script  # noqa: E402 -- beside this file, as conftest


def results(out, ranks):
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(ranks)]


@pytest.fixture(scope="session")
def platform(devices):
    return devices[0].platform


KMEANS_STARTS = [("k-means++", False, "float64"), ("k-means++", True, "float32"),
                 ("random", True, "float64"), ("k-means||", True, "float64"),
                 ("k-means||", False, "float32")]
ESTIMATORS = ["FuzzyCMeans", "GaussianMixture", "EnsembleKMeans"]
MIXTURE_STARTS = ["kmeans", "k-means++", "random", "random_from_data"]
TIED_SPHERICAL = [("tied", "k-means++"), ("tied", "random_from_data"), ("spherical", "kmeans")]
EMPTY = ["KMeans", "EnsembleKMeans"]
SPARSE_STARTS = [("k-means++", False), ("random", True)]


def plan(ranks):
    """{key: a fit or mismatch case (mpi_script.run_case's keywords)} on *ranks*."""
    cases = {("kmeans",) + start: dict(case="fit", init=start[0], weighted=start[1],
                                       dtype=start[2]) for start in KMEANS_STARTS}
    for init, weighted in SPARSE_STARTS:
        cases["sparse", init, weighted] = dict(case="fit", init=init, weighted=weighted,
                                               sparse=True)
    if ranks == 2:
        for name in ESTIMATORS:
            cases["fit", name] = dict(case="fit", estimator_name=name)
            cases["mismatch", name] = dict(case="mismatch", estimator_name=name)
        for init in MIXTURE_STARTS:
            cases["mixture", init] = dict(case="fit", estimator_name="GaussianMixture",
                                          init=init)
        for cov, init in TIED_SPHERICAL:
            cases["mixture", cov, init] = dict(case="fit", estimator_name="GaussianMixture",
                                               init=init, covariance_type=cov)
        for name in EMPTY:
            cases["empty", name] = dict(case="fit", estimator_name=name, init="repeated")
    return cases


@pytest.fixture(scope="module")
def planned(platform, tmp_path_factory):
    """Every fit case of this module run by one mpiexec for each number of
    ranks (1, 2, 3): the ranks' start, imports and kernels once, not once
    a case (most of a case's time on a CPU runtime).  (ranks, key) ->
    (mpiexec's CompletedProcess, [each rank's result], None where missing)."""
    out = tmp_path_factory.mktemp("mpi_plan")
    got = {}
    for ranks in (1, 2, 3):
        cases = plan(ranks)
        where = out / f"r{ranks}"
        where.mkdir()
        (where / "plan.json").write_text(json.dumps(list(cases.values())))
        proc = mpirun(ranks, "fit", str(where), "--plan", str(where / "plan.json"),
                      platform=platform, cwd=out, timeout=900)
        for i, key in enumerate(cases):
            files = [where / f"rank{r}_{i}.json" for r in range(ranks)]
            got[ranks, key] = (proc, [json.loads(f.read_text()) if f.exists() else None
                                      for f in files])
    return got


def fitted(planned, ranks, *key):
    """The ranks' results of one planned case, each a fit (no error)."""
    proc, got = planned[ranks, key]
    assert proc.returncode == 0 and None not in got, proc.stderr[-3000:]
    for r in got:
        assert "error" not in r, r
    return got


@pytest.mark.parametrize("init,weighted,dtype", KMEANS_STARTS)
def test_ranks_fit_the_model_of_one_process(init, weighted, dtype, devices, planned):
    """1, 2 and 3 ranks: the same model on every rank, equal to one process
    (no comm) fitting the concatenated data; labels are each rank's own."""
    X, w = mpi_script.data()
    ref = oc.KMeans(n_clusters=mpi_script.K, init=init, n_init=1, random_state=0, tol=0,
                    max_iter=50, devices=devices).fit(X.astype(dtype),
                                                      sample_weight=w if weighted else None)
    for ranks in (1, 2, 3):
        got = fitted(planned, ranks, "kmeans", init, weighted, dtype)
        for r in got:
            assert "error" not in r, r
            np.testing.assert_allclose(r["centers"], ref.cluster_centers_, rtol=1e-6, atol=1e-9)
            assert r["inertia"] == pytest.approx(ref.inertia_, rel=1e-6)
            assert r["n_iter"] == ref.n_iter_
        labels = np.concatenate([r["labels"] for r in sorted(got, key=lambda r: r["start"])])
        assert (labels == ref.labels_).all()


@pytest.mark.parametrize("init,weighted", SPARSE_STARTS)
def test_sparse_ranks_fit_the_model_of_one_process(init, weighted, devices, planned):
    """KMeans on CSR shards fits over all ranks (issue 37: each rank fitted its
    own rows): one rank is one process bit for bit; over 2 and 3 ranks the
    seeding is one process's (its draws over the joined weights and
    distances) and the centres within the rounding of the per-cluster sums
    (a rank's partial sums added after, not row after row): the same
    labels and iterations."""
    from scipy.sparse import csr_matrix
    X, w = mpi_script.data()
    ref = oc.KMeans(n_clusters=mpi_script.K, init=init, n_init=1, random_state=0, tol=0,
                    max_iter=50, devices=devices).fit(csr_matrix(X),
                                                      sample_weight=w if weighted else None)
    for ranks in (1, 2, 3):
        got = fitted(planned, ranks, "sparse", init, weighted)
        for r in got:
            if ranks == 1:
                assert np.array_equal(r["centers"], ref.cluster_centers_)
                assert r["inertia"] == ref.inertia_
            np.testing.assert_allclose(r["centers"], ref.cluster_centers_, rtol=1e-13, atol=0)
            assert r["inertia"] == pytest.approx(ref.inertia_, rel=1e-13)
            assert r["n_iter"] == ref.n_iter_
        assert all(r["centers"] == got[0]["centers"] for r in got)   # every rank's the same
        labels = np.concatenate([r["labels"] for r in sorted(got, key=lambda r: r["start"])])
        assert (labels == ref.labels_).all()


@pytest.mark.parametrize("case,expected,value_error", [
    ("mismatch", "n_features", True), ("empty", "0 sample", True)])
def test_a_bad_rank_makes_every_rank_raise(case, expected, value_error, platform, tmp_path):
    """A rank with another n_features or no rows: every rank raises a clear
    error naming the rank, and none hangs.  Bad data is a ValueError on
    every rank (a RankError that is also a ValueError), as scikit-learn
    users catch it.  (Errors raised mid-fit: tests/faults/test_mpi_faults.py.)"""
    proc = mpirun(3, case, str(tmp_path), platform=platform, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for r in results(tmp_path, 3):
        assert r.get("error") == "RankError", r
        assert expected in r["message"] and "rank 1" in r["message"], r["message"]
        assert r["value_error"] is value_error, r


def test_load_shard_gives_each_rank_its_rows(platform, tmp_path):
    full = np.arange(3 * 40, dtype=np.float32).reshape(40, 3)
    for i, (a, b) in enumerate(((0, 7), (7, 29), (29, 40))):
        np.save(tmp_path / f"part{i}.npy", full[a:b])
    proc = mpirun(3, "shards", str(tmp_path), platform=platform, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shards = [np.load(tmp_path / f"shard{r}.npy") for r in range(3)]
    assert [len(s) for s in shards] == [13, 13, 14]
    np.testing.assert_array_equal(np.concatenate(shards), full)


def test_cli_fit_under_mpiexec(platform, devices, tmp_path):
    """mpiexec -n 3 python -m oclclust fit: rank 0 writes the model, each
    rank its labels; the model is one process's."""
    X, _ = mpi_script.data()
    np.save(tmp_path / "data.npy", X)
    proc = mpirun(3, "fit", "data.npy", "--algorithm", "kmeans", "-k", str(mpi_script.K),
                  "--random-state", "0", "--devices", platform, "--out", "model.npz",
                  "--labels", "labels{rank}.npy", platform=platform, cwd=tmp_path,
                  module=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "3 rank(s)" in proc.stdout and proc.stdout.count("model written") == 1
    model = load_model(tmp_path / "model.npz")
    ref = oc.KMeans(n_clusters=mpi_script.K, random_state=0, devices=devices).fit(X)
    np.testing.assert_allclose(model.cluster_centers_, ref.cluster_centers_, rtol=1e-6)
    labels = np.concatenate([np.load(tmp_path / f"labels{r}.npy") for r in range(3)])
    assert (labels == ref.labels_).all()


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_iterative_estimator_across_ranks(name, devices, planned):
    """2 ranks fit the model one process fits on all rows; a rank whose
    shard has a feature fewer makes both raise (no hang)."""
    X, _ = mpi_script.data()
    ref = mpi_script.model_of(mpi_script.estimator(name, devices, None).fit(X))
    for r in fitted(planned, 2, "fit", name):
        np.testing.assert_allclose(r["model"], ref, rtol=1e-6, atol=1e-8)
    proc, got = planned[2, ("mismatch", name)]
    assert proc.returncode == 0 and None not in got, proc.stderr[-3000:]
    for r in got:
        assert r.get("error") == "RankError" and "n_features" in r["message"], r


@pytest.mark.parametrize("init", MIXTURE_STARTS)
def test_gaussian_mixture_starts_from_all_ranks_rows(init, devices, planned):
    """GaussianMixture's data-driven starts (init_params, "kmeans" the
    default) draw from every rank's rows: 2 ranks fit the model one process
    fits on all rows, and label each its own rows as that model does."""
    X, _ = mpi_script.data()
    one = mpi_script.estimator("GaussianMixture", devices, None, init).fit(X)
    got = fitted(planned, 2, "mixture", init)
    for r in got:
        np.testing.assert_allclose(r["model"], one.means_, rtol=1e-6, atol=1e-8)
    labels = np.concatenate([r["labels"] for r in sorted(got, key=lambda r: r["start"])])
    assert (labels == one.predict(X)).all()


@pytest.mark.parametrize("cov,init", TIED_SPHERICAL)
def test_tied_and_spherical_mixtures_across_ranks(cov, init, devices, planned):
    """2 ranks fit the tied / spherical model one process fits on all rows
    (tied's one-hot row starts need X'X of every rank's rows)."""
    X, _ = mpi_script.data()
    one = mpi_script.estimator("GaussianMixture", devices, None, init).set_params(
        covariance_type=cov).fit(X)
    for r in fitted(planned, 2, "mixture", cov, init):
        np.testing.assert_allclose(r["model"], one.means_, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(r["covariances"], one.covariances_, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", EMPTY)
def test_an_empty_cluster_takes_the_farthest_row_of_all_ranks(name, devices, planned):
    """Two equal starting centres leave a cluster empty: the row that fills
    it is the farthest of every rank's rows, so 2 ranks fit one process's model."""
    X, _ = mpi_script.data()
    ref = mpi_script.model_of(mpi_script.estimator(name, devices, None, "repeated").fit(X))
    for r in fitted(planned, 2, "empty", name):
        np.testing.assert_allclose(r["model"], ref, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name,also", [("ValueError", ValueError), ("TypeError", TypeError),
                                       ("MemoryError", MemoryError),
                                       ("RuntimeError", RuntimeError), ("OSError", None),
                                       ("Exception", None), ("NoSuchError", None)])
def test_rank_errors_keep_the_failing_type(name, also):
    from oclclust.parallel.comm import RankError, rank_error_type
    kind = rank_error_type(name)
    assert issubclass(kind, RankError) and kind.__name__ == "RankError"
    if also is not None:
        assert issubclass(kind, also)
    with pytest.raises(RankError):
        raise kind("rank 1: bad")
