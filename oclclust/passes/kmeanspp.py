"""Greedy k-means++ seeding on the devices, as scikit-learn's ``kmeans_plusplus``.

Pairs with templates/kmeanspp_candidates.cl.mako and search_sorted.cl.mako.
The random draws are made on the host with the same RandomState calls as
scikit-learn, so a seed picks the same centres; the distances, their prefix
sums (pyopencl's scan) and the candidate search stay on the devices.  Over
several chunks (devices, or streamed pieces) each keeps the distances of its
rows; a drawn potential is first located in a chunk, then searched there.
"""
import contextlib
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.elementwise import ElementwiseKernel
from pyopencl.scan import GenericScanKernel

from ..runtime.codegen import SharedKernel, Spec, c_type, kernel, plan, quiet_build
from ..runtime.reduce import acc_dtype
from .lloyd import LloydPass


@dataclasses.dataclass(frozen=True)
class CandidateSpec(Spec):
    template = "kmeanspp_candidates.cl.mako"
    d: int = 1
    trials: int = 1
    wg: int = 1
    weighted: bool = False


@dataclasses.dataclass(frozen=True)
class SearchSpec(Spec):
    template = "search_sorted.cl.mako"


def pyopencl_prefix_sum(queue, acc, weighted, real_t):
    """pyopencl scan of (w *) dist into out, in the accumulation type: the
    seeding's prefix sums unless prefix_sums_by() says otherwise."""
    def make():
        acc_c = c_type(acc)
        args = f"__global {acc_c} *dist, __global {acc_c} *out"
        if weighted:
            args += f", __global const {c_type(real_t)} *w"
        with quiet_build():
            return SharedKernel(GenericScanKernel(
                queue.context, acc, arguments=args,
                input_expr="w[i] * dist[i]" if weighted else "dist[i]",
                scan_expr="a+b", neutral="0", output_statement="out[i] = item;"))
    return plan("kmeanspp_scan", queue.context,
                (np.dtype(acc).name, weighted, np.dtype(real_t).name), make)


_make_prefix_sum = pyopencl_prefix_sum


def _lower_kernel(context, acc, real_t):
    """closest = min(closest, dist) in place (pyopencl's elementwise kernel):
    k-means||'s update by a round's candidates, whose distances come from a
    Lloyd pass (in the rows' type)."""
    def make():
        with quiet_build():
            return SharedKernel(ElementwiseKernel(
                context, f"{c_type(acc)} *closest, const {c_type(real_t)} *dist",
                f"closest[i] = min(closest[i], ({c_type(acc)})dist[i])", "kmeanspp_lower"))
    return plan("kmeanspp_lower", context, (np.dtype(acc).name, np.dtype(real_t).name), make)


@contextlib.contextmanager
def prefix_sums_by(make_prefix_sum):
    """Make the seeding's prefix sums with *make_prefix_sum* while the block
    runs: a function of (queue, acc, weighted, real_t), as
    pyopencl_prefix_sum, returning scan(dist, out, *weights, queue=) that
    writes the inclusive (w *) dist sums into out.  For harnesses that cannot
    run pyopencl's scan kernel (tests/harness/oclgrind_driver.py: oclgrind
    reports pyopencl's own kernel); every fit in the block uses it."""
    global _make_prefix_sum
    saved, _make_prefix_sum = _make_prefix_sum, make_prefix_sum
    try:
        yield
    finally:
        _make_prefix_sum = saved


