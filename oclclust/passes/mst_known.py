"""What a Boruvka round knows of a row without scanning it (passes/mst.py
boruvka), kept on the device: its kept rows of other components, ascending
by (w, j), and the bound (B, Bj) that every row left out comes after; where
the first kept row still in another component is within it, that row is
the row's nearest there.  Pairs with templates/mst/: mst_seed.cl.mako (those
lists from the core distances' pass's nearest rows) and mst_known.cl.mako
(each round's walk of them, and a scan's lists taken in).
"""
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime.codegen import Spec
from .linkage import exact_kernel


@dataclasses.dataclass(frozen=True)
class SeedSpec(Spec):
    """A row's ``m`` nearest rows (core_distances' neighbours) made its
    ``keep`` least mutual-reachability weights and its bound
    (mst_seed.cl.mako)."""
    template = "mst/mst_seed.cl.mako"
    m: int = 1
    keep: int = 1


@dataclasses.dataclass(frozen=True)
class KnownSpec(Spec):
    """Each row's first kept row in another component and whether it is
    exact (mst_known.cl.mako); ``absorb``: of the rows a scan just made,
    its ``keep`` rows taken in first."""
    template = "mst/mst_known.cl.mako"
    keep: int = 1
    absorb: bool = False


class Known:
    """Every row's kept rows W, J (n x keep), bound (B, Bj) and first slot
    not yet seen in its own component, on the device; B also on the host
    (boruvka's filter of the rows to scan).  *nearest*: with *core*, each
    row's nearest rows (distances, ids: n x m ascending, the row itself
    among them; core_distances' neighbours), their weights
    max(core_i, core_j, d_ij) and a row not among them at least the m-th
    distance away (SeedSpec); else nothing kept (B = -inf: never scanned)."""

    def __init__(self, plan, n, keep, nearest=None, core=None):
        q, dtype = plan.queue, plan.dtype
        self.plan, self.n, self.keep = plan, n, keep
        self.W, self.J = cla.empty(q, n * keep, dtype), cla.empty(q, n * keep, np.int32)
        self.B, self.Bj = cla.empty(q, n, dtype), cla.empty(q, n, np.int32)
        self.slot, self.comp = cla.empty(q, n, np.int32), cla.empty(q, n, np.int32)
        self.out = (cla.empty(q, n, np.int8), cla.empty(q, n, dtype), cla.empty(q, n, np.int32),
                    cla.empty(q, n, dtype))
        kinds = {absorb: KnownSpec(keep=keep, absorb=absorb, **plan.base)
                 for absorb in (False, True)}
        self.kern = {absorb: exact_kernel(q, spec, "known_rows") for absorb, spec in kinds.items()}
        if nearest is not None and core is not None:
            dist, ids = nearest
            m = ids.shape[1]
            spec = SeedSpec(m=m, keep=keep, **plan.base)
            exact_kernel(q, spec, "seed_rows")(
                q, (self._size(n),), (plan.wg,),
                cla.to_device(q, np.ascontiguousarray(dist, dtype)).data,
                cla.to_device(q, np.ascontiguousarray(ids, np.int32)).data,
                cla.to_device(q, np.ascontiguousarray(core, dtype)).data, np.int32(n),
                self.W.data, self.J.data, self.B.data, self.Bj.data, self.slot.data)
        else:
            self.W.fill(np.inf)
            self.J.fill(n)
            self.B.fill(-np.inf)
            self.Bj.fill(n)
            self.slot.fill(keep)            # none kept
        self.bound = self.B.get(q)

    def _size(self, rows):
        wg = self.plan.wg
        return max(1, -(-rows // wg)) * wg

    def _run(self, absorb, rows, lead):
        q = self.plan.queue
        out = self.out if absorb else self.out[:3]
        self.kern[absorb](q, (self._size(rows),), (self.plan.wg,), *lead, np.int32(rows),
                          np.int32(self.n), self.comp.data, self.W.data, self.J.data,
                          self.B.data, self.Bj.data, self.slot.data, *(o.data for o in out))
        host = [np.empty(rows, o.dtype) for o in out]
        for h, o in zip(host, out):
            cl.enqueue_copy(q, h, o.data)
        host[0] = host[0].view(bool)
        return host

    def every(self, comp):
        """(exact, w, j) of every row under the components *comp* (by row)
        of this round: a row's first kept row from its slot on still in
        another component, its slot advanced there; exact where it comes
        no later than the row's bound (its nearest there).  (inf, n): none
        left."""
        cl.enqueue_copy(self.plan.queue, self.comp.data, np.ascontiguousarray(comp, np.int32))
        return self._run(False, self.n, ())

    def absorb(self, rows, active, ids, scanned):
        """(exact, w, j) of the *rows* a scan just made (active: their
        places on the device, ids: each place's row, scanned: the scan's
        kept rows and skipped nodes' bound, by place), their lists and
        bounds taken in first (the bound also into .bound)."""
        exact, w, j, b = self._run(True, rows.size, (active.data, ids.data) +
                                   tuple(o.data for o in scanned))
        self.bound[rows] = b
        return exact, w, j
