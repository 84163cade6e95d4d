"""A rank that fails anywhere in a fit never leaves the others waiting, nor
lets them return a model (mpich's mpiexec from PyPI, real processes;
tests/harness/mpi_script.py, its faults tests/harness/rank_faults.py).

Rank 1 of 2 or 3 fails in one phase of a fit of every iterative estimator
that takes ``comm`` (MiniBatchKMeans fits in one process): in its shard's
placement (load), in the ranks' check of their shards (check), in the
initialisation (start), in the third iteration's
pass (mid) or before that iteration's sum over the ranks (between), or
after the last iteration (end).  Rank 1's record of where its fault fired
is checked, so that a case cannot pass by failing elsewhere.
- raising (a ValueError) or interrupted: every rank raises within seconds,
  a RankError naming rank 1 and of the failing error's built-in type (an
  interrupted rank 1 raises its KeyboardInterrupt).  These fits go on in
  one launch (the harness's plan), one after another;
- its process ending at once (SIGKILL, os._exit): the launcher ends the
  others within seconds and exits non-zero, no rank writing a result (MPI's
  own rule: no rank outlives a dead one).  One launch each.
"""
import json
import time

import pytest

from conftest import mpirun
from rank_faults import MID_ITERATIONS, PHASES

ESTIMATORS = ["KMeans", "FuzzyCMeans", "GaussianMixture", "EnsembleKMeans"]
SECONDS = 30   # a case ends in a few: a hang would run to the test timeout
RAISING = ["raise", "interrupt"]
# a death at each of the three points, for every estimator; dying as the
# shard is placed is the same code for all of them
DEATHS = [(estimator, phase, "exit" if phase == "start" else "kill")
          for estimator in ESTIMATORS for phase in ("start", "mid", "end")] + [
    ("KMeans", "load", "kill")]
EMPTY = [("KMeans", "spherical"), ("EnsembleKMeans", "spherical"), ("KMeans", "sparse")]


@pytest.fixture(scope="module")
def platform(devices):
    return devices[0].platform


def fault(estimator, phase, action):
    """The plan entry (mpi_script.run_case's keywords) of one fault."""
    return dict(case="fault", estimator_name=estimator, init="k-means++",
                fault=f"{action}@{phase}")


def plan(ranks):
    """{key: a case that ends in an error on every rank} on *ranks*."""
    cases = {(estimator, phase, action): fault(estimator, phase, action)
             for estimator in ESTIMATORS for phase in PHASES for action in RAISING}
    if ranks == 2:
        for estimator, option in EMPTY:
            cases["empty", estimator, option] = dict(case="empty", estimator_name=estimator,
                                                     **{option: True})
    return cases


@pytest.fixture(scope="module")
def planned(platform, tmp_path_factory):
    """Every case of plan(ranks) in one mpiexec for 2 and for 3 ranks:
    (ranks, key) -> (mpiexec's CompletedProcess, {rank: its result})."""
    out = tmp_path_factory.mktemp("mpi_faults")
    got = {}
    for ranks in (2, 3):
        cases = plan(ranks)
        where = out / f"r{ranks}"
        where.mkdir()
        (where / "plan.json").write_text(json.dumps(list(cases.values())))
        proc = mpirun(ranks, "fault", str(where), "--plan", str(where / "plan.json"),
                      platform=platform, cwd=out, timeout=10 * SECONDS)
        for i, key in enumerate(cases):
            got[ranks, key] = (proc, {r: json.loads(f.read_text()) for r in range(ranks)
                                      if (f := where / f"rank{r}_{i}.json").exists()})
    return got


def ended_together(planned, ranks, key):
    """Every rank's result of one planned case, each an error raised within seconds."""
    proc, got = planned[ranks, key]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(got) == list(range(ranks)), proc.stderr[-3000:]
    for r in got.values():
        assert "error" in r, r
        assert r["seconds"] < SECONDS, r
    return got


def fired_in(fired, phase):
    """Whether rank 1's fault fired in *phase* (rank_faults' record)."""
    iterations = {"load": 0, "check": 0, "start": 0, "mid": MID_ITERATIONS,
                  "between": MID_ITERATIONS}
    done = fired["iterations"]
    return fired["phase"] == phase and (done > MID_ITERATIONS if phase == "end"
                                        else done == iterations[phase])


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("action", RAISING)
@pytest.mark.covering(2)
def test_a_failing_rank_makes_every_rank_raise(ranks, estimator, phase, action, planned):
    got = ended_together(planned, ranks, (estimator, phase, action))
    assert fired_in(got[1]["fired"], phase), got[1]
    for rank, r in got.items():
        if rank == 1 and action == "interrupt":
            assert r["error"] == "KeyboardInterrupt", r
            continue
        assert r["error"] == "RankError", r
        assert "rank 1" in r["message"], r["message"]
        assert f"injected failure at {phase} " in r["message"], r["message"]
        assert ("KeyboardInterrupt" in r["message"]) is (action == "interrupt")
        # a ValueError stays one on every rank (a KeyboardInterrupt has no Exception type)
        assert r["value_error"] is (action == "raise"), r


@pytest.mark.parametrize("estimator,phase,death", DEATHS)
@pytest.mark.covering(1)
def test_a_rank_that_dies_ends_the_job(estimator, phase, death, platform, tmp_path):
    start = time.monotonic()
    proc = mpirun(2, "fault", str(tmp_path), "--estimator", estimator, "--init", "k-means++",
                  "--fault", f"{death}@{phase}", platform=platform, cwd=tmp_path,
                  timeout=3 * SECONDS)
    assert time.monotonic() - start < SECONDS, "the ranks did not end within seconds"
    assert proc.returncode != 0
    assert not list(tmp_path.glob("rank*.json"))   # no rank went on to a result
    fired = json.loads((tmp_path / "fault1.json").read_text())
    assert fired_in(fired, phase) and fired["action"] == death, fired


@pytest.mark.parametrize("estimator,option", EMPTY)
def test_an_empty_shard_makes_every_rank_raise(estimator, option, planned):
    """Rank 1 of 2 has no rows: with spherical=True (its unit rows made
    before the ranks' check, it raised alone and rank 0 waited forever) and
    with sparse rows (each rank fitted alone: rank 0 finished), every rank
    raises the ValueError-typed RankError naming rank 1, within seconds."""
    for r in ended_together(planned, 2, ("empty", estimator, option)).values():
        assert r["error"] == "RankError", r
        assert "rank 1" in r["message"] and "0 sample" in r["message"], r["message"]
        assert r["value_error"], r
