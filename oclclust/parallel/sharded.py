"""One protocol for a device pass over a fit's rows: every chunk of a
ShardedData (all devices at once) and every MPI rank.  Each chunk's
statistics (a runtime.reduce.Stats) are summed in float64 in chunk order,
then over the ranks in rank order, so the model does not depend on how the
rows are split; an error on any rank raises on every rank.  The passes of
k-means, fuzzy c-means and Gaussian-mixture EM are thin backends of it (the
ensemble's is in sharded_ensemble.py)."""
import dataclasses
import itertools

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..passes.cmeans import CMeansPass
from ..passes.gmm import GmmPass
from ..passes.lloyd import LloydPass
from ..runtime.reduce import Stats
from .comm import Ranks

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
        self.data, self.make = data, make
        self.ranks = ranks if ranks is not None else Ranks.alone(data)
        self._states, self._chunks = {}, data.chunks
        self.key = next(_KEYS)

    def state(self, chunk):
        if chunk not in self._states:
            self._states[chunk] = self.make(chunk)
        return self._states[chunk]

    def map(self, fn, timed=False):
        """[fn(chunk, its state)] for this rank's chunks in row order, all
        devices at once (*timed*: see ShardedData.map)."""
        if getattr(self.data, "remote", False):
            return self.data.map_states(self.key, self.make, fn, timed)
        if self.data.chunks is not self._chunks:   # laid out anew: the old chunks' state goes
            self._states, self._chunks = {}, self.data.chunks
        return self.data.map(lambda chunk: fn(chunk, self.state(chunk)), timed)

    def reduce(self, fn, timed=False, keep=False):
        """fn(chunk, state) -> Stats on every chunk, summed over the chunks
        in their order, then over the ranks.  With *keep*, fn returns
        (Stats, the chunk's own output: rows that stay on this rank) and
        reduce (the total, [outputs in chunk order])."""
        def local():
            out = self.map(fn, timed)
            parts = [o[0] for o in out] if keep else out
            return type(parts[0]).total(parts), [o[1] for o in out] if keep else None
        total, kept = self.ranks.together(local)
        total = total.from_flat(self.ranks.sum(total.flat()))
        return (total, kept) if keep else total

    def rows(self, fn):
        """fn(chunk, state) -> one value per row of the chunk, joined in row
        order: a host array, or over remote data an array that stays where
        the rows are (a dask array)."""
        if getattr(self.data, "remote", False):
            return self.data.rows_states(self.key, self.make, fn)
        return np.concatenate(self.map(fn))


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
class Sums(Stats):
    """Statistics that are one float64 array."""
    values: np.ndarray


# ------------------------------------------------------------------ k-means
class _LloydChunk:
    """A chunk's Lloyd passes (with and without the update) and its labels,
    which stay on the device between passes."""

    def __init__(self, chunk, k):
        self.chunk, self.k, self.passes, self.labels = chunk, k, {}, None

    def run(self, centers, update):
        if update not in self.passes:
            self.passes[update] = LloydPass(self.chunk, self.k, update)
        return self.passes[update].run(centers, self.current_labels())

    def current_labels(self):
        """The labels of the last pass (-1 before the first)."""
        if self.labels is None:
            q = self.chunk.queue
            self.labels = cla.empty(q, self.chunk.n, np.int32)
            cl.enqueue_fill_buffer(q, self.labels.data, np.int32(-1), 0, self.labels.nbytes)
        return self.labels


class LloydShards(ShardedPass):
    """The fused Lloyd pass (passes.lloyd) over a fit's rows: LloydStats
    of all ranks' rows; labels and distances of this rank's."""

    def __init__(self, data, k, ranks=None):
        super().__init__(data, ranks, lambda chunk: _LloydChunk(chunk, k))

    def run(self, centers, update=True):
        return self.reduce(lambda chunk, st: st.run(centers, update), timed=update)

    def labels(self):
        return self.rows(lambda c, st: st.current_labels().get(c.queue))

    def set_labels(self, labels):
        def put(chunk, st):
            st.labels = cla.to_device(chunk.queue, labels[chunk.offset:chunk.offset + chunk.n])
        self.map(put)

    def min_dist(self):
        """Each row's distance to its centre in the last updating pass."""
        return np.concatenate(self.map(
            lambda c, st: st.passes[True].min_dist.get(c.queue).astype(np.float64)))

    def farthest(self, take):
        """The *take* rows farthest from their centres in the last updating
        pass, of all chunks (see farthest_of)."""
        return farthest_of(self.map(lambda chunk, st: chunk_farthest(
            chunk, st.passes[True].min_dist.get(chunk.queue), st.current_labels().get(
                chunk.queue), take)), take)

    def rebalance(self):
        """Measured weights: re-split between iterations, labels kept."""
        saved = self.data.rebalance(save=self.labels)
        if saved is not None:
            self.set_labels(saved)


