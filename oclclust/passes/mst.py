"""Minimum spanning trees of observations on the device, distances computed
from the rows as they are needed (never an n x n matrix): O(n d) memory.

Pairs with templates/mst/: mst_distance.cl.mako (a def library: one pair's
distance, pdist's arithmetic), mst_keep.cl.mako (a def library: a row's
kept rows), mst_nearest.cl.mako (Boruvka's round: every row's nearest rows
of another component) and mst_prim.cl.mako (scipy's Prim from node 0, for
the tie order).  What a round knows of the rows unscanned stays on the
device (mst_known.py); the host keeps the O(n) part of each Boruvka round:
each component's least edge and the union of components (mst_graph.py),
with the tiles' reach (mst_reach.py: which rows a round need not scan).

The engine of single linkage past the condensed matrix (cluster/
hierarchy/linkage_matrix.py) and of HDBSCAN (mutual-reachability weights through
``core``).
"""
import dataclasses
import functools

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime import codegen
from ..runtime.codegen import Spec
from ..runtime.profiles import declare_terms, term
from .linkage import Plan, exact_kernel, prim_tree
from .mst_graph import edge_order, joined, toward_root
from .mst_known import Known
from .mst_reach import tile_reach as _tile_reach
from .tiles import hierarchy, hierarchy_fan, row_tiles, split_hierarchy, tile_rows

MST_METRICS = ("euclidean", "sqeuclidean", "cityblock", "chebyshev", "cosine")
TIES = ("scipy", "any")
# a row kept in registers up to this many features (beyond, it is read
# from global memory, where caches serve it as well as spilled registers)
PRIVATE_ROW_FEATURES = 64
# rows of other components a scan keeps per row: a later round needs no
# scan of a row while one of them stays in another component (after the
# first round most rows' nearest joined their component; 8 kept 4,000
# gaussian rows' second round to a tenth of them)
KEEP = 8
# rows of a large component with no known edge scanned first, uncapped
PROBE = 32
# levels of nodes over the tiles (index=True): each node holds fan nodes of
# the level below, fan the least that leaves at most fan nodes on top (a
# launch argument: one kernel for every n)
INDEX_LEVELS = 2


@declare_terms
@dataclasses.dataclass(frozen=True)
class MstTerms:
    """single_rows_from: single linkage runs on the rows (this engine)
    from this many observations on, where the condensed matrix would still
    fit (cluster/hierarchy/linkage_matrix.py).  index_tile_rows: the most
    rows of a tile (and work-items) of the scans over the tiles' hierarchy
    (index=True: its walk makes many small tiles cheap)."""
    single_rows_from: int = term("mst_single_rows_from", 2, 2**62)
    index_tile_rows: int = term("mst_index_tile_rows", 1, 4096)


@dataclasses.dataclass(frozen=True)
class NearestSpec(Spec):
    """``tj`` rows of the other side staged in local memory per tile (0:
    read from global memory); ``tb`` rows a tile (its bounding box and
    component); ``private_row``: a work-item's own row in registers;
    ``core``: mutual-reachability weights; ``bound``: tiles skipped by
    their bounding box (no box bound for cosine); ``levels`` of nodes over
    the tiles, skipped whole (0: every tile tested); ``count``: each
    row's work written out (boruvka's *stats*)."""
    template = "mst/mst_nearest.cl.mako"
    d: int = 1
    metric: str = "euclidean"
    wg: int = 64
    tj: int = 0
    tb: int = 64
    private_row: bool = True
    core: bool = False
    k: int = 1
    bound: bool = True
    levels: int = 0
    count: bool = False


@dataclasses.dataclass(frozen=True)
class PrimRowsSpec(Spec):
    template = "mst/mst_prim.cl.mako"
    d: int = 1
    metric: str = "euclidean"
    wg: int = 64
    core: bool = False


