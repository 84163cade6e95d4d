"""DBSCAN on the device (pairs with templates/dbscan/): every row's weighted
count of neighbours within eps, and rounds of the least label among the
labelled rows within eps; distances computed from the rows as the MST
engine's (pdist's arithmetic).

The counts pass also gives each row's number of neighbours, so the
eps-graph's size is known before it is made: where it fits the memory
budget it is stored (CSR, one more pass over the pairs) and each round
reads it, O(edges); past the budget each round computes the distances
anew: O(n d) memory, O(n^2 d) work a round.  Both give the same labels."""
import dataclasses

import numpy as np
import pyopencl.array as cla

from ..runtime.codegen import Spec
from .linkage import exact_kernel
from .neighbours import row_tile_work_group


@dataclasses.dataclass(frozen=True)
class CountsSpec(Spec):
    template = "dbscan/dbscan_counts.cl.mako"
    d: int = 1
    metric: str = "sqeuclidean"
    wg: int = 64
    weighted: bool = False


@dataclasses.dataclass(frozen=True)
class NeighboursSpec(Spec):
    template = "dbscan/dbscan_neighbours.cl.mako"
    d: int = 1
    metric: str = "sqeuclidean"
    wg: int = 64


@dataclasses.dataclass(frozen=True)
class GraphMinLabelSpec(Spec):
    template = "dbscan/dbscan_graph_min_label.cl.mako"


# the share of the device's memory budget the stored eps-graph may take
GRAPH_SHARE = 0.5


@dataclasses.dataclass(frozen=True)
class MinLabelSpec(Spec):
    template = "dbscan/dbscan_min_label.cl.mako"
    d: int = 1
    metric: str = "sqeuclidean"
    wg: int = 64


class Neighbourhoods:
    """The rows of X (float64 where the device has it) on *plan*'s device and
    the radius eps in *metric* (euclidean compared squared, as
    scikit-learn's kd-tree compares its reduced distances).  *graph*: store
    the eps-graph where it fits (False: never; the rounds without it)."""

    def __init__(self, plan, X, eps, metric, graph=True):
        self.plan, self.q = plan, plan.queue
        self.n, self.d = X.shape
        self.metric = "sqeuclidean" if metric == "euclidean" else metric
        self.radius = plan.dtype.type(eps * eps if metric == "euclidean" else eps)
        self.x = cla.to_device(self.q, np.ascontiguousarray(X, plan.dtype))
        self.wg = row_tile_work_group(plan, self.d, extra_bytes=8)   # + its weight or label
        self.groups = -(-self.n // self.wg)
        self.want_graph, self.graph = graph, None   # graph: (start, nbr) once stored

    def _launch(self, spec, name, *args):
        exact_kernel(self.q, spec, name)(self.q, (self.groups * self.wg,), (self.wg,),
                                    self.x.data, np.int32(self.n), self.radius, *args)

    def _base(self):
        return dict(d=self.d, metric=self.metric, wg=self.wg, **self.plan.base)

    def counts(self, w=None, enough=np.inf):
        """Each row's summed weight (1 each without *w*) within eps, its own
        included (exact: *enough*, the grid's early stop, is not needed
        here); the eps-graph stored when it fits (see the module)."""
        weights = cla.to_device(self.q, np.ascontiguousarray(
            np.ones(1) if w is None else w, self.plan.dtype))
        out = cla.empty(self.q, self.n, self.plan.dtype)
        sizes = cla.empty(self.q, self.n, np.int32)
        self._launch(CountsSpec(weighted=w is not None, **self._base()), "dbscan_counts",
                     weights.data, out.data, sizes.data)
        if self.want_graph and self.graph is None:
            self._store_graph(sizes.get(self.q))
        return out.get(self.q).astype(np.float64)

    def _store_graph(self, sizes):
        """The eps-graph as CSR rows on the device, if its edges fit the
        budget's GRAPH_SHARE (and one allocation)."""
        start = np.zeros(self.n + 1, np.int64)
        np.cumsum(sizes, out=start[1:])
        edges = int(start[-1])
        profile = self.plan.profile
        if 4 * edges > min(profile.max_alloc_size, GRAPH_SHARE * profile.memory_budget):
            return
        start = cla.to_device(self.q, start)
        nbr = cla.empty(self.q, max(edges, 1), np.int32)
        self._launch(NeighboursSpec(**self._base()), "dbscan_neighbours", start.data, nbr.data)
        self.graph = (start, nbr)

    def components(self, core):
        """Each core row's component as its least core row index (-1 for the
        others): rounds of the least core label within eps, each followed by
        pointer jumping on the host (O(n)), until no label moves."""
        label = np.where(core, np.arange(self.n), -1)
        while True:
            lowered = self.min_label(label, core)
            while True:                       # pointer jumping: a label's own label
                jumped = np.where(lowered >= 0, lowered[np.maximum(lowered, 0)], -1)
                if np.array_equal(jumped, lowered):
                    break
                lowered = jumped
            if np.array_equal(lowered, label):
                return label
            label = lowered

    def min_label(self, label, want):
        """For each row with *want*: the least of its own label and those of
        the rows within eps whose label is >= 0 (-1: none); the others keep theirs."""
        lab = cla.to_device(self.q, np.ascontiguousarray(label, np.int32))
        mask = cla.to_device(self.q, np.ascontiguousarray(want, np.int8))
        out = cla.empty(self.q, self.n, np.int32)
        if self.graph is None:
            self._launch(MinLabelSpec(**self._base()), "dbscan_min_label", lab.data,
                         mask.data, out.data)
        else:
            start, nbr = self.graph
            wg = 64
            exact_kernel(self.q, GraphMinLabelSpec(**self.plan.base), "dbscan_graph_min_label")(
                self.q, (-(-self.n // wg) * wg,), (wg,), np.int32(self.n), start.data,
                nbr.data, lab.data, mask.data, out.data)
        return out.get(self.q).astype(np.int64)
