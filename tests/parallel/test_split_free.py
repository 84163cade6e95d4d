"""Split-free sums (runtime/exact_sums.py): every iterative estimator's model
is the one-device fit's bit for bit whatever the split of its rows -- MPI
ranks holding whole blocks of its sums, a Dask cluster's workers, a fit
resumed from a model file on rows streamed through a device in chunks.

The estimators, data and what is compared: tests/harness/split_free_models.py.
Each split's fits of every estimator run once for the module (one mpiexec
of 2 ranks a dtype, the conftest's 2-worker Dask cluster), each
estimator's comparison a test of its own.
"""
import pickle

import numpy as np
import pytest

import oclclust as oc
from conftest import mpirun
from oclclust.io.modelio import load_model, save_model
from oclclust.parallel.dask import whole_block_chunks
from oclclust.parallel.shares import rank_rows

import mpi_script
import split_free_models as sf

DTYPES = ["float32", "float64"]


@pytest.fixture(scope="module")
def one_device(devices):
    return sf.one_device(devices)


@pytest.fixture(scope="module")
def reference(one_device):
    """{(estimator, dtype): its model fitted on one device}."""
    cache = {}

    def fitted(name, dtype):
        if (name, dtype) not in cache:
            cache[name, dtype] = sf.model(sf.ESTIMATORS[name](one_device).fit(sf.data(dtype)))
        return cache[name, dtype]
    return fitted


def assert_same(got, ref):
    assert not isinstance(got, str), got   # a rank's error
    assert not sf.differences(got, ref), sf.differences(got, ref)


# ------------------------------------------------------------------ MPI
@pytest.fixture(scope="module")
def mpi_models(devices, tmp_path_factory):
    """{dtype: {estimator: (every rank's model joined)}}, one mpiexec a dtype."""
    cache = {}

    def models(dtype):
        if dtype not in cache:
            out = tmp_path_factory.mktemp(f"mpi-{dtype}")
            proc = mpirun(2, "split_free", str(out), "--dtype", dtype,
                          platform=devices[0].platform, cwd=out, timeout=300)
            assert proc.returncode == 0, proc.stderr[-3000:]
            ranks = [pickle.loads((out / f"split_free{r}.pkl").read_bytes()) for r in range(2)]
            cache[dtype] = {name: joined([r[name] for r in ranks]) for name in ranks[0]
                            if name != mpi_script.SHARED_STEPS}
            cache[dtype][mpi_script.SHARED_STEPS] = [r[mpi_script.SHARED_STEPS] for r in ranks]
        return cache[dtype]
    return models


