"""A mini-batch's statistics, the same bits however its rows are split.

The batch's rows are assigned on the devices by the Lloyd pass without its
update: each row's label and exact distance are the row's own, whatever
rows come with it.  Its per-cluster sums, weights and inertia are then
added on the host in float64 one row after the other, in the order of the
rows' indices (np.bincount and np.cumsum add strictly in order).  A batch
whose rows lie in several blocks (a Dask cluster's workers,
parallel/dask.py) is folded block after block in row order, each block
continuing the running totals of the one before (they travel, k x d): the
same additions in the same order as the batch folded in one piece, where a
sum of per-block partials would round differently.
"""
import dataclasses

import numpy as np

from .lloyd_shards import LloydShards


@dataclasses.dataclass
class BatchTotals:
    """A mini-batch's running totals: k x d weighted sums, k weights, inertia."""
    sums: np.ndarray
    weights: np.ndarray
    inertia: float

    @classmethod
    def zeros(cls, k, d):
        return cls(np.zeros((k, d)), np.zeros(k), 0.0)


def assign(data, centers):
    """(labels, exact distances in float64) of *data*'s rows (a
    ShardedData, unweighted) about *centers*, on its devices."""
    lloyd = LloydShards(data, len(centers), device_update=False)
    lloyd.run(np.asarray(centers, np.float64), update=False)
    return lloyd.labels(), lloyd.min_dist(update=False)


def index_order(indices):
    """The stable order of *indices* (non-negative ints) -- np.argsort(kind=
    "stable")'s -- by 16-bit radix passes (numpy sorts 16-bit keys by
    radix: a few linear passes instead of a comparison sort)."""
    indices = np.asarray(indices, np.int64)
    order = np.arange(len(indices))
    shift, top = 0, int(indices.max(initial=0))
    while True:
        order = _radix_pass(order, (indices[order] >> shift) & 0xFFFF)
        shift += 16
        if top >> shift == 0:
            return order


def grouped(order, labels):
    """*order* made stable by *labels* first (small non-negative ints):
    each cluster's positions in *order*'s order, cluster after cluster."""
    key = np.asarray(labels)[order]
    if int(key.max(initial=0)) > 0xFFFF:
        return order[np.argsort(key, kind="stable")]
    return _radix_pass(order, key)


def _radix_pass(order, digit):
    return order[np.argsort(np.asarray(digit).astype(np.uint16), kind="stable")]


def fold(total, rows, weights, labels, dist):
    """*total* (BatchTotals) continued with *rows* (their *weights*, *labels*
    and *dist*), one row after the other in order: a new BatchTotals.  Sparse
    rows (canonical CSR) add their stored values in that order, the zeros
    left out (t + 0 is t: the same sums)."""
    k, d = total.sums.shape
    m, kd = len(labels), k * d
    w = np.asarray(weights, np.float64)
    labels = np.asarray(labels, np.intp)
    # the running totals enter first, as bincount's first terms (0 + t is t:
    # totals that start at +0 never become -0), then the rows in order; one
    # buffer each, filled in place (a batch is m x d values)
    if hasattr(rows, "indptr"):
        row = np.repeat(np.arange(m), np.diff(rows.indptr))
        values = np.concatenate([total.sums.ravel(), rows.data.astype(np.float64) * w[row]])
        cells = np.concatenate([np.arange(kd), labels[row] * d + rows.indices])
    else:
        values, cells = np.empty(kd + m * d), np.empty(kd + m * d, np.intp)
        values[:kd], cells[:kd] = total.sums.ravel(), np.arange(kd)
        np.multiply(rows, w[:, None], out=values[kd:].reshape(m, d))
        np.add(labels[:, None] * d, np.arange(d), out=cells[kd:].reshape(m, d))
    sums = np.bincount(cells, values, minlength=kd).reshape(k, d)
    return BatchTotals(sums, *fold_weights(total, w, labels, dist))


def fold_weights(total, w, labels, dist):
    """(weights, inertia) of *total* continued with rows of float64 weights
    *w*, *labels* and *dist*, in order (fold's, apart from the sums)."""
    k = len(total.weights)
    wsum = np.bincount(np.concatenate([np.arange(k), labels]),
                       np.concatenate([total.weights, w]), minlength=k)
    inertia = np.cumsum(np.concatenate([[total.inertia], w * np.asarray(dist, np.float64)]))
    return wsum, float(inertia[-1])


def assign_rows(data, local, weights, centers):
    """Rows *local* of *data* (a DeviceData with a host copy: a Dask
    block's), assigned on its manager's devices: (rows, weights, labels,
    distances), the arguments of fold after its total."""
    rows = data.rows(local)
    part = data.manager.scatter(rows, None, dtype=data.dtype)
    try:
        return (rows, weights) + assign(part, centers)
    finally:
        part.close()


def fold_assigned(total, assigned):
    """fold(total, *assigned) (assigned: assign_rows')."""
    return fold(total, *assigned)
