"""A rank that fails anywhere in a fit never leaves the others waiting
(mpich's mpiexec from PyPI, real processes; tests/harness/mpi_script.py).

Each case fails rank 1 of 2 or 3 in one way; the test's timeout is far
below a hang's and the check is that every rank ended within seconds:
- raising in a pass, or between passes (before a sum over the ranks the
  others are already in): every rank raises a RankError naming rank 1, of
  the failing error's built-in type;
- interrupted (KeyboardInterrupt) in a pass: rank 1 raises it, the others a
  RankError naming it;
- its process ending at once (os._exit, SIGKILL): the launcher ends the
  others and exits non-zero (MPI's own rule: no rank outlives a dead one).
"""
import json
import time

import pytest

from conftest import mpirun

ESTIMATORS = ["KMeans", "FuzzyCMeans", "GaussianMixture", "EnsembleKMeans"]
SECONDS = 30   # a case ends in a few: a hang would run to the test timeout


@pytest.fixture
def platform(devices):
    return devices[0].platform


def launched(ranks, case, estimator, platform, tmp_path, *options):
    start = time.monotonic()
    proc = mpirun(ranks, case, str(tmp_path), "--estimator", estimator, *options,
                  platform=platform, cwd=tmp_path, timeout=3 * SECONDS)
    assert time.monotonic() - start < SECONDS, "the ranks did not end within seconds"
    return proc, {int(p.stem[4:]): json.loads(p.read_text())
                  for p in tmp_path.glob("rank*.json")}


FAILURES = {"fail_between": ("ValueError", "injected failure between passes"),
            "fail_mid": ("RuntimeError", "injected failure on rank 1")}


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("case,estimator", [
    (case, estimator) for case in FAILURES for estimator in ESTIMATORS
    # the ensemble's pass is not one of the ShardedData.map calls fail_mid counts
    if (case, estimator) != ("fail_mid", "EnsembleKMeans")])
def test_a_failing_rank_makes_every_rank_raise(ranks, case, estimator, platform, tmp_path):
    kind, message = FAILURES[case]
    proc, got = launched(ranks, case, estimator, platform, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(got) == list(range(ranks))
    for r in got.values():
        assert r.get("error") == "RankError", r
        assert "rank 1 of" in r["message"] and message in r["message"], r["message"]
        assert r["value_error"] is (kind == "ValueError"), r


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("estimator", ["KMeans", "GaussianMixture", "FuzzyCMeans"])
def test_an_interrupted_rank_stops_every_rank(ranks, estimator, platform, tmp_path):
    proc, got = launched(ranks, "interrupt_mid", estimator, platform, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert got[1]["error"] == "KeyboardInterrupt"
    for r in (got[i] for i in range(ranks) if i != 1):
        assert r["error"] == "RankError" and "rank 1 of" in r["message"], r
        assert "KeyboardInterrupt" in r["message"]


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("case", ["exit_mid", "kill_mid"])
def test_a_rank_that_dies_ends_the_job(ranks, case, platform, tmp_path):
    proc, got = launched(ranks, case, "KMeans", platform, tmp_path)
    assert proc.returncode != 0
    assert not got   # no rank went on to a result


@pytest.mark.parametrize("estimator,option", [("KMeans", "--spherical"),
                                              ("EnsembleKMeans", "--spherical"),
                                              ("KMeans", "--sparse")])
def test_an_empty_shard_makes_every_rank_raise(estimator, option, platform, tmp_path):
    """Rank 1 of 2 has no rows: with spherical=True (its unit rows made
    before the ranks' check, it raised alone and rank 0 waited forever) and
    with sparse rows (each rank fitted alone: rank 0 finished), every rank
    raises the ValueError-typed RankError naming rank 1, within seconds."""
    proc, got = launched(2, "empty", estimator, platform, tmp_path, option)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(got) == [0, 1]
    for r in got.values():
        assert r.get("error") == "RankError", r
        assert "rank 1" in r["message"] and "0 sample" in r["message"], r["message"]
        assert r["value_error"], r