# ----------------------------------------------------------- fuzzy c-means
@dataclasses.dataclass
class CMeansStats(Stats):
    stats: np.ndarray      # c x (d+1): sum w u^m x | sum w u^m; None without update
    objective: float
    n_nonfinite: int


class CMeansShards(ShardedPass):
    """The fused c-means pass (passes.cmeans) over a fit's rows."""

    def __init__(self, data, c, m, ranks=None):
        self.c, self.m = c, m
        super().__init__(data, ranks, lambda chunk: {})   # its passes by (update, write_u)

    def run(self, centers, update=True, write_u=False):
        """(CMeansStats of all ranks' rows; with *write_u* the memberships
        of this rank's rows, host n x c, else None)."""
        # each chunk's memberships go straight to their rows (one host copy)
        remote = getattr(self.data, "remote", False)
        u = np.empty((self.data.n, self.c), self.data.dtype) if write_u and not remote else None
        c, m = self.c, self.m   # not self: over remote data `one` travels to the rows

        def one(chunk, passes):
            if (update, write_u) not in passes:
                passes[update, write_u] = CMeansPass(chunk, c, m, update, write_u)
            p = passes[update, write_u]
            stats = CMeansStats(*p.run(centers))
            if u is not None:
                p.u.get(chunk.queue, ary=u[chunk.offset:chunk.offset + chunk.n].reshape(-1))
            return stats
        stats = self.reduce(one, timed=update)
        if write_u and remote:   # the memberships stay beside their rows (a dask array)
            u = self.rows(lambda chunk, passes: passes[update, True].u.get(chunk.queue)
                          .reshape(chunk.n, c))
        return stats, u


# ---------------------------------------------------- Gaussian-mixture EM
@dataclasses.dataclass
class GmmStats(Stats):
    loglik: float          # sum of log p(x)
    n_bad: int             # rows whose log-density is not finite
    stats: np.ndarray = None   # k x SZ M-step statistics (None: a score)


class GmmShards(ShardedPass):
    """The E and M passes (passes.gmm) over a fit's rows."""

    def __init__(self, data, k, full, ranks=None):
        super().__init__(data, ranks, lambda chunk: GmmPass(chunk, k, full))

    def em(self, records, means):
        """One EM pass: GmmStats with the M statistics."""
        def one(chunk, gp):
            ll, bad = gp.estep(records)
            return GmmStats(ll, bad, gp.mstep(means))
        return self.reduce(one, timed=True)

    def stats_from(self, resp_rows, means):
        """M statistics (k x SZ) of host responsibilities: resp_rows(start, stop) -> rows."""
        def one(chunk, gp):
            gp.set_resp(resp_rows(chunk.offset, chunk.offset + chunk.n))
            return Sums(gp.mstep(means))
        return self.reduce(one).values

    def score(self, records, want=("lse",)):
        """E pass without the M step: (GmmStats, {name: host array of this
        rank's rows} for the names in *want*: "lse", "labels", "resp" n x k)."""
        store = "resp" in want

        def one(chunk, gp):
            ll, bad = gp.estep(records, store_resp=store)
            q, n = chunk.queue, chunk.n
            got = {"lse": lambda: gp.lse.get(q).astype(np.float64),
                   "labels": lambda: gp.labels.get(q).astype(np.int64),
                   "resp": lambda: gp.resp[:records.shape[0] * n].get(q)
                   .reshape(-1, n).T.astype(np.float64)}
            return GmmStats(ll, bad), {w: got[w]() for w in want}
        total, kept = self.reduce(one, keep=True)
        return total, {w: np.concatenate([k[w] for k in kept]) for w in want}
