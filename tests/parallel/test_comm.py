"""Sums over MPI ranks (oclclust/parallel/comm.py): in rank order, or, for
whole numbers, in one Allreduce; both give every rank the same bits.  The
ranks here are a stand-in communicator over in-process vectors; the real
launcher's runs are tests/parallel/test_mpi.py."""
import numpy as np
import pytest

from oclclust.parallel.comm import RankError, raise_if_any_failed, sum_across

pytestmark = pytest.mark.one_runtime   # host code only: one runtime runs it


class VectorsComm:
    """R ranks' send buffers, seen from rank 0: Allgather stacks them,
    Allreduce adds them in reverse rank order (an MPI library's tree may
    take any order)."""

    def __init__(self, vectors):
        self.vectors, self.calls = vectors, []

    def Get_size(self):
        return len(self.vectors)

    def Allgather(self, mine, everyone):
        self.calls.append("Allgather")
        everyone[:] = np.stack([mine, *self.vectors[1:]])

    def Allreduce(self, mine, total):
        self.calls.append("Allreduce")
        total[:] = 0.0
        for v in [mine, *self.vectors[1:]][::-1]:
            total += v


@pytest.mark.parametrize("ranks", [2, 5])
def test_whole_numbers_take_one_allreduce_with_the_ordered_sums_bits(ranks):
    rng = np.random.default_rng(ranks)
    words = [rng.integers(-(1 << 40), 1 << 40, 7).astype(np.float64) for _ in range(ranks)]
    counts = [rng.integers(0, 1000, 3).astype(np.float64) for _ in range(ranks)]
    flat = [np.concatenate(p) for p in zip(words, counts)]
    ordered, reduced = VectorsComm(flat), VectorsComm(flat)
    a = sum_across(ordered, words[0], counts[0])
    b = sum_across(reduced, words[0], counts[0], exact=True)
    assert ordered.calls == ["Allgather"] and reduced.calls == ["Allreduce"]
    for x, y in zip(a, b):
        assert x.tobytes() == y.tobytes()


def test_floats_keep_the_rank_order():
    # three ranks' floats whose sum depends on the order: the rank order's bits
    vectors = [np.array([1e16]), np.array([1.0]), np.array([-1e16])]
    comm = VectorsComm(vectors)
    assert sum_across(comm, vectors[0])[0] == (1e16 + 1.0) - 1e16
    assert comm.calls == ["Allgather"]


class NoticesComm:
    """Rank *rank* of ranks whose allgather gives the others' *values*
    (None: the rank is well; else its failure as raise_if_any_failed sends it)."""

    def __init__(self, rank, values):
        self.rank, self.values = rank, values

    def Get_size(self):
        return len(self.values)

    def allgather(self, mine):
        return [mine if r == self.rank else v for r, v in enumerate(self.values)]


@pytest.mark.parametrize("error,value_error", [(ValueError("bad shard"), True),
                                               (KeyboardInterrupt("bad shard"), False)])
def test_a_rank_that_failed_before_the_check_fails_every_rank(error, value_error):
    """Rank 1 of 2 failed before the collective check (placing its shard):
    rank 0 raises a RankError naming it, of its error's built-in type; an
    interrupt stays a KeyboardInterrupt on its rank, as one later in a fit
    (FitComm.fail).  (Placement passed no interrupt here: the other ranks
    waited in the check forever; tests/faults/test_mpi_faults.py.)"""
    kind = type(error).__name__
    with pytest.raises(RankError, match=f"rank 1: {kind}: bad shard") as raised:
        raise_if_any_failed(NoticesComm(0, [None, (f"{kind}: bad shard", kind)]))
    assert isinstance(raised.value, ValueError) is value_error
    with pytest.raises(type(error)) as raised:
        raise_if_any_failed(NoticesComm(1, [None, None]), error)
    assert isinstance(raised.value, RankError) is value_error
