"""Distance matrices on the device (pairs with templates/distances/pairwise_distances.cl.mako)."""
import dataclasses

import numpy as np
import pyopencl.array as cla

from ..runtime.codegen import Spec, kernel


@dataclasses.dataclass(frozen=True)
class PairwiseSpec(Spec):
    template = "distances/pairwise_distances.cl.mako"
    d: int = 1


def pairwise_euclidean(part, centers):
    """n x k Euclidean distances of the partition's rows to *centers* (host array)."""
    q = part.queue
    k = centers.shape[0]
    spec = PairwiseSpec(dtype=part.dtype.name, acc_double=part.acc_double, d=part.d)
    c = cla.to_device(q, np.ascontiguousarray(centers, dtype=part.dtype))
    out = cla.empty(q, (part.n, k), part.dtype)
    kernel(q.context, spec, "pairwise_euclidean")(
        q, (part.n, k), None, part.x.data, np.int64(part.n), np.int64(part.stride),
        c.data, np.int32(k), out.data)
    return out.get(q)