def joined(rank_models):
    """The ranks' models as one: their own, the same on every rank (checked
    here), with per-row attributes concatenated in rank order."""
    (_, first), *_ = rank_models
    if any(isinstance(m, str) for _, m in rank_models):
        return "; ".join(m for _, m in rank_models if isinstance(m, str))
    assert rank_models[1][0] > 0   # the second rank holds rows of its own
    whole = dict(first)
    for name in sf.ROW_ATTRS:
        if name in first:
            whole[name] = np.concatenate([m[name] for _, m in rank_models])
    for _, m in rank_models[1:]:
        assert not sf.differences({k: v for k, v in m.items() if k not in sf.ROW_ATTRS},
                                  {k: v for k, v in first.items() if k not in sf.ROW_ATTRS})
    return whole


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sf.MPI_ESTIMATORS)
@pytest.mark.covering(1)
def test_mpi_ranks_in_whole_blocks(name, dtype, mpi_models, reference):
    assert_same(mpi_models(dtype)[name], reference(name, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_mpi_ranks_share_one_update_on_the_devices(dtype, mpi_models, devices):
    """Split-free (fp64), the ranks' KMeans and FuzzyCMeans compute their
    centres on every rank's device from the ranks' summed words
    (lloyd_shared, cmeans_update.SharedCMeans): the models
    test_mpi_ranks_in_whole_blocks holds to one device's came that way."""
    if not devices[0].fp64:
        pytest.skip(f"{devices[0]} has no fp64: the host's update")
    for rank in mpi_models(dtype)[mpi_script.SHARED_STEPS]:
        assert all(rank.get(name, 0) > 0 for name in (
            "KMeans-tiled", "KMeans-rowwise", "KMeans-blocked", "FuzzyCMeans")), rank


def test_rank_rows_are_whole_blocks():
    """Every rank but the last a whole number of blocks (the last holds
    the short one); too few blocks: an even split (no rank left empty)."""
    for n, size, block in ((2000, 2, 512), (10_000, 3, 512), (5000, 7, 512), (40, 3, 1)):
        bounds = [rank_rows(n, size, r, block) for r in range(size)]
        assert bounds[0][0] == 0 and bounds[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
        assert all(start % block == 0 and stop > start for start, stop in bounds)
    assert [rank_rows(40, 3, r) for r in range(3)] == [(0, 13), (13, 26), (26, 40)]
    assert [rank_rows(500, 2, r, 512) for r in range(2)] == [(0, 250), (250, 500)]


def test_load_shard_splits_in_the_estimators_blocks(tmp_path):
    from oclclust.io.shards import load_shard

    class Comm:   # rank 0 of 2 (load_shard asks its rank and size)
        def Get_rank(self):
            return 0

        def Get_size(self):
            return 2
    X = sf.data("float32")
    np.save(tmp_path / "x.npy", X)
    est = oc.KMeans(sf.K)
    block = est.fit_block_rows(sf.D, np.float32)
    assert len(load_shard(tmp_path / "x.npy", Comm(), est)) == rank_rows(sf.N, 2, 0, block)[1]
    assert len(load_shard(tmp_path / "x.npy", Comm())) == sf.N // 2


# ------------------------------------------------------------------ Dask
def test_dask_chunks_move_to_whole_blocks():
    assert whole_block_chunks((700, 700, 600), 512) == (512, 1024, 464)
    assert whole_block_chunks((100, 100, 1800), 512) == (2000,)   # merged
    assert whole_block_chunks((1024, 976), 512) == (1024, 976)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(sf.ESTIMATORS))
@pytest.mark.covering(1)
def test_dask_workers(name, dtype, client, one_device, reference):
    da = pytest.importorskip("dask.array")
    X = da.from_array(sf.data(dtype), chunks=(700, sf.D))   # not whole blocks: moved
    est = sf.ESTIMATORS[name](one_device).fit(X)
    got = sf.model(est)
    for attr in sf.ROW_ATTRS:   # per-row outputs in the user's chunks
        if hasattr(est, attr) and hasattr(getattr(est, attr), "chunks"):
            assert getattr(est, attr).chunks[0] == X.chunks[0]
    assert_same(got, reference(name, dtype))


# ------------------------------------------------------------- a model file
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(sf.ESTIMATORS))
def test_resumed_from_a_model_file(name, dtype, one_device, tmp_path):
    """A fit saved, loaded and resumed on rows streamed in chunks of a block
    is the fit resumed in memory on one device (the same kernel variant: a
    model file keeps no devices, and KMeans' variants' distances differ in
    their last bits)."""
    X = sf.data(dtype)
    make = sf.ESTIMATORS[name]
    ref = sf.model(sf.resume(make(one_device).fit(X)).fit(X))
    save_model(make(one_device).fit(X), tmp_path / "model.npz")
    loaded = load_model(tmp_path / "model.npz")
    block = loaded.fit_block_rows(sf.D, dtype)
    budget = 2 * sf.D * np.dtype(dtype).itemsize * block   # a block's rows a chunk
    profiles = make(one_device).get_params()["devices"]      # the variant's
    loaded.set_params(devices=oc.DeviceManager(profiles, memory_budget=budget))
    assert_same(sf.model(sf.resume(loaded).fit(X)), ref)