def nearest_spec(plan, d, metric, core, wg=None, levels=0, count=False):
    """Rows staged in blocks of up to a work-group's size, as many as the
    local memory budget holds (none where not one row fits); *levels* of
    the tiles' hierarchy."""
    item, wg = plan.dtype.itemsize, wg or plan.wg
    fits = plan.profile.local_memory_budget // (d * item + 8 + (item if core else 0))
    tj = 1 << (min(fits, wg).bit_length() - 1) if fits >= 1 else 0
    return NearestSpec(d=d, metric=metric, wg=wg, tj=tj, tb=tj or wg, k=KEEP,
                       private_row=d <= PRIVATE_ROW_FEATURES, core=core,
                       bound=metric != "cosine", levels=levels, count=count, **plan.base)


def nearest_kernel(plan, d, metric, core, index=False, count=False):
    """(spec, kernel) of Boruvka's round, the work-group halved until the
    built kernel runs it (its registers may allow fewer work-items);
    *index*: INDEX_LEVELS over the tiles of at most mst_index_tile_rows
    rows, else every tile tested."""
    wg = plan.wg
    if index:
        wg = min(wg, 1 << (plan.profile.terms(MstTerms).index_tile_rows.bit_length() - 1))
    while True:
        spec = nearest_spec(plan, d, metric, core, wg, INDEX_LEVELS if index else 0, count)
        kern = exact_kernel(plan.queue, spec, "nearest_other")
        if wg == 1 or codegen.kernel_work_group_limit(kern, plan.queue.device) >= wg:
            return spec, kern
        wg //= 2


def _not_finite(plan, metric):
    # scipy's words (it refuses a non-finite distance matrix); from finite
    # rows only an overflow or cosine's zero vector makes one
    return ValueError("The condensed distance matrix must contain only finite values"
                      f" ({metric} distances of finite {plan.dtype.name} observations "
                      "overflow, or a zero vector under cosine).")


def tiles_work(plan, X, metric, core=False, index=False):
    """A function of no argument that makes the RowTiles minimum_spanning_tree
    (plan, X, metric, core=..., index=...) scans: host work alone (the
    kernel is fetched here, in the caller's thread), for a caller to run on
    another thread beside device work (HDBSCAN: the core distances; the
    k-d tree's build releases the GIL).  *core*: whether core distances
    will be given."""
    X = np.asarray(X)
    spec, _ = nearest_kernel(plan, X.shape[1], metric, core, index)
    return functools.partial(row_tiles, X, metric, spec.tb, spec.bound, spec.levels > 0,
                             plan.dtype)


def _least(ncomp, comp, w):
    """Each of the *ncomp* components' least w (inf: none; a row's w inf
    where it is not to count)."""
    least = np.full(ncomp, np.inf)
    np.minimum.at(least, comp, w)
    return least


