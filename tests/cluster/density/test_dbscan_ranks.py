"""oc.DBSCAN across MPI ranks (cluster/density/dbscan/ranks.py) under a real
``mpiexec -n 2`` and ``-n 3`` (tests/harness/mpi_script.py's dbscan cases):
each rank's labels, core samples and components are those of one process
on all ranks' rows, and scikit-learn's: clusters crossing the slabs,
border rows near them, noise, weights, uneven and sorted splits, a rank's
slab cut again over its two sub-devices.  Bad
input on one rank makes every rank raise, within seconds."""
import json

import numpy as np
import pytest
from sklearn.cluster import DBSCAN as SKDBSCAN

import oclclust as oc
from conftest import mpirun

import mpi_script  # noqa: E402 -- beside conftest, as test_mpi's


@pytest.fixture(scope="session")
def platform(devices):
    return devices[0].platform


@pytest.fixture(scope="module")
def fitted(platform, tmp_path_factory):
    """{ranks: (mpiexec's CompletedProcess, [each rank's fits or None])} of
    case dbscan on 2 and 3 ranks (every fit of DBSCAN_FITS in one launch)."""
    got = {}
    for ranks in (2, 3):
        out = tmp_path_factory.mktemp(f"dbscan{ranks}")
        proc = mpirun(ranks, "dbscan", str(out), platform=platform, cwd=out, timeout=600)
        got[ranks] = proc, [json.loads((out / f"rank{r}.json").read_text())
                            if (out / f"rank{r}.json").exists() else None
                            for r in range(ranks)]
    return got


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("fit", range(len(mpi_script.DBSCAN_FITS)),
                         ids=["-".join(map(str, f)) for f in mpi_script.DBSCAN_FITS])
def test_ranks_label_their_rows_as_one_process(devices, fitted, ranks, fit):
    proc, got = fitted[ranks]
    assert proc.returncode == 0 and None not in got, proc.stderr[-3000:]
    name, metric, weighted, split, on = mpi_script.DBSCAN_FITS[fit]
    if any(r[fit] is None for r in got):
        pytest.skip(f"{devices[0]} cannot be split into sub-devices")
    X, w, eps, min_samples = mpi_script.dbscan_rows(name, weighted, split)
    one = oc.DBSCAN(eps, min_samples=min_samples, metric=metric, devices=devices).fit(
        X, sample_weight=w)
    ref = SKDBSCAN(eps=eps, min_samples=min_samples, metric=metric).fit(X, sample_weight=w)
    assert np.array_equal(one.labels_, ref.labels_)
    parts = sorted((r[fit] for r in got), key=lambda part: part["start"])
    assert [p["start"] for p in parts] == sorted(p["start"] for p in parts)
    labels = np.concatenate([p["labels"] for p in parts])
    assert np.array_equal(labels, ref.labels_)
    core = np.concatenate([np.asarray(p["core"], np.int64) + p["start"] for p in parts])
    assert np.array_equal(core, ref.core_sample_indices_)
    components = np.concatenate([np.reshape(p["components"], (-1, X.shape[1]))
                                 for p in parts])
    assert np.array_equal(components, ref.components_)
    # every rank answered for a slab of the rows, together all of them, and
    # held its share and a halo (the slabs cut at sampled quantiles of the keys)
    assert sum(sum(p["devices"].values()) for p in parts) == len(X)
    if on == "halves" and name != "one_cell":   # each rank's slab cut again over them
        assert all(len(p["devices"]) == 2 for p in parts), [p["devices"] for p in parts]
    if name != "one_cell":   # (there a slab holds every row)
        assert max(p["held"] for p in parts) < len(X) * (1 / ranks + 0.15)


@pytest.mark.parametrize("case,expected,ranks", [
    ("dbscan_mismatch", "n_features", 3), ("dbscan_nan", "NaN", 2),
    ("dbscan_eps", "disagree", 3), ("dbscan_empty", "0 sample", 2),
    ("dbscan_metric", "grid of cells", 2), ("dbscan_fail_mid", "injected failure", 3)])
