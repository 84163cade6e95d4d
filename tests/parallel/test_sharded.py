"""The ShardedPass protocol (oclclust/parallel/sharded.py): statistics that
add in chunk order and cross ranks as one float64 vector, per-chunk state
made once per chunk and made afresh after a re-split."""
import numpy as np

import oclclust as oc
from oclclust.cluster.mixture.cmeans_shards import CMeansStats
from oclclust.cluster.mixture.gmm_shards import GmmStats
from oclclust.parallel.sharded import ShardedPass, SummedArray
from oclclust.passes.lloyd import LloydStats
from oclclust.runtime.exact_sums import ExactWords


def test_stats_add_in_order_and_round_trip_the_rank_vector():
    parts = [LloydStats(np.full((2, 3), v), np.full(2, v), v, i, 0)
             for i, v in enumerate((0.1, 0.2, 0.3))]
    total = LloydStats.total(parts)
    assert total.inertia == (0 + 0.1) + 0.2 + 0.3 and total.n_changed == 3
    np.testing.assert_array_equal(total.sums, np.full((2, 3), (0 + 0.1) + 0.2 + 0.3))
    back = total.from_flat(total.flat())
    assert type(back.inertia) is float and type(back.n_changed) is int
    assert back.flat().tobytes() == total.flat().tobytes()
    # fields None on every chunk (a pass without the update) stay None
    plain = CMeansStats(None, 1.5, 0) + CMeansStats(None, 2.5, 1)
    assert plain.stats is None and plain.flat().tolist() == [4.0, 1.0]
    assert plain.from_flat(np.array([5.0, 2.0])) == CMeansStats(None, 5.0, 2)


def test_state_is_made_once_per_chunk_and_afresh_after_a_resplit(profile):
    # a budget that streams the rows in three chunks: several chunks on any device
    # (a GPU has no sub-devices): two staging buffers of 167 rows of 24 bytes
    X = np.random.RandomState(0).randn(500, 3)
    data = oc.DeviceManager([profile], memory_budget=2 * 167 * 24).scatter(X)
    assert len(data.chunks) == 3
    made = []

    def make(chunk):
        made.append(chunk)
        return {"rows": chunk.n}
    try:
        sharded = ShardedPass(data, None, make)
        for _ in range(2):
            total = sharded.reduce(lambda chunk, st: SummedArray(np.array([st["rows"], 1.0])))
            assert total.values.tolist() == [500.0, len(data.chunks)]
        assert made == data.chunks
        data.reshard()
        total, kept = sharded.reduce(
            lambda chunk, st: (SummedArray(np.array([st["rows"]])), chunk), keep=True)
        assert total.values.tolist() == [500.0] and kept == data.chunks
        assert made[3:] == data.chunks and len(made) == 6
    finally:
        data.close()


def test_only_whole_number_statistics_cross_the_ranks_in_any_order():
    words = [ExactWords.of_values(np.array([[v, -v]])) for v in (0.1, 0.2)]
    exact = LloydStats(words[0], words[1], ExactWords.of_values(np.array([[0.3]])), 2, 0)
    assert exact.order_free()
    assert GmmStats(words[0], 0, None).order_free()
    assert not LloydStats(np.ones((2, 3)), np.ones(2), 0.5, 2, 0).order_free()
    assert not CMeansStats(words[0], 0.5, 0).order_free()   # a float objective
    assert not SummedArray(np.ones(3)).order_free()
    assert SummedArray(np.ones(3, np.int64)).order_free()
