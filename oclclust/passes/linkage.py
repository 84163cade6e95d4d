"""Hierarchical clustering on the device: scipy's three linkage algorithms.

Pairs with templates/linkage/hierarchical_distances.cl.mako (the condensed distance
matrix, across as many device buffers as it needs: condensed.cl.mako and
Condensed below), hierarchical_prim.cl.mako (single linkage: Prim's MST) and
hierarchical_linkage.cl.mako (nearest-neighbour chain for complete, average,
weighted and ward; the generic algorithm for centroid and median).  The
matrix stays on the device; the host enqueues steps and reads back only the
merges (and, for the generic algorithm, a few scalars per merge).
"""
import dataclasses
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime import codegen
from ..runtime.codegen import Spec
from ..runtime.devices import preferred, select_devices
from ..runtime.profiles import declare_terms, term
from .distance_tile import TileFields, TileTerms, chunk_depth, power_of_two_at_least
from ..runtime.warning_site import user_stacklevel

# no -cl-mad-enable: scipy's formulas round after every operation, and a
# fused multiply-add could split a tie scipy keeps
EXACT_OPTIONS = ()
NN_CHAIN = ("complete", "average", "weighted", "ward")


@declare_terms
@dataclasses.dataclass(frozen=True)
class LinkageTerms:
    """distance_tiles 1: the distance matrix as register tiles (TileTerms).
    buffer_bytes: the most bytes of the condensed matrix one device buffer
    holds (0: the device's largest buffer, CL_DEVICE_MAX_MEM_ALLOC_SIZE; a
    smaller one splits the matrix sooner).  memory_fraction: the share of
    global memory the matrix may take (0: the profile's memory_fraction)."""
    distance_tiles: int = term("linkage_distance_tiles", 0, 1)
    buffer_bytes: int = term("linkage_buffer_bytes", 0, 2**62)
    memory_fraction: float = term("linkage_memory_fraction", 0.0, 1.0)


# the most buffers a matrix spans: kernels take one argument a buffer
MAX_BUFFERS = 32
# the methods that run past the matrix (O(n d) memory on the rows)
ROW_METHODS = "single, ward, centroid and median"


@dataclasses.dataclass(frozen=True)
class MatrixFields:
    """The condensed matrix's layout (condensed.cl.mako): *buffers* device
    buffers of *buffer_elems* entries each but the last (0: one buffer)."""
    buffers: int = 1
    buffer_elems: int = 0


