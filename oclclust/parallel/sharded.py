"""Passes over every chunk of a ShardedData (all devices at once): their
statistics reduced in float64 in chunk order, then over MPI ranks, so the
model does not depend on how the rows are split."""
import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..passes.cmeans import CMeansPass
from ..passes.gmm import GmmPass
from ..passes.lloyd import LloydPass, LloydStats
from .comm import sum_across


class ShardedLloyd:
    """The fused pass over every chunk of a ShardedData (all devices at once),
    its statistics reduced in float64 in chunk order: the model does not
    depend on how the rows are split."""

    def __init__(self, data, k):
        self.data, self.k = data, k

    def _state(self, chunk, update):
        st = chunk.state
        if ("lloyd", update) not in st:
            st[("lloyd", update)] = LloydPass(chunk, self.k, update)
        if "labels" not in st:
            st["labels"] = cla.empty(chunk.queue, chunk.n, np.int32)
            cl.enqueue_fill_buffer(chunk.queue, st["labels"].data, np.int32(-1), 0,
                                   st["labels"].nbytes)
        return st[("lloyd", update)], st["labels"]

    def run(self, centers, update=True):
        def one(chunk):
            lloyd, labels = self._state(chunk, update)
            return lloyd.run(centers, labels)
        stats = self.data.map(one, timed=update)
        total = lambda name: sum(getattr(s, name) for s in stats)   # noqa: E731
        return LloydStats(total("sums") if update else None,
                          total("weights") if update else None,
                          float(total("inertia")), total("n_changed"), total("n_nonfinite"))

    def forget_labels(self):
        self.data.map(lambda c: c.state.pop("labels", None))

    def labels(self):
        return np.concatenate(self.data.map(lambda c: self._state(c, True)[1].get(c.queue)))

    def set_labels(self, labels):
        def put(chunk):
            chunk.state["labels"] = cla.to_device(chunk.queue,
                                                  labels[chunk.offset:chunk.offset + chunk.n])
        self.data.map(put)

    def min_dist(self):
        """Each row's distance to its centre in the last updating pass."""
        return np.concatenate(self.data.map(
            lambda c: c.state[("lloyd", True)].min_dist.get(c.queue).astype(np.float64)))

    def rebalance(self):
        """Measured weights: re-split between iterations, labels kept."""
        saved = self.data.rebalance(save=self.labels)
        if saved is not None:
            self.set_labels(saved)


class ShardedCMeans:
    """The pass over every chunk of a ShardedData (all devices at once), its
    statistics summed in float64 in chunk order, then across MPI ranks."""

    def __init__(self, data, c, m, ranks=None):
        self.data, self.c, self.m = data, c, m
        self.comm = ranks.comm if ranks is not None else None

    def _pass(self, chunk, update, write_u):
        key = ("cmeans", self.c, self.m, update, write_u)
        if key not in chunk.state:
            chunk.state[key] = CMeansPass(chunk, self.c, self.m, update, write_u)
        return chunk.state[key]

    def run(self, centers, update=True, write_u=False):
        """(statistics or None, objective, non-finite count) over all rows;
        with *write_u* also the memberships (host n x c, this rank's rows)."""
        # each chunk's memberships go straight to their rows (one host copy)
        u = np.empty((self.data.n, self.c), self.data.dtype) if write_u else None

        def one(chunk):
            p = self._pass(chunk, update, write_u)
            stats, obj, bad = p.run(centers)
            if write_u:
                p.u.get(chunk.queue, ary=u[chunk.offset:chunk.offset + chunk.n].reshape(-1))
            return stats, obj, bad
        results = self.data.map(one, timed=update)
        stats = sum(r[0] for r in results) if update else np.zeros(0)
        scalars = np.array([sum(r[1] for r in results), sum(r[2] for r in results)])
        stats, scalars = sum_across(self.comm, stats, scalars)
        return (stats if update else None), float(scalars[0]), int(scalars[1]), u


class ShardedGmm:
    """The passes over every chunk of a ShardedData, statistics summed in
    chunk (row) order in float64: the model does not depend on the split."""

    def __init__(self, data, k, full):
        self.data, self.k, self.full = data, k, full

    def _pass(self, chunk):
        if "gmm" not in chunk.state:
            chunk.state["gmm"] = GmmPass(chunk, self.k, self.full)
        return chunk.state["gmm"]

    def em(self, records, means):
        """One EM pass: (total log-likelihood, bad rows, k x SZ statistics)."""
        def one(chunk):
            gp = self._pass(chunk)
            ll, bad = gp.estep(records)
            return ll, bad, gp.mstep(means)
        out = self.data.map(one, timed=True)
        return (sum(o[0] for o in out), sum(o[1] for o in out), sum(o[2] for o in out))

    def stats_from(self, resp_rows, means):
        """M statistics of host responsibilities: resp_rows(start, stop) -> rows."""
        def one(chunk):
            gp = self._pass(chunk)
            gp.set_resp(resp_rows(chunk.offset, chunk.offset + chunk.n))
            return gp.mstep(means)
        return sum(self.data.map(one))

    def score(self, records, want=("lse",)):
        """E pass without the M step: total log-likelihood, bad rows and the
        host arrays named in *want* ("lse", "labels", "resp": n x k)."""
        store = "resp" in want

        def one(chunk):
            gp = self._pass(chunk)
            ll, bad = gp.estep(records, store_resp=store)
            q, n = chunk.queue, chunk.n
            got = {"lse": lambda: gp.lse.get(q).astype(np.float64),
                   "labels": lambda: gp.labels.get(q).astype(np.int64),
                   "resp": lambda: gp.resp[:records.shape[0] * n].get(q)
                   .reshape(-1, n).T.astype(np.float64)}
            return ll, bad, {w: got[w]() for w in want}
        out = self.data.map(one)
        arrays = {w: np.concatenate([o[2][w] for o in out]) for w in want}
        return sum(o[0] for o in out), sum(o[1] for o in out), arrays


def joined_pass(lloyd, centers, ranks, update=True):
    """A Lloyd pass (lloyd.ShardedLloyd) on this rank, its statistics summed
    over all ranks; an error on any rank raises on every rank."""
    stats = ranks.together(lambda: lloyd.run(centers, update=update))
    if ranks.comm is None:
        return stats
    counts = np.array([stats.inertia, stats.n_changed, stats.n_nonfinite], np.float64)
    if update:
        sums, weights, counts = ranks.sum(stats.sums, stats.weights, counts)
    else:
        sums = weights = None
        counts = ranks.sum(counts)
    return LloydStats(sums, weights, float(counts[0]), int(counts[1]), int(counts[2]))
