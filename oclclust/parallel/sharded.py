"""One protocol for a device pass over a fit's rows: every chunk of a
ShardedData (sharded_data.py: all devices at once) and every MPI rank.
Each chunk's statistics (a runtime.reduce.AdditiveStats) are summed in
float64 in chunk order, then over the ranks in rank order, so the model
does not depend on how the rows are split; an error on any rank raises on
every rank.  The passes of k-means (cluster/kmeans/lloyd_shards.py, the
ensemble's ensemble_shards.py), fuzzy c-means and Gaussian-mixture EM
(cluster/mixture/) are thin backends of it."""
import dataclasses
import itertools

import numpy as np

from ..runtime import exact_sums
from ..runtime.reduce import AdditiveStats
from .comm import Ranks
from .shares import measuring
from .sharded_data import one_partition

_KEYS = itertools.count()


class ShardedPass:
    """A pass over every chunk of *data* (a ShardedData) and the *ranks* of
    a fit (comm.Ranks; None: one process).  ``make(chunk)`` builds a chunk's
    state (its device passes and buffers), kept here for the chunk's life:
    a re-split of the rows makes the new chunks' state afresh.  Over data
    whose chunks are elsewhere (``data.remote``: parallel/dask.py's, on a
    cluster's workers) the states live beside the chunks, under ``key``:
    *make* and the mapped functions travel there, so they hold no client
    object (this pass included)."""

    def __init__(self, data, ranks, make):
        self.data = data
        self.ranks = ranks if ranks is not None else Ranks.alone(data)
        self.magnitudes = self._magnitudes() if exact_sums.enabled() else None
        self.make = _bounded(make, self.magnitudes)
        self._states, self._chunks = {}, data.chunks
        self.key = next(_KEYS)

    def _magnitudes(self):
        """(max |x| a column, max weight) of every rank's rows: the one grid
        of the split-free sums (runtime.exact_sums) on every chunk and rank."""
        local = self.ranks.run_failing_all(self.data.magnitudes)
        every = self.ranks.gather(local)
        return np.max([m[0] for m in every], axis=0), max(m[1] for m in every)

    def one_partition(self):
        """sharded_data.one_partition of the fit's rows: its passes then
        round their exact sums as they finish (GMM's 1024 x 514 M
        statistics: 4.2 MB read instead of 16.8, ~6 ms of host work an
        iteration on the H200 host)."""
        return one_partition(self.data, self.ranks)

    def state(self, chunk):
        if chunk not in self._states:
            self._states[chunk] = self.make(chunk)
        return self._states[chunk]

    def map(self, fn, timed=False, rows=True):
        """[fn(chunk, its state)] for this rank's chunks in row order, all
        devices at once (*timed*, *rows*: see ShardedData.map; *rows* False:
        fn reads the chunk's state alone, and streamed rows stay where they
        are)."""
        if getattr(self.data, "remote", False):
            return self.data.map_states(self.key, self.make, fn, timed)
        self._follow_layout()
        return self.data.map(lambda chunk: fn(chunk, self.state(chunk)), timed, rows)

    def _follow_layout(self):
        if self.data.chunks is not self._chunks:   # laid out anew: the old chunks' state goes
            self._states, self._chunks = {}, self.data.chunks

    def map_enqueued(self, launch, collect, timed=False):
        """[collect(chunk, state, launch(chunk, state))] for this rank's
        chunks in row order (ShardedData.map_enqueued: every launch first,
        from this thread, where the rows allow)."""
        if getattr(self.data, "remote", False):
            return self.map(lambda chunk, st: collect(chunk, st, launch(chunk, st)), timed)
        self._follow_layout()
        return self.data.map_enqueued(lambda chunk: launch(chunk, self.state(chunk)),
                                      lambda chunk, got: collect(chunk, self.state(chunk), got),
                                      timed)

    def map_with_inputs(self, fn, other_passes=(), per_chunk=None, timed=False):
        """[fn(chunk, its state, *its states of the passes *other_passes*[,
        per_chunk[i]])] for this rank's chunks i in row order: other passes'
        per-chunk states (left beside the rows by their earlier maps) and
        one value per chunk go to the chunk, wherever it is (over remote
        data each chunk gets only its own value)."""
        if getattr(self.data, "remote", False):
            return self.data.map_states(self.key, self.make, fn, timed,
                                        [other.key for other in other_passes], per_chunk)
        theirs = [dict(zip(self.data.chunks, other.map(lambda chunk, st: st, rows=False)))
                  for other in other_passes]
        values = None if per_chunk is None else dict(zip(self.data.chunks, per_chunk))

        def one(chunk, st):
            own = [values[chunk]] if values is not None else []
            return fn(chunk, st, *[t[chunk] for t in theirs], *own)
        return self.map(one, timed)

    def reduce(self, fn, timed=False, keep=False, enqueued=None):
        """fn(chunk, state) -> AdditiveStats on every chunk, summed over the
        chunks in their order, then over the ranks.  With *keep*, fn returns
        (AdditiveStats, the chunk's own output: rows that stay on this rank)
        and reduce (the total, [outputs in chunk order]).  *enqueued*: fn as
        (launch, collect) for map_enqueued instead."""
        def local():
            out = self.map(fn, timed) if enqueued is None else self.map_enqueued(*enqueued,
                                                                                  timed)
            parts = [o[0] for o in out] if keep else out
            return type(parts[0]).total(parts), [o[1] for o in out] if keep else None
        total, kept = self.ranks.run_failing_all(local)
        total = self.over_ranks(total)
        return (total, kept) if keep else total

    def over_ranks(self, total):
        """This rank's *total* (AdditiveStats of its chunks) summed over the
        ranks, settled.  One process: no rank sum, nor the flat vector's
        copies (~20 ms an iteration for GMM's 1024 x 514 M statistics on
        this CPU)."""
        return (total.from_flat(self.ranks.sum(total.flat(), exact=total.order_free()))
                if self.ranks.comm is not None else total.alone()).settled()

    def rows(self, fn):
        """fn(chunk, state) -> one value per row of the chunk, joined in row
        order: a host array, or over remote data an array that stays where
        the rows are (a dask array)."""
        if getattr(self.data, "remote", False):
            return self.data.rows_states(self.key, self.make, fn)
        return np.concatenate(self.map(fn))


