"""cluster/checkpoint.py: checkpoint_every's forms, the atomic writer, and
how often a fit writes (the resumptions themselves:
tests/faults/test_checkpoint_faults.py)."""
import numpy as np
import pytest

import oclclust as oc
from oclclust.cluster import checkpoint

ESTIMATORS = ["KMeans", "MiniBatchKMeans", "EnsembleKMeans", "FuzzyCMeans", "GaussianMixture"]


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("value,parsed", [
    (1, ("iterations", 1)), (25, ("iterations", 25)), (0.5, ("seconds", 0.5)),
    ("30s", ("seconds", 30.0)), ("2.5 s", ("seconds", 2.5)), ("5min", ("seconds", 300.0)),
    ("1h", ("seconds", 3600.0)), ("1e-3s", ("seconds", 0.001))])
def test_checkpoint_every_forms(value, parsed):
    assert checkpoint.parse_every(value) == parsed


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("value,message", [
    (0, "checkpoint_every"), (-2.0, "checkpoint_every"), (True, "checkpoint_every"),
    ("30", "a string like '30s'"), ("0s", "a string like '30s'"), ("soon", "'30s'"),
    (float("inf"), "must be finite")])
def test_a_bad_checkpoint_every_is_refused_before_the_fit(name, value, message, tmp_path):
    est = getattr(oc, name)(checkpoint=tmp_path / "c", checkpoint_every=value)
    with pytest.raises(ValueError, match=message):
        est.fit(np.zeros((10, 2)))
    assert not (tmp_path / "c").exists()


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_checkpoint_that_is_not_a_path_is_refused(name):
    with pytest.raises(ValueError, match="'checkpoint' parameter"):
        getattr(oc, name)(checkpoint=3).fit(np.zeros((10, 2)))


def test_a_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "c.npz"
    checkpoint.write_atomically(path, lambda fh: fh.write(b"old"))

    def failing(fh):
        fh.write(b"half of the new")
        raise OSError("disk full")
    with pytest.raises(OSError, match="disk full"):
        checkpoint.write_atomically(path, failing)
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["c.npz"]   # no temporary file left


@pytest.mark.parametrize("every,writes", [(1, 6), (2, 3), (4, 1), (1e-9, 6), ("1h", 0)])
def test_writes_every_iterations_or_seconds(every, writes, devices, tmp_path, monkeypatch):
    """An int counts iterations; seconds write at the first iteration's end
    past them (1 ns: every one; an hour: none in a short fit)."""
    count, real = [], checkpoint.Checkpoint.write
    monkeypatch.setattr(checkpoint.Checkpoint, "write",
                        lambda self, state: (count.append(1), real(self, state))[1])
    X = np.random.RandomState(0).normal(size=(300, 2))
    oc.FuzzyCMeans(3, max_iter=6, tol=0, random_state=0, devices=devices,
                   checkpoint=tmp_path / "c", checkpoint_every=every).fit(X)
    assert len(count) == writes


@pytest.mark.parametrize("where,message", [("no/such/folder/c", "its folder .* does not exist"),
                                           (".", "not a readable oclclust checkpoint")])
def test_a_checkpoint_path_that_cannot_be_one_is_refused_at_once(where, message, devices,
                                                                  tmp_path):
    """A missing folder is named before the fit (not at its first write); a
    folder given as the path is no checkpoint."""
    with pytest.raises(ValueError, match=message):
        oc.KMeans(2, devices=devices, checkpoint=tmp_path / where).fit(np.zeros((10, 2)))
