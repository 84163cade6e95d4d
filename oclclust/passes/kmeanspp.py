"""Greedy k-means++ seeding on the devices, as scikit-learn's ``kmeans_plusplus``.

Pairs with templates/kmeanspp/kmeanspp_candidates.cl.mako, search_sorted.cl.mako,
block_search.cl.mako and kmeanspp_draw.cl.mako.  The random draws are made
on the host with the same RandomState calls as scikit-learn, so a seed picks
the same centres; the distances, their sums and the candidate search stay
on the devices.  Over several chunks (devices, or streamed pieces) each
keeps the distances of its rows.  Split-free (runtime/exact_sums.py: the
default with fp64) the potentials are sums of the fit's fixed row blocks,
their totals exact, and a drawn potential is located in a block on the
host (cluster/inits._exact_pick), then among its rows in row order
(block_search.cl.mako): the same draws over any split of the rows; else it
is located in a chunk, then in the chunk's prefix sums (pyopencl's scan).
DeviceGreedy runs the whole greedy loop over one partition on its device
from uniforms drawn up front (k-means||'s weighted candidates: no host step
between the k draws); ChunkOversampling is k-means||'s side of a chunk.
"""
import contextlib
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.elementwise import ElementwiseKernel

from ..runtime import exact_fold, exact_sums
from ..runtime.codegen import (Launch, SharedKernel, Spec, c_type, kernel,
                              kernel_work_group_limit, plan, quiet_build)
from ..runtime.reduce import acc_dtype, count_labels
from .lloyd import LloydPass


@dataclasses.dataclass(frozen=True)
class CandidateSpec(Spec):
    template = "kmeanspp/kmeanspp_candidates.cl.mako"
    d: int = 1
    trials: int = 1
    wg: int = 1
    weighted: bool = False
    indexed: bool = False


@dataclasses.dataclass(frozen=True)
class DrawSpec(Spec):
    """kmeanspp_draw.cl.mako: *trials* a step, one work-group of *wg*, at
    most *blocks* groups of the candidate kernel."""
    template = "kmeanspp/kmeanspp_draw.cl.mako"
    trials: int = 1
    wg: int = 1
    blocks: int = 1
    weighted: bool = False


@dataclasses.dataclass(frozen=True)
class SearchSpec(Spec):
    template = "kmeanspp/search_sorted.cl.mako"


@dataclasses.dataclass(frozen=True)
class BlockSearchSpec(Spec):
    template = "kmeanspp/block_search.cl.mako"
    weighted: bool = False


