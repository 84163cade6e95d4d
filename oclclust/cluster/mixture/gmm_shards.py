"""Gaussian-mixture EM over a fit's rows: the E-step pass (passes/gmm.py)
on every chunk and rank, as a ShardedPass, with the responsibilities
it keeps on the devices between the steps."""
import copy
import dataclasses

import numpy as np
import pyopencl.array as cla

from .mdl import Model, records
from ...parallel.manager import DEVICE_ERRORS, DeviceFailure
from ...parallel.sharded import ShardedPass, shareable
from ...passes.gmm import GmmPass
from ...passes.gmm_mma import central
from ...passes.gmm_specs import mma_mstep_planned
from ...runtime import exact_sums
from ...runtime.reduce import AdditiveStats
from ...runtime.transfer import download


# ---------------------------------------------------- Gaussian-mixture EM
@dataclasses.dataclass
class GmmStats(AdditiveStats):
    """A chunk's sums (GmmPass.estep_sums, mstep_sums): exact
    (runtime.exact_sums.ExactWords) where split-free, float64 once reduced."""
    loglik: float          # sum of log p(x)
    n_bad: int             # rows whose log-density is not finite
    stats: np.ndarray = None   # k x SZ M-step statistics (None: a score)
    # the stats are the tensor-core M kernel's raw sums (gmm.central makes them
    # central once summed); every chunk's kernel alike
    raw: bool = dataclasses.field(default=False, metadata={"same": True})

    def check_addable(self, other):
        if self.raw != other.raw:
            raise ValueError("split-free M statistics from the tensor-core kernel and the "
                             "others do not add: a fit on NVIDIA tensor cores and other "
                             "devices needs exact_sums.disabled()")

    def central(self, means):
        """The M statistics about *means* (reduced: gmm.central)."""
        return central(self.stats, means, self.raw)


def holding_profiles(data):
    """The profiles of the devices that hold *data*'s rows (one measured too
    slow takes no part), else its manager's; None over a Dask cluster."""
    return ([s.profile for s in getattr(data, "shards", ())]
            or getattr(data.manager, "profiles", None))