def test_bad_input_raises_on_every_rank(platform, tmp_path, case, expected, ranks):
    """One rank's bad rows, parameters that differ between ranks, or a
    metric the ranks cannot split: every rank raises a ValueError (a
    RankError naming the rank, where one rank failed) within seconds.  A
    rank that fails mid-fit: every rank raises its RuntimeError."""
    proc = mpirun(ranks, case, str(tmp_path), platform=platform, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for r in range(ranks):
        result = json.loads((tmp_path / f"rank{r}.json").read_text())
        assert result.get("error") == "RankError", result
        assert expected in result["message"], result["message"]
        assert result["value_error"] is (case != "dbscan_fail_mid"), result
        assert result["seconds"] < 10, result
        if case != "dbscan_metric" and case != "dbscan_eps":
            assert "rank 1" in result["message"], result["message"]


def test_cli_fit_under_mpiexec(platform, tmp_path):
    """mpiexec -n 3 python -m oclclust fit --algorithm dbscan: each rank
    writes its rows' labels, scikit-learn's; rank 0 counts every rank's
    clusters and noise."""
    X, _, eps, min_samples = mpi_script.dbscan_rows("crossing", False, "even")
    np.save(tmp_path / "data.npy", X)
    proc = mpirun(3, "fit", "data.npy", "--algorithm", "dbscan", "--eps", str(eps),
                  "-k", str(min_samples), "--devices", platform, "--labels",
                  "labels{rank}.npy", platform=platform, cwd=tmp_path, module=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ref = SKDBSCAN(eps=eps, min_samples=min_samples).fit(X).labels_
    labels = np.concatenate([np.load(tmp_path / f"labels{r}.npy") for r in range(3)])
    assert np.array_equal(labels, ref)
    assert "3 rank(s)" in proc.stdout
    assert f"{ref.max() + 1} clusters, {np.count_nonzero(ref < 0)} noise points" in proc.stdout


class _Gathered:
    """Ranks' gather over simulated ranks: every rank's value, given."""

    def __init__(self, values):
        self.values, self.size = values, len(values)

    def gather(self, value):
        return self.values


@pytest.mark.parametrize("sizes", [[1000, 1000], [5, 3000, 700], [1, 1, 1, 1], [4000] * 5])
@pytest.mark.parametrize("distinct", [3, 200, 1 << 40])
def test_slab_cuts_share_the_keys_evenly(sizes, distinct):
    """_cuts from every rank's sampled keys: ascending, from 0 to past every
    key, each slab about a rank's share of all keys (within a sample's
    step and the rows of one key)."""
    from oclclust.cluster.density.dbscan.ranks import _cuts
    from oclclust.cluster.density.dbscan.slabs import LAST_KEY, SAMPLES
    rng = np.random.default_rng(len(sizes) + distinct)
    keys = [np.sort(rng.integers(0, distinct, s)) for s in sizes]
    offered = []
    for k in keys:   # what each rank offers (_cuts' gather), then this rank's own cuts
        take = np.unique(np.linspace(0, len(k) - 1, SAMPLES).astype(np.int64))
        offered.append((k[take], np.full(len(take), len(k) / len(take))))
    cuts = _cuts(_Gathered(offered), keys[0])
    assert cuts[0] == 0 and cuts[-1] == LAST_KEY and np.all(np.diff(cuts) >= 0)
    assert len(cuts) == len(sizes) + 1
    everything = np.sort(np.concatenate(keys))
    per_slab = np.diff(np.searchsorted(everything, cuts))
    tolerance = max(s / SAMPLES for s in sizes) * len(sizes) + np.bincount(everything).max() \
        if distinct < 1000 else max(s / SAMPLES for s in sizes) * len(sizes) + 2
    assert np.all(np.abs(per_slab - len(everything) / len(sizes)) <= tolerance + 1)


def test_more_rows_than_int32_numbers_are_refused(monkeypatch):
    """Past MAX_ROWS rows over all ranks (the kernels' int32 row numbers): a
    ValueError on every rank (each sees the same count), before any exchange."""
    from oclclust.cluster.density.dbscan import ranks
    monkeypatch.setattr(ranks, "MAX_ROWS", 10)
    X = np.zeros((11, 2))
    with pytest.raises(ValueError, match="int32"):
        ranks.labels_across_ranks(None, X, None, (1.0, 2, "euclidean"), [_Plan()], {}, None)


class _Plan:
    dtype = np.dtype(np.float64)
