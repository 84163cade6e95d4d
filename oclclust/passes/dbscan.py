"""DBSCAN on the device (pairs with templates/dbscan/): every row's weighted
count of neighbours within eps, and rounds of the least label among the
labelled rows within eps; distances computed from the rows as the MST
engine's (pdist's arithmetic), never stored: O(n d) memory, O(n^2 d) work a
round."""
import dataclasses

import numpy as np
import pyopencl.array as cla

from ..runtime.codegen import Spec
from .linkage import exact_kernel
from .neighbours import row_tile_work_group


@dataclasses.dataclass(frozen=True)
class CountsSpec(Spec):
    template = "dbscan_counts.cl.mako"
    d: int = 1
    metric: str = "sqeuclidean"
    wg: int = 64
    weighted: bool = False


@dataclasses.dataclass(frozen=True)
class MinLabelSpec(Spec):
    template = "dbscan_min_label.cl.mako"
    d: int = 1
    metric: str = "sqeuclidean"
    wg: int = 64


class Neighbourhoods:
    """The rows of X (float64 where the device has it) on *plan*'s device and
    the radius eps in *metric* (euclidean compared squared, as
    scikit-learn's kd-tree compares its reduced distances)."""

    def __init__(self, plan, X, eps, metric):
        self.plan, self.q = plan, plan.queue
        self.n, self.d = X.shape
        self.metric = "sqeuclidean" if metric == "euclidean" else metric
        self.radius = plan.dtype.type(eps * eps if metric == "euclidean" else eps)
        self.x = cla.to_device(self.q, np.ascontiguousarray(X, plan.dtype))
        self.wg = row_tile_work_group(plan, self.d, extra_bytes=8)   # + its weight or label
        self.groups = -(-self.n // self.wg)

    def _launch(self, spec, name, *args):
        exact_kernel(self.q, spec, name)(self.q, (self.groups * self.wg,), (self.wg,),
                                    self.x.data, np.int32(self.n), self.radius, *args)

    def counts(self, w=None):
        """Each row's summed weight (1 each without *w*) within eps, its own included."""
        base = dict(d=self.d, metric=self.metric, wg=self.wg, **self.plan.base)
        weights = cla.to_device(self.q, np.ascontiguousarray(
            np.ones(1) if w is None else w, self.plan.dtype))
        out = cla.empty(self.q, self.n, self.plan.dtype)
        self._launch(CountsSpec(weighted=w is not None, **base), "dbscan_counts",
                     weights.data, out.data)
        return out.get(self.q).astype(np.float64)

    def min_label(self, label, want):
        """For each row with *want*: the least of its own label and those of
        the rows within eps whose label is >= 0 (-1: none); the others keep theirs."""
        spec = MinLabelSpec(d=self.d, metric=self.metric, wg=self.wg, **self.plan.base)
        lab = cla.to_device(self.q, np.ascontiguousarray(label, np.int32))
        mask = cla.to_device(self.q, np.ascontiguousarray(want, np.int8))
        out = cla.empty(self.q, self.n, np.int32)
        self._launch(spec, "dbscan_min_label", lab.data, mask.data, out.data)
        return out.get(self.q).astype(np.int64)
