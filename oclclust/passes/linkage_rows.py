"""Ward, centroid and median linkage on the rows, in O(n d) device memory
where the condensed matrix does not fit (pairs with templates/linkage_rows/):
ward by rounds of reciprocal nearest neighbours (ward_rounds; scipy's
nearest-neighbour chain, ward_chain, where nearest neighbours tie),
centroid and median by scipy's generic algorithm, all over cluster
centroids and sizes.

Ward's distance between clusters A and B is sqrt(2 |A| |B| / (|A| + |B|)) |c_A - c_B|
(c: the centroids): the Lance-Williams recurrence scipy applies to the
matrix gives the same value in exact arithmetic, so the chain walks and
merges as scipy's does; in floating point the two round differently, so the
heights agree to a few ulps, and two candidate distances closer than that
may be taken in the other order (fastcluster's linkage_vector has the same
property).  Each chain step is one kernel over the active clusters (the
tip's distance to every other, the minimum per work-group) and a read of
the per-group minima; a merge writes one centroid row (ward_chain: n
launches and host round trips at least, so ward_rounds serves ward wherever
its conditions hold).
"""
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime import codegen
from ..runtime.codegen import Spec
from ..runtime.profiles import declare_terms, term
from .linkage import exact_kernel
from .linkage_generic import NO_NEIGHBOUR, generic_merges, lowered_bounds
from .tiles import boxes, spatial_order


@declare_terms
@dataclasses.dataclass(frozen=True)
class WardRowsTerms:
    """ward_rows_from: ward linkage of observations runs on the rows
    (ward_rows) from this many observations on, where the condensed matrix
    would still fit (cluster/hierarchy/linkage_matrix.py; past the matrix always)."""
    ward_rows_from: int = term("linkage_ward_rows_from", 2, 2**62)


@dataclasses.dataclass(frozen=True)
class WardSpec(Spec):
    template = "linkage_rows/ward_nearest.cl.mako"
    d: int = 1
    wg: int = 64


def ward_chain(plan, X):
    """scipy's nn_chain for ward over the rows of X (n x d float64): the
    (n-1, 2) merged cluster pairs and their heights, in merge order (as
    passes.linkage.nn_chain returns them)."""
    q = plan.queue
    n, d = X.shape
    groups = plan.groups(n)
    spec = WardSpec(d=d, wg=plan.wg, **plan.base)
    step = exact_kernel(q, spec, "ward_nearest")
    centroids = cla.to_device(q, np.ascontiguousarray(X, plan.dtype))
    sizes_h = np.ones(n, plan.dtype)
    sizes = cla.to_device(q, sizes_h)
    part_v, part_i = cla.empty(q, groups, plan.dtype), cla.empty(q, groups, np.int32)
    prev_dist = cla.empty(q, 1, plan.dtype)
    pairs, heights = np.empty((n - 1, 2), np.int64), np.empty(n - 1, np.float64)
    chain, first = [], 0
    for k in range(n - 1):
        if not chain:
            while sizes_h[first] == 0:
                first += 1
            chain = [first]
        while True:
            x = chain[-1]
            prev = chain[-2] if len(chain) > 1 else -1
            step(q, (groups * plan.wg,), (plan.wg,), centroids.data, sizes.data, np.int32(n),
                 np.int32(x), np.int32(prev), part_v.data, part_i.data, prev_dist.data)
            v, i = part_v.get(q), part_i.get(q)
            g = int(np.lexsort((i, v))[0])      # the least distance, then the lower index
            y, dist = int(i[g]), float(v[g])
            if prev >= 0:   # scipy starts from the previous link: only a lower one replaces it
                at_prev = float(prev_dist.get(q)[0])
                if not dist < at_prev:
                    y, dist = prev, at_prev
            if prev >= 0 and y == prev:
                break
            chain.append(y)
        chain = chain[:-2]
        x, y = min(x, y), max(x, y)
        nx, ny = sizes_h[x], sizes_h[y]
        pairs[k], heights[k] = (x, y), dist
        # the merged cluster takes index y (scipy's): its centroid, its size
        cx, cy = centroids[x:x + 1].get(q)[0], centroids[y:y + 1].get(q)[0]
        centroids[y:y + 1].set(((nx * cx + ny * cy) / (nx + ny))[None].astype(plan.dtype), q)
        sizes_h[x], sizes_h[y] = 0, nx + ny
        sizes[x:x + 1].set(sizes_h[x:x + 1], q)
        sizes[y:y + 1].set(sizes_h[y:y + 1], q)
    return pairs, heights