def pyopencl_prefix_sum(queue, acc, weighted, real_t):
    """pyopencl scan of (w *) dist into out, in the accumulation type: the
    seeding's prefix sums unless prefix_sums_by() says otherwise."""
    def make():
        # imported here: pyopencl's scan module imports Mako (40 ms of `import oclclust`)
        from pyopencl.scan import GenericScanKernel
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
    """Where a round's distance *dist* (a Lloyd pass over the round's
    candidates, in the rows' type) is below *closest*, the closest and the
    row's nearest candidate (base + the pass's label) become the round's;
    equal distances keep the earlier candidate (pyopencl's elementwise
    kernel)."""
    def make():
        with quiet_build():
            return SharedKernel(ElementwiseKernel(
                context, f"{c_type(acc)} *closest, int *nearest, const {c_type(real_t)} *dist, "
                "const int *labels, const int base",
                f"const {c_type(acc)} di = ({c_type(acc)})dist[i]; "
                "if (di < closest[i]) { closest[i] = di; nearest[i] = base + labels[i]; }",
                "kmeanspp_lower"))
    return plan("kmeanspp_lower_nearest", context,
                (np.dtype(acc).name, np.dtype(real_t).name), make)


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
    """One chunk's side of the seeding: distances to the chosen centres.

    A chunk's potentials come as one value a row block (``potentials``,
    ``potential``: blocks x candidates, blocks).  Split-free
    (``exact``: runtime.exact_sums.exact_device) the blocks are the fit's
    fixed blocks of ``block_rows`` rows, a work-group each, and a draw is
    searched within the block the host located it in (``search_blocks``);
    else the chunk is one block (its persistent groups' sum) and a draw is
    searched in the chunk's prefix sums (``search``)."""
    WG = 64

    def __init__(self, part, trials):
        self.part, self.trials = part, trials
        q, n = part.queue, part.n
        self.acc = acc_dtype(part.acc_double)
        self.exact = exact_sums.exact_device(part)
        if self.exact:   # a block's partials: a potential per trial
            self.block_rows = exact_sums.block_rows_of(part, trials)
            self.groups = max(1, exact_sums.blocks_of(n, self.block_rows))
            self.rows_per_group = self.block_rows
        else:
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
        self.block_draws = None   # search_blocks' (block, target, row) buffers

    def potentials(self, rows):
        """Each candidate's potential over this chunk's blocks (clipped by
        the closest): blocks x candidates, float64."""
        part, q = self.part, self.part.queue
        t = len(rows)
        spec = CandidateSpec(dtype=part.dtype.name, acc_double=part.acc_double, d=part.d,
                             trials=t, wg=self.WG, weighted=part.weighted)
        cl.enqueue_copy(q, self.cand_rows.data, np.ascontiguousarray(rows, part.dtype).ravel())
        kernel(q.context, spec, "candidate_potentials")(
            q, (self.groups * self.WG,), (self.WG,), part.x.data, np.int64(part.n),
            np.int64(part.stride), part.weights_arg(), self.cand_rows.data, self.closest.data,
            self.cand_dist.data, self.part_pot.data, np.int64(self.rows_per_group))
        pot = self.part_pot.get(q)[:self.groups * t].reshape(self.groups, t)
        if self.exact:
            return pot[:exact_sums.blocks_of(part.n, self.block_rows)].astype(np.float64)
        return pot.sum(axis=0, dtype=np.float64)[None]

    def keep(self, best):
        """Candidate *best* is chosen: its distances become the closest."""
        nbytes = self.part.n * self.acc().itemsize
        cl.enqueue_copy(self.part.queue, self.closest.data, self.cand_dist.data,
                        byte_count=nbytes, src_offset=best * nbytes)
        self.scanned = False

    def potential(self):
        """The chunk's potential a block (the closest changed in place:
        k-means||'s rounds): the blocks' (w *) closest sums, or the last of
        the prefix sums that search reads."""
        part, q = self.part, self.part.queue
        if self.exact:
            blocks = exact_sums.blocks_of(part.n, self.block_rows)
            out = cla.empty(q, max(blocks, 1), np.float64)
            exact_fold.enqueue_block_sums(q, self.closest, part.weights if part.weighted
                                          else None, part.n, self.block_rows, out)
            return out.get(q)[:blocks]
        self._scan()
        self.scanned = True
        return np.array([self.cumsum[part.n - 1:part.n].get(q)[0]], np.float64)

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

    def search_blocks(self, blocks, targets):
        """Local rows drawn by *targets* (float64), each within its block of
        *blocks* (this chunk's block indices): block_search.cl.mako."""
        part, q = self.part, self.part.queue
        count = len(targets)
        search = kernel(q.context, BlockSearchSpec(dtype=part.dtype.name, acc_double=True,
                                                   weighted=part.weighted), "block_search")
        # the draws' buffers kept (made again only for more draws: k-means||)
        if self.block_draws is None or self.block_draws[2].size < max(count, 1):
            size = max(count, 1, self.trials)
            self.block_draws = (cla.empty(q, size, np.int64), cla.empty(q, size, np.float64),
                                cla.empty(q, size, np.int32))
        ids, where, found = self.block_draws
        if count:   # blocking: the last search's read is done, these are read by the next
            cl.enqueue_copy(q, ids.data, np.ascontiguousarray(blocks, np.int64))
            cl.enqueue_copy(q, where.data, np.ascontiguousarray(targets, np.float64))
        search(q, (max(count, 1),), None, self.closest.data, part.weights_arg(),
               np.int64(part.n), np.int64(self.block_rows), ids.data, where.data,
               np.int32(count), found.data)
        out = np.empty(count, np.int32)
        if count:
            cl.enqueue_copy(q, out, found.data)
        return out


class ChunkOversampling:
    """One chunk's side of k-means|| seeding: its rows' distances to the
    nearest candidate so far (a ChunkSeeding's closest, searched as greedy
    k-means++ searches them) and the index of that candidate, both lowered
    round by round by the Lloyd pass over the round's candidates (the
    nearest of thousands at once by the device's own assignment variant:
    row-wise on CPUs, GEMM-tiled or tensor cores where the device has them);
    the candidates' weights are then a count of the rows' nearest, with no
    pass over all the candidates."""

    def __init__(self, part):
        self.part, self.passes = part, {}
        self.seeding = ChunkSeeding(part, 1)
        q = part.queue
        self.labels = cla.empty(q, part.n, np.int32)   # the passes write them
        cl.enqueue_fill_buffer(q, self.labels.data, np.int32(-1), 0, self.labels.nbytes)
        self.nearest = cla.empty(q, part.n, np.int32)

    def _pass(self, k):
        if k not in self.passes:
            self.passes[k] = LloydPass(self.part, k, update=False)
        return self.passes[k]

    def start(self, row):
        """The first centre *row* (candidate 0): the closest distances, the
        chunk's potential a block."""
        pot = self.seeding.potentials(np.asarray(row)[None])[:, 0]
        self.seeding.keep(0)
        q = self.part.queue
        cl.enqueue_fill_buffer(q, self.nearest.data, np.int32(0), 0, self.nearest.nbytes)
        return pot

    def lower(self, centers, base):
        """The closest lowered by *centers* (candidates base, base + 1, ...;
        copies padding them are never nearer than the first of them); the
        chunk's potential a block, what the host reads back."""
        part, q = self.part, self.part.queue
        lloyd = self._pass(len(centers))
        lloyd.upload(centers)
        lloyd.enqueue(self.labels)
        with quiet_build():   # pyopencl builds it on its first call
            _lower_kernel(q.context, self.seeding.acc, part.dtype)(
                self.seeding.closest, self.nearest, lloyd.min_dist, self.labels,
                np.int32(base), range=slice(part.n), queue=q)
        return self.seeding.potential()

    def search(self, targets):
        return self.seeding.search(targets)

    def search_blocks(self, blocks, targets):
        return self.seeding.search_blocks(blocks, targets)

    @property
    def exact(self):
        return self.seeding.exact

    def weigh(self, count, exact=False):
        """The (sample-weighted) number of this chunk's rows nearest to each
        of the *count* candidates: integer counts on the device (float64,
        exact); with sample weights, their exact sums (*exact*: split-free,
        exact_sums.ExactWords.of_scattered) or numpy's bincount of the
        nearest in row order (float atomics would add in no fixed order)."""
        part, q = self.part, self.part.queue
        if part.weighted:
            w = part.weights.get(q).astype(np.float64)
            if exact:
                return exact_sums.ExactWords.of_scattered(w, self.nearest.get(q), count)
            return np.bincount(self.nearest.get(q), weights=w, minlength=count)[:count]
        counts = cla.zeros(q, count, np.int32)
        count_labels(q, self.nearest, counts, part.n)
        return counts.get(q).astype(np.float64)


