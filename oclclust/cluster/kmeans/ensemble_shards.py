"""The ensemble k-means passes (passes.ensemble, passes.kdtree) over a fit's
rows, as a ShardedPass: integer (fixed-point) statistics, exact in any
order over the chunks and the ranks; with one rank the centres may stay
on the devices between passes (ensemble_update: one chunk's update, or
several chunks' shared one)."""
import dataclasses

import numpy as np

from ...passes import ensemble_update
from ...runtime.exact_sums import ExactWords
from ...runtime.reduce import AdditiveStats
from ...parallel.sharded import ShardedPass, SummedArray, chunk_farthest, farthest_of


HALF_BITS = 31   # an int64 total crosses the ranks as two float64 halves, each exact


@dataclasses.dataclass
class FixedPointCentroidSums(AdditiveStats):
    """Integer sums (C x d) and counts (C) of all centroids; they cross the
    ranks as integers (each in two halves of HALF_BITS, whole float64s the
    ranks add exactly), so all ranks' totals are one process's, then float64
    as (sums, weights) through their FixedPoint."""
    sums: np.ndarray
    counts: np.ndarray
    fixed: object = dataclasses.field(metadata={"same": True})

    def flat(self):
        whole = np.concatenate([np.asarray(self.sums, np.int64).ravel(),
                                np.asarray(self.counts, np.int64).ravel()])
        high = whole >> HALF_BITS
        return np.concatenate([high, whole - (high << HALF_BITS)]).astype(np.float64)

    def order_free(self):
        """The halves are whole numbers: the ranks add them in any order."""
        return True

    def from_flat(self, vector):
        """(sums C x d, weights C) float64 of the integer totals."""
        high, low = np.split(np.asarray(vector, np.float64).astype(np.int64), 2)
        sums, counts = np.split((high << HALF_BITS) + low, [self.sums.size])
        return PackedTotals(self.fixed.to_float(sums.reshape(self.sums.shape), counts))


class PackedTotals(tuple):
    """(sums C x d, weights C) float64 of all ranks: exact already (the
    chunks' integers, FixedPoint), so settled as they are (ShardedPass.reduce)."""

    def settled(self):
        return self


@dataclasses.dataclass
class InertiaPerModel(SummedArray):
    """Inertia per model: exact sums of fixed row blocks (exact_sums.
    ExactWords, the same total for any split of the rows) where the chunks
    sum exactly, settled to float64 by ShardedPass.reduce; else float64,
    summed over the chunks in numpy's order."""

    @classmethod
    def total(cls, parts):
        if isinstance(parts[0].values, ExactWords):
            return sum(parts)
        return cls(np.sum([p.values for p in parts], axis=0))   # numpy's order, as ever


class _EnsembleChunk:
    """A chunk's statistics pass and, once asked for, its resident centres."""

    def __init__(self, stats_pass, choice=None):
        self.stats_pass, self.update, self.choice = stats_pass, None, choice

    def resident(self):
        if self.update is None:
            self.update = ensemble_update.DeviceUpdate(self.stats_pass)
        return self.update


