"""One protocol for a device pass over a fit's rows: every chunk of a
ShardedData (all devices at once) and every MPI rank.  Each chunk's
statistics (a runtime.reduce.Stats) are summed in float64 in chunk order,
then over the ranks in rank order, so the model does not depend on how the
rows are split; an error on any rank raises on every rank.  The passes of
k-means (sharded_lloyd.py), fuzzy c-means and Gaussian-mixture EM are thin
backends of it (the ensemble's is in sharded_ensemble.py)."""
import copy
import dataclasses
import itertools

import numpy as np
import pyopencl.array as cla

from ..passes.cmeans import CMeansPass, row_labels
from ..passes.gmm import GmmPass
from ..runtime.reduce import Stats
from ..runtime.transfer import download
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

    def map_with(self, fn, others=(), each=None, timed=False):
        """[fn(chunk, its state, *its states of the passes *others*[,
        each[i]])] for this rank's chunks i in row order: another pass's
        per-chunk state (left beside the rows by its earlier maps) and one
        value per chunk go to the chunk, wherever it is (over remote data
        each chunk gets only its own value)."""
        if getattr(self.data, "remote", False):
            return self.data.map_states(self.key, self.make, fn, timed,
                                        [other.key for other in others], each)
        theirs = [dict(zip(self.data.chunks, other.map(lambda chunk, st: st, rows=False)))
                  for other in others]
        values = None if each is None else dict(zip(self.data.chunks, each))
        return self.map(lambda chunk, st: fn(chunk, st, *[t[chunk] for t in theirs],
                                             *([values[chunk]] if values is not None else [])), timed)

    def reduce(self, fn, timed=False, keep=False, enqueued=None):
        """fn(chunk, state) -> Stats on every chunk, summed over the chunks
        in their order, then over the ranks.  With *keep*, fn returns
        (Stats, the chunk's own output: rows that stay on this rank) and
        reduce (the total, [outputs in chunk order]).  *enqueued*: fn as
        (launch, collect) for map_enqueued instead."""
        def local():
            out = self.map(fn, timed) if enqueued is None else self.map_enqueued(*enqueued,
                                                                                  timed)
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
        stats, u = self._run(centers, update, write_u)
        return stats, (u.get() if write_u and isinstance(u, Memberships) else u)

    def memberships(self, centers):
        """The final pass at *centers*: (CMeansStats, Memberships of this
        rank's rows, left on the devices until first read; over a Dask
        cluster's workers, a dask array of them, beside their rows)."""
        return self._run(centers, False, True)

    def _run(self, centers, update, write_u):
        kept, remote = [], getattr(self.data, "remote", False)
        c, m = self.c, self.m   # not self: over remote data `one` travels to the rows

        def one(chunk, passes):
            if (update, write_u) not in passes:
                passes[update, write_u] = CMeansPass(chunk, c, m, update, write_u)
            p = passes[update, write_u]
            stats = CMeansStats(*p.run(centers))
            if write_u and not remote:   # not the chunk: its rows need not stay on the device
                kept.append((chunk.offset, chunk.n, chunk.profile, chunk.queue, p.u))
            return stats
        stats = self.reduce(one, timed=update)
        if write_u and remote:   # the memberships stay beside their rows (a dask array)
            return stats, self.rows(lambda chunk, passes: passes[update, True].u
                                    .get(chunk.queue).reshape(chunk.n, c))
        return stats, (Memberships(self.data.n, self.c, self.data.dtype, kept) if write_u
                       else None)