class DeviceGreedy:
    """Greedy k-means++ over one partition (k-means||'s weighted candidates)
    with every step on its device: per step the trials' potentials
    (candidate_potentials, indexed: the trials are rows named on the
    device) and one work-group that chooses the best trial and draws the
    next ones (draw_trials); the host enqueues the 2 k launches, always with
    the same arguments, and reads the k indices once.  The draws are
    numpy's: the first row and the (k - 1) x trials uniforms come from the
    host's RandomState, in the order greedy k-means++ draws them."""
    WG = 64         # candidate_potentials' work-group: a row a work-item
    BLOCKS = 1024   # at most this many of them (draw_trials scans their sums)

    def __init__(self, part, trials):
        self.part, self.trials = part, trials
        q, n = part.queue, part.n
        self.acc = acc_dtype(part.acc_double)
        per_group = self.WG * -(-(-(-n // self.WG)) // self.BLOCKS)
        self.rows_per_group = per_group
        self.groups = -(-n // per_group)
        self.cand_dist = cla.empty(q, trials * n, self.acc)
        self.part_pot = cla.empty(q, self.groups * trials, self.acc)
        self.trial_rows = cla.empty(q, trials, np.int32)
        self.best = cla.empty(q, 1, np.int32)
        self.counter = cla.empty(q, 1, np.int32)
        self.draw = self._draw_kernel()

    def _draw_kernel(self):
        part, q = self.part, self.part.queue
        # one work-group; 64 work-items: the item that scans the spans' sums
        # in order waits on fewer of them
        wg = 1 << (min(64, part.profile.max_work_group_size).bit_length() - 1)
        while True:
            spec = DrawSpec(dtype=part.dtype.name, acc_double=part.acc_double,
                            trials=self.trials, wg=wg, blocks=self.BLOCKS,
                            weighted=part.weighted)
            kern = kernel(q.context, spec, "draw_trials")
            if wg == 1 or kernel_work_group_limit(kern, q.device) >= wg:
                return kern, wg
            wg //= 2

    def run(self, first, uniforms, n_clusters):
        """The indices of *n_clusters* rows: *first*, then each chosen from
        its step's trials, drawn by *uniforms* ((n_clusters - 1) x trials,
        in [0, 1))."""
        part, q, t = self.part, self.part.queue, self.trials
        n, acc = part.n, self.acc
        cl.enqueue_fill_buffer(q, self.cand_dist.data, acc(np.inf), 0, n * acc().itemsize)
        self.best.set(np.zeros(1, np.int32), q)
        self.counter.set(np.zeros(1, np.int32), q)
        self.trial_rows.set(np.full(t, first, np.int32), q)
        u = cla.to_device(q, np.append(np.asarray(uniforms, acc).ravel(), acc(0)))
        chosen = cla.empty(q, n_clusters, np.int32)
        spec = CandidateSpec(dtype=part.dtype.name, acc_double=part.acc_double, d=part.d,
                             trials=t, wg=self.WG, weighted=part.weighted, indexed=True)
        candidates = Launch(kernel(q.context, spec, "candidate_potentials"),
                            (self.groups * self.WG,), (self.WG,),
                            (part.x.data, np.int64(n), np.int64(part.stride), part.weights_arg(),
                             self.trial_rows.data, self.best.data, self.cand_dist.data,
                             self.part_pot.data, np.int64(self.rows_per_group)))
        draw_kernel, wg = self.draw
        draw = Launch(draw_kernel, (wg,), (wg,),
                      (self.part_pot.data, np.int32(self.groups), self.cand_dist.data,
                       np.int64(n), np.int64(self.rows_per_group), part.weights_arg(), u.data,
                       np.int32(n_clusters), self.counter.data, self.trial_rows.data,
                       self.best.data, chosen.data))
        for step in range(n_clusters):
            candidates(q)
            draw(q)
            if step % 64 == 63:   # keep the device fed while the host enqueues the rest
                q.flush()
        return chosen.get(q).astype(np.int64)