class EnsembleShards(ShardedPass):
    """The passes of many k-means models at once over a fit's rows.
    ``make(chunk)`` -> ((strategy, KD-tree mapping), the chunk's pass), the
    choice kept in ``choices`` by device; *fixed*: the fit's FixedPoint."""

    def __init__(self, data, fixed, make, ranks=None, device_update=True):
        self.fixed, self.choices = fixed, {}
        choices = self.choices   # not self: over remote data `state` travels to the rows

        def state(chunk):
            choice, stats_pass = make(chunk)
            choices[str(chunk.profile)] = choice
            return _EnsembleChunk(stats_pass, choice)
        super().__init__(data, ranks, state)
        # remote rows (Dask) keep their centres on the client between passes
        comm = self.ranks.comm
        self.device_update = device_update and (
            ensemble_update.centers_can_stay_resident(data, comm) or
            ensemble_update.centers_can_be_shared(data, comm))
        self.shared = None   # several chunks' ensemble_update.SharedUpdate, once stepped

    def chosen(self):
        """{device: (strategy, KD-tree mapping)} of the chunks' passes."""
        if getattr(self.data, "remote", False):
            return dict(self.map(lambda chunk, st: (str(chunk.profile), st.choice)))
        return self.choices

    def stats_pass(self, chunk):
        return self.state(chunk).stats_pass

    def device_step(self, centers, active, tol, iterations_left=None):
        """One iteration of the *active* models, their centres kept on the
        device (the next ones already enqueued, as many as *iterations_left*,
        the iterations that may follow; None: any number): their shifts;
        None when the host's update must take it (*centers* then hold this
        iteration's centres)."""
        if not self.device_update:
            return None
        if len(self.data.chunks) > 1:
            return self._shared_step(centers, active, tol)

        def step(chunk, st):
            resident = st.resident()
            if resident.active != active:
                resident.centers_to_host(centers)
                resident.start(centers, active)
            shifts, flags = resident.step(
                tol, ensemble_update.AHEAD if iterations_left is None else iterations_left)
            if flags.any():
                resident.centers_to_host(centers)
                return None
            return shifts
        return self.map(step)[0]

    def _shared_step(self, centers, active, tol):
        """device_step over several chunks: their shared update's."""
        if self.shared is None:
            self.shared = ensemble_update.SharedUpdate(
                self.map(lambda chunk, st: st.stats_pass, rows=False))
        if self.shared.active != active:
            self.shared.centers_to_host(centers)
            self.shared.start(centers, active)
        stepped = self.shared.step(tol)
        if stepped is None:   # the devices' updates differ: the host's from here on
            self.device_update = False
        if stepped is None or stepped[1].any():
            self.shared.centers_to_host(centers)
            return None
        return stepped[0]

    def centers_to_host(self, centers):
        """The centres kept on the devices, if any, into *centers*."""
        if self.shared is not None:
            self.shared.centers_to_host(centers)
        elif self.device_update:
            self.map(lambda chunk, st: st.resident().centers_to_host(centers))

    def prepare(self):
        """Set every chunk's pass up (KD-trees built) outside any timing."""
        self.map(lambda chunk, st: None)

    def stats_packed(self, centers_list):
        """(sums C x d, weights C) float64 of all centroids, models packed."""
        fixed = self.fixed
        return self.reduce(lambda chunk, st: FixedPointCentroidSums(
            *st.stats_pass.stats(centers_list), fixed))

    def stats(self, centers_list):
        """[(sums K x d, weights K) float64] of each model of *centers_list*."""
        sums, weights = self.stats_packed(centers_list)
        off = np.cumsum([0] + [len(c) for c in centers_list])
        return [(sums[a:b], weights[a:b]) for a, b in zip(off[:-1], off[1:])]

    def assign(self, centers_list, labels=True, min_dist=False):
        """(inertia per model, labels M x n, distances M x n) of this rank's rows
        (over remote data: labels a dask array that stays there, no distances)."""
        if getattr(self.data, "remote", False):
            inertia = self.reduce(lambda chunk, st: InertiaPerModel(
                st.stats_pass.assign(centers_list, False, False)[0]))
            lab = self.rows(lambda chunk, st: st.stats_pass.assign(
                centers_list, True, False)[1].T).T if labels else None
            return inertia.values, lab, None

        def one(chunk, st):
            inertia, lab, dist = st.stats_pass.assign(centers_list, labels, min_dist)
            return InertiaPerModel(inertia), (lab, dist)
        inertia, kept = self.reduce(one, keep=True)
        lab = np.concatenate([k[0] for k in kept], axis=1) if labels else None
        dist = np.concatenate([k[1] for k in kept], axis=1) if min_dist else None
        return inertia.values, lab, dist

    def farthest(self, centers, take):
        """The *take* rows of all chunks farthest from their nearest of
        *centers* (sharded.farthest_of)."""
        def mine(chunk, st):
            _, lab, dist = st.stats_pass.assign([centers], True, True)
            return chunk_farthest(chunk, dist[0], lab[0], take)
        return farthest_of(self.map(mine), take)
