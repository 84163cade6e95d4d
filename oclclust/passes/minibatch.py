"""A mini-batch of the rows resident on one device partition (pairs with
templates/minibatch/): the batch's rows gathered on the device by their
indices, assigned by the Lloyd pass without its update (each row's label
and distance, as the host path's pass over the same rows gives them), and
its per-cluster sums continued from running totals on the device, one row
after another in the batch's order (minibatch_fold) -- the additions the
host's fold makes (cluster/kmeans/minibatch_sums.fold), so the same bits.  Only the
indices go to the device a step, and the labels, distances and k x d sums
come back: never the rows.
"""
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime.codegen import Spec, kernel
from ..runtime.partition import DevicePartition
from .lloyd import LloydPass

_WG = 256
EXACT = ()    # build options: IEEE products and sums (no -cl-mad-enable)


@dataclasses.dataclass(frozen=True)
class GatherSpec(Spec):
    template = "minibatch/minibatch_gather.cl.mako"
    d: int = 1


@dataclasses.dataclass(frozen=True)
class FoldSpec(Spec):
    template = "minibatch/minibatch_fold.cl.mako"
    build_options = EXACT
    d: int = 1


def _global(count):
    return (max(1, -(-count // _WG)) * _WG,)


def gather_rows(part, indices, out, count):
    """Rows *indices* (a device int64 array, local to *part*) of *part* into
    the device array *out* (at least count x d, C order); the event."""
    spec = GatherSpec(dtype=part.dtype.name, acc_double=part.acc_double, d=part.d)
    return kernel(part.queue.context, spec, "minibatch_gather")(
        part.queue, _global(count * part.d), (_WG,), part.x.data, np.int64(part.stride),
        indices.data, np.int64(count), out.data)


def fold_rows(q, spec, rows, members, start, w, k, sums):
    """Cell (c, j) of the device float64 array *sums* (k x d) continued with
    rows[m][j] * w[m] for the batch positions m of *members* from start[c]
    to start[c + 1], in that order (minibatch_fold.cl.mako); the event."""
    return kernel(q.context, spec, "minibatch_fold")(
        q, _global(k * spec.d), (_WG,), rows.data, members.data, start.data, w.data,
        np.int32(k), sums.data)


class BatchPass:
    """Batches of exactly *size* rows of one partition *part* (fp64) against
    *k* centres: ``assign(local indices, centres)`` gathers and assigns
    them; ``fold(totals, weights)`` then continues the totals."""

    def __init__(self, part, k, size):
        if not part.acc_double:
            raise ValueError("the device fold needs fp64")
        self.part, self.k, self.size = part, k, size
        q = part.queue
        self.indices = cla.empty(q, size, np.int64)
        self.rows = cla.empty(q, (size, part.d), part.dtype)
        # unweighted, no update: the pass the host path runs over these rows
        self.lloyd = LloydPass(DevicePartition(part.profile, self.rows), k, update=False)
        self.labels = cla.empty(q, size, np.int32)
        self.fold_spec = FoldSpec(dtype=part.dtype.name, acc_double=True, d=part.d)

    def assign(self, indices, centers):
        """(labels, distances in float64) of the partition's rows *indices*
        (local, *size* of them) about *centers*."""
        q = self.part.queue
        self.indices.set(np.ascontiguousarray(indices, np.int64), q)
        # a fill command, not pyopencl's fill kernel (a build of its own, and its log)
        cl.enqueue_fill_buffer(q, self.labels.data, np.int32(-1), 0, self.labels.nbytes)
        gather_rows(self.part, self.indices, self.rows, self.size)
        self.lloyd.run(np.asarray(centers, np.float64), self.labels)
        return (self.labels.get(q).astype(np.intp),
                self.lloyd.min_dist.get(q).astype(np.float64))

    def fold(self, sums, labels, weights, members):
        """The k x d float64 *sums* continued with the assigned rows (their
        *labels*, float64 *weights*): each cluster's in the order of
        *members* (the batch positions, grouped by label)."""
        q = self.part.queue
        members = np.ascontiguousarray(members, np.int32)
        start = np.zeros(self.k + 1, np.int32)
        np.cumsum(np.bincount(labels, minlength=self.k), out=start[1:])
        out = cla.to_device(q, np.ascontiguousarray(sums, np.float64))
        fold_rows(q, self.fold_spec, self.rows, cla.to_device(q, members),
                  cla.to_device(q, start), cla.to_device(q, np.asarray(weights, np.float64)),
                  self.k, out)
        return out.get(q).reshape(self.k, self.part.d)
