"""Ward linkage on the rows: scipy's nearest-neighbour chain over cluster
centroids and sizes, in O(n d) device memory where the condensed matrix does
not fit (pairs with templates/linkage_rows/).

Ward's distance between clusters A and B is sqrt(2 |A| |B| / (|A| + |B|)) |c_A - c_B|
(c: the centroids): the Lance-Williams recurrence scipy applies to the
matrix gives the same value in exact arithmetic, so the chain walks and
merges as scipy's does; in floating point the two round differently, so the
heights agree to a few ulps, and two candidate distances closer than that
may be taken in the other order (fastcluster's linkage_vector has the same
property).  Each chain step is one kernel over the active clusters (the
tip's distance to every other, the minimum per work-group) and a read of
the per-group minima; a merge writes one centroid row.
"""
import dataclasses

import numpy as np
import pyopencl.array as cla

from ..runtime.codegen import Spec
from .linkage import exact_kernel


@dataclasses.dataclass(frozen=True)
class WardSpec(Spec):
    template = "ward_nearest.cl.mako"
    d: int = 1
    wg: int = 64


def ward_rows(plan, X):
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
