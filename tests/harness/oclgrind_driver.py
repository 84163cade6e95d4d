"""Run every kernel variant of oclclust on tiny inputs -- meant to run under oclgrind.

    PYOPENCL_NO_CACHE=1 oclgrind --data-races --uninitialized --check-api \
        --build-options -cl-opt-disable python tests/harness/oclgrind_driver.py --report out.json

tests/passes/test_oclgrind.py runs it so and fails on any report oclgrind makes.  The
driver checks every result against numpy (exit status 1 on a mismatch), marks
on stderr which variant runs ("@@ ..." lines, so a report can be traced to its
variant) and writes a JSON report of every spec it rendered, by template, so
the test can tell that no template was left out.

Adding a template: write an exerciser below (or extend one) and list it in
EXERCISERS -- or, for an algorithm of its own, in a plugin module
``tests/harness/oclgrind_ex_<name>.py`` with its own ``EXERCISERS`` dict of
the same form (exercisers take (device, log) and may use this module's mark,
close, data, profile_for, managers, device_manager, streaming_budget and
PRECISIONS).  ``--only NAME`` runs one plugin ("core": this module's own);
tests/passes/test_oclgrind.py runs each in its own process.

The Lloyd variants are every spec lloyd.candidate_specs offers plus, on the
first candidate of each template, the product of LLOYD_AXES
(dataclasses.replace), for each precision mode of PRECISIONS; each runs
through the pass's own injection point (LloydPass(..., spec=); the plugins
use CMeansPass's and GmmPass's), which still checks and builds it as the
planner would.  Fits, moments and k-means++ go through the device manager
on the one Oclgrind device (device_manager: its per-device work on the
calling thread), both resident and with a memory budget that streams the
rows in several chunks (same results required).

``--canary`` runs a kernel with a known out-of-bounds read, data race and
uninitialised read instead: the test checks oclgrind reports all three, so the
check cannot go blind unnoticed.

Why -cl-opt-disable and PYOPENCL_NO_CACHE: oclgrind 21.10's uninitialised-value
tracking does not know LLVM's `freeze` instruction that optimised builds emit
(it aborts tracking and even computes wrong results), and pyopencl's binary
cache would hand back a program built without the option.
"""
import argparse
import concurrent.futures
import contextlib
import dataclasses
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import oclclust as oc
from oclclust.runtime import codegen, group_maxima
from oclclust.cluster.inits import kmeans_plusplus
from oclclust.passes import kmeanspp
from oclclust.passes import lloyd
from oclclust.passes.distances import pairwise_euclidean
from oclclust.runtime.partition import DevicePartition

N, D, K = 37, 3, 5              # tiny, and none of them a multiple of a tile

# (data dtype, device has fp64): float64 sums / float64 data / Kahan-compensated float sums
PRECISIONS = [("float32", True), ("float64", True), ("float32", False)]

# Lloyd kernel axes (besides update and weighted, always both); every combination
# is rendered and run for every precision
LLOYD_AXES = {
    "stage_centers": (True, False),
    "stage_point": (True, False),
    "ppi": (1, 3),
}
# work-group and tile sizes small enough that n=37 spans several groups,
# several tiles per group, a ragged last tile and padded centroids (k=5, tile 4)
LLOYD_PROFILE = dict(work_group_size=4, centroid_tile=4, points_per_item=1,
                     groups_per_compute_unit=2, native_vector_bytes=16)
# the gemm variant: 8 x 4 tiles of 2 x 2 registers, depth 2 (D=3: a ragged
# depth chunk), vector reads of 2 then scalar ones; its sums in slices of
# GEMM_SLICES clusters (one slice, or several with a ragged last one), with
# the chunks staged directly, prefetched into registers, and double-buffered
# (whose row winners share the chunks' local memory)
GEMM_PROFILE = dict(LLOYD_PROFILE, lloyd_variant="gemm", lloyd_tile_rows=8,
                    lloyd_tile_centroids=4, lloyd_reg_rows=2, lloyd_reg_centroids=2,
                    lloyd_depth=2, lloyd_vector_width=2)
GEMM_SLICES = (2, K)

RENDERED = {}                   # template's file name -> {repr(spec): spec fields}


