"""scipy's generic linkage algorithm (fast_linkage) for centroid and median.

These two linkages are not reducible (a merge can be lower than an earlier
one), so neither the chain nor the MST applies.  As in scipy, every cluster
keeps a lower bound of the distance to its nearest higher-indexed neighbour
in a binary heap.  The matrix, its Lance-Williams updates and every row
search stay on the device (templates/linkage/hierarchical_linkage.cl.mako); the host
keeps scipy's heap, so equal bounds leave it in scipy's order, and reads a
few scalars per merge.
"""
import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from .linkage import LinkageSpec, exact_kernel


class Heap:
    """scipy.cluster._structures.Heap: a binary min-heap of values keyed 0..n-1."""

    def __init__(self, values):
        self.values = [float(v) for v in values]
        self.size = len(self.values)
        self.key_by_index = list(range(self.size))
        self.index_by_key = list(range(self.size))
        for i in reversed(range(self.size // 2)):
            self.sift_down(i)

    def get_min(self):
        return self.key_by_index[0], self.values[0]

    def remove_min(self):
        self.swap(0, self.size - 1)
        self.size -= 1
        self.sift_down(0)

    def change_value(self, key, value):
        index = self.index_by_key[key]
        old = self.values[index]
        self.values[index] = value
        if value < old:
            self.sift_up(index)
        else:
            self.sift_down(index)

    def sift_up(self, index):
        parent = (index - 1) >> 1
        while index > 0 and self.values[parent] > self.values[index]:
            self.swap(index, parent)
            index, parent = parent, (parent - 1) >> 1

    def sift_down(self, index):
        child = 2 * index + 1
        while child < self.size:
            if child + 1 < self.size and self.values[child + 1] < self.values[child]:
                child += 1
            if self.values[index] > self.values[child]:
                self.swap(index, child)
                index, child = child, 2 * child + 1
            else:
                break

    def swap(self, i, j):
        v, k = self.values, self.key_by_index
        v[i], v[j] = v[j], v[i]
        k[i], k[j] = k[j], k[i]
        self.index_by_key[k[i]] = i
        self.index_by_key[k[j]] = j


# scipy's find_min_dist raises this where a row has no neighbour closer than
# inf: NaN or inf distances, which a Lance-Williams update makes from
# negative ones (its gh-21011: centroid of [0, 0, -1])
NO_NEIGHBOUR = ("find_min_dist cannot find any neighbors closer than inf away. "
                "Check that distances contain no negative/infinite/NaN entries. ")


def lowered_bounds(rows):
    """The bounds a merge lowered, as (z, d) in increasing z, from *rows*' read
    of it (a _Rows, or linkage_rows' _Centroids, after the merge's copies
    have completed): its count, and the head of the lists where they fit,
    else the whole lists read from the device."""
    count = int(rows.count[0])
    if count <= rows.head:
        zs, ds = rows.head_i[:count], rows.head_v[:count]
    else:
        zs, ds = rows.changed_i[:count].get(rows.q), rows.changed_v[:count].get(rows.q)
    order = np.argsort(zs)
    return list(zip(zs[order].tolist(), ds[order].astype(np.float64).tolist()))


class _Rows:
    """The device side: row searches, element reads and merge updates."""

    HEAD = 64       # this many lowered bounds travel with a merge's one read

    def __init__(self, plan, dist, n, method):
        self.plan, self.q, self.dist, self.n = plan, plan.queue, dist, n
        self.groups = plan.groups(n)
        spec = LinkageSpec(method=method, wg=plan.wg, **plan.base, **dist.fields)
        self.k = {name: exact_kernel(self.q, spec, name) for name in
                  ("row_init", "row_scan", "row_pick", "merge_update")}
        q, dt = self.q, plan.dtype
        self.size = cla.to_device(q, np.ones(n, np.int32))
        self.part_v = cla.empty(q, self.groups, dt)
        self.part_i = cla.empty(q, self.groups, np.int32)
        self.out, self.out_host = cla.empty(q, 2, dt), np.empty(2, dt)
        self.changed = cla.empty(q, 1, np.int32)
        self.changed_i, self.changed_v = cla.empty(q, n, np.int32), cla.empty(q, n, dt)
        self.one = np.empty(1, dt)
        self.head = min(n, self.HEAD)
        self.head_i, self.head_v = np.empty(self.head, np.int32), np.empty(self.head, dt)
        self.count = np.empty(1, np.int32)

    def init_neighbours(self):
        n, q = self.n, self.q
        neighbor, min_dist = cla.empty(q, n, np.int32), cla.empty(q, n, self.plan.dtype)
        wg = self.plan.wg
        self.k["row_init"](q, (-(-n // wg) * wg,), (wg,), *self.dist.args, np.int32(n),
                           neighbor.data, min_dist.data)
        self.min_dist = min_dist     # the device's copy of the bounds (n-1 used)
        neighbor = neighbor.get(q)[:n - 1].copy()
        if np.any(neighbor < 0):
            raise ValueError(NO_NEIGHBOUR)
        return neighbor, min_dist.get(q)[:n - 1].astype(np.float64)

    def _enqueue_nearest_above(self, x):
        q, g = self.q, self.groups
        self.k["row_scan"](q, (g * self.plan.wg,), (self.plan.wg,), *self.dist.args,
                           np.int32(self.n), np.int32(x), self.size.data, self.part_v.data,
                           self.part_i.data)
        self.k["row_pick"](q, (self.plan.wg,), (self.plan.wg,), np.int32(g), self.part_v.data,
                           self.part_i.data, self.out.data)
        return cl.enqueue_copy(q, self.out_host, self.out.data, is_blocking=False)

    def _nearest(self):
        y = int(self.out_host[1])
        if y >= self.n:
            raise ValueError(NO_NEIGHBOUR)
        return y, float(self.out_host[0])

    def nearest_above(self, x):
        """scipy's find_min_dist: (y, d) of x's nearest active y > x; ValueError
        where there is none closer than inf, as in scipy."""
        self._enqueue_nearest_above(x).wait()
        return self._nearest()

    def distance(self, x, y):
        a, b = min(x, y), max(x, y)
        buf, at = self.dist.where(self.n * a - a * (a + 1) // 2 + b - a - 1)
        cl.enqueue_copy(self.q, self.one, self.dist.args[buf], src_offset=at * self.one.itemsize)
        return float(self.one[0])

    def set_bound(self, x, d):
        cl.enqueue_copy(self.q, self.min_dist.data, np.array([d], self.plan.dtype),
                        dst_offset=x * self.one.itemsize)

    def merge(self, x, y, nx, ny, d):
        """Update row y for the merge of x into y, then find y's nearest
        neighbour above it, in one round trip: the lowered bounds (z, d) in
        increasing z, and (y's neighbour, distance) or None where y = n-1
        (ValueError where y has none closer than inf, as in scipy)."""
        q = self.q
        cl.enqueue_fill_buffer(q, self.changed.data, np.int32(0), 0, self.changed.nbytes)
        wg = self.plan.wg
        self.k["merge_update"](q, (self.groups * wg,), (wg,), *self.dist.args, np.int32(self.n),
                               np.int32(x), np.int32(y), np.int32(nx), np.int32(ny),
                               self.plan.dtype.type(d), self.size.data,
                               self.min_dist.data, self.changed.data, self.changed_i.data,
                               self.changed_v.data)
        cl.enqueue_copy(q, self.count, self.changed.data, is_blocking=False)
        cl.enqueue_copy(q, self.head_i, self.changed_i.data, is_blocking=False)
        last = cl.enqueue_copy(q, self.head_v, self.changed_v.data, is_blocking=False)
        if y < self.n - 1:
            last = self._enqueue_nearest_above(y)
        last.wait()
        return lowered_bounds(self), (self._nearest() if y < self.n - 1 else None)


def generic_linkage(plan, dist, n, method):
    """scipy's fast_linkage: the final Z (ids n+k for new clusters, not sorted)."""
    rows = _Rows(plan, dist, n, method)
    return generic_merges(rows, n)


def generic_merges(rows, n, height=None, merge=None):
    """scipy's generic algorithm (fast_linkage) over *rows* (their nearest
    searches, bounds and merges on the device; the heap of lower bounds
    here): Z with ids n+k for new clusters, not sorted.  *height* makes a
    merge's distance its Z height (default: as it is); *merge*(x, y, nx,
    ny, d) merges x into y (default rows.merge)."""
    merge = merge or rows.merge
    neighbor, min_dist = rows.init_neighbours()
    heap = Heap(min_dist)
    size = np.ones(n, np.int64)
    cluster_id = np.arange(n)
    Z = np.empty((n - 1, 4))
    for k in range(n - 1):
        for _ in range(n - k):
            x, dist_x = heap.get_min()
            y = int(neighbor[x])
            if y >= 0 and dist_x == rows.distance(x, y):
                break
            y, dist_x = rows.nearest_above(x)
            neighbor[x], min_dist[x] = y, dist_x
            rows.set_bound(x, dist_x)
            heap.change_value(x, dist_x)
        heap.remove_min()
        nx, ny = int(size[x]), int(size[y])
        Z[k] = (min(cluster_id[x], cluster_id[y]), max(cluster_id[x], cluster_id[y]),
                dist_x if height is None else height(dist_x), nx + ny)
        size[x], size[y], cluster_id[y] = 0, nx + ny, n + k
        lowered, above = merge(x, y, nx, ny, dist_x)
        head = neighbor[:x]                      # candidates x had become y's
        head[(size[:x] > 0) & (head == x)] = y
        for z, d in lowered:
            neighbor[z], min_dist[z] = y, d
            heap.change_value(z, d)
        if above is not None:
            z, d = above
            neighbor[y], min_dist[y] = z, d
            rows.set_bound(y, d)
            heap.change_value(y, d)
    return Z
