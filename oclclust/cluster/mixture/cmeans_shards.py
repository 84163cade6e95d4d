"""Fuzzy c-means over a fit's rows: the c-means pass (passes/cmeans.py) on
every chunk and rank, as a ShardedPass, and the memberships it leaves
on the devices."""
import dataclasses

import numpy as np

from ...parallel.sharded import ShardedPass
from ...passes.cmeans import CMeansPass, row_labels
from ...runtime.reduce import AdditiveStats
from ...runtime.transfer import download


# ----------------------------------------------------------- fuzzy c-means
@dataclasses.dataclass
class CMeansStats(AdditiveStats):
    """A chunk's sums (CMeansPass.sums): statistics and objective exact
    (runtime.exact_sums.ExactWords) where split-free, float64 once reduced."""
    stats: np.ndarray      # c x (d+1): sum w u^m x | sum w u^m; None without update
    objective: float
    n_nonfinite: int


class CMeansShards(ShardedPass):
    """The fused c-means pass (passes.cmeans) over a fit's rows;
    *precision*: the estimator's (passes.cmeans_mma)."""

    def __init__(self, data, c, m, ranks=None, precision="float32"):
        self.c, self.m, self.precision = c, m, precision
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
        c, m, precision = self.c, self.m, self.precision   # not self: over remote data `one` travels to the rows
        settle = self.one_partition()

        def launch(chunk, passes):
            if (update, write_u) not in passes:
                passes[update, write_u] = CMeansPass(chunk, c, m, update, write_u,
                                                     precision=precision)
            return passes[update, write_u].launch(centers, settle)

        def collect(chunk, passes, launched):
            p = passes[update, write_u]
            stats = CMeansStats(*p.collect(launched))
            if write_u and not remote:   # not the chunk: its rows need not stay on the device
                kept.append((chunk.offset, chunk.n, chunk.profile, chunk.queue, p.u))
            return stats
        # several resident devices: every launch, then every collect, from this thread
        stats = self.reduce(None, timed=update, enqueued=(launch, collect))
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