@dataclasses.dataclass(frozen=True)
class DistanceSpec(TileFields, MatrixFields, Spec):
    """``tiled``: square tiles of tm x tn (= tm) observation pairs per
    work-group, rm x rn per work-item, kc features (of dp) per local-memory
    chunk, vw-wide local reads (the register tile of distance_tile.cl.mako);
    else one work-item per pair (cosine, and devices the tiles do not fit)."""
    template = "linkage/hierarchical_distances.cl.mako"
    d: int = 1
    metric: str = "euclidean"
    dp: int = 1

    @property
    def wg(self):
        return (self.tm // self.rm) * (self.tn // self.rn) if self.tiled else 1

    def local_bytes(self):
        item = np.dtype(self.dtype).itemsize
        return self.kc * (self.tm + self.tn + 2 * self.vw) * item if self.tiled else 0


def distance_specs(profile, base, n, d, metric, tiled=True):
    """Tiled specs from the profile's register tile (TileTerms: the same
    tile as k-means'), square tiles halved until they fit the device and no
    larger than n needs; the vector width, then scalar reads; last the
    one-pair-per-work-item kernel, which fits every device."""
    if tiled and metric != "cosine":
        tile = profile.terms(TileTerms)
        rm, rn = tile.reg_rows, tile.reg_columns
        t = min(tile.rows, tile.columns, max(power_of_two_at_least(n), rm, rn))
        kc = chunk_depth(profile, d)
        while t >= max(rm, rn) and rm * rn + rm + rn <= profile.private_floats:
            for vw in sorted({tile.vector_width, 1}, reverse=True):
                if t % rm or t % rn or rm % vw or rn % vw or vw & (vw - 1):
                    continue
                spec = DistanceSpec(d=d, metric=metric, tiled=True, tm=t, tn=t, rm=rm, rn=rn,
                                    kc=kc, dp=-(-d // kc) * kc, vw=vw, **base)
                if (spec.wg <= profile.max_work_group_size
                        and spec.local_bytes() <= profile.local_memory_budget):
                    yield spec
            t //= 2
    yield DistanceSpec(d=d, metric=metric, **base)


@dataclasses.dataclass(frozen=True)
class PrimSpec(MatrixFields, Spec):
    template = "linkage/hierarchical_prim.cl.mako"
    wg: int = 64


@dataclasses.dataclass(frozen=True)
class LinkageSpec(MatrixFields, Spec):
    template = "linkage/hierarchical_linkage.cl.mako"
    method: str = "ward"
    wg: int = 64


def exact_kernel(queue, spec, name):
    """Kernel *name* of *spec*'s program built with EXACT_OPTIONS (memoised):
    the kernels whose distances must round as scipy's (linkage, MST,
    neighbours, DBSCAN)."""
    return codegen.plan("exact", queue.context, (spec, name), lambda: codegen.SharedKernel(
        cl.Kernel(codegen.build(queue.context, spec, EXACT_OPTIONS), name)))


def _size(nbytes):
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes} bytes"


class Plan:
    """Where and how a linkage runs: queue, value type, work-group shape."""

    def __init__(self, profile, dtype):
        self.profile, self.queue, self.dtype = profile, profile.queue(), np.dtype(dtype)
        wg = min(256, profile.work_group_size, profile.max_work_group_size)
        self.wg = 1 << (max(1, wg).bit_length() - 1)
        self.base = dict(dtype=self.dtype.name, acc_double=bool(profile.fp64))
        # one work-group looping over every merge in one launch, where a
        # launch costs more than a scan (CPUs); GPUs spread each scan wide
        self.persistent = profile.type != "gpu"
        # register-tiled distances where they pay (GPUs); on the CPU runtimes
        # here the one-pair-per-work-item kernel is as fast for small d (its
        # stores are contiguous and the n^2/2 stores dominate)
        terms = profile.terms(LinkageTerms)
        self.tiled = bool(terms.distance_tiles)
        # the matrix's buffers: entries a buffer, and the bytes all may take
        largest = profile.max_alloc_size
        if terms.buffer_bytes:
            largest = min(largest, terms.buffer_bytes)
        self.buffer_elems = max(1, largest // self.dtype.itemsize)
        fraction = terms.memory_fraction or profile.memory_fraction
        self.matrix_budget = int(profile.global_mem_size * fraction)

    def groups(self, n):
        return max(1, min(-(-n // self.wg), 8 * self.profile.compute_units))

    def launch(self, kernel, groups, local=True):
        cl.enqueue_nd_range_kernel(self.queue, kernel, (groups * self.wg,),
                                   (self.wg,) if local else None)

    def matrix_bytes(self, n):
        return n * (n - 1) // 2 * self.dtype.itemsize

    def buffers(self, n):
        """How many device buffers the condensed matrix of n observations spans."""
        return max(1, -(-(n * (n - 1) // 2) // self.buffer_elems))

    def matrix_fits(self, n):
        """Whether the condensed matrix of n observations fits the device
        (its buffers together within the matrix budget)."""
        return self.matrix_bytes(n) <= self.matrix_budget and self.buffers(n) <= MAX_BUFFERS

    def check_fits(self, n):
        """MemoryError when the condensed matrix exceeds what the device holds."""
        need, p = self.matrix_bytes(n), self.profile
        what = (f"beyond {p}'s memory budget for it of {_size(self.matrix_budget)} "
                f"(global memory x linkage_memory_fraction, else memory_fraction)"
                if need > self.matrix_budget else
                f"more than {MAX_BUFFERS} buffers of {self.buffer_elems} entries "
                "(CL_DEVICE_MAX_MEM_ALLOC_SIZE or linkage_buffer_bytes)")
        if not self.matrix_fits(n):
            raise MemoryError(
                f"the condensed {self.dtype.name} distance matrix of {n} observations "
                f"needs {_size(need)}, {what}: {ROW_METHODS} linkage of "
                "observations run past it on the rows (O(n d) memory); for complete, "
                "average and weighted use fewer observations")


class Condensed:
    """The condensed distance matrix on the device (pdist's layout), in as
    many buffers as it needs: all but the last hold plan.buffer_elems
    entries.  ``args``: the buffers, a kernel's arguments dist0, dist1, ...;
    ``fields``: the specs' MatrixFields."""

    def __init__(self, plan, n):
        plan.check_fits(n)
        self.queue, self.n, self.dtype = plan.queue, n, plan.dtype
        m = max(1, n * (n - 1) // 2)
        per = plan.buffer_elems
        self.buffers = [cla.empty(plan.queue, min(per, m - s), plan.dtype)
                        for s in range(0, m, per)]
        self.per = per if len(self.buffers) > 1 else 0
        self.fields = dict(buffers=len(self.buffers), buffer_elems=self.per)
        self.args = [b.data for b in self.buffers]

    def where(self, e):
        """(buffer, offset) of entry e."""
        return (e // self.per, e % self.per) if self.per else (0, e)

    def set(self, y):
        """Upload a host condensed vector."""
        y = np.ascontiguousarray(y, self.dtype)
        start = 0
        for buf in self.buffers:
            buf.set(y[start:start + buf.size], self.queue)
            start += buf.size

    def get(self, queue=None):
        """The whole matrix on the host (pdist's vector: tests, small n)."""
        return np.concatenate([b.get(queue or self.queue) for b in self.buffers])


def _distance_plan(plan, n, d, metric, fields=None):
    """(spec, kernel) of the first distance spec that builds and fits;
    *fields*: the matrix's MatrixFields (one buffer where None)."""
    base = dict(plan.base, **(fields or {}))
    for spec in distance_specs(plan.profile, base, n, d, metric, plan.tiled):
        try:
            kern = exact_kernel(plan.queue, spec, "condensed_distances")
        except codegen.KernelBuildError:
            if not spec.tiled:
                raise
            continue
        if not spec.tiled or codegen.kernel_work_group_limit(kern, plan.queue.device) >= spec.wg:
            return spec, kern


def condensed_distances(plan, X=None, y=None, metric="euclidean"):
    """The condensed distance matrix on the device (a Condensed: as many
    buffers as it needs), from observations X (built by a kernel) or from a
    host condensed vector y; and n."""
    q = plan.queue
    if y is not None:
        n = round((1 + np.sqrt(1 + 8 * y.shape[0])) / 2)
        out = Condensed(plan, n)
        out.set(y)
        return out, n
    n, d = X.shape
    out = Condensed(plan, n)
    x = cla.to_device(q, np.ascontiguousarray(X, plan.dtype))
    flag = cla.zeros(q, 1, np.int32)
    spec, kern = _distance_plan(plan, n, d, metric, out.fields)
    args = (x.data, np.int64(n), *out.args, flag.data)
    if spec.tiled:
        tiles = -(-n // spec.tm)
        kern(q, (tiles * (tiles + 1) // 2 * spec.wg,), (spec.wg,), *args)
    else:
        side = 16 if plan.profile.max_work_group_size >= 256 else 8
        edge = -(-n // side) * side
        kern(q, (edge, edge), (side, side), *args)
    if flag.get(q)[0]:
        # scipy's words; from finite observations only an overflow (of
        # float32 where the device has no fp64) or cosine's zero vector
        raise ValueError("The condensed distance matrix must contain only finite values"
                         f" ({metric} distances of finite {plan.dtype.name} observations "
                         "overflow, or a zero vector under cosine).")
    return out, n


def prim_single(plan, dist, n):
    """scipy's mst_single_linkage: (n-1, 2) point pairs and heights, in merge order."""
    spec = PrimSpec(wg=plan.wg, **plan.base, **dist.fields)
    edges, heights = prim_tree(plan, spec, n, dist.args)
    return edges, heights.astype(np.float64)


def prim_tree(plan, spec, n, head, tail=()):
    """Prim's algorithm from node 0 on the device, by *spec*'s prim_all (one
    persistent work-group, where the plan says so) or n launches of its
    prim_step: the (n-1, 2) edges in the order Prim's adds them and their
    heights (the plan's dtype), on the host.  *head*: the kernels' arguments
    before n (the condensed matrix's, or the rows'), *tail*: any after the
    heights.  The engine of single linkage over the matrix and over the rows
    (passes/mst.py)."""
    q = plan.queue
    merged = np.zeros(n, np.uint8)
    merged[0] = 1
    merged, best = cla.to_device(q, merged), cla.to_device(q, np.full(n, np.inf, plan.dtype))
    edges, heights = cla.empty(q, 2 * (n - 1), np.int32), cla.empty(q, n - 1, plan.dtype)
    tree = (merged.data, best.data, edges.data, heights.data, *tail)
    if plan.persistent:
        state = cla.to_device(q, np.zeros(2, np.int32))             # [node, unused]
        exact_kernel(q, spec, "prim_all")(q, (plan.wg,), (plan.wg,), *head, np.int32(n),
                                     state.data, *tree)
    else:
        groups = plan.groups(n)
        state = cla.to_device(q, np.array([0, -1], np.int32))   # [newest node, edges made]
        # partial minima in two buffers, read and written alternately; launch
        # 0 reads the seed (0, node 0): the tree starts at node 0
        seed_v, seed_i = np.full(groups, np.inf, plan.dtype), np.full(groups, n, np.int32)
        seed_v[0], seed_i[0] = 0, 0
        parts = [(cla.to_device(q, seed_v), cla.to_device(q, seed_i)),
                 (cla.empty(q, groups, plan.dtype), cla.empty(q, groups, np.int32))]
        steps = []
        for p in range(2):      # two kernel objects: the same kernel, buffers swapped
            step = cl.Kernel(codegen.build(q.context, spec, EXACT_OPTIONS), "prim_step")
            (in_v, in_i), (out_v, out_i) = parts[p], parts[1 - p]
            step.set_args(*head, np.int32(n), np.int32(groups), in_v.data, in_i.data,
                          out_v.data, out_i.data, state.data, *tree)
            steps.append(step)
        for k in range(n):      # launch k records edge k-1 and scans from its node
            plan.launch(steps[k % 2], groups)
            if k % 1024 == 1023:
                q.flush()       # let the device start while the host enqueues the rest
    return edges.get(q).reshape(-1, 2), heights.get(q)


# state slots of nn_chain_all (LEN, DONE) and of nn_step (S_*), hierarchical_linkage.cl.mako
LEN, DONE, STATE_SIZE = 0, 8, 9
S_LEN, S_DONE, S_SKIP, S_STATE_SIZE = 0, 4, 5, 11


def nn_chain(plan, dist, n, method):
    """scipy's nn_chain: (n-1, 2) cluster pairs and heights, in merge order."""
    q, groups = plan.queue, plan.groups(n)
    pairs, heights = cla.empty(q, 2 * (n - 1), np.int32), cla.empty(q, n - 1, plan.dtype)
    size = cla.to_device(q, np.ones(n, np.int32))
    spec = LinkageSpec(method=method, wg=plan.wg, **plan.base, **dist.fields)
    if plan.persistent:
        state = np.zeros(STATE_SIZE, np.int32)
        state[LEN] = 1                              # the chain starts at cluster 0
        state, chain = cla.to_device(q, state), cla.to_device(q, np.zeros(n, np.int32))
        merge_dist = cla.zeros(q, 1, plan.dtype)
        exact_kernel(q, spec, "nn_chain_all")(q, (plan.wg,), (plan.wg,), *dist.args, np.int32(n),
                                         state.data, chain.data, size.data, merge_dist.data,
                                         pairs.data, heights.data)
        if not state.get(q)[DONE]:
            raise RuntimeError("nearest-neighbour chain did not finish: a device fault?")
        return pairs.get(q).reshape(-1, 2), heights.get(q).astype(np.float64)
    # two copies of the state and of the partial minima, each launch reading
    # one and writing the other; launch 0 only scans row 0 (S_SKIP)
    state = np.zeros(S_STATE_SIZE, np.int32)
    state[S_LEN], state[S_SKIP] = 1, 1
    states = [cla.to_device(q, state), cla.to_device(q, state)]
    parts = [(cla.to_device(q, np.full(groups, np.inf, plan.dtype)),
              cla.to_device(q, np.full(groups, n, np.int32))) for _ in range(2)]
    # a fresh chain starts two slots above the old one's base: 3n slots suffice
    chain = cla.to_device(q, np.zeros(3 * n + 8, np.int32))
    steps_k = []
    for p in range(2):      # two kernel objects: the same kernel, buffers swapped
        step = cl.Kernel(codegen.build(q.context, spec, EXACT_OPTIONS), "nn_step")
        (in_v, in_i), (out_v, out_i) = parts[p], parts[1 - p]
        step.set_args(*dist.args, np.int32(n), np.int32(groups), in_v.data, in_i.data,
                      out_v.data, out_i.data, states[p].data, states[1 - p].data, chain.data,
                      size.data, pairs.data, heights.data)
        steps_k.append(step)
    # a merge takes one to a few steps (about 2.7 on blobs); steps past the
    # last merge return at once, so the host enqueues batches and reads the
    # done flag a batch late
    batch = 2 * int(np.clip(n // 8, 8, 1024))      # even: it ends on states[0]
    seen = [np.zeros(S_STATE_SIZE, np.int32) for _ in range(2)]
    pending, steps = None, 0
    while True:
        for j in range(batch):
            plan.launch(steps_k[j % 2], groups)
        steps += batch
        event = cl.enqueue_copy(q, seen[steps // batch % 2], states[0].data,
                                is_blocking=False)
        q.flush()
        if pending is not None:
            pending[0].wait()
            if pending[1][S_DONE]:
                break
        pending = (event, seen[steps // batch % 2])
        if steps > 6 * n + 4 * batch:
            raise RuntimeError("nearest-neighbour chain did not finish: a device fault?")
    event.wait()
    return pairs.get(q).reshape(-1, 2), heights.get(q).astype(np.float64)


def plan_for(devices):
    """The plan of a linkage (and of DBSCAN's and HDBSCAN's device work) on
    the preferred device of *devices* (a DeviceManager: its devices): float64
    where the device has fp64, else float32, with a warning."""
    devices = getattr(devices, "profiles", devices)   # a DeviceManager's
    profile = preferred(select_devices(devices))[0]
    if not profile.fp64:
        warnings.warn(f"{profile} has no fp64: distances and heights in float32, "
                      "so near-ties may merge unlike scipy", RuntimeWarning, stacklevel=user_stacklevel())
    return Plan(profile, np.float64 if profile.fp64 else np.float32)


def plans_for(profiles):
    """Plans on each of *profiles* (a fit split over several devices:
    DBSCAN's grid slabs), all of one value type, so every device compares
    alike: float64 where each has fp64, else float32, with plan_for's warning."""
    no_fp64 = [p for p in profiles if not p.fp64]
    if no_fp64:
        warnings.warn(f"{no_fp64[0]} has no fp64: distances and heights in float32, "
                      "so near-ties may merge unlike scipy", RuntimeWarning,
                      stacklevel=user_stacklevel())
    return [Plan(p, np.float32 if no_fp64 else np.float64) for p in profiles]


def check_range(values, plan):
    """ValueError where host values (observations or distances) do not fit
    the plan's value type: float32 on a device without fp64 would make them inf."""
    top = np.finfo(plan.dtype).max
    if plan.dtype != np.float64 and np.any(np.abs(values) > top):
        raise ValueError(f"values beyond {plan.dtype.name}'s range ({top:.3g}): "
                         f"{plan.profile} has no fp64; scale the data down")