class ChunkSeeding:
    """One chunk's side of the seeding: distances to the chosen centres."""
    WG = 64

    def __init__(self, part, trials):
        self.part, self.trials = part, trials
        q, n = part.queue, part.n
        self.acc = acc_dtype(part.acc_double)
        self.groups, steps = part.groups(self.WG, self.WG * 16)
        self.rows_per_group = steps * self.WG * 16
        self.closest = cla.empty(q, n, self.acc)
        cl.enqueue_fill_buffer(q, self.closest.data, self.acc(np.inf), 0, self.closest.nbytes)
        self.cand_dist = cla.empty(q, trials * n, self.acc)
        self.cumsum = cla.empty(q, n, self.acc)
        self.part_pot = cla.empty(q, self.groups * trials, self.acc)
        self.cand_rows = cla.empty(q, trials * part.d, part.dtype)
        self.targets = cla.empty(q, trials, self.acc)
        self.found = cla.empty(q, trials, np.int32)
        self.scanned = False   # whether cumsum holds the prefix sums of closest

    def potentials(self, rows):
        """Each candidate's potential over this chunk (clipped by the closest)."""
        part, q = self.part, self.part.queue
        t = len(rows)
        spec = CandidateSpec(dtype=part.dtype.name, acc_double=part.acc_double, d=part.d,
                             trials=t, wg=self.WG, weighted=part.weighted)
        self.cand_rows[:t * part.d].set(np.ascontiguousarray(rows, part.dtype).ravel(), q)
        kernel(q.context, spec, "candidate_potentials")(
            q, (self.groups * self.WG,), (self.WG,), part.x.data, np.int64(part.n),
            np.int64(part.stride), part.weights_arg(), self.cand_rows.data, self.closest.data,
            self.cand_dist.data, self.part_pot.data, np.int64(self.rows_per_group))
        pot = self.part_pot.get(q)[:self.groups * t].reshape(self.groups, t)
        return pot.sum(axis=0, dtype=np.float64)

    def keep(self, best):
        """Candidate *best* is chosen: its distances become the closest."""
        nbytes = self.part.n * self.acc().itemsize
        cl.enqueue_copy(self.part.queue, self.closest.data, self.cand_dist.data,
                        byte_count=nbytes, src_offset=best * nbytes)
        self.scanned = False

    def lower(self, dist):
        """The closest distances lowered to *dist* (a device array of the
        rows' distances to more centres) where it is nearer; returns the
        chunk's potential, the last of the prefix sums that search reads."""
        part, q = self.part, self.part.queue
        _lower_kernel(q.context, self.acc, part.dtype)(self.closest, dist[:part.n], queue=q)
        self._scan()
        self.scanned = True
        return float(self.cumsum[part.n - 1:part.n].get(q)[0])

    def _scan(self):
        part, q = self.part, self.part.queue
        scan = _make_prefix_sum(q, self.acc, part.weighted, part.dtype)
        with quiet_build():  # the scan builds on its first call
            scan(self.closest, self.cumsum, *([part.weights] if part.weighted else []), queue=q)

    def search(self, targets):
        """Local rows where the (w *) closest prefix sums reach *targets*."""
        part, q = self.part, self.part.queue
        if not self.scanned:
            self._scan()
        search = kernel(q.context, SearchSpec(dtype=part.dtype.name,
                                              acc_double=part.acc_double), "search_sorted")
        if len(targets) > self.targets.size:   # k-means|| draws many at once
            self.targets = cla.empty(q, len(targets), self.acc)
            self.found = cla.empty(q, len(targets), np.int32)
        self.targets[:len(targets)].set(np.asarray(targets, self.acc), q)
        search(q, (len(targets),), None, self.cumsum.data, np.int64(part.n), self.targets.data,
               np.int32(len(targets)), self.found.data)
        return self.found.get(q)[:len(targets)]


class ChunkOversampling:
    """One chunk's side of k-means|| seeding: its rows' distances to the
    nearest candidate so far (a ChunkSeeding's closest, searched as greedy
    k-means++ searches them) lowered round by round by a Lloyd pass over the
    round's candidates (the nearest of thousands at once: the assignment
    kernels, GEMM-tiled where the device has them), and the final pass whose
    cluster weights are the candidates' weights."""

    def __init__(self, part):
        self.part, self.passes = part, {}
        self.seeding = ChunkSeeding(part, 1)
        self.labels = cla.empty(part.queue, part.n, np.int32)   # the passes write them
        cl.enqueue_fill_buffer(part.queue, self.labels.data, np.int32(-1), 0,
                               self.labels.nbytes)

    def _pass(self, k, update):
        if (k, update) not in self.passes:
            self.passes[(k, update)] = LloydPass(self.part, k, update)
        return self.passes[(k, update)]

    def start(self, row):
        """The first centre *row*: the closest distances, the chunk's potential."""
        pot = self.seeding.potentials(np.asarray(row)[None])[0]
        self.seeding.keep(0)
        return pot

    def lower(self, centers):
        """The closest lowered by *centers*; the chunk's potential."""
        lloyd = self._pass(len(centers), False)
        lloyd.run(centers, self.labels)
        return self.seeding.lower(lloyd.min_dist)

    def search(self, targets):
        return self.seeding.search(targets)

    def weigh(self, centers):
        """LloydStats of the rows' nearest of *centers*: weights per centre."""
        return self._pass(len(centers), True).run(centers, self.labels)
