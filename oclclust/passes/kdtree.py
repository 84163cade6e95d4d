"""KD-tree pruning for ensemble k-means: the tree is built on the host once
per partition, and every iteration maps each leaf to the centroids of each
model that can be nearest to some point of the leaf's box; the device pass
(templates/kdtree/kdtree_stats.cl.mako, three leaf mappings, and
kdtree_aggregate.cl.mako for the replicated one) compares a point only with
its leaf's candidates.

The paper makes the mapping on the host each iteration; here it is made on
the device (kdtree_candidates.cl.mako) from the boxes copied once: the host
version (candidates(), the tests' reference) cost more per iteration than
the whole brute-force pass on a GPU, and the lists never leave the device.

Pruning (the min/max-distance rule): centroid c of model m is dropped for a
leaf whose bounding box is B when mindist(c, B) > min over c' of m of
maxdist(c', B): some c' is then nearer than c to every point of B.  The test
keeps a margin above the rounding error of the device's distance sums, so a
dropped centroid can never be the (lowest-index) nearest one the brute-force
pass finds: the statistics equal the brute-force ones bit for bit.
"""
import collections
import dataclasses
import hashlib

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime.codegen import Launch, Spec, kernel
from ..runtime.profiles import declare_terms, term
from .ensemble import EnsemblePass, model_tiles, staged_bytes

MAPPINGS = ("direct", "distributed", "replicated")
REPLICA_BYTES = 1 << 28      # most global memory the replicated mapping may use


@declare_terms
@dataclasses.dataclass(frozen=True)
class KdTreeTerms:
    """EnsembleKMeans' kdtree="auto": the leaf ``mapping``, used up to
    ``max_dims`` dimensions and from ``min_rows`` rows; rows per leaf
    (``leaf_size``) and the pruned statistics pass's work-groups a unit."""
    mapping: str = term("kdtree_mapping", MAPPINGS)
    max_dims: int = term("kdtree_max_dims", 0, 4096)
    min_rows: int = term("kdtree_min_rows", 0, 1 << 40)
    leaf_size: int = term("kdtree_leaf_size", 8, 1 << 20)
    groups_per_compute_unit: int = term("kdtree_groups_per_compute_unit", 1, 4096)


@dataclasses.dataclass(frozen=True)
class KDStatsSpec(Spec):
    template = "kdtree/kdtree_stats.cl.mako"
    mapping: str = "direct"
    d: int = 1
    wg: int = 1
    distributed: bool = True
    weighted: bool = False
    word_atomics: bool = False


@dataclasses.dataclass(frozen=True)
class CandidatesSpec(Spec):
    template = "kdtree/kdtree_candidates.cl.mako"
    d: int = 1


@dataclasses.dataclass(frozen=True)
class AggregateSpec(Spec):
    template = "kdtree/kdtree_aggregate.cl.mako"
    d: int = 1


_TREES = collections.OrderedDict()     # the last few trees, by content


def build_tree(X, leaf_size):
    """(permutation putting the rows leaf by leaf, leaf starts L+1, boxes lo,
    hi L x d): median splits on the widest dimension of each node's points
    until a node holds at most *leaf_size* rows.  The same rows again (a
    refit, another strategy) reuse the last trees built."""
    key = (X.shape, X.dtype.str, leaf_size, hashlib.blake2b(np.ascontiguousarray(X)).digest())
    if key not in _TREES:
        _TREES[key] = _build_tree(X, leaf_size)
        while len(_TREES) > 2:
            _TREES.popitem(last=False)
    return _TREES[key]


def _build_tree(X, leaf_size):
    n = len(X)
    perm = np.arange(n)
    leaves, stack = [], [(0, n)]
    while stack:
        lo, hi = stack.pop()
        if hi - lo <= leaf_size:
            leaves.append((lo, hi))
            continue
        idx = perm[lo:hi]
        pts = X[idx]
        axis = int(np.argmax(pts.max(0) - pts.min(0)))
        half = (hi - lo) // 2
        order = np.argpartition(pts[:, axis], half)
        perm[lo:hi] = idx[order]
        stack += [(lo + half, hi), (lo, lo + half)]   # left child popped first
    leaves.sort()
    starts = np.array([lo for lo, _ in leaves] + [n], np.int64)
    Xp = X[perm]
    lo = np.minimum.reduceat(Xp, starts[:-1], axis=0).astype(np.float64)
    hi = np.maximum.reduceat(Xp, starts[:-1], axis=0).astype(np.float64)
    return perm, starts, lo, hi