class Memberships:
    """n x c memberships that stay on the devices (each chunk's array)
    until get() first brings them to the host, each chunk's straight to
    its rows (one host copy); the device arrays go then.  labels(): each
    row's largest, taken on the devices while the memberships are there."""

    def __init__(self, n, c, dtype, parts):
        self.shape, self.dtype, self.parts, self.host = (n, c), dtype, parts, None

    def labels(self):
        if self.host is not None:
            return self.host.argmax(axis=1)
        out = np.empty(self.shape[0], np.int64)
        for offset, n, profile, queue, values in (p for p in self.parts if p[1]):
            out[offset:offset + n] = download(queue, row_labels(profile, queue, values, n,
                                                                self.shape[1]))
        return out

    def get(self):
        if self.host is None:
            u = np.empty(self.shape, self.dtype)
            for offset, n, _, queue, values in self.parts:
                download(queue, values, u[offset:offset + n].reshape(-1))
            self.host, self.parts = u, None
        return self.host


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

    def resp_from_lloyd(self, lloyd):
        """One-hot responsibilities on the device from the labels a k-means
        fit (*lloyd*: its LloydShards over these rows) left there, each
        chunk's from its own (on a Dask worker too: no label travels)."""
        self.map_with(lambda chunk, gp, st: gp.onehot(gp.k, labels=st.current_labels()),
                      others=[lloyd])

    def resp_in_first(self):
        """Every row's whole responsibility in component 0 (one-hot rows of
        zero labels, made on the device)."""
        self.map(lambda chunk, gp: gp.onehot(gp.k, labels=cla.zeros(chunk.queue, chunk.n,
                                                                     np.int32)))

    def resp_from_rows(self, rows):
        """One-hot responsibilities on the device: component j is the one
        row rows[j] (this rank's row numbers; others' lie outside 0..n-1)."""
        rows = np.asarray(rows, np.int64)
        self.map(lambda chunk, gp: gp.onehot(gp.k, rows=rows - chunk.offset))

    def resp_from_stream(self, rng, draw, skip, block):
        """Responsibilities drawn from the random stream *rng* (a numpy
        RandomState) in row order: draw(rng, b) -> the next b x k rows,
        asked for *block* rows at most at a time (never n x k at once);
        skip(rng, b) moves the stream past b rows without drawing them.
        Here the chunks draw one after the other on this thread; over a
        Dask cluster's workers each chunk draws its own rows there, from a
        copy of the stream moved (skip) to its first row: the same numbers,
        and only the streams' states travel.  *rng* ends past the rows."""
        if getattr(self.data, "remote", False):
            starts = []
            for chunk in self.data.chunks:
                starts.append(copy.deepcopy(rng))
                skip(rng, chunk.n)

            def one(chunk, gp, own):
                for start in range(0, chunk.n, block):
                    gp.set_resp(draw(own, min(block, chunk.n - start)), start)
            self.map_with(one, each=starts)
            return
        self.map(lambda chunk, gp: None)   # each chunk's state, for the present layout
        for chunk in self.data.chunks:
            gp = self.state(chunk)
            for start in range(0, chunk.n, block):
                gp.set_resp(draw(rng, min(block, chunk.n - start)), start)

    def resp_stats(self, means):
        """M statistics (k x SZ) of the responsibilities on the devices
        (resp_from_*) about *means*."""
        return self.reduce(lambda chunk, gp: Sums(gp.mstep(means))).values

    def score(self, records, want=("lse",)):
        """E pass without the M step: (GmmStats, {name: host array of this
        rank's rows} for the names in *want*: "lse", "labels", "resp" n x k).
        Each chunk's arrays go straight to their rows of the host arrays
        (resp transposed from the device's component-major order there)."""
        store, k, n = "resp" in want, records.shape[0], self.data.n
        shapes = {"lse": (n, np.float64), "labels": (n, np.int64), "resp": ((n, k), np.float64)}
        out = {w: np.empty(*shapes[w]) for w in want}

        def one(chunk, gp):
            ll, bad = gp.estep(records, store_resp=store)
            rows = slice(chunk.offset, chunk.offset + chunk.n)
            for w in want:
                got = download(chunk.queue, gp.resp[:k * chunk.n] if w == "resp" else
                               getattr(gp, w))
                out[w][rows] = got.reshape(k, -1).T if w == "resp" else got
            return GmmStats(ll, bad)
        return self.reduce(one), out
