"""Streamed through a budget of 1/8 of the data: every iterative estimator's
model is the resident one's; a memmap fit equals the in-memory fit, reading
each chunk once per pass and never the whole file.

Bit for bit where the passes' sums do not depend on how the rows are split
into chunks: k-means in float32 (float32 rows add exactly in float64).
Elsewhere each chunk's partial sums round on their own, so the model may
differ in the last bits (as between one device and several): labels and
iteration counts equal, values within a few ulps."""
import warnings

import numpy as np
import pytest

import oclclust as oc
from oclclust.runtime import transfer

N, D = 1200, 5


def data(dtype=np.float32, seed=0, n=N):
    rng = np.random.RandomState(seed)
    centres = rng.randn(4, D) * 4
    return (centres[rng.randint(0, 4, n)] + rng.randn(n, D)).astype(dtype)


def eighth(profile, X, dtype):
    """A manager whose budget holds 1/8 of the rows in the compute dtype."""
    mgr = oc.DeviceManager([profile], memory_budget=N * D * np.dtype(dtype).itemsize // 8)
    layout = mgr.scatter(X, dtype=dtype)
    shard, = layout.shards
    assert shard.streamed and len(shard.chunks) == 16   # two buffers of N/16 rows
    layout.close()
    return mgr


ESTIMATORS = {
    "KMeans": lambda dev: oc.KMeans(4, random_state=0, n_init=2, max_iter=20, devices=dev),
    "FuzzyCMeans": lambda dev: oc.FuzzyCMeans(4, random_state=0, max_iter=20, devices=dev),
    "GMM-diag": lambda dev: oc.GaussianMixture(4, covariance_type="diag", random_state=0,
                                               max_iter=10, devices=dev),
    "GMM-full": lambda dev: oc.GaussianMixture(4, covariance_type="full", random_state=0,
                                               max_iter=10, devices=dev),
    "EnsembleKMeans": lambda dev: oc.EnsembleKMeans(4, n_models=3, random_state=0,
                                                    max_iter=20, devices=dev),
}
MODEL = {"KMeans": ("cluster_centers_", "labels_", "inertia_", "n_iter_"),
         "FuzzyCMeans": ("cluster_centers_", "u_", "n_iter_"),
         "GMM": ("weights_", "means_", "covariances_", "lower_bound_", "n_iter_"),
         "EnsembleKMeans": ("cluster_centers_", "labels_", "inertia_")}


def fit(make, devices, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # a short max_iter may not converge: both alike
        return make(devices).fit(X)


EXACT = {"KMeans", "EnsembleKMeans"}   # in float32


def assert_same_model(name, got, want, dtype, exact=None):
    exact = name in EXACT and dtype == np.float32 if exact is None else exact
    for attr in MODEL[name.split("-")[0]]:
        a, b = np.asarray(getattr(got, attr)), np.asarray(getattr(want, attr))
        if exact or attr in ("labels_", "n_iter_"):
            assert np.array_equal(a, b), f"{name}.{attr} differs"
        else:
            tol = 1e-12 if dtype == np.float64 else 4e-6
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol * np.abs(b).max(),
                                       err_msg=f"{name}.{attr}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", list(ESTIMATORS))
@pytest.mark.covering(1)
def test_streamed_through_an_eighth_equals_resident(profile, name, dtype):
    if dtype == np.float64 and not profile.fp64:
        pytest.skip("no fp64")
    X = data(dtype)
    make = ESTIMATORS[name]
    resident = fit(make, [profile], X)
    streamed = fit(make, eighth(profile, X, dtype), X)
    assert_same_model(name, streamed, resident, dtype)
    np.testing.assert_array_equal(streamed.predict(X), resident.predict(X))


@pytest.fixture
def counted(monkeypatch):
    """count(source) -> [rows of every piece filled from the host], each
    one read from *source* itself (runtime.transfer.copy_rows): never from
    a copy of it, converted or whole, nor more than a chunk (*most* rows)
    at once."""
    fill = transfer.copy_rows

    def count(source, most=N // 16):
        rows = []

        def counting(dst, src):
            assert np.shares_memory(src, source) and len(src) <= most
            rows.append(len(src))
            fill(dst, src)
        monkeypatch.setattr(transfer, "copy_rows", counting)
        return rows
    return count


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("stored", [np.float32, np.float64])
def test_a_memmap_fit_streams_each_chunk_once_per_pass(profile, tmp_path, counted, monkeypatch,
                                                       stored, order):
    """A .npy memmap (F order, or float64 fitted in float32: converted piece
    by piece) streamed through 1/8 of its size: the in-memory fit's model,
    every row read once a pass, a piece at a time, from the map."""
    X = data(stored, seed=3)
    path = tmp_path / "rows.npy"
    np.save(path, np.asfortranarray(X) if order == "F" else X)
    mm = np.load(path, mmap_mode="r")
    assert isinstance(mm, np.memmap) and mm.flags.f_contiguous == (order == "F")
    mgr = eighth(profile, mm, np.float32)
    rows = counted(mm)
    km = oc.KMeans(4, random_state=0, n_init=1, max_iter=8, dtype=np.float32,
                   devices=mgr).fit(mm)
    monkeypatch.undo()
    want = oc.KMeans(4, random_state=0, n_init=1, max_iter=8, dtype=np.float32,
                     devices=[profile]).fit(np.ascontiguousarray(X, np.float32))
    assert_same_model("KMeans", km, want, np.float32)
    # every pass reads each row once; the last one reads the first two chunks
    # of a next pass ahead too (while the host decides there is none)
    ahead = 2 * (N // 16)
    assert (sum(rows) - ahead) % N == 0 and (sum(rows) - ahead) // N >= km.n_iter_


@pytest.mark.parametrize("name", ["KMeans", "GMM-diag"])
def test_uploads_and_downloads_through_pinned_pieces(profile, monkeypatch, name):
    """Resident rows uploaded and labels read back through the queue's pinned
    staging in odd pieces (every copy staged: none is small enough to go
    straight), from F-ordered float64 rows fitted in float32: the model of
    the rows given in float32."""
    X = data(np.float64, seed=5)
    make = ESTIMATORS[name]
    want = fit(make, [profile], X.astype(np.float32))
    monkeypatch.setattr(transfer, "DIRECT_BYTES", 0)
    monkeypatch.setattr(transfer, "PIECE_BYTES", 7 * D * 4 + 3)   # 7 rows and 3 bytes
    monkeypatch.setattr(transfer, "_shared", {})
    est = make([profile])
    est.set_params(dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = est.fit(np.asfortranarray(X))
    assert transfer._shared   # the staging served
    assert_same_model(name, got, want, np.float32, exact=True)   # the same rows, one chunk
    np.testing.assert_array_equal(got.predict(X), want.predict(X.astype(np.float32)))


def test_labels_and_distances_come_back_without_streaming_the_rows(profile, counted,
                                                                  monkeypatch):
    """Reading the chunks' own arrays (labels, distances) streams no rows:
    after a pass (every row read once: its first two chunks read ahead by
    the pass before, the next pass's first two read ahead by it),
    LloydShards.labels / min_dist / set_labels read nothing more from the
    host rows."""
    from oclclust.cluster.kmeans.lloyd_shards import LloydShards
    from oclclust.parallel import device_data
    monkeypatch.setattr(device_data, "HOST_MAGNITUDE_ROWS", 0)   # the magnitudes streamed
    X = data(np.float32, seed=4)
    layout = eighth(profile, X, np.float32).scatter(X)

    def read_ahead():   # the next pass's first chunks, filled by the feeder's thread
        for future in layout.shards[0].ahead.values():
            future.result()
    lloyd = LloydShards(layout, 4)   # a pass of its own: the rows' magnitudes
    read_ahead()
    rows = counted(X)
    centers = X[:4].astype(np.float64)
    lloyd.run(centers)
    read_ahead()
    after_pass = sum(rows)
    assert after_pass == N
    labels, dist = lloyd.labels(), lloyd.min_dist()
    lloyd.set_labels(labels)
    assert sum(rows) == after_pass
    layout.close()
    want = oc.KMeans(4, init=centers, n_init=1, max_iter=1, tol=0,
                     devices=[profile]).fit(X)
    d2 = ((X.astype(np.float64)[:, None] - centers[None]) ** 2).sum(-1)
    assert labels.shape == (N,) and dist.shape == (N,)
    np.testing.assert_array_equal(labels, d2.argmin(1))
    assert want.n_iter_ == 1


def test_farthest_rows_is_sklearns_argpartition():
    """The one-row fast path (a maximum no other row reaches) picks the row
    argpartition picks; ties, NaN and several rows keep argpartition."""
    from oclclust.cluster.empty_clusters import farthest_rows
    rng = np.random.RandomState(8)
    for dist in (rng.rand(1000), rng.rand(5), np.array([3.0]), rng.randint(0, 4, 50) * 1.0,
                 np.array([1.0, np.nan, 2.0]), np.array([2.0, 1.0, 2.0])):
        for take in (1, 2, 3):
            if take <= len(dist):
                want = np.argpartition(dist, -take)[:-take - 1:-1]
                np.testing.assert_array_equal(farthest_rows(dist, take), want)


def tail_layout(block, monkeypatch, cap_blocks=1):
    """(rows, budget): rows of eight whole blocks of *block* rows and a
    short one, a budget of four blocks' rows and streamed chunks capped at
    *cap_blocks* blocks (shard.STREAM_CHUNK_BYTES): two chunks of a block
    stream and the rest of the budget, two blocks' room, keeps the last
    rows resident from the first block boundary it reaches (the tail: one
    block and the short one)."""
    from oclclust.parallel import shard as shard_mod
    row = D * 4
    monkeypatch.setattr(shard_mod, "STREAM_CHUNK_BYTES", int(cap_blocks * block * row))
    return data(np.float32, seed=6, n=8 * block + 100), 4 * block * row


def check_tail(layout, block, budget):
    """The layout tail_layout makes: seven chunks of a block stream through
    two staging buffers of a block, the tail holds the rest, and the device
    holds no more rows than the budget."""
    shard, = layout.shards
    n, row, tail = layout.n, layout.d * 4, block + 100
    assert layout.block_rows == block
    assert shard.streamed and [c.n for c in shard.chunks[shard.fed:]] == [tail]
    assert [c.n for c in shard.chunks[:shard.fed]] == [block] * 7
    assert [s.shape[0] for s in shard.staging] == [block] * 2
    assert sum(s.nbytes for s in shard.staging) + tail * row <= budget
    assert shard.chunks[-1].offset == n - tail


@pytest.mark.parametrize("cap_blocks", [1, 0.5], ids=["a-block", "under-a-block"])
def test_streamed_chunks_hold_whole_blocks(profile, monkeypatch, cap_blocks):
    """A cap on streamed chunks under one block still streams whole blocks
    (the sums' split-free blocks: runtime.exact_sums) where the budget
    holds two."""
    block = oc.KMeans(4).fit_block_rows(D, np.float32)
    X, budget = tail_layout(block, monkeypatch, cap_blocks)
    layout = oc.DeviceManager([profile], memory_budget=budget).scatter(X, stat_values=1)
    try:
        check_tail(layout, block, budget)
    finally:
        layout.close()


@pytest.mark.parametrize("name", ["KMeans", "FuzzyCMeans", "GMM-diag"])
def test_a_resident_tail_streams_only_the_other_rows(profile, counted, monkeypatch, name):
    """Chunks capped under half the budget (shard.STREAM_CHUNK_BYTES): the
    rest of the budget keeps the shard's last rows resident (the tail), the
    device holds no more rows than the budget, each pass reads only the
    other rows from the host, and the model is the resident one's bit for
    bit (chunks and tail of whole blocks: split-free sums)."""
    make = ESTIMATORS[name]
    block = make(None).fit_block_rows(D, np.float32)
    X, budget = tail_layout(block, monkeypatch)
    mgr = oc.DeviceManager([profile], memory_budget=budget)
    layout = mgr.scatter(X)
    check_tail(layout, block, budget)
    layout.close()
    n, tail = len(X), block + 100
    want = fit(make, [profile], X)
    rows = counted(X, most=block)
    got = fit(make, mgr, X)
    assert_same_model(name, got, want, np.float32, exact=True)
    np.testing.assert_array_equal(got.predict(X), want.predict(X))
    # every pass reads the streamed rows, and a fit's last the next one's first
    # two chunks ahead (KMeans: two fits, n_init=2); the tail went up once
    # (direct: under DIRECT_BYTES)
    streamed = sum(rows)
    assert streamed >= 2 * (n - tail) and streamed % (n - tail) % block == 0
    assert streamed % (n - tail) // block <= 2 * 2