class GmmShards(ShardedPass):
    """The E and M passes (passes.gmm) over a fit's rows.  The tensor-core
    M kernel's raw sums add only to their like: it runs where every device
    of the fit, on every rank, plans it (a GPU beside a CPU runtime: the
    portable M kernels on both); a Dask cluster's workers choose each their
    own (GmmStats refuses a mixture)."""

    def __init__(self, data, k, full, ranks=None, precision="float32"):
        mma = True
        profiles = holding_profiles(data)
        if profiles is not None:
            mma = all(mma_mstep_planned(p, data.dtype, data.d, full) for p in profiles)
            mma = all(ranks.gather(mma)) if ranks is not None else mma
        super().__init__(data, ranks, lambda chunk: GmmPass(chunk, k, full, precision=precision,
                                                            mma_mstep=mma))

    def em(self, records, means):
        """One EM pass: GmmStats with the M statistics."""
        alone = self.one_partition()
        if not alone and self._totals_on_device():
            return self._em_totalled_on_device(records, means)
        # several resident devices: every launch, then every collect, from this thread
        total = self.reduce(None, timed=True, enqueued=(
            lambda chunk, gp: gp.em_launch(records, means, settle=alone),
            lambda chunk, gp, launched: GmmStats(*gp.em_collect(launched))))
        return dataclasses.replace(total, stats=total.central(means), raw=False)

    def _totals_on_device(self):
        """Whether the M statistics' words are added on the first device
        (GmmPass.total_mstats): several devices of one process, each with
        its rows in one resident chunk, split-free.  (Over MPI ranks
        shareable is a collective: not asked, the host adds them.)"""
        return ((self.ranks.comm is None or self.ranks.comm.Get_size() == 1)
                and exact_sums.enabled() and shareable(self.data, self.ranks))

    def _em_totalled_on_device(self, records, means):
        """em() with the M statistics' words of every device added,
        rounded and made central on the first (the same bits as the host's
        total); the log-likelihood and the counts added here."""
        def collect(chunk, gp, launched):
            return GmmStats(*gp.em_collect(launched, mstats=False))
        parts = self.ranks.run_failing_all(lambda: self.map_enqueued(
            lambda chunk, gp: gp.em_launch(records, means), collect, timed=True))
        gps = [self.state(chunk) for chunk in self.data.chunks]
        k = means.shape[0]
        try:
            stats = gps[0].total_mstats(k, [gp.mstats_words(k) for gp in gps], own=0)
        except DEVICE_ERRORS as exc:   # as map raises it: the device dropped
            raise DeviceFailure(self.data.chunks[0].profile, exc) from exc
        total = self.over_ranks(GmmStats.total(parts))
        return dataclasses.replace(total, stats=stats, raw=False)

    def resp_from_lloyd(self, lloyd):
        """One-hot responsibilities on the device from the labels a k-means
        fit (*lloyd*: its LloydShards over these rows) left there, each
        chunk's from its own (on a Dask worker too: no label travels)."""
        self.map_with_inputs(lambda chunk, gp, st: gp.onehot(gp.k,
                                                             labels=st.current_labels()),
                             other_passes=[lloyd])

    def resp_in_first(self):
        """Every row's whole responsibility in component 0 (one-hot rows of
        zero labels, made on the device)."""
        self.map(lambda chunk, gp: gp.onehot(gp.k, labels=cla.zeros(chunk.queue, chunk.n,
                                                                     np.int32)))

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
            self.map_with_inputs(one, per_chunk=starts)
            return
        self.map(lambda chunk, gp: None)   # each chunk's state, for the present layout
        for chunk in self.data.chunks:
            gp = self.state(chunk)
            for start in range(0, chunk.n, block):
                gp.set_resp(draw(rng, min(block, chunk.n - start)), start)

    def resp_stats(self, means):
        """M statistics (k x SZ) of the responsibilities on the devices
        (resp_from_*) about *means*."""
        alone = self.one_partition()
        return self.reduce(lambda chunk, gp: GmmStats(0.0, 0, *gp.mstep_sums(means, alone))
                           ).central(means)

    def score(self, records, want=("lse",)):
        """E pass without the M step: (GmmStats, {name: host array of this
        rank's rows} for the names in *want*: "lse", "labels", "resp" n x k).
        Each chunk's arrays go straight to their rows of the host arrays
        (resp transposed from the device's component-major order there)."""
        store, k, n = "resp" in want, records.shape[0], self.data.n
        shapes = {"lse": (n, np.float64), "labels": (n, np.int64), "resp": ((n, k), np.float64)}
        out = {w: np.empty(*shapes[w]) for w in want}

        def one(chunk, gp):
            ll, bad = gp.estep_sums(records, store_resp=store)
            rows = slice(chunk.offset, chunk.offset + chunk.n)
            for w in want:
                got = download(chunk.queue, gp.resp[:k * chunk.n] if w == "resp" else
                               getattr(gp, w))
                out[w][rows] = got.reshape(k, -1).T if w == "resp" else got
            return GmmStats(ll, bad)
        return self.reduce(one), out


def calibration_pass(part, k, full, precision="float32"):
    """What measured device weights time (DeviceManager.scatter): one E+M
    pass over a sample partition, its components at the sample's first
    rows with unit covariances and equal weights (the pass's cost does not
    depend on the model).  Each device plans its own M kernel: where a
    device measured too slow is left out, the others run theirs (GmmShards
    takes the devices that hold rows); where a GPU and a CPU runtime share
    the rows, both run the portable one and the joint passes' timings
    correct the split."""
    k = min(k, part.n)
    means = part.x[:k].get(part.queue).astype(np.float64)
    unit = np.ones((k, part.d)) if not full else np.broadcast_to(
        np.eye(part.d), (k, part.d, part.d)).copy()
    model = Model(np.full(k, 1.0 / k), means, unit, unit)
    gp = GmmPass(part, k, full, precision=precision,
                 mma_mstep=mma_mstep_planned(part.profile, part.dtype, part.d, full))
    params = records(model, full)
    return lambda: gp.em_collect(gp.em_launch(params, means))
