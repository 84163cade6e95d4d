"""How near another component may come to each tile of one component:
Boruvka's filter of a round's rows (passes/mst.py boruvka), so that the rows
of a tile far inside its component are not scanned one by one.  Pairs with
templates/mst/mst_tile_reach.cl.mako.
"""
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime.codegen import Spec
from .linkage import exact_kernel
from .tiles import hierarchy_fan


@dataclasses.dataclass(frozen=True)
class TileReachSpec(Spec):
    """How near another component may come to each tile of one component
    (mst_tile_reach.cl.mako): over ``levels`` of the tiles' hierarchy, by
    box-to-box bounds (``bound``) and least cores (``core``)."""
    template = "mst/mst_tile_reach.cl.mako"
    d: int = 1
    metric: str = "euclidean"
    core: bool = False
    bound: bool = True
    levels: int = 1


def tile_reach(plan, d, metric, spec, starts, n, full, node_devs):
    """reach(pure, upper): each row's (by place) lower bound of its weights
    to every row of another component, from its tile's (tile_reach; -inf:
    a tile of several components, or another's tile within the cap).
    *full*: the nodes' least cores and boxes on the device, *node_devs*:
    the nodes' components and rests (boruvka's)."""
    q, tiles = plan.queue, len(starts)
    rspec = TileReachSpec(d=d, metric=metric, core=spec.core, bound=spec.bound,
                          levels=spec.levels, **plan.base)
    kern = exact_kernel(q, rspec, "tile_reach")
    pure_dev, major_dev, *rests = node_devs
    order = [full[0], rests[0].data] if spec.core else []      # the kernel's arguments
    if spec.bound:
        order += full[-2:] + [r.data for r in rests[-2:]]
    cap_dev, out_dev = cla.empty(q, tiles, plan.dtype), cla.empty(q, tiles, plan.dtype)
    tile_of = np.repeat(np.arange(tiles), np.diff(np.r_[starts, n]))
    fan = hierarchy_fan(tiles, spec.levels)
    wg = plan.wg

    def reach(pure, upper):
        caps = np.where(pure >= 0, upper[np.maximum(pure, 0)], np.inf).astype(plan.dtype)
        cl.enqueue_copy(q, cap_dev.data, caps)
        kern(q, (-(-tiles // wg) * wg,), (wg,), *order, pure_dev.data, major_dev.data,
             cap_dev.data, np.int32(tiles), np.int32(fan), out_dev.data)
        out = np.empty(tiles, plan.dtype)
        cl.enqueue_copy(q, out, out_dev.data)
        return out[tile_of]
    return reach
