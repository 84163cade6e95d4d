"""The ensemble k-means passes (passes.ensemble, passes.kdtree) over a fit's
rows, as a ShardedPass: integer (fixed-point) statistics, exact in any
order over the chunks, then float64 over the ranks; with one device and one
rank the centres may stay on the device between passes (ensemble_update)."""
import dataclasses

import numpy as np

from ..passes import ensemble_update
from ..runtime.reduce import Stats
from .sharded import ShardedPass, Sums


@dataclasses.dataclass
class FixedSums(Stats):
    """Integer sums (C x d) and counts (C) of all centroids; float64 as
    (sums, weights) for the ranks, through their FixedPoint."""
    sums: np.ndarray
    counts: np.ndarray
    fixed: object = dataclasses.field(metadata={"same": True})

    def flat(self):
        sums, weights = self.fixed.to_float(self.sums, self.counts)
        return np.concatenate([np.asarray(sums, np.float64).ravel(),
                               np.asarray(weights, np.float64).ravel()])

    def from_flat(self, vector):
        """(sums C x d, weights C) float64."""
        sums, weights = np.split(vector, [self.sums.size])
        return sums.reshape(self.sums.shape), weights


@dataclasses.dataclass
class ModelInertia(Sums):
    """Inertia per model (float64)."""

    @classmethod
    def total(cls, parts):
        return cls(np.sum([p.values for p in parts], axis=0))   # numpy's order, as ever


class _EnsembleChunk:
    """A chunk's statistics pass and, once asked for, its resident centres."""

    def __init__(self, stats_pass):
        self.stats_pass, self.update = stats_pass, None

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

        def state(chunk):
            choice, stats_pass = make(chunk)
            self.choices[str(chunk.profile)] = choice
            return _EnsembleChunk(stats_pass)
        super().__init__(data, ranks, state)
        self.device_update = device_update and ensemble_update.usable(data, self.ranks.comm)

    def stats_pass(self, chunk):
        return self.state(chunk).stats_pass

    def device_step(self, centers, active, tol, following=None):
        """One iteration of the *active* models, their centres kept on the
        device (the next ones already enqueued, as many as *following*, the
        iterations that may follow; None: any number): their shifts;
        None when the host's update must take it (*centers* then hold this
        iteration's centres)."""
        if not self.device_update:
            return None

        def step(chunk, st):
            resident = st.resident()
            if resident.active != active:
                resident.hand_back(centers)
                resident.start(centers, active)
            shifts, flags = resident.step(
                tol, ensemble_update.AHEAD if following is None else following)
            if flags.any():
                resident.hand_back(centers)
                return None
            return shifts
        return self.map(step)[0]

    def hand_back(self, centers):
        """The centres kept on the device, if any, into *centers*."""
        if self.device_update:
            self.map(lambda chunk, st: st.resident().hand_back(centers))

    def prepare(self):
        """Set every chunk's pass up (KD-trees built) outside any timing."""
        self.map(lambda chunk, st: None)

    def stats_packed(self, centers_list):
        """(sums C x d, weights C) float64 of all centroids, models packed."""
        return self.reduce(lambda chunk, st: FixedSums(*st.stats_pass.stats(centers_list),
                                                       self.fixed))

    def stats(self, centers_list):
        """[(sums K x d, weights K) float64] of each model of *centers_list*."""
        sums, weights = self.stats_packed(centers_list)
        off = np.cumsum([0] + [len(c) for c in centers_list])
        return [(sums[a:b], weights[a:b]) for a, b in zip(off[:-1], off[1:])]

    def assign(self, centers_list, labels=True, min_dist=False):
        """(inertia per model, labels M x n, distances M x n) of this rank's rows."""
        def one(chunk, st):
            inertia, lab, dist = st.stats_pass.assign(centers_list, labels, min_dist)
            return ModelInertia(inertia), (lab, dist)
        inertia, kept = self.reduce(one, keep=True)
        lab = np.concatenate([k[0] for k in kept], axis=1) if labels else None
        dist = np.concatenate([k[1] for k in kept], axis=1) if min_dist else None
        return inertia.values, lab, dist