@dataclasses.dataclass(frozen=True)
class WardRoundSpec(Spec):
    """``tb`` clusters a tile (its bounding box and least size), staged in
    local memory."""
    template = "linkage_rows/ward_rounds.cl.mako"
    d: int = 1
    wg: int = 64
    tb: int = 64


def ward_round_kernel(plan, d):
    """(spec, kernel) of a round, or None where not one centroid fits the
    local memory budget; tiles of up to a work-group's size, as many
    centroids as the budget holds, the work-group halved until the built
    kernel runs it."""
    item, wg = plan.dtype.itemsize, plan.wg
    while True:
        fits = plan.profile.local_memory_budget // (d * item + item + 4)
        if fits < 1:
            return None
        tb = 1 << (min(fits, wg).bit_length() - 1)
        spec = WardRoundSpec(d=d, wg=wg, tb=tb, **plan.base)
        kern = exact_kernel(plan.queue, spec, "ward_round")
        if wg == 1 or codegen.kernel_work_group_limit(kern, plan.queue.device) >= wg:
            return spec, kern
        wg //= 2


def _tile_min(values, tb):
    """Each tile's least value (tiles of tb, the last ragged)."""
    full = len(values) // tb * tb
    least = values[:full].reshape(-1, tb).min(axis=1)
    if full < len(values):
        least = np.r_[least, values[full:].min()]
    return np.ascontiguousarray(least)


def ward_height(v):
    """A merge's height from its ward value v = |c_i - c_j|^2 n_i n_j /
    (n_i + n_j): sqrt(2 v), fastcluster linkage_vector's."""
    return np.sqrt(2 * np.asarray(v, np.float64))


