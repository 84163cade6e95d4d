"""Fuzzy c-means over a fit's rows: the c-means pass (passes/cmeans.py) on
every chunk and rank, as a ShardedPass, and the memberships it leaves
on the devices.  Where the layout allows, the centres stay on the devices
between the fit's passes (passes/cmeans_update.py): one device's resident
update, or one update that several devices of one process, or the
devices of MPI ranks, compute from the totals (``device_step``)."""
import dataclasses

import numpy as np

from ...parallel.manager import DEVICE_ERRORS, DeviceFailure
from ...parallel.sharded import ShardedPass, shareable, words_over_ranks
from ...passes.cmeans import CMeansPass, row_labels
from ...passes.cmeans_update import ResidentCMeans, SharedCMeans, can_update
from ...passes.ensemble_update import centers_can_stay_resident
from ...passes.lloyd_update import default_depth
from ...runtime.reduce import AdditiveStats
from ...runtime.transfer import download, wait


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
    *precision*: the estimator's (passes.cmeans_mma).  *device_update*:
    the fit's centres may stay on the devices between passes where the
    layout and the pass allow (``device_update`` then: see device_step)."""

    def __init__(self, data, c, m, ranks=None, precision="float32", device_update=False):
        self.c, self.m, self.precision = c, m, precision
        # a chunk's passes by (update, write_u); "resident" / "shared": its update
        super().__init__(data, ranks, lambda chunk: {})
        # several devices of one process or MPI ranks (shareable: a
        # collective there): one shared update; one device, its own
        comm = self.ranks.comm
        self.shared_update = device_update and shareable(data, self.ranks)
        self.device_update = self.ranks.run_failing_all(lambda: (self.shared_update or (
            device_update and centers_can_stay_resident(data, comm))) and all(
                self.map(lambda chunk, passes: can_update(self._pass(chunk, passes, True, False)),
                         rows=False)))
        if comm is not None and comm.Get_size() > 1:   # every rank's, or none's
            self.device_update = all(self.ranks.gather(self.device_update))
        self._next = None   # (chunks, {chunk: launched}): the shared step's next pass

    def _pass(self, chunk, passes, update, write_u):
        """The chunk's CMeansPass with or without the update and memberships."""
        if (update, write_u) not in passes:
            passes[update, write_u] = CMeansPass(chunk, self.c, self.m, update, write_u,
                                                 precision=self.precision)
        return passes[update, write_u]

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
            if (update, write_u) not in passes:   # not self._pass: see `c, m` above
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

    # ------------------------------------------ the centres on the devices
    def device_step(self, centers, iterations_left=None):
        """One pass and centre update with the centres kept on the devices
        (``device_update``; *centers*, c x d float64, where none are there
        yet): (CMeansStats without the statistics, as run() gives them,
        shift); the shift is None where a row is not finite (nothing was
        updated from it).  With *iterations_left* (how many iterations may
        follow; None: any number) the next iteration's pass is enqueued
        before this one's numbers are read."""
        if self.shared_update:
            return self._shared_step(centers, iterations_left)
        chunk = self.data.chunks[0]
        passes = self.state(chunk)
        try:
            resident = passes.get("resident")
            if resident is None:
                cpass = self._pass(chunk, passes, True, False)
                resident = passes["resident"] = ResidentCMeans(cpass,
                                                               default_depth(chunk, self.c))
            if not resident.active:
                resident.start(centers)
            objective, bad, shift = resident.step(
                resident.depth if iterations_left is None else iterations_left)
        except DEVICE_ERRORS as exc:   # as map raises it: the device dropped
            raise DeviceFailure(chunk.profile, exc) from exc
        # the host path's total of its one chunk (0 + its values), settled
        total = self.over_ranks(CMeansStats.total([CMeansStats(None, objective, bad)]))
        return total, None if bad else shift

    def _shared_step(self, centers, iterations_left):
        """device_step over several devices (``shared_update``): every
        device's pass over its resident centres, their statistics added on
        the host as run() adds them, the totals written back and the new
        centres computed on every device.  When another iteration may
        follow, each device's next pass is enqueued right after its update,
        before the objective is summed and the shift read; if the fit stops
        there, its results are not read."""
        ahead, self._next = self._next, None
        if ahead is not None and ahead[0] is not self.data.chunks:
            ahead = None   # laid out anew since (not while the update is shared)

        def launch(chunk, passes):
            if ahead is not None:
                return ahead[1][chunk]
            if "shared" not in passes:
                passes["shared"] = SharedCMeans(self._pass(chunk, passes, True, False))
            if not passes["shared"].active:   # the first step: the host's centres
                passes["shared"].start(centers)
            return passes["shared"].launch()

        def collect(chunk, passes, launched):   # the objective's group values kept
            stats, obj, bad = passes["shared"].cpass.collect_parts(launched)
            return CMeansStats(stats, None, bad), obj
        total, objs = self.reduce(None, timed=True, keep=True, enqueued=(launch, collect))
        shared = [self.state(chunk)["shared"] for chunk in self.data.chunks]
        # split-free: every device adds every device's words (their page-locked
        # arrays; over MPI ranks, each place's summed over the ranks first)
        words, own = (words_over_ranks(self.ranks, [sc.shared_stats for sc in shared])
                      if shared[0].shared_stats is not None else (None, False))

        def objective():   # as run() sums it (a field of its own: the same bits apart)
            return self.over_ranks(CMeansStats.total(
                [CMeansStats(None, sc.cpass.objective_of(obj), 0)
                 for sc, obj in zip(shared, objs)])).objective
        if total.n_nonfinite:   # no centre from these statistics
            return dataclasses.replace(total, stats=None, objective=objective()), None
        following = iterations_left is None or iterations_left > 0
        reads, nxt = [], {}
        for i, (chunk, sc) in enumerate(zip(self.data.chunks, shared)):
            try:
                reads.append(sc.update(total.stats if words is None else words,
                                       summarize=i == 0, own=i if own else None))
                if following:
                    nxt[chunk] = sc.launch()
            except DEVICE_ERRORS as exc:   # as map raises it: the device dropped
                raise DeviceFailure(chunk.profile, exc) from exc
        if following:
            self._next = (self.data.chunks, nxt)
        total = dataclasses.replace(total, stats=None, objective=objective())
        wait(reads[:1])
        return total, shared[0].shift(0)

    def centers_to_host(self):
        """The centres kept on the devices (c x d float64, the first
        device's: every one holds the same); none kept there after (a pass
        enqueued ahead is not read)."""
        self._next = None
        kept = [self.state(chunk).get("shared" if self.shared_update else "resident")
                for chunk in self.data.chunks]
        centers = kept[0].centers_to_host()
        for other in kept[1:]:
            other.active = False
        return centers


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