def record_render(spec):
    """Note *spec* in RENDERED (codegen.renders_seen_by), by its template's
    file name (spec.template is its path below templates/)."""
    fields = {k: v for k, v in dataclasses.asdict(spec).items()
              if isinstance(v, (bool, int, float, str))}
    RENDERED.setdefault(Path(spec.template).name, {})[repr(spec)] = dict(
        fields, kind=type(spec).__name__)


def host_prefix_sum(queue, acc, weighted, real_t):
    """The k-means++ seeding's prefix sums on the host (kmeanspp.prefix_sums_by).

    The scan is pyopencl's kernel, not ours, and oclgrind reports it (its
    padding is read uninitialised and it reads global memory behind a
    local-only barrier); its reports would also taint every kernel that reads
    its output.  The k-means++ kernels are still run exactly as in a fit.
    """
    def scan(dist, out, *weights, queue=None):
        v = dist.get(queue).astype(np.float64)
        if weights:
            v = v * weights[0].get(queue)
        out.set(np.cumsum(v).astype(out.dtype), queue)
    return scan


@contextlib.contextmanager
def fill_by_host_writes():
    """Run clEnqueueFillBuffer as a host write of the same bytes.

    oclgrind 21.10 does not mark memory written by clEnqueueFillBuffer as
    initialised (a kernel reading a filled buffer is reported), so fills are
    made as the equivalent clEnqueueWriteBuffer while the driver runs.
    """
    original = cl.enqueue_fill_buffer

    def fill(queue, mem, pattern, offset, size, wait_for=None):
        pattern = np.frombuffer(memoryview(np.ascontiguousarray(pattern)).tobytes(), np.uint8)
        host = np.tile(pattern, size // pattern.size)
        return cl.enqueue_copy(queue, mem, host, dst_offset=offset, wait_for=wait_for)
    cl.enqueue_fill_buffer = fill
    try:
        yield
    finally:
        cl.enqueue_fill_buffer = original


_PUT_SOURCE = """
__kernel void put_bytes(__global const uchar *src, __global uchar *dst, const ulong offset)
{
    dst[offset + get_global_id(0)] = src[get_global_id(0)];
}"""


@contextlib.contextmanager
def partial_writes_by_kernel():
    """Make a host write into part of a buffer through a staging buffer and a kernel.

    oclgrind 21.10 keeps reporting the bytes that such a write left out as
    uninitialised even after a kernel has written them (host-write 4 of a
    buffer's 12 bytes, a kernel writes all 12, a kernel reading bytes 4..11 is
    reported); a whole-buffer write to a staging buffer and a byte-copy kernel
    write the same bytes in the same order, and leave the rest of the buffer as
    it was, so a read of bytes nobody wrote is still reported.  A rectangular
    write (buffer_origin, region) is made row by row so.  The staging
    buffers are kept, as buffers_kept_alive keeps every array's buffer.
    """
    original = cl.enqueue_copy
    kernels = {}
    staged = []

    def copy(queue, dest, src, **kwargs):
        if not (isinstance(dest, cl.Buffer) and isinstance(src, np.ndarray)):
            return original(queue, dest, src, **kwargs)
        if "region" in kwargs:   # a rectangular write: a partial write per row
            (bx, by), (hx, hy) = kwargs["buffer_origin"][:2], kwargs["host_origin"][:2]
            (width, height), pitch = kwargs["region"][:2], kwargs["buffer_pitches"][0]
            host_pitch = kwargs.get("host_pitches", (width,))[0]
            flat = np.ascontiguousarray(src).reshape(-1).view(np.uint8)
            event = None
            for y in range(height):
                at = hx + (hy + y) * host_pitch
                event = copy(queue, dest, flat[at:at + width],
                             dst_offset=bx + (by + y) * pitch, wait_for=kwargs.get("wait_for"))
            return event
        offset = kwargs.pop("dst_offset", 0)
        if offset == 0 and src.nbytes == dest.size:
            return original(queue, dest, src, dst_offset=offset, **kwargs)
        ctx = queue.context
        if ctx.int_ptr not in kernels:
            kernels[ctx.int_ptr] = cl.Kernel(cl.Program(ctx, _PUT_SOURCE).build(), "put_bytes")
        staging = cl.Buffer(ctx, cl.mem_flags.READ_ONLY, src.nbytes)
        staged.append(staging)
        original(queue, staging, src, wait_for=kwargs.get("wait_for"))
        event = kernels[ctx.int_ptr](queue, (src.nbytes,), None, staging, dest,
                                     np.uint64(offset))
        event.wait()
        return event
    cl.enqueue_copy = copy
    try:
        yield
    finally:
        cl.enqueue_copy = original


@contextlib.contextmanager
def buffers_kept_alive():
    """Never release a device buffer while the driver runs.

    oclgrind 21.10's uninitialised-value tracking reports correct kernels once
    a released buffer's address is handed out again (a kernel that zeroes a
    slab, passes a barrier and then accumulates into it is reported only when
    buffers were released before it); keeping every buffer avoids that false
    alarm, while a fresh buffer still starts uninitialised, so real reads of
    unwritten memory are still caught.
    """
    kept = []
    original = cla.Array.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        kept.append(self.base_data)
    cla.Array.__init__ = init
    try:
        yield kept
    finally:
        cla.Array.__init__ = original


class CallingThread(concurrent.futures.Executor):
    """An executor that runs each task at once on the thread that submits it:
    the device manager's executor (DeviceManager(executor=)) here.

    oclgrind 21.10 with --uninitialized crashes (SIGSEGV) on any OpenCL call
    made from a thread other than the one that created the context; the
    manager drives each device from a thread of its pool.  The same uploads
    and passes run one after another on the calling thread instead (the
    kernels, buffers and the streamed chunks' second queue are unchanged).
    """

    def __init__(self, max_workers=None):
        pass

    def submit(self, fn, *args, **kwargs):
        future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:   # handed to the caller, as a pool would
            future.set_exception(exc)
        return future


def device_manager(profile, **kwargs):
    """oc.DeviceManager of the one *profile*, driven from the calling thread."""
    return oc.DeviceManager([profile], executor=CallingThread, **kwargs)


def data(dtype, seed=0):
    rng = np.random.RandomState(seed)
    X = (rng.randn(N, D) + rng.randint(0, 3, (N, 1)) * 4).astype(dtype)
    w = rng.uniform(0.5, 2.0, N).astype(dtype)
    return X, w


def mark(label):
    """Tell the test which variant the oclgrind reports that follow belong to."""
    print(f"@@ {label}", file=sys.stderr, flush=True)


def close(a, b, what, rtol):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if not np.allclose(a, b, rtol=rtol, atol=rtol):
        raise AssertionError(f"{what}: got {a}, expected {b}")


def profile_for(base, fp64, **terms):
    return base.replace(fp64=fp64, **terms)


def lloyd_specs(profile, dtype):
    """Every variant the planner can pick (all of lloyd.candidate_specs) and,
    on the first candidate of each template, every combination of LLOYD_AXES;
    specs that render the same source are run once."""
    seen = set()
    for update, weighted in itertools.product((True, False), (False, True)):
        candidates = list(lloyd.candidate_specs(profile, dtype, D, K, update, weighted))
        firsts = {}
        for spec in candidates:
            firsts.setdefault(spec.template, spec)
        specs = list(candidates)
        for base in firsts.values():
            if base.variant == "gemm":
                specs += [dataclasses.replace(base, slice=s, prefetch=p)
                          for s, p in itertools.product(GEMM_SLICES, (0, 1, 2))]
                continue
            for values in itertools.product(*LLOYD_AXES.values()):
                specs.append(dataclasses.replace(base, **dict(zip(LLOYD_AXES, values))))
        for spec in specs:
            if spec.update != update or spec.weighted != weighted:
                continue
            source = spec.render()
            if spec.variant == "gemm" and spec.update:   # its sums kernel too
                source += spec.accumulate_spec().render()
            if source not in seen:
                seen.add(source)
                yield spec


# ----------------------------------------------------------------- exercisers
def check_lloyd_pass(profile, spec, X, w, centers, rtol):
    """One LloydPass of *spec* over X (weights w where the spec is weighted)
    from *centers*: labels, inertia, distances, flags and sums against
    numpy, and a rerun over the same centres changes no label."""
    d2 = ((X[:, None, :].astype(np.float64) - centers[None]) ** 2).sum(-1)
    want = d2.argmin(1)
    part = DevicePartition(profile, X, w if spec.weighted else None)
    lp = lloyd.LloydPass(part, K, update=spec.update, spec=spec)
    assert lp.spec == spec
    labels = oc_labels(part)
    stats = lp.run(centers, labels)
    got = labels.get(part.queue)
    ww = w.astype(np.float64) if spec.weighted else np.ones(N)
    if not np.array_equal(got, want):
        raise AssertionError(f"{spec}: labels {got} != {want}")
    close(stats.inertia, (ww * d2[np.arange(N), got]).sum(), f"{spec}: inertia", rtol)
    close(lp.min_dist.get(part.queue), d2[np.arange(N), got], f"{spec}: min_dist", rtol)
    if stats.n_changed != N or stats.n_nonfinite != 0:
        raise AssertionError(f"{spec}: flags {stats.n_changed}, {stats.n_nonfinite}")
    if spec.update:
        sums = np.zeros((K, D))
        np.add.at(sums, got, X.astype(np.float64) * ww[:, None])
        close(stats.sums, sums, f"{spec}: sums", rtol)
        close(stats.weights, np.bincount(got, ww, K), f"{spec}: weights", rtol)
    again = lp.run(centers, labels)          # same centres: nothing changes
    if again.n_changed != 0:
        raise AssertionError(f"{spec}: {again.n_changed} labels changed on a rerun")


def exercise_lloyd(device, log):
    """Every Lloyd variant: labels, inertia and sums against numpy."""
    count = 0
    for (dtype, fp64), terms in itertools.product(PRECISIONS, (LLOYD_PROFILE, GEMM_PROFILE)):
        profile = profile_for(device, fp64, **terms)
        X, w = data(dtype)
        rtol = 1e-4 if dtype == "float32" else 1e-10
        centers = X[[0, 9, 18, 27, 36]].astype(np.float64)
        for spec in list(lloyd_specs(profile, dtype)):
            if terms is GEMM_PROFILE and spec.variant != "gemm":
                continue                # the fused variants: run with LLOYD_PROFILE
            mark(f"lloyd fp64={fp64} {spec}")
            check_lloyd_pass(profile, spec, X, w, centers, rtol)
            count += 1
    log(f"lloyd: {count} variants")


def exercise_accumulate_sums(device, log):
    """The gemm variant's sums kernel alone, for several rows per work-item
    (scalar and 4-wide label reads, several passes over a chunk's member list,
    segments not aligned to a chunk): the same partial sums bit for bit, and
    numpy's; and the walk kernel (slices, one slice), the same bits.
    exercise_lloyd runs it only with its default rows per item."""
    from oclclust.passes.lloyd_gemm import AccumulateSpec
    from oclclust.runtime.reduce import partial_buffer
    rng = np.random.RandomState(1)
    labels = rng.randint(0, K, N).astype(np.int32)
    labels[rng.rand(N) < 0.6] = 3            # most rows in one slice: several passes
    segments, slice_, wg = 3, 2, 4           # 13 rows a segment; slices of 2, 2, 1
    count = 0
    for (dtype, fp64), weighted in itertools.product(PRECISIONS, (False, True)):
        profile = profile_for(device, fp64)
        q = profile.queue()
        X, w = data(dtype)
        x, lab, wd = (cla.to_device(q, a) for a in (X, labels, w))
        ww = w.astype(np.float64) if weighted else np.ones(N)
        want = np.zeros((K, D))
        np.add.at(want, labels, X.astype(np.float64) * ww[:, None])
        first = None
        base = AccumulateSpec(dtype=dtype, acc_double=fp64, d=D, k=K, slice=slice_,
                              acc_wg=wg, weighted=weighted)
        walked = [dataclasses.replace(base, walk=True, rows_per_item=rows, slice=s)
                  for s, rows in ((slice_, 1), (K, 3))]   # a chunk of 4 rows / of 12
        for spec in [dataclasses.replace(base, rows_per_item=r) for r in (1, 3, 4, 8)] + walked:
            mark(f"accumulate_sums {spec}")
            slices = -(-K // spec.slice)
            sums = partial_buffer(q, segments, K * D, fp64)
            weights = partial_buffer(q, segments, K, fp64)
            codegen.kernel(q.context, spec, "accumulate_sums")(
                q, (segments * slices * wg,), (wg,), x.data, np.int64(N), np.int64(D),
                (wd if weighted else x).data, lab.data, sums.data, weights.data,
                np.int64(-(-N // segments)), np.int32(slices))
            got = sums.get(q), weights.get(q)
            if first is None:
                first = got
            elif not all(np.array_equal(a, b) for a, b in zip(got, first)):
                raise AssertionError(f"{spec}: partial sums differ from the first variant's")
            slabs = [p.astype(np.float64).reshape(-1, segments, size).sum(axis=1)
                     for p, size in zip(got, (K * D, K))]
            total = [s[0] if fp64 else s[0] - s[1] for s in slabs]   # Kahan: less comp
            rtol = 1e-4 if dtype == "float32" else 1e-10
            close(total[0].reshape(K, D), want, f"{spec}: sums", rtol)
            close(total[1], np.bincount(labels, ww, K), f"{spec}: weights", rtol)
            count += 1
    log(f"accumulate_sums: {count} variants")


def oc_labels(part):
    labels = cla.empty(part.queue, part.n, np.int32)
    labels.fill(-1)
    return labels


STREAM_ROWS = 10                # rows per streamed chunk: N=37 gives chunks 10+10+10+7


def streaming_budget(dtype, rows=STREAM_ROWS):
    """A memory budget that makes the manager stream the N rows in chunks of
    *rows* (two staging buffers of *rows* rows: the budget counts rows only)."""
    return 2 * rows * D * np.dtype(dtype).itemsize


def managers(profile, dtype):
    """(label, DeviceManager) for the one device: resident, and streamed in chunks."""
    yield "resident", device_manager(profile)
    yield "streamed", device_manager(profile, memory_budget=streaming_budget(dtype))


def check_layout(data, label):
    """The scattered data is laid out as *label* says."""
    shard, = data.shards
    want = (label == "streamed", -(-N // STREAM_ROWS) if label == "streamed" else 1)
    if (shard.streamed, len(shard.chunks)) != want:
        raise AssertionError(f"{label}: streamed={shard.streamed}, {len(shard.chunks)} chunks")


def exercise_estimator(device, log):
    """Whole fits (moments, k-means++, the planned Lloyd kernel, reductions),
    predict, score and transform, in every precision, with and without weights,
    on resident data and streamed in chunks (the same result)."""
    fits = 0
    for dtype, fp64 in PRECISIONS:
        profile = profile_for(device, fp64)
        X, w = data(dtype, seed=1)
        for weights in (None, w):
            resident = None
            for how, mgr in managers(profile, dtype):
                check_layout(mgr.scatter(X), how)
                what = f"{dtype} fp64={fp64} weighted={weights is not None} {how}"
                mark(f"KMeans {what}")
                codegen.forget_plans("lloyd")
                km = oc.KMeans(K, random_state=0, devices=mgr, max_iter=4)
                km.fit(X, sample_weight=weights)
                fits += 1
                if resident is None:
                    resident = km
                else:
                    if not np.array_equal(km.labels_, resident.labels_) or \
                            km.n_iter_ != resident.n_iter_:
                        raise AssertionError(f"{what}: labels or n_iter differ from resident")
                    close(km.cluster_centers_, resident.cluster_centers_, f"{what}: centres",
                          1e-5)
                    close(km.inertia_, resident.inertia_, f"{what}: inertia", 1e-5)
                mark(f"KMeans.predict {what}")
                labels = km.predict(X)
                if not np.array_equal(labels, km.labels_):
                    raise AssertionError(f"{what}: predict != labels_")
                mark(f"KMeans.transform {what}")
                dist = km.transform(X)
                ref = np.sqrt(((X[:, None, :].astype(np.float64) -
                                km.cluster_centers_[None].astype(np.float64)) ** 2).sum(-1))
                close(dist, ref, f"{what}: transform", 1e-4)
                ww = np.ones(N) if weights is None else w.astype(np.float64)
                mark(f"KMeans.score {what}")
                close(-km.score(X, sample_weight=weights),
                      (ww * (ref.min(1) ** 2)).sum(), f"{what}: score", 1e-4)
    log(f"estimator: {fits} fits")


def exercise_moments(device, log):
    """Moments of one partition, and of streamed chunks combined on the host."""
    for dtype, fp64 in PRECISIONS:
        X, _ = data(dtype, seed=2)
        x64 = X.astype(np.float64)
        profile = profile_for(device, fp64)
        mark(f"moments {dtype} fp64={fp64}")
        part = DevicePartition(profile, X)
        results = [part.mean_var_finite()]
        for how, mgr in managers(profile, dtype):
            mark(f"moments {dtype} fp64={fp64} {how}")
            sharded = mgr.scatter(X)
            check_layout(sharded, how)
            results.append(sharded.mean_var_finite())
        for mean, var, finite in results:
            close(mean, x64.mean(0), f"{dtype}/fp64={fp64}: mean", 1e-5)
            close(var, x64.var(0), f"{dtype}/fp64={fp64}: var", 1e-4)
            assert finite
    log("moments: ok")


def exercise_group_maxima(device, log):
    """The largest entries of a vector (runtime.group_maxima): with ties
    (the whole vector read) and without (the chosen groups gathered), a
    work-group of one item and of several, groups of a ragged size."""
    q = device.queue()
    rng = np.random.default_rng(4)
    saved, group_maxima.GROUPS = group_maxima.GROUPS, 13
    try:
        for dtype, wg, ties in itertools.product((np.float32, np.float64), (1, 8),
                                                 (True, False)):
            mark(f"group_maxima {dtype.__name__} wg={wg} ties={ties}")
            values = (rng.integers(0, 6, N) if ties else rng.permutation(N)).astype(dtype)
            labels = rng.integers(0, K, N).astype(np.int32)
            take = 4 if ties else 2
            got = group_maxima.largest(q, cla.to_device(q, values), cla.to_device(q, labels),
                                       N, take, wg=wg)
            first = np.lexsort((np.arange(N), -values))[:take]
            if not (np.array_equal(got[1], first) and np.array_equal(got[0], values[first])
                    and np.array_equal(got[2], labels[first])):
                raise AssertionError(f"group_maxima {dtype.__name__} wg={wg}: {got}")
    finally:
        group_maxima.GROUPS = saved
    log("group_maxima: ok")


def exercise_kmeanspp(device, log):
    """k-means++ (candidate potentials, search_sorted) in every precision,
    weighted and not, on resident data and streamed in chunks: the same picks."""
    for dtype, fp64 in PRECISIONS:
        X, w = data(dtype, seed=3)
        profile = profile_for(device, fp64)
        for weights in (None, w):
            picks = {}
            for how, mgr in managers(profile, dtype):
                mark(f"kmeans++ {dtype} fp64={fp64} weighted={weights is not None} {how}")
                sharded = mgr.scatter(X, weights)
                check_layout(sharded, how)
                host_w = np.ones(N, dtype) if weights is None else weights
                idx = kmeans_plusplus(sharded, K, np.random.RandomState(0), host_w)
                if len(set(idx.tolist())) != K or not all(0 <= i < N for i in idx):
                    raise AssertionError(f"k-means++ picked {idx}")
                picks[how] = idx.tolist()
            if picks["streamed"] != picks["resident"]:
                raise AssertionError(f"k-means++ {dtype} fp64={fp64}: streamed picks "
                                     f"{picks['streamed']} != resident {picks['resident']}")
    log("kmeans++: ok")


def exercise_pairwise(device, log):
    for dtype, fp64 in PRECISIONS:
        X, _ = data(dtype, seed=4)
        mark(f"pairwise {dtype} fp64={fp64}")
        part = DevicePartition(profile_for(device, fp64), X)
        c = X[:K].astype(np.float64)
        got = pairwise_euclidean(part, c)
        close(got, np.sqrt(((X[:, None].astype(np.float64) - c[None]) ** 2).sum(-1)),
              "pairwise", 1e-4)
    log("pairwise: ok")


# template -> the exercisers that render it (every non-prelude template must appear)
EXERCISERS = {
    "lloyd_assign_accumulate.cl.mako": [exercise_lloyd, exercise_estimator],
    "lloyd_assign_accumulate_rowwise.cl.mako": [exercise_lloyd, exercise_estimator],
    "lloyd_gemm_assign.cl.mako": [exercise_lloyd],
    "lloyd_accumulate_sums.cl.mako": [exercise_lloyd, exercise_accumulate_sums],
    "lloyd_accumulate_walk.cl.mako": [exercise_accumulate_sums],
    "reduce_partials.cl.mako": [exercise_lloyd, exercise_moments],
    "partition_moments.cl.mako": [exercise_moments],
    "group_maxima.cl.mako": [exercise_group_maxima],
    "group_entries.cl.mako": [exercise_group_maxima],
    "kmeanspp_candidates.cl.mako": [exercise_kmeanspp],
    "search_sorted.cl.mako": [exercise_kmeanspp],
    "pairwise_distances.cl.mako": [exercise_pairwise],
}


CANARY_SOURCE = """
__kernel void canary(__global const float *a, __global const float *never_written,
                     __global float *out)
{
    const int i = get_global_id(0);
    out[i] = a[i + 1];              /* the last work-item reads past the end of a */
    out[i] += never_written[i];     /* uninitialised */
    out[0] = i;                     /* every work-item writes out[0]: a data race */
}"""


def canary(device):
    """A kernel with one out-of-bounds read, one uninitialised read and one race."""
    q = device.queue()
    prg = cl.Program(q.context, CANARY_SOURCE).build()
    a = cla.to_device(q, np.arange(8, dtype=np.float32))
    never_written = cla.empty(q, 8, np.float32)
    out = cla.empty(q, 8, np.float32)
    cl.Kernel(prg, "canary")(q, (8,), (8,), a.data, never_written.data, out.data)
    q.finish()


def plugins():
    """{name: EXERCISERS} of this module ("core") and every plugin module."""
    import importlib
    here = Path(__file__).resolve().parent
    sys.modules.setdefault("oclgrind_driver", sys.modules[__name__])
    if str(here) not in sys.path:
        sys.path.insert(0, str(here))
    found = {"core": EXERCISERS}
    for path in sorted(here.glob("oclgrind_ex_*.py")):
        found[path.stem[len("oclgrind_ex_"):]] = importlib.import_module(path.stem).EXERCISERS
    return found


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="Oclgrind",
                    help="platform or device name substring (default: Oclgrind)")
    ap.add_argument("--report", help="write the rendered templates and specs here (JSON)")
    ap.add_argument("--canary", action="store_true",
                    help="run only a kernel with known faults (checks that oclgrind sees them)")
    ap.add_argument("--only", help="run only this plugin's exercisers (core: the driver's own)")
    ap.add_argument("--list", action="store_true", help="print the plugin names and exit")
    args = ap.parse_args(argv)
    found = plugins()
    if args.list:
        print("\n".join(found))
        return 0
    if args.only is not None and args.only not in found:
        ap.error(f"--only: no plugin {args.only!r}; have {sorted(found)}")
    chosen = [found[args.only]] if args.only else list(found.values())
    device = oc.select_devices(args.platform)[0]
    print(f"driver: {device}", flush=True)
    if args.canary:
        canary(device)
        return 0

    def log(msg):
        print(f"driver: {msg}", flush=True)

    done = []
    with contextlib.ExitStack() as stack:
        stack.enter_context(codegen.renders_seen_by(record_render))
        stack.enter_context(kmeanspp.prefix_sums_by(host_prefix_sum))
        for workaround in (buffers_kept_alive, fill_by_host_writes, partial_writes_by_kernel):
            stack.enter_context(workaround())
        for fn in dict.fromkeys(f for ex in chosen for fns in ex.values() for f in fns):
            fn(device, log)
            done.append(fn.__name__)
    report = {"device": str(device), "exercisers": done,
              "rendered": {t: list(specs.values()) for t, specs in RENDERED.items()}}
    if args.report:
        with open(args.report, "w") as fh:
            json.dump(report, fh, indent=1)
    log("templates: " + ", ".join(f"{t} ({len(s)})" for t, s in sorted(RENDERED.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