def ward_rounds(plan, X):
    """Ward's tree by rounds of reciprocal nearest neighbours: (pairs,
    heights) as ward_chain returns them (clusters named by their highest
    row, merges in a children-first order), or None where nearest
    neighbours tie (the caller runs ward_chain then).

    Each round the device finds the nearest active cluster of every cluster
    whose nearest may have changed (templates/linkage_rows/
    ward_rounds.cl.mako: the ward values from the centroids and sizes,
    tiles of the centroids in a k-d order skipped by their bounding boxes);
    the host merges every reciprocal pair at once, in float64: centroid
    (n_x c_x + n_y c_y) / (n_x + n_y) (fastcluster's), height sqrt(2 v).

    Why scipy's tree: ward is reducible -- a merged cluster is no nearer to
    any other than the nearer of its parts, and strictly farther where the
    pair was a strict nearest pair (Lance-Williams: d(k, xy)^2 = ((n_x +
    n_k) d_kx^2 + (n_y + n_k) d_ky^2 - n_k d_xy^2) / (n_x + n_y + n_k) >
    min(d_kx, d_ky)^2 where d_xy < min(d_kx, d_ky)).  So a strict
    reciprocal pair stays one until the chain reaches it, the chain merges
    exactly these pairs, and a cluster whose nearest did not merge keeps
    it (only the others are searched again).  The chain's own tie rules
    (its previous link kept among equals, else the lowest index) cannot be
    replayed by rounds, so any exact tie of a searched nearest neighbour
    (duplicate points, lattices) returns None, as do two merges of equal
    height (their order in scipy's Z is the chain's).  Like ward_chain and
    fastcluster's linkage_vector this measures distances between centroids,
    where scipy updates a matrix by Lance-Williams: the heights agree to
    rounding (a few ulps), and two candidates closer than that may be taken
    in the other order.
    """
    q = plan.queue
    n, d = X.shape
    made = ward_round_kernel(plan, d)
    if made is None:
        return None
    spec, kern = made
    tb, wg = spec.tb, spec.wg
    C = np.array(X, np.float64)
    size = np.ones(n)
    # active clusters, in the k-d order (of the rows scaled down where their
    # products would overflow: the order is the same, the axes' fit finite)
    top = float(np.max(np.abs(C)))
    order = spatial_order(C / top if top > 1e100 else C, "euclidean", tb)
    alive = np.ones(n, bool)
    nn, nnv = np.full(n, -1, np.int64), np.zeros(n, np.float64)
    query, hint = order.astype(np.int64), np.full(n, -1, np.int64)
    pos = np.empty(n, np.int64)
    pairs, heights = [], []
    while len(order) > 1:
        m = len(order)
        pos[order] = np.arange(m)
        cc = np.ascontiguousarray(C[order], plan.dtype)
        sc = np.ascontiguousarray(size[order], plan.dtype)
        lo, hi = boxes(cc, tb)
        qp = pos[query]
        sort = np.argsort(qp, kind="stable")
        query, qp = query[sort], qp[sort].astype(np.int32)
        hq = hint[query]
        hp = np.where(hq >= 0, pos[np.maximum(hq, 0)], -1).astype(np.int32)
        bufs = [cla.to_device(q, a) for a in (cc, sc, order.astype(np.int32), qp, hp,
                                             lo, hi, _tile_min(sc, tb))]
        mq = len(query)
        out_v, out_j, out_t = (cla.empty(q, mq, plan.dtype), cla.empty(q, mq, np.int32),
                               cla.empty(q, mq, np.int32))
        groups = -(-mq // wg)
        kern(q, (groups * wg,), (wg,), bufs[0].data, bufs[1].data, bufs[2].data,
             np.int32(m), bufs[3].data, bufs[4].data, np.int32(mq), bufs[5].data,
             bufs[6].data, bufs[7].data, out_v.data, out_j.data, out_t.data)
        v, j, tie = out_v.get(q), out_j.get(q), out_t.get(q)
        if np.any(j < 0) or not np.all(np.isfinite(v)):
            raise ValueError(NO_NEIGHBOUR)
        if np.any(tie):
            return None
        nn[query], nnv[query] = order[j], v
        # every reciprocal pair, x < y; the merged cluster takes y (scipy's)
        b = nn[order]
        rec = (nn[b] == order) & (order < b)
        xs, ys = order[rec], b[rec]
        if not xs.size:         # only where ties were missed: never silently wrong
            return None
        nx, ny = size[xs], size[ys]
        C[ys] = (C[xs] * nx[:, None] + C[ys] * ny[:, None]) / (nx + ny)[:, None]
        size[ys] = nx + ny
        alive[xs] = False
        pairs.append(np.column_stack([xs, ys]))
        heights.append(ward_height(nnv[xs]))
        # searched again: the new clusters, and those whose nearest merged
        # (from the cluster it merged into, a bound to start from)
        into = np.arange(n)
        into[xs] = ys
        changed = np.zeros(n, bool)
        changed[xs] = changed[ys] = True
        order = order[alive[order]]
        query = order[changed[nn[order]]]
        hint[query] = np.where(into[nn[query]] == query, -1, into[nn[query]])
    pairs = np.concatenate(pairs) if pairs else np.empty((0, 2), np.int64)
    heights = np.concatenate(heights) if heights else np.empty(0)
    hs = np.sort(heights)
    if np.any(hs[1:] == hs[:-1]):
        return None
    return pairs, heights


def ward_rows(plan, X):
    """Ward linkage over the rows of X (n x d): (pairs, heights) in a
    children-first order (linkage_matrix._sorted_linkage makes scipy's Z of
    them).  ward_rounds, else (nearest neighbours tie) scipy's chain."""
    X = np.ascontiguousarray(X, np.float64)
    if X.shape[0] > 1:
        found = ward_rounds(plan, X)
        if found is not None:
            return found
    return ward_chain(plan, X)


# ------------------------------------------------ centroid and median linkage
@dataclasses.dataclass(frozen=True)
class GenericRowsSpec(Spec):
    template = "linkage_rows/generic_nearest.cl.mako"
    d: int = 1
    wg: int = 64


ROWS_METHODS = ("centroid", "median")


def _distance(a, b):
    """|a - b|^2 rounded as generic_nearest.cl.mako's centroid_sqdistance:
    the squared differences summed in feature order (cumsum is sequential),
    in the rows' type."""
    diff = a - b
    return np.cumsum(diff * diff)[-1]


class _Centroids:
    """The device side of the generic algorithm on the rows: the centroids
    (host copy kept in step), activity flags (sizes: 0 merged away) and
    lower bounds, and the scans."""

    HEAD = 64       # this many lowered bounds travel with a merge's one read
    INIT_ROWS = 1 << 16     # rows a launch of the initial nearest-neighbour search

    def __init__(self, plan, X):
        self.plan, self.q = plan, plan.queue
        q, dt = self.q, plan.dtype
        self.n, d = X.shape
        self.groups = plan.groups(self.n)
        spec = GenericRowsSpec(d=d, wg=plan.wg, **plan.base)
        self.k = {name: exact_kernel(q, spec, name) for name in ("nearest_above_init",
                                                                  "rows_scan")}
        self.host = np.ascontiguousarray(X, dt).copy()
        self.centroids = cla.to_device(q, self.host)
        self.sizes = cla.to_device(q, np.ones(self.n, np.int32))
        self.min_dist = cla.empty(q, self.n, dt)
        self.changed = cla.zeros(q, 2, np.int32)    # counts of lowered bounds, alternate
        self.merges = 0
        self.changed_i, self.changed_v = cla.empty(q, self.n, np.int32), cla.empty(q, self.n, dt)
        self.part_v, self.part_i = cla.empty(q, self.groups, dt), cla.empty(q, self.groups,
                                                                            np.int32)
        self.head = min(self.n, self.HEAD)
        self.head_i, self.head_v = np.empty(self.head, np.int32), np.empty(self.head, dt)
        self.pv, self.pi = np.empty(self.groups, dt), np.empty(self.groups, np.int32)
        self.count = np.empty(1, np.int32)
        self.keep = []      # host arrays of writes in flight (until the next wait)

    def init_neighbours(self):
        """scipy's first find_min_dist of every row x < n-1: (neighbor, min_dist)."""
        q, n, wg = self.q, self.n, self.plan.wg
        neighbor = cla.empty(q, n, np.int32)
        for first in range(0, n - 1, self.INIT_ROWS):
            rows = min(self.INIT_ROWS, n - 1 - first)
            self.k["nearest_above_init"](q, (rows * wg,), (wg,), self.centroids.data,
                                         np.int32(n), np.int32(first), neighbor.data,
                                         self.min_dist.data)
            q.flush()
        neighbor = neighbor.get(q)[:n - 1].copy()
        if np.any(neighbor < 0):
            raise ValueError(NO_NEIGHBOUR)
        return neighbor, self.min_dist.get(q)[:n - 1].astype(np.float64)

    def distance(self, x, y):
        return float(_distance(self.host[x], self.host[y]))

    def _write(self, buf, offset, values):
        values = np.ascontiguousarray(values)
        self.keep.append(values)
        cl.enqueue_copy(self.q, buf.data, values, dst_offset=offset * values.itemsize,
                        is_blocking=False)

    def set_bound(self, x, d):
        self._write(self.min_dist, x, np.array([d], self.plan.dtype))

    def _scan(self, y, removed=-1):
        """Scan from y (removed >= 0: the merge of removed into y, which
        lowers bounds; else y's nearest above alone)."""
        q, g, wg = self.q, self.groups, self.plan.wg
        self.k["rows_scan"](q, (g * wg,), (wg,), self.centroids.data, self.sizes.data,
                            np.int32(self.n), np.int32(y), np.int32(removed >= 0),
                            np.int32(removed), np.int32(self.merges % 2),
                            self.min_dist.data, self.changed.data, self.changed_i.data,
                            self.changed_v.data, self.part_v.data, self.part_i.data)
        cl.enqueue_copy(q, self.pv, self.part_v.data, is_blocking=False)
        return cl.enqueue_copy(q, self.pi, self.part_i.data, is_blocking=False)

    def _nearest(self):
        g = int(np.lexsort((self.pi, self.pv))[0])   # the least distance, then the lower index
        y = int(self.pi[g])
        if y >= self.n:
            raise ValueError(NO_NEIGHBOUR)
        return y, float(self.pv[g])

    def nearest_above(self, x):
        """scipy's find_min_dist: (y, d) of x's nearest active y > x."""
        self._scan(x).wait()
        self.keep.clear()
        return self._nearest()

    def merge(self, x, y, nx, ny, method):
        """Merge x into y (x < y): y's new centroid (the size-weighted mean,
        or the midpoint for median), the sizes, then one scan from y: the
        lowered bounds (z, d) of z < y in increasing z, and y's nearest
        neighbour above it (None where y = n-1)."""
        q, dt = self.q, self.plan.dtype
        cx, cy = self.host[x], self.host[y]
        if method == "centroid":
            c = (dt.type(nx) * cx + dt.type(ny) * cy) / dt.type(nx + ny)
        else:
            c = (cx + cy) * dt.type(0.5)
        self.host[y] = c
        self._write(self.centroids, y * len(c), c)
        self._scan(y, removed=x)
        cl.enqueue_copy(q, self.count, self.changed.data,
                        src_offset=self.merges % 2 * self.count.itemsize, is_blocking=False)
        self.merges += 1
        cl.enqueue_copy(q, self.head_i, self.changed_i.data, is_blocking=False)
        cl.enqueue_copy(q, self.head_v, self.changed_v.data, is_blocking=True)
        self.keep.clear()
        return lowered_bounds(self), (self._nearest() if y < self.n - 1 else None)


def generic_rows(plan, X, method):
    """scipy's fast_linkage for centroid or median over the rows of X
    (n x d): the final Z (ids n+k for new clusters, in merge order, as
    passes.linkage_generic.generic_linkage returns it).

    The algorithm is scipy's step for step (its heap of lower bounds on the
    host, each cluster's nearest higher-indexed neighbour searched on the
    device), with the distances computed from the centroids rather than by
    Lance-Williams updates of a matrix: the same values in exact arithmetic,
    rounded differently.  Clusters compare by squared distance (as
    fastcluster's do: the host checks a bound with the device's rounding,
    no square root involved) and a merge's height is its root.  On the test sets here (blobs, uniform, duplicate
    points; n up to a few hundred) the heights are within 1e-13 relative of
    scipy's (float64); scipy's updates square and subtract distances, so
    its own error grows where a merge height is small against the distances
    it is made from (a height h from distances D carries about eps D^2 / h^2
    relative), and the two may differ more there.  Where two candidate
    distances are closer than that, the merges may be taken in the other
    order (fastcluster's linkage_vector, which also computes centroid
    distances, has the same property; its heights are these bit for bit).

    Ties are deterministic and follow scipy's rules on the direct values:
    its heap order, a scan's first strict minimum (the lowest index), a
    bound replaced only by a strictly smaller distance.  Duplicate points
    (zero distances; a merged pair's centroid is the point again) and the
    integer sets of the tests merge as in scipy.  Where distances are equal
    in exact arithmetic, the direct values often are exactly equal too (on
    integer or dyadic data always), while scipy's Lance-Williams values may
    differ in their last bits; there scipy resolves the tie by that
    rounding and its tree may differ from this one (median on a 3-D
    integer grid, tests/passes/test_linkage_rows.py), this one being
    scipy's algorithm on the exact distances.  ValueError(NO_NEIGHBOUR)
    where the distances overflow.
    """
    if method not in ROWS_METHODS:
        raise ValueError(f"generic_rows runs centroid and median, not {method!r}")
    rows = _Centroids(plan, X)
    return generic_merges(rows, rows.n, lambda d: np.sqrt(plan.dtype.type(d)),
                          lambda x, y, nx, ny, d: rows.merge(x, y, nx, ny, method))