def _probes(rows, comp):
    """Of *rows* (of components with no known edge, in the spatial order),
    up to PROBE spread over each component of more than 4 PROBE of them:
    scanned first (uncapped), they give the component's least edge a bound
    that caps the others.  Returned in the spatial order."""
    if rows.size:                       # the sort only over rows that may be picked
        c = comp[rows]
        rows = rows[(np.bincount(c) > 4 * PROBE)[c]]
    if not rows.size:
        return rows
    m = len(rows)                       # by component, in the spatial order
    c, order = np.divmod(np.sort(comp[rows].astype(np.int64) * m + np.arange(m)), m)
    start = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    counts = np.diff(np.r_[start, len(rows)])
    rank = np.arange(len(rows)) - np.repeat(start, counts)
    step = np.repeat(np.maximum(counts // PROBE, 1), counts)
    pick = np.zeros(len(rows), bool)
    pick[order] = np.repeat(counts > 4 * PROBE, counts) & (rank % step == 0)
    return rows[pick]


def boruvka(plan, X, n, d, metric, core=None, index=False, stats=None, nearest=None,
            tiles=None):
    """Boruvka's rounds: (lo, hi, w) of the tree's n-1 edges, lo < hi, in
    the order they were found.  Edges compare by (w, lo, hi), a total order,
    so the tree is unique and no round makes a cycle.

    The device holds the rows in spatial_order, in tiles with their bounding
    boxes (mst_nearest.cl.mako skips a tile of the row's own component and
    one farther than the row needs).  A scan keeps each row's KEEP nearest
    rows of other components and a bound B: every other row of another
    component is at least B away (the k-th kept's weight, or the least
    bound of the nodes the scan skipped: a row deep inside its component
    keeps how far another may be, not the cap).  While one kept row stays
    in another component (the candidates only shrink) and is within B, the
    first such is the row's nearest; else B bounds the row's from below.  A
    round scans only the rows whose bound does not exceed their component's
    least kept edge (exact or not: every kept edge leaves the component, so
    its least edge is no heavier), capped by that edge (a row farther needs
    no more than the bound); a large component with no kept edge first has
    a few of its rows scanned uncapped (_probes).  *index*:
    the tiles are a k-d tree's leaves (leaf_tiles: at most tb rows each,
    not tb consecutive rows), under INDEX_LEVELS of nodes (fan each, with their
    boxes, components and least cores) that a scan skips whole where none
    of a work-group's rows needs them; without it every tile is tested.
    *nearest*: with *core*, each row's nearest rows (distances, ids: n x m,
    ascending, of the rows X as given; core_distances' neighbours): the
    first candidates (mst_known.Known), so that the first round scans only the rows
    whose nearest by weight may lie beyond them.  A row whose core distance
    exceeds that cap is not scanned: its every
    weight is at least that core.
    *stats*: a list, given a dict a round (components, rows scanned, and
    their nodes tested, tiles scanned and distances computed: the kernel
    counts them).  *tiles*: the rows' RowTiles (passes/tiles.py) for this
    scan, made ahead (tiles_work), else made here."""
    q = plan.queue
    spec, kern = nearest_kernel(plan, d, metric, core is not None, index, stats is not None)
    keep, levels = spec.k, spec.levels
    made = (row_tiles(X, metric, spec.tb, spec.bound, spec.levels > 0, plan.dtype)
            if tiles is None else tiles)
    if ((made.tb, made.bound, made.index, len(made.ids)) !=
            (spec.tb, spec.bound, spec.levels > 0, n)):
        raise ValueError("the tiles were made for other rows or another scan than this one "
                         "(tiles_work's rows, core and index must be the MST's)")
    ids, starts, xp = made.ids, made.starts, made.rows
    fan = hierarchy_fan(len(starts), levels)
    pos = np.empty(n, np.int32)
    pos[ids] = np.arange(n, dtype=np.int32)
    ids_dev = cla.to_device(q, ids)
    args = [cla.to_device(q, xp).data, ids_dev.data, np.int32(n)]
    tiles = [cla.to_device(q, np.r_[starts, n].astype(np.int32)).data, np.int32(len(starts))]
    extra, parts = [], []      # parts: split_hierarchy's (values, tiles, ufunc, empty)
    full = []                  # the nodes' least cores and boxes (tile_reach's too)
    if core is not None:
        core_pos = np.ascontiguousarray(core[ids], plan.dtype)
        core_tiles = np.minimum.reduceat(core_pos, starts)
        full.append(cla.to_device(q, hierarchy(core_tiles, fan, levels, np.minimum)).data)
        extra += [cla.to_device(q, core_pos).data, full[-1]]
        parts.append((core_pos, core_tiles, np.minimum, np.inf))
    if spec.bound:
        lo, hi = made.lo, made.hi
        full += [cla.to_device(q, hierarchy(lo, fan, levels, np.minimum)).data,
                 cla.to_device(q, hierarchy(hi, fan, levels, np.maximum)).data]
        extra += full[-2:]
        parts += [(xp, lo, np.minimum, np.inf), (xp, hi, np.maximum, -np.inf)]
    active_dev, cap_dev = cla.empty(q, n, np.int32), cla.empty(q, n, plan.dtype)
    nodes = len(hierarchy(starts, fan, levels, np.minimum))
    comp_dev, places = cla.empty(q, n, np.int32), tile_rows(starts, n)
    # the nodes' components: pure, major, and the rests' cores and boxes
    node_devs = [cla.empty(q, nodes, np.int32), cla.empty(q, nodes, np.int32)] + [
        cla.empty(q, (nodes,) + values.shape[1:], plan.dtype) for values, *_ in parts]
    out = (cla.empty(q, n * keep, plan.dtype), cla.empty(q, n * keep, np.int32),
           cla.empty(q, n, plan.dtype)) + ((cla.empty(q, 3 * n, np.int32),) if spec.count else ())
    comp = np.zeros(n, np.int32) if n == 1 else np.arange(n, dtype=np.int32)
    known = Known(plan, n, keep, nearest, core)
    B = known.bound                                 # the rows' bounds, kept up to date
    # a lower bound of every row's weights: its core distance
    floor = (np.full(n, -np.inf, plan.dtype) if core is None
             else np.asarray(core, np.float64).astype(plan.dtype))
    reach = (_tile_reach(plan, d, metric, spec, starts, n, full, node_devs)
             if levels and (spec.bound or spec.core) else None)

    def scan(rows, caps):
        """Scan *rows* (ascending by place in the spatial order) capped by *caps*."""
        m = rows.size
        cl.enqueue_copy(q, active_dev.data, pos[rows])
        cl.enqueue_copy(q, cap_dev.data, np.ascontiguousarray(caps, plan.dtype))
        groups = -(-m // spec.wg)
        kern(q, (groups * spec.wg,), (spec.wg,), *args, active_dev.data, np.int32(m),
             cap_dev.data, comp_dev.data, *extra, *(v.data for v in node_devs), *tiles,
             *((np.int32(fan),) if levels else ()), *(o.data for o in out))
        if spec.count:
            work = np.empty(3 * m, np.int32)
            cl.enqueue_copy(q, work, out[3].data)
            tally = stats[-1]
            tally["rows"] += m
            for name, v in zip(("nodes", "tiles", "distances"), work.reshape(m, 3).sum(axis=0)):
                tally[name] += int(v)
        # the row's bound: its k-th kept (every row left out comes after it)
        # or, where lower or tied, its skipped nodes' least (strictly: a row
        # there may be at that weight); (w, j) its first kept
        exact, w, j = known.absorb(rows, active_dev, ids_dev, out[:3])
        free = np.isinf(caps)
        if np.any(j[free] >= n) or not np.all(np.isfinite(w[free])):
            raise _not_finite(plan, metric)
        return exact, w, j

    found, ncomp = [], n
    # kept in the spatial order too, so a round's filter reads them in
    # sequence (gathers by ids over n rows cost more than the rest): each
    # row's component, and its lower bound max(B, floor), updated at the
    # places a scan changes
    comp_pos = comp[ids]
    bound_pos = np.maximum(B, floor)[ids]
    while ncomp > 1:
        if stats is not None:
            stats.append(dict(components=ncomp, rows=0, nodes=0, tiles=0, distances=0))
        cl.enqueue_copy(q, comp_dev.data, comp_pos)
        split = split_hierarchy(comp_pos, starts, fan, levels, parts, places)
        for dev, host in zip(node_devs, split):
            cl.enqueue_copy(q, dev.data, np.ascontiguousarray(host, dev.dtype))
        exact, w, j = known.every(comp)
        # a component's least edge is at most any kept edge of its rows, exact
        # or not (each is an edge out of it): the caps
        upper = _least(ncomp, comp, w)
        # rows in the spatial order (ids), so a scan's rows come ascending;
        # a row's tile's reach bounds its weights too (-inf: none)
        cap_pos = upper[comp_pos]
        unsure = ~exact[ids]
        far = reach(split[0][:len(starts)], upper) if reach else None
        low = np.maximum(bound_pos, far) if reach else bound_pos.copy()
        need = unsure & (low <= cap_pos)
        if stats is not None:
            stats[-1]["reach"] = int(np.sum(unsure & (bound_pos <= cap_pos) & ~need))
        probe = _probes(ids[need & np.isinf(cap_pos)], comp)
        for probing in (True, False):
            if probing:
                rows, caps = probe, np.full(probe.size, np.inf)
            else:
                rows = ids[need]
                caps = upper[comp[rows]]
            if not rows.size:
                continue
            exact[rows], w[rows], j[rows] = scan(rows, caps)
            at = pos[rows]
            bound_pos[at] = np.maximum(B[rows], floor[rows])
            if probing:
                # the probes' components had no kept edge (w inf): their
                # new ones lower the caps; only the probes' places change
                np.minimum.at(upper, comp[rows], w[rows])
                low[at] = np.maximum(bound_pos[at], far[at]) if reach else bound_pos[at]
                unsure[at] = ~exact[rows]
                need = unsure & (low <= upper[comp_pos])
        sure = np.flatnonzero(exact)
        least = np.full(ncomp, np.inf)
        np.minimum.at(least, comp[sure], w[sure])
        # each component's least edge: of its exact rows at its least w (a
        # linear pass, not a sort of all rows), the first by (lo, hi): a
        # sort only among the components with several (tied) such rows
        cand = sure[w[sure] == least[comp[sure]]]
        c_cand, j_cand = comp[cand], j[cand]
        lo, hi = np.minimum(cand, j_cand), np.maximum(cand, j_cand)
        several = np.bincount(c_cand, minlength=ncomp)[c_cand] > 1
        tied = np.flatnonzero(several)
        order = tied[np.lexsort((hi[tied], lo[tied], c_cand[tied]))]
        c_sorted = c_cand[order]
        if tied.size:
            heads = np.flatnonzero(np.r_[True, c_sorted[1:] != c_sorted[:-1]])
        else:
            heads = tied
        first = np.r_[np.flatnonzero(~several), order[heads]]
        # an edge that both of its components chose comes once: from the
        # component of its lower end
        chose = np.full(ncomp, -1, np.int64)
        key = lo[first].astype(np.int64) * n + hi[first]
        chose[c_cand[first]] = key
        c_lo = comp[lo[first]]
        e = first[(c_cand[first] == c_lo) | (chose[c_lo] != key)]
        found.append((lo[e], hi[e], w[cand[e]].astype(np.float64)))
        ncomp, relabel = joined(ncomp, c_cand[first], comp[j_cand[first]])
        comp, comp_pos = relabel[comp], relabel[comp_pos]
    if not found:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    lo, hi, w = (np.concatenate(parts) for parts in zip(*found))
    return lo.astype(np.int64), hi.astype(np.int64), w


def prim_rows(plan, x, n, d, metric, core=None):
    """scipy's mst_single_linkage on the rows: (x_k, y_k, h_k), k < n-1, in
    Prim's order from node 0 (x_k the node added the step before y_k)."""
    spec = PrimRowsSpec(d=d, metric=metric, wg=plan.wg, core=core is not None, **plan.base)
    extra = (core.data,) if core is not None else ()
    edges, h = prim_tree(plan, spec, n, (x.data,), extra)
    pairs = edges.astype(np.int64)
    if not np.all(np.isfinite(h)):
        raise _not_finite(plan, metric)
    return pairs[:, 0], pairs[:, 1], h.astype(np.float64)


def check_args(X, metric, core, ties):
    """ValueError naming the problem, before any device work."""
    if metric not in MST_METRICS:
        raise ValueError(f"Unknown or unsupported metric {metric!r}: the MST engine "
                         f"supports {', '.join(MST_METRICS)}")
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must be a non-empty 2-D array, got shape {X.shape}")
    if core is not None:
        core = np.asarray(core)
        if core.shape != (X.shape[0],):
            raise ValueError(f"core must hold one distance per row ({X.shape[0]}), "
                             f"got shape {core.shape}")
        if not np.all(np.isfinite(core)):
            raise ValueError("core distances must be finite")
    return X, core


def minimum_spanning_tree(plan, X, metric="euclidean", core=None, ties="scipy", index=False,
                          nearest=None, tiles=None):
    """The n-1 edges (a, b, w) of a minimum spanning tree of the rows of X.

    *plan*: a passes.linkage.Plan (device, queue, value type; float64 where
    the device has fp64), or a DeviceProfile to make one for.  *metric*:
    euclidean, sqeuclidean, cityblock, chebyshev or cosine, computed as
    scipy's pdist computes it (the same float64 rounding).  *core*: None, or
    n per-row core distances: the edge weight is then the mutual-reachability
    distance max(core[a], core[b], d(a, b)).  *index*: Boruvka's scans
    skip whole nodes of a hierarchy over the rows' tiles (boruvka), the
    same tree in far fewer box tests where the rows are many and their
    dimension low; without it every tile is tested.  *nearest*: with
    *core*, each row's nearest rows of X (distances, ids: n x m ascending,
    as passes/neighbours.py core_distances gives them with neighbours=True,
    the distances computed as the engine's): Boruvka's first candidates,
    the same tree in fewer scans (boruvka).  *tiles*: the RowTiles of X
    that tiles_work(plan, X, metric, core is not None, index) makes, made
    ahead (the same tree; else made here).

    Returns int64 a, b and float64 w, sorted by w (a stable sort), in the
    order single linkage needs: linkage_matrix.label on them gives scipy's Z.
    Tie rule:
      ties="scipy": the edges are scipy's mst_single_linkage rows exactly
        (Prim's algorithm from node 0: each step adds the unmerged row of
        least distance to the tree, the lowest index among equals; a is the
        row added the step before, b the new one), stably sorted by w --
        scikit-learn's HDBSCAN and AgglomerativeClustering build the same
        sequence.  Where the tree's weights are all distinct, Boruvka's tree
        gives that Z (the merges are then fixed by the heights alone) and
        a is the end nearer node 0 in the tree (the end Prim reaches
        first); where weights tie, Prim's algorithm runs on the rows (n
        steps of O(n d)) to keep scipy's order.
      ties="any": Boruvka's tree (edge order (w, min(a, b), max(a, b)), so
        the tree is unique), a the end nearer node 0; sorted by that order.
        The same clusters at every height as scipy's, in O(n^2 d) work
        per round and O(log n) rounds, whatever the ties.
    """
    X, core = check_args(X, metric, core, ties)
    if not isinstance(plan, Plan):
        plan = Plan(plan, np.float64 if plan.fp64 else np.float32)
    n, d = X.shape
    q = plan.queue
    X = np.ascontiguousarray(X, plan.dtype)
    lo, hi, w = boruvka(plan, X, n, d, metric, core, index, nearest=nearest, tiles=tiles)
    if ties == "any":
        order = edge_order(n, lo, hi, w)
        a, b = toward_root(n, lo[order], hi[order])
        return a, b, w[order]
    order = np.argsort(w, kind="mergesort")
    if np.any(w[order][1:] == w[order][:-1]):
        x = cla.to_device(q, X)
        core_dev = None if core is None else cla.to_device(q, np.ascontiguousarray(
            core, plan.dtype))
        a, b, w = prim_rows(plan, x, n, d, metric, core_dev)
        order = np.argsort(w, kind="mergesort")
        return a[order], b[order], w[order]
    a, b = toward_root(n, lo[order], hi[order])
    return a, b, w[order]
