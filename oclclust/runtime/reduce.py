"""Fixed-order reduction of per-work-group partial statistics on the device.

Pairs with templates/reduce_partials.cl.mako.  Only the reduced values travel
to the host, where they become float64.
"""
import dataclasses

import numpy as np
import pyopencl.array as cla

from .codegen import Spec, kernel


@dataclasses.dataclass(frozen=True)
class ReduceSpec(Spec):
    template = "reduce_partials.cl.mako"


def acc_dtype(acc_double):
    return np.float64 if acc_double else np.float32


def partial_buffer(queue, groups, size, acc_double):
    """A slab buffer for *groups* partials of *size* values (Kahan: twice)."""
    return cla.empty(queue, groups * size * (1 if acc_double else 2), acc_dtype(acc_double))


def reduce_partials(queue, part, groups, size, dtype, acc_double):
    """Sum the *groups* slabs of *part* elementwise; float64 array of *size*."""
    reduce = kernel(queue.context, ReduceSpec(dtype=np.dtype(dtype).name, acc_double=acc_double),
                    "reduce_partials")
    out = cla.empty(queue, size * (1 if acc_double else 2), acc_dtype(acc_double))
    wg = 64
    global_size = (size + wg - 1) // wg * wg
    reduce(queue, (global_size,), (wg,), part.data, np.int64(groups),
                        np.int64(size), out.data)
    host = out.get(queue).astype(np.float64)
    return host if acc_double else host[:size] + host[size:]
