"""Rows moved between two orders of the same rows on the device (pairs with
templates/permute/): the grid's sorted rows and the caller's row order
(passes/grid.py, passes/dbscan_grid.py), so that per-row values go to the
device and come back to the host in the order it holds them, and the host
permutes no n-sized array (a random gather or scatter of n values, the
slowest step of a grid pass on a fast device).

*order*: an int32 device array, a permutation of 0 ... n - 1: position p
stands for row order[p] (the grid's: its sorted rows' row indices)."""
import dataclasses

import numpy as np
import pyopencl.array as cla

from ..runtime.codegen import Spec, kernel

WG = 256


@dataclasses.dataclass(frozen=True)
class PermuteSpec(Spec):
    template = "permute/permute_rows.cl.mako"
    item: int = 4      # bytes a value (the kernels move bits)
    width: int = 1     # values a row


def _launch(queue, name, order, src, dst, width=1):
    n = len(order)
    if n:
        spec = PermuteSpec(dtype="float32", acc_double=False, item=src.dtype.itemsize,
                           width=width)
        kernel(queue.context, spec, name)(queue, (-(-n // WG) * WG,), (WG,), np.int32(n),
                                          order.data, src.data, dst.data)
    return dst


def _rows(src):
    """(the values a row of device array *src*, its rows' shape)."""
    return int(np.prod(src.shape[1:], dtype=np.int64)), src.shape[1:]


def gather(queue, order, src):
    """A new device array of *src*'s rows (its first axis) in *order*:
    out[p] = src[order[p]]."""
    width, shape = _rows(src)
    return _launch(queue, "permute_gather", order, src,
                   cla.empty(queue, (len(order), *shape), src.dtype), width)


def scatter(queue, order, src):
    """A new device array of *src*'s rows (one a position) by row:
    out[order[p]] = src[p]."""
    width, shape = _rows(src)
    return _launch(queue, "permute_scatter", order, src,
                   cla.empty(queue, (len(order), *shape), src.dtype), width)


def scatter_positions(queue, order, src):
    """A new int32 device array of the positions *src* (int32, one a
    position) as the rows they stand for, by row: out[order[p]] =
    order[src[p]]."""
    if src.dtype != np.int32:
        raise TypeError(f"positions are int32, not {src.dtype}")
    return _launch(queue, "permute_scatter_positions", order, src,
                   cla.empty(queue, len(order), np.int32))