def candidates(lo, hi, centers, model_off, eps, tiny=0.0):
    """(cand L x M x kmax int32, cand_n L x M int32): per leaf and model, the
    indices (ascending, into the packed *centers*) that survive pruning."""
    n_leaves, n_models = len(lo), len(model_off) - 1
    sizes = np.diff(model_off)
    model_of = np.repeat(np.arange(n_models), sizes)
    cand = np.zeros((n_leaves, n_models, int(sizes.max())), np.int32)
    count = np.zeros((n_leaves, n_models), np.int32)
    c = centers.astype(np.float64)
    block = max(1, (1 << 21) // max(1, c.size))
    for b in range(0, n_leaves, block):
        blo, bhi = lo[b:b + block, None, :], hi[b:b + block, None, :]
        below, above = blo - c, c - bhi            # > 0 where c lies outside the box
        near = np.maximum(np.maximum(below, above), 0.0)
        mind = np.einsum("lcd,lcd->lc", near, near)
        far = np.maximum(c - blo, bhi - c)         # to the farther face, per dimension
        maxd = np.einsum("lcd,lcd->lc", far, far)
        bound = np.minimum.reduceat(maxd, model_off[:-1], axis=1)[:, model_of]
        keep = mind <= bound * (1 + eps) + tiny
        # a kept centroid's slot in its model's list: the kept ones before it
        run = np.cumsum(keep, axis=1, dtype=np.int32)
        before = np.concatenate([np.zeros((len(keep), 1), np.int32), run], axis=1)[
            :, model_off[:-1]]
        leaf, col = np.nonzero(keep)
        cand[b + leaf, model_of[col], run[leaf, col] - 1 - before[leaf, model_of[col]]] = col
        count[b:b + block] = np.add.reduceat(keep, model_off[:-1], axis=1)
    return cand, count


def leaf_sums(X, w, starts, fixed, acc_double):
    """L x (d + 1) int64: each leaf's sums of the points' fixed-point values,
    computed as the kernels do (same precision, same operation order, round
    half to even), so adding them equals adding the points one by one."""
    acc = np.float64 if acc_double else np.float32
    w = np.ones(len(X), acc) if w is None else w.astype(acc)
    fv = np.rint((w[:, None] * (X.astype(acc) - fixed.shift.astype(acc))) * acc(fixed.sx))
    fw = np.rint(w * acc(fixed.sw))
    vals = np.concatenate([fv, fw[:, None]], axis=1).astype(np.int64)
    return np.add.reduceat(vals, starts[:-1], axis=0)


class KDTreePass:
    """The KD-tree-pruned statistics pass of one leaf mapping over a
    DevicePartition (a permuted copy of its rows is kept on the device);
    labels and inertia come from the brute-force pass (rows in their order)."""

    def __init__(self, part, mapping, fixed, leaf_size, distributed=None):
        if mapping not in MAPPINGS:
            raise ValueError(f"kdtree must be one of {MAPPINGS}, got {mapping!r}")
        self.part, self.mapping = part, mapping
        self.brute = EnsemblePass(part, "concatenated", fixed, distributed)
        q = part.queue
        X = part.x.get(q)
        perm, self.starts, self.lo, self.hi = build_tree(X, leaf_size)
        self.x = cla.to_device(q, np.ascontiguousarray(X[perm]))
        self.w = (cla.to_device(q, part.weights.get(q)[perm]) if part.weighted else self.x)
        self.leaf_start = cla.to_device(q, self.starts.astype(np.int32))
        self.leaf_fx = cla.to_device(q, leaf_sums(
            X[perm], part.weights.get(q)[perm] if part.weighted else None, self.starts,
            fixed, part.acc_double))
        self.sizes = np.diff(self.starts)
        self.lo_d = cla.to_device(q, np.ascontiguousarray(self.lo.astype(part.dtype)))
        self.hi_d = cla.to_device(q, np.ascontiguousarray(self.hi.astype(part.dtype)))
        self.cand = self.count = None
        self._plan = self._plan_key = None
        self.max_leaf = int(np.diff(self.starts).max())
        # margin over the device's relative rounding of a sum of d squares
        # (and over underflow in the squares; twice that without fp64, where
        # the mapping's own sums are float)
        self.eps = (8 if part.acc_double else 16) * (part.d + 2) * float(
            np.finfo(part.dtype).eps)
        self.tiny = 64 * (part.d + 2) * float(np.finfo(part.dtype).tiny)
        acc = np.float64 if part.acc_double else np.float32
        self.margins = acc(self.eps), acc(self.tiny)     # the kernels' arguments

    def stats(self, centers_list):
        self.enqueue(centers_list)
        return self.brute.stats_result()

    def enqueue(self, centers_list, zero=True):
        """The pruned statistics pass, enqueued (read by brute.stats_result);
        returns the events of its kernels (arguments: as EnsemblePass.enqueue)."""
        b, q = self.brute, self.part.queue
        b.begin(centers_list, zero)
        key = (b._off_bytes, b.capacity)   # the models' layout and the buffers' sizes
        if self._plan_key != key:          # one plan of launches per layout
            self._plan, self._plan_key = self._launch_plan(), key
        return [each(q) for each in self._plan]

    def _launch_plan(self):
        """[Launch] of a pass: the candidate lists, then the statistics of
        every tile of models."""
        b, p, q = self.brute, self.part, self.part.queue
        kmax = int(np.diff(b.off).max())
        size = len(self.lo) * (len(b.off) - 1)
        if self.cand is None or self.cand.size < size * kmax:
            self.cand = cla.empty(q, size * kmax, np.int32)
            self.count = cla.empty(q, size, np.int32)
        self.mapped = (size, kmax)
        tiles = model_tiles(b.off, p.profile.local_memory_budget, p.d, p.dtype.itemsize,
                            stats=self.mapping != "replicated")
        # a leaf per work-group makes its leaf's lists itself (one launch less)
        separate = self.mapping == "distributed" or not all(t[2] for t in tiles)
        plan = [self._candidates_launch(kmax)] if separate else []
        for first, n, staged in tiles:
            if staged:
                plan += self._stats_launches(first, n, kmax)
            else:   # too large for local memory: the global-memory brute-force pass
                plan.append(b._plan_launch("concatenated", first, n, False))
        return plan

    def _candidates_launch(self, kmax):
        """The launch that makes the candidate lists of the uploaded models."""
        b, p, q = self.brute, self.part, self.part.queue
        n_leaves, n_models = len(self.lo), len(b.off) - 1
        size = n_leaves * n_models
        kern = kernel(q.context, CandidatesSpec(dtype=p.dtype.name, acc_double=p.acc_double,
                                                d=p.d), "kdtree_candidates")
        return Launch(kern, (-(-size // 64) * 64,), (64,), (
            self.lo_d.data, self.hi_d.data, b.centers.data, b.model_off.data,
            np.int32(n_models), np.int32(n_leaves), np.int32(kmax), *self.margins,
            self.cand.data, self.count.data))

    def lists(self):
        """The last mapping on the host: (cand L x M x kmax, count L x M)."""
        size, kmax = self.mapped
        q = self.part.queue
        count = self.count.get(q)[:size].reshape(len(self.lo), -1)
        return self.cand.get(q)[:size * kmax].reshape(len(self.lo), -1, kmax), count

    @property
    def pruned_fraction(self):
        """Distance computations the last pass made over brute force's
        (single-candidate leaves make none)."""
        _, count = self.lists()
        return float((self.sizes[:, None] * count * (count > 1)).sum()) / (
            self.part.n * len(self.brute.packed))

    def _stats_launches(self, first, n, kmax):
        """The statistics launch of models first..first+n (and the replicas'
        aggregation)."""
        b, p, q = self.brute, self.part, self.part.queue
        spec = KDStatsSpec(dtype=p.dtype.name, acc_double=p.acc_double, mapping=self.mapping,
                           d=p.d, wg=b.wg, distributed=b.distributed, weighted=p.weighted,
                           word_atomics=b.word_atomics)
        kern = kernel(q.context, spec, "kdtree_stats")
        c_base = int(b.off[first])
        nc = int(b.off[first + n]) - c_base
        # more groups than the brute-force pass: a leaf's work is short and
        # latency-bound (kdtree_groups_per_compute_unit: devices.yaml's GPUs);
        # not replicated, whose every work-item owns statistics to sum
        groups = b.groups if self.mapping == "replicated" else max(1, min(
            len(self.lo),
            p.profile.compute_units * p.profile.terms(KdTreeTerms).groups_per_compute_unit))
        local = [cl.LocalMemory(max(1, staged_bytes(nc, p.d, p.dtype.itemsize, stats=False)))]
        if self.mapping == "replicated":
            size = nc * (p.d + 1) * 8
            groups = max(1, min(groups, REPLICA_BYTES // (size * b.wg)))
            replicas = cla.empty(q, groups * b.wg * nc * (p.d + 1), np.int64)
            out = [replicas.data]
        else:
            local += [cl.LocalMemory(nc * p.d * 8), cl.LocalMemory(nc * 8)]
            out = [b.sums.data, b.counts.data]
        boxes = []
        if self.mapping != "distributed":   # a leaf's models to score; lists' lengths, firsts
            local.append(cl.LocalMemory(4 * (3 * n + 1)))
            boxes = [self.lo_d.data, self.hi_d.data, *self.margins]
        launches = [Launch(kern, (groups * b.wg,), (b.wg,), (
            self.x.data, self.w.data, b.centers.data, b.model_off.data, np.int32(first),
            np.int32(n), np.int32(len(b.off) - 1), self.leaf_start.data,
            np.int32(len(self.lo)), np.int32(self.max_leaf), self.cand.data, self.count.data,
            np.int32(kmax), self.leaf_fx.data, b.shift.data, *b.scales, *boxes, *out,
            *local))]
        if self.mapping == "replicated":
            agg = kernel(q.context, AggregateSpec(dtype=p.dtype.name, acc_double=p.acc_double,
                                                  d=p.d), "kdtree_aggregate")
            size = nc * (p.d + 1)
            launches.append(Launch(agg, (-(-size // 64) * 64,), (64,), (
                replicas.data, np.int64(groups * b.wg), np.int32(c_base), np.int32(nc),
                b.sums.data, b.counts.data)))
        return launches

    def assign(self, centers_list, labels=True, min_dist=False):
        return self.brute.assign(centers_list, labels, min_dist)
