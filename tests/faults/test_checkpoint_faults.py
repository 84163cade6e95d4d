"""A fit killed (SIGKILL, a real subprocess: tests/harness/checkpoint_script.py)
after writing its checkpoint, or while writing it, resumes from the last
whole checkpoint and ends at the model of an uninterrupted fit, bit for bit
(issue 37, "Survive" 2); under MPI rank 0 writes and both ranks resume."""
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import checkpoint_script as cs
import split_free_models as sf
from conftest import mpirun
from oclclust.cluster import checkpoint

# GaussianMixture's few iterations at tol=0 do not converge (as meant)
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
SECONDS = 120   # a killed fit ends in a few: a hang fails through the timeout


@pytest.fixture(scope="module")
def one_device(devices):
    return sf.one_device(devices)


def killed(name, path, after, devices, torn=False):
    """checkpoint_script's fit of *name*, killed at its *after*-th write."""
    env = dict(os.environ, OCLCLUST_TEST_PLATFORM=devices[0].platform)
    proc = subprocess.run([sys.executable, cs.__file__, name, str(path), str(after),
                           *(["--torn"] if torn else [])], capture_output=True, text=True,
                          timeout=SECONDS, env=env)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    return proc


def counting_writes(monkeypatch):
    """The number of checkpoint writes of this process, as a list that grows."""
    writes, real = [], checkpoint.Checkpoint.write
    monkeypatch.setattr(checkpoint.Checkpoint, "write",
                        lambda self, state: (writes.append(state), real(self, state))[1])
    return writes


def assert_same_model(got, ref):
    assert sf.differences(without_history(sf.model(got)), without_history(sf.model(ref))) == []


def without_history(model):
    # the first resumed pass counts every label as changed (n_changed); the rest is equal
    return {k: v for k, v in model.items() if k != "history_"}


@pytest.mark.parametrize("torn", [False, True], ids=["after", "mid-write"])
@pytest.mark.parametrize("name", list(cs.ESTIMATORS))
@pytest.mark.covering(1)
def test_a_killed_fit_resumes_at_the_uninterrupted_model(name, torn, one_device, tmp_path,
                                                         monkeypatch):
    """Killed after its 2nd write, or halfway through its 3rd (the temporary
    file torn, the 2nd checkpoint still in place): the fit started again
    resumes (writing only the iterations left) and ends where an
    uninterrupted fit does."""
    make, X, path = cs.ESTIMATORS[name], cs.data(), tmp_path / "fit.ckpt"
    killed(name, path, 3 if torn else 2, one_device, torn)
    assert path.exists()
    assert [p.name for p in tmp_path.iterdir()].count("fit.ckpt") == 1
    assert checkpoint.read(path)[1]  # whole
    writes = counting_writes(monkeypatch)
    uninterrupted = make(one_device, checkpoint=tmp_path / "whole.ckpt").fit(X)
    whole = len(writes)
    resumed = make(one_device, checkpoint=path).fit(X)
    assert len(writes) - whole == whole - 2, "the fit did not resume after 2 writes"
    assert_same_model(resumed, uninterrupted)
    assert_same_model(resumed, make(one_device).fit(X))   # a checkpoint changes nothing


def test_a_torn_temporary_file_is_not_read(one_device, tmp_path):
    """What a kill mid-write leaves beside the checkpoint is a temporary
    file; the checkpoint itself is whole and loads."""
    path = tmp_path / "fit.ckpt"
    killed("KMeans", path, 2, one_device, torn=True)
    leftovers = [p for p in tmp_path.iterdir() if p != path]
    assert len(leftovers) == 1 and leftovers[0].name.endswith(".tmp")
    assert checkpoint.read(path)[1]["iteration"] == 1   # the first write, whole


@pytest.fixture
def written(one_device, tmp_path):
    """A finished KMeans fit's checkpoint path, its data and maker."""
    make, X, path = cs.ESTIMATORS["KMeans"], cs.data(), tmp_path / "fit.ckpt"
    make(one_device, checkpoint=path).fit(X)
    return make, X, path


@pytest.mark.parametrize("change,message", [
    (dict(n_clusters=4), "other parameters (n_clusters)"),
    (dict(tol=1e-3, max_iter=7), "other parameters (max_iter, tol)")])
def test_a_checkpoint_of_other_parameters_is_refused(change, message, written, one_device):
    make, X, path = written
    before = path.read_bytes()
    with pytest.raises(ValueError, match=f"{path}.*" + message.replace("(", r"\(").replace(
            ")", r"\)")):
        make(one_device, checkpoint=path).set_params(**change).fit(X)
    assert path.read_bytes() == before   # never overwritten


@pytest.mark.parametrize("other", ["rows", "weights", "shape", "estimator"])
def test_a_checkpoint_of_other_data_is_refused(other, written, one_device):
    make, X, path = written
    if other == "estimator":
        with pytest.raises(ValueError, match="another fit: class 'KMeans' != 'FuzzyCMeans'"):
            cs.ESTIMATORS["FuzzyCMeans"](one_device, checkpoint=path).fit(X)
        return
    Y, w = X.copy(), None
    if other == "rows":
        Y[7, 1] += 1e-9
    elif other == "weights":
        w = np.ones(len(X))
    else:
        Y = Y[:-1]
    match = "n_samples 2000 != 1999" if other == "shape" else "the data's fingerprint"
    with pytest.raises(ValueError, match=match):
        make(one_device, checkpoint=path).fit(Y, sample_weight=w)


def test_a_damaged_checkpoint_is_refused(written, one_device):
    make, X, path = written
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(ValueError, match="not a readable oclclust checkpoint"):
        make(one_device, checkpoint=path).fit(X)


def test_mpi_rank_0_writes_and_both_ranks_resume(devices, tmp_path):
    """2 ranks: the fit killed (SIGKILL of rank 0 after its 2nd write: the
    launcher ends rank 1), then started again: both ranks resume from rank
    0's checkpoint (rank 1 writes none) and end at the model of an
    uninterrupted 2-rank fit."""
    platform = devices[0].platform
    proc = mpirun(2, "checkpoint", str(tmp_path), "--kill-after", "2", platform=platform,
                  cwd=tmp_path, timeout=SECONDS)
    assert proc.returncode != 0 and (tmp_path / "fit.ckpt").exists()
    assert not list(tmp_path.glob("rank*.json"))
    proc = mpirun(2, "checkpoint", str(tmp_path), platform=platform, cwd=tmp_path,
                  timeout=SECONDS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for r in got:
        assert r["same"], r
        assert r["resumed_at"] == 2, r
    assert got[0]["writes"] == got[0]["n_iter"] - 2 > 0 and got[1]["writes"] == 0
