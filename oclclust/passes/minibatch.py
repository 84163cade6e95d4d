"""A mini-batch of the rows resident on one device partition (pairs with
templates/minibatch/): the batch's rows gathered on the device by an index
array, then the fused Lloyd pass (passes/lloyd.py) over them, weighted:
the per-cluster sums and weights and the inertia.  Only the indices go to
the device a step, not the rows.

The batch buffer has a fixed capacity (its LloydPass is planned for that
many rows); a batch of fewer rows is padded with row 0 at weight 0, which
adds nothing to the sums, the weights or the inertia.
"""
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime.codegen import Spec, kernel
from ..runtime.partition import DevicePartition
from .lloyd import LloydPass

_WG = 256


@dataclasses.dataclass(frozen=True)
class GatherSpec(Spec):
    template = "minibatch_gather.cl.mako"
    d: int = 1


def gather_rows(part, indices, out, count):
    """Rows *indices* (a device int64 array, local to *part*) of *part* into
    the device array *out* (at least count x d, C order); the event."""
    spec = GatherSpec(dtype=part.dtype.name, acc_double=part.acc_double, d=part.d)
    total = count * part.d
    return kernel(part.queue.context, spec, "minibatch_gather")(
        part.queue, (max(1, -(-total // _WG)) * _WG,), (_WG,), part.x.data,
        np.int64(part.stride), indices.data, np.int64(count), out.data)


class BatchPass:
    """Mini-batches of up to *capacity* rows of one partition *part*
    against *k* centres: ``run(local indices, their weights, centres)``
    gives the batch's LloydStats."""

    def __init__(self, part, k, capacity):
        self.part, self.capacity = part, capacity
        q = part.queue
        self.indices = cla.zeros(q, capacity, np.int64)
        self.rows = cla.empty(q, (capacity, part.d), part.dtype)
        self.weights = np.zeros(capacity, part.dtype)
        self.count = None   # the rows the uploaded weights are for
        self.batch = DevicePartition(part.profile, self.rows, self.weights)
        self.lloyd = LloydPass(self.batch, k)
        self.labels = cla.empty(q, capacity, np.int32)
        cl.enqueue_fill_buffer(q, self.labels.data, np.int32(-1), 0, self.labels.nbytes)

    def run(self, indices, weights, centers):
        """The batch of the partition's rows *indices* (local)."""
        q = self.part.queue
        padded = np.zeros(self.capacity, np.int64)
        padded[:self._weigh(weights)] = indices
        self.indices.set(padded, q)
        # the padding too: its rows must be finite (0 x NaN is NaN)
        gather_rows(self.part, self.indices, self.rows, self.capacity)
        return self.lloyd.run(centers, self.labels)

    def _weigh(self, weights):
        count = len(weights)
        if count > self.capacity:
            raise ValueError(f"a batch of {count} rows past the capacity {self.capacity}")
        if count == self.count and np.array_equal(self.weights[:count], weights):
            return count   # a fit's unit batch weights: uploaded once
        self.weights[:] = 0
        self.weights[:count] = weights
        self.batch.weights.set(self.weights, self.part.queue)
        self.count = count
        return count