def shareable(data, ranks):
    """Whether the devices can share one update computed on each
    (passes.lloyd_shared.SharedCenters, passes.cmeans_update): rows on this process's devices, each device's in one
    resident chunk, fp64 on every one, and weights not measured (a re-split
    lays the chunks out anew); several devices in one process, or MPI
    ranks (*ranks*: comm.Ranks) that each hold as many devices so and sum
    split-free (their sums' words added by the ranks, then on every
    device).  Under MPI every rank asks every other: a collective."""
    shards = getattr(data, "shards", None)
    local = (bool(shards) and not getattr(data, "remote", False)
             and all(s.single_resident for s in shards)
             and all(c.acc_double for c in data.chunks) and not measuring(data.manager))
    if ranks.comm is None or ranks.comm.Get_size() == 1:
        return local and len(shards) > 1
    every = ranks.gather((local and exact_sums.enabled(), len(shards) if shards else 0))
    return all(ok for ok, _ in every) and len({count for _, count in every}) == 1


def words_over_ranks(ranks, folds):
    """(the page-locked words arrays every device of a shared update adds,
    whether each device's own words are among them, at its place) of this
    rank's devices' SharedFolds *folds* (chunk order): one process, every
    device's own; over MPI ranks (which each hold as many devices:
    shareable), each place's words summed over the ranks (one Allreduce:
    integers, any order), all of them written to every device."""
    words = [fold.words for fold in folds]
    if ranks.comm is None or ranks.comm.Get_size() == 1:
        return words, True
    summed = folds[0].summed_host(len(words))
    ranks.comm.Allreduce(words[0] if len(words) == 1 else np.concatenate(words), summed)
    return np.split(summed, len(words)), False


def _bounded(make, magnitudes):
    """*make* for a chunk that first carries the fit's *magnitudes* (travels
    with *make* to remote chunks)."""
    def make_bounded(chunk):
        if magnitudes is not None:
            chunk.magnitudes = magnitudes
        return make(chunk)
    return make_bounded


def chunk_farthest(chunk, dist, labels, take):
    """A chunk's *take* rows of largest *dist* (its rows' distances to their
    centres, *labels* their clusters): [(distance, global row, label,
    weight, the row float64)]."""
    dist = np.asarray(dist, np.float64)
    w = None if chunk.weights is None else chunk.weights.get(chunk.queue)
    far = np.argpartition(dist, -min(take, chunk.n))[-min(take, chunk.n):]
    return [(float(dist[i]), chunk.offset + int(i), int(labels[i]),
             1.0 if w is None else float(w[i]), chunk.row(i).astype(np.float64)) for i in far]


def farthest_of(per_chunk, take):
    """The *take* farthest of every chunk's chunk_farthest, by distance, then
    row (as MPI ranks merge theirs: the first of equals); only these rows
    leave their chunks."""
    every = [c for cands in per_chunk for c in cands]
    return sorted(every, key=lambda c: (-c[0], c[1]))[:take]


@dataclasses.dataclass
class SummedArray(AdditiveStats):
    """Statistics that are one float64 array, summed element by element
    (in Python's order over the chunks)."""
    values: np.ndarray


