#!/usr/bin/env python3
"""Streaming: k-means over more rows than a device holds, streamed through
a memory budget -- its cost against the resident fit, the host -> device
rates beneath it, where a streamed iteration's time goes, and the command
timeline of a streamed pass.

    python bench/stream.py [speed] --devices NVIDIA --rows 20000000 --d 128 --k 1024 \
        --budget 2GiB
    python bench/stream.py speed --devices "Intel(R) OpenCL" --quick
    python bench/stream.py probe --devices NVIDIA --rows 20000000 --d 128 --k 1024 --budget 2GiB
    python bench/stream.py timeline --devices NVIDIA --rows 20000000 --d 128 --k 1024 \
        --budget 2GiB --iters 4 [--set transfer.FILL_THREADS=8 ...] [--variant NAME:A=V,B=W]

Measurements (``python bench/stream.py NAME --help`` gives each one's flags):

    speed     a streamed iteration against a resident one, and the link's
              rates (pageable, pinned DMA, pinned fill, the staging pipeline)
    probe     the fill by 1..16 threads, DMA, both at once, pageable copies
              on several queues, staging by piece size, a timed streamed fit
    timeline  each copy's and kernel's device start and end (event
              profiling) and each pinned fill, per pass and chunk by chunk;
              --variant runs the fit again with module attributes set
"""
import argparse
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from _common import (add_devices_argument, import_oclclust, run_measurement, select_profiles,
                     table)


# ---- speed (formerly bench/stream_speed.py) --------------------------------------------

DOC_SPEED = """Streaming at the link's speed: one k-means iteration streamed through a
memory budget vs resident, and the host -> device rates beneath it.

    python bench/stream.py speed --devices NVIDIA --rows 20000000 --d 128 --k 1024 \
        --budget 2GiB
    python bench/stream.py speed --devices "Intel(R) OpenCL" --quick

Rates (same run, same device, 1 GiB or the data if smaller): a copy from
pageable numpy memory (the runtime's own staging), a DMA from page-locked
memory alone (the link), a host fill of pinned memory by the fill threads,
and the pipeline (runtime.transfer.Staging: fill and DMA overlapped) from
pageable numpy rows.  Then KMeans fits of the same data and initial centres,
resident and streamed (DeviceManager(memory_budget=)): the median
iteration after the first, whose ratio is the cost of streaming; the
streamed fit's device staging and pinned host memory are printed too.
--quick: a CPU-sized problem with a budget of 1/8 of the data.
"""


UNITS = {"": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
         "g": 1 << 30, "gib": 1 << 30, "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9}


def nbytes(text):
    """'2GiB', '500MB', '1e9' -> bytes."""
    text = text.strip().lower()
    digits = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    return int(float(digits) * UNITS[text[len(digits):]])


def blobs(n, d, k, seed=0):
    """float32 rows about k centres, made a block at a time (a block of noise
    reused: tens of GB in seconds, not minutes)."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-10, 10, (k, d)).astype(np.float32)
    block = min(n, 1 << 20)
    noise = rng.standard_normal((block, d), dtype=np.float32)
    X = np.empty((n, d), np.float32)
    for start in range(0, n, block):
        stop = min(n, start + block)
        np.add(centres[rng.integers(0, k, stop - start)], noise[:stop - start],
               out=X[start:stop])
    return X, centres


def rate(fn, size, repeats=3):
    """GB/s of the best of *repeats* calls of fn() moving *size* bytes."""
    fn()
    best = min(_seconds(fn) for _ in range(repeats))
    return size / best / 1e9


def _seconds(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def link_rates(oc, profile, X, size):
    """{what: GB/s} of host -> device copies of *size* bytes of X's rows."""
    from oclclust.runtime.transfer import Staging, copy_rows, pinned_empty
    queue = profile.queue()
    rows = max(1, size // X[:1].nbytes)
    src = X[:rows]
    dst = cla.empty(queue, src.shape, src.dtype)
    pinned = pinned_empty(queue, src.shape, src.dtype)
    pinned[:] = src
    staging = Staging(queue)
    pageable = np.ascontiguousarray(src)

    def piped():
        staging.to_device(queue, dst, src).wait()
    return {"pageable enqueue_copy": rate(lambda: cl.enqueue_copy(queue, dst.data, pageable),
                                          src.nbytes),
            "pinned DMA alone": rate(lambda: cl.enqueue_copy(queue, dst.data, pinned),
                                     src.nbytes),
            "fill threads (host -> pinned)": rate(lambda: copy_rows(pinned, src), src.nbytes),
            "pipeline (fill + DMA)": rate(piped, src.nbytes)}


def iteration_seconds(oc, devices, X, C0, iters):
    km = oc.KMeans(len(C0), init=C0, n_init=1, max_iter=iters, tol=0, devices=devices)
    start = time.perf_counter()
    km.fit(X)
    whole = time.perf_counter() - start
    return float(np.median([h["seconds"] for h in km.history_[1:]])), whole


def speed_main(argv=None):
    ap = argparse.ArgumentParser(description=DOC_SPEED.split("\n\n")[0])
    add_devices_argument(ap)
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--budget", default="2GiB", help="streaming budget: bytes, or 2GiB, 500MB")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--piece", default=None,
                    help="bytes of a pinned piece (runtime.transfer.PIECE_BYTES; 32MiB)")
    ap.add_argument("--no-resident", action="store_true",
                    help="skip the resident fit (data over the device's memory)")
    ap.add_argument("--quick", action="store_true",
                    help="CPU size: 400k x 32, k=64, budget 1/8 of the data")
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.d, args.k, args.iters = 400_000, 32, 64, 5
        args.budget = str(args.rows * args.d * 4 // 8)
    oc = import_oclclust()
    profile = oc.runtime.devices.preferred(select_profiles(oc, args.devices))[0]
    budget = nbytes(args.budget)
    if args.piece:
        oc.runtime.transfer.PIECE_BYTES = nbytes(args.piece)
    X, _ = blobs(args.rows, args.d, args.k)
    C0 = X[np.random.default_rng(1).choice(len(X), args.k, replace=False)].astype(np.float64)
    print(f"stream_speed: {profile}; {args.rows:,} x {args.d} float32 "
          f"[{oc.__file__}] "
          f"({X.nbytes / 1e9:.2f} GB), k={args.k}, budget {budget / 1e9:.3f} GB, pinned "
          f"pieces of {oc.runtime.transfer.PIECE_BYTES / 2 ** 20:g} MiB; GLIBC_TUNABLES="
          f"{os.environ.get('GLIBC_TUNABLES', '')!r}", flush=True)

    rates = link_rates(oc, profile, X, min(X.nbytes, 1 << 30))
    print(table(["host -> device", "GB/s"], [[k, f"{v:.1f}"] for k, v in rates.items()],
                left=1), flush=True)

    streamed = oc.DeviceManager([profile], memory_budget=budget)
    layout = streamed.scatter(X)
    shard, = layout.shards
    if not shard.streamed:
        raise SystemExit(f"the budget {budget} holds all {X.nbytes} bytes: nothing streams")
    layout.map(lambda chunk: None)   # one pass: the pinned pieces made
    staging = sum(s.nbytes for s in shard.staging)
    pinned = sum(p.nbytes for p in shard.pinned.pieces if p is not None)
    fed = getattr(shard, "fed", len(shard.chunks))   # the chunks that stream
    tail = sum(c.x.nbytes for c in shard.chunks[fed:])   # rows kept resident
    chunks, chunk_bytes = fed, shard.staging[0].nbytes
    layout.close()
    iteration_seconds(oc, [profile], X[:max(args.k, 20000)], C0, 2)   # kernels built
    results = []
    if not args.no_resident:
        results.append(("resident", *iteration_seconds(oc, [profile], X, C0, args.iters)))
    results.append((f"streamed ({chunks} chunks{' + tail' if tail else ''})",
                    *iteration_seconds(oc, streamed, X, C0, args.iters)))
    base = results[0][1]
    print(table(["KMeans", "s/iteration", "x resident" if not args.no_resident else "x first",
                 "GB/s streamed", "whole fit s"],
                [[name, f"{it:.4f}", f"{it / base:.2f}",
                  f"{(X.nbytes - (0 if name == 'resident' else tail)) / it / 1e9:.1f}",
                  f"{whole:.2f}"] for name, it, whole in results], left=1))
    print(f"streaming memory: device staging {staging / 1e6:.1f} MB + resident tail "
          f"{tail / 1e6:.1f} MB = {(staging + tail) / 1e6:.1f} MB (budget "
          f"{budget / 1e6:.1f} MB, chunk {chunk_bytes / 1e6:.1f} MB), pinned host "
          f"{pinned / 1e6:.1f} MB; streamed per pass {(X.nbytes - tail) / 1e9:.2f} GB")


# ---- probe (formerly bench/stream_probe.py) --------------------------------------------

DOC_PROBE = """Where a streamed k-means iteration's time goes: the host fill of pinned
pieces by 1..16 threads, the DMA alone, the two at once, pageable copies
on several queues, the staging pipeline by piece size, then a streamed fit
with its fills, waits and chunk passes timed (runtime.transfer and
parallel.shard wrapped, nothing changed).

    python bench/stream.py probe --devices NVIDIA --rows 20000000 --d 128 --k 1024 \
        --budget 2GiB
"""


def best(fn, repeats=3):
    fn()
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def link(oc, profile, size):
    from oclclust.runtime import transfer
    q = profile.queue()
    rows = size // 512
    src = np.random.default_rng(0).standard_normal((rows, 128), dtype=np.float32)
    pinned = transfer.pinned_empty(q, src.shape, src.dtype)
    other = transfer.pinned_empty(q, src.shape, src.dtype)
    other[:] = src
    dst = cla.empty(q, src.shape, src.dtype)
    dst2 = cla.empty(q, src.shape, src.dtype)
    gb = src.nbytes / 1e9
    print(f"cpus {os.cpu_count()}, affinity {len(os.sched_getaffinity(0))}", flush=True)
    for threads in (1, 2, 4, 8, 16):
        pool = ThreadPoolExecutor(threads)

        def fill(parts=threads * 4):
            cuts = np.linspace(0, rows, parts + 1).astype(np.int64)
            for f in [pool.submit(np.copyto, pinned[a:b], src[a:b])
                      for a, b in zip(cuts[:-1], cuts[1:])]:
                f.result()
        print(f"fill {threads:2d} threads: {gb / best(fill):.1f} GB/s", flush=True)
        pool.shutdown()
    dma = best(lambda: cl.enqueue_copy(q, dst.data, other).wait())
    print(f"pinned DMA alone: {gb / dma:.1f} GB/s", flush=True)
    pageable = best(lambda: cl.enqueue_copy(q, dst.data, src).wait(), 2)
    print(f"pageable copy, one queue: {gb / pageable:.1f} GB/s", flush=True)
    for count in (4, 16):
        queues = [cl.CommandQueue(q.context) for _ in range(count)]
        pool = ThreadPoolExecutor(count)

        def several_pageable():
            cuts = np.linspace(0, rows, count + 1).astype(np.int64)
            for f in [pool.submit(lambda qq, a, b: cl.enqueue_copy(
                    qq, dst.data, src[a:b], dst_offset=int(a) * 512, is_blocking=True),
                    qq, a, b) for qq, a, b in zip(queues, cuts[:-1], cuts[1:])]:
                f.result()
        print(f"pageable copy, {count} queues and threads: "
              f"{gb / best(several_pageable, 2):.1f} GB/s", flush=True)
        pool.shutdown()
    # fill while a DMA loop runs
    stop = threading.Event()
    moved = [0]
    tq = cl.CommandQueue(q.context)

    def dma_loop():
        while not stop.is_set():
            cl.enqueue_copy(tq, dst2.data, other).wait()
            moved[0] += src.nbytes
    th = threading.Thread(target=dma_loop)
    t0 = time.perf_counter()
    th.start()
    fill_t = best(lambda: transfer.copy_rows(pinned, src), 3)
    stop.set()
    th.join()
    el = time.perf_counter() - t0
    print(f"during a DMA loop: fill (copy_rows) {gb / fill_t:.1f} GB/s, DMA "
          f"{moved[0] / el / 1e9:.1f} GB/s", flush=True)
    print(f"copy_rows alone: {gb / best(lambda: transfer.copy_rows(pinned, src)):.1f} GB/s")
    for piece in (32 << 20, 128 << 20, 256 << 20):
        st = transfer.Staging(tq, piece)
        t = best(lambda: st.to_device(tq, dst, src).wait())
        print(f"pipeline, pieces {piece >> 20} MiB: {gb / t:.1f} GB/s", flush=True)
    del pinned, other, dst, dst2


def streamed(oc, profile, args):
    from oclclust.runtime import transfer
    from oclclust.parallel import shard as shard_mod
    from oclclust.cluster.kmeans import lloyd_shards as sharded
    X, _ = blobs(args.rows, args.d, args.k)
    C0 = X[np.random.default_rng(1).choice(len(X), args.k, replace=False)].astype(np.float64)
    log = {"fill": 0.0, "piece_wait": 0.0, "feed": [], "chunk": [], "copied_wait": 0.0}
    orig_copy, orig_piece = transfer.copy_rows, transfer.Staging._piece
    orig_feed = shard_mod.Shard._feed
    orig_launch, orig_collect = sharded._LloydChunk.launch, sharded._LloydChunk.collect

    def copy_rows(dst, src):
        t = time.perf_counter()
        orig_copy(dst, src)
        log["fill"] += time.perf_counter() - t

    def piece(self, *a):
        t = time.perf_counter()
        out = orig_piece(self, *a)
        log["piece_wait"] += time.perf_counter() - t
        return out

    def feed(self, i):
        t = time.perf_counter()
        ev = orig_feed(self, i)
        log["feed"].append((i, t, time.perf_counter()))
        return ev

    def launch(self, *a, **kw):   # a chunk's pass: from its launch to its collect's end
        self.launched_at = time.perf_counter()
        return orig_launch(self, *a, **kw)

    def collect(self, *a, **kw):
        out = orig_collect(self, *a, **kw)
        log["chunk"].append((self.launched_at, time.perf_counter()))
        return out
    transfer.copy_rows, transfer.Staging._piece = copy_rows, piece
    shard_mod.Shard._feed = feed
    sharded._LloydChunk.launch, sharded._LloydChunk.collect = launch, collect
    # the pass alone, on one resident chunk of the streamed size
    rows = nbytes(args.budget) // 2 // (args.d * 4)
    km = oc.KMeans(args.k, init=C0, n_init=1, max_iter=5, tol=0, devices=[profile])
    km.fit(X[:rows])
    km.fit(X[:rows])
    print(f"resident {rows} rows: {np.median([h['seconds'] for h in km.history_[1:]]):.4f} "
          "s/iteration", flush=True)
    man = oc.DeviceManager([profile], memory_budget=nbytes(args.budget))
    km = oc.KMeans(args.k, init=C0, n_init=1, max_iter=args.iters, tol=0, devices=man)
    for key in log:
        log[key] = [] if isinstance(log[key], list) else 0.0
    t0 = time.perf_counter()
    km.fit(X)
    wall = time.perf_counter() - t0
    its = [h["seconds"] for h in km.history_]
    print(f"streamed fit {wall:.2f} s; iterations {', '.join(f'{s:.3f}' for s in its)}")
    print(f"fill {log['fill']:.2f} s, piece waits {log['piece_wait']:.2f} s, feeds "
          f"{len(log['feed'])} ({sum(b - a for _, a, b in log['feed']):.2f} s), chunk passes "
          f"{len(log['chunk'])} ({sum(b - a for a, b in log['chunk']):.2f} s)")
    base = log["chunk"][0][0]
    events = sorted([(a, f"pass    {a - base:8.3f} .. {b - base:8.3f} ({(b - a) * 1e3:6.1f} ms)")
                     for a, b in log["chunk"]] +
                    [(a, f"feed {i:2d} {a - base:8.3f} .. {b - base:8.3f} ({(b - a) * 1e3:6.1f} ms)")
                     for i, a, b in log["feed"]])
    for _, line in events[-44:]:
        print("  " + line)


def probe_main():
    ap = argparse.ArgumentParser(description=DOC_PROBE.split("\n\n")[0])
    add_devices_argument(ap)
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--budget", default="2GiB")
    ap.add_argument("--iters", type=int, default=4)
    ap.add_argument("--size", default="1GiB")
    ap.add_argument("--no-link", action="store_true")
    args = ap.parse_args()
    oc = import_oclclust()
    profile = oc.runtime.devices.preferred(select_profiles(oc, args.devices))[0]
    print(f"stream_probe: {profile}", flush=True)
    if not args.no_link:
        link(oc, profile, nbytes(args.size))
    streamed(oc, profile, args)


# ---- timeline (formerly bench/stream_timeline.py) --------------------------------------

DOC_TIMELINE = """The command timeline of a streamed k-means fit: when each host -> device
copy and each kernel of every pass starts and ends on the device (OpenCL
event profiling), and when the host fills each pinned piece.

    python bench/stream.py timeline --devices NVIDIA --rows 20000000 --d 128 --k 1024 \
        --budget 2GiB --iters 4 [--set transfer.FILL_THREADS=8 ...] [--variant NAME:A=V,B=W]

Nothing in oclclust is changed: every command queue is made with
PROFILING_ENABLE (pyopencl.CommandQueue replaced by a subclass), and
pyopencl.enqueue_copy, the kernels' launches (runtime.codegen.SharedKernel)
and runtime.transfer.copy_rows are wrapped to keep their events / host
times, tagged with the chunk they serve (Shard._feed for copies,
_LloydChunk.run for kernels).  It runs with any checkout's oclclust (the one
beside it, or PYTHONPATH first: `--tree DIR`).

For each pass it prints: the pass's device span (its first chunk's kernel
start to its last chunk's kernel end), the time the copy engine and the
kernels were busy (unions of their intervals), the time both were busy at
once, the copy rate while copying, and the host fill time; then one pass
chunk by chunk: its copies' [first start, last end], its kernels' [first
start, last end], and the copy's wait on the kernel before.
--variant runs the same fit again with module attributes set (name:
transfer.X=V,shard.Y=W), all variants on the same data in one process.
"""


def _parse_sets(text):
    out = []
    for item in filter(None, text.split(",")):
        key, value = item.split("=", 1)
        out.append((key.strip(), eval(value, {"np": np})))   # numbers, True/False
    return out


def union(intervals):
    """Total length of the union of [a, b) intervals, and the merged list."""
    merged = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return sum(b - a for a, b in merged), merged


def intersection(xs, ys):
    """Length of the intersection of two merged interval lists."""
    i = j = 0
    total = 0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        total += max(0, b - a)
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return total


def timeline_main():
    ap = argparse.ArgumentParser(description=DOC_TIMELINE.split("\n\n")[0])
    ap.add_argument("--devices", default=None)
    ap.add_argument("--tree", default=None, help="the checkout whose oclclust runs")
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--budget", default="2GiB")
    ap.add_argument("--iters", type=int, default=4)
    ap.add_argument("--set", default="", help="module attributes for every variant")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME:transfer.X=V,shard.Y=W (repeatable); 'base' runs first")
    ap.add_argument("--detail", type=int, default=1, help="passes printed chunk by chunk")
    args = ap.parse_args()
    if args.tree:
        sys.path.insert(0, args.tree)
    import pyopencl as cl
    from _common import import_oclclust, select_profiles
    if not args.tree:
        oc = import_oclclust()
    else:
        import oclclust as oc
    PROF = cl.command_queue_properties.PROFILING_ENABLE
    Plain = cl.CommandQueue

    class ProfiledQueue(Plain):
        def __init__(self, context, device=None, properties=None):
            super().__init__(context, device, properties=(properties or 0) | PROF)
    cl.CommandQueue = ProfiledQueue

    from oclclust.runtime import codegen, transfer
    from oclclust.parallel import shard as shard_mod
    try:
        from oclclust.cluster.kmeans import lloyd_shards as sharded
    except ImportError:   # a tree from before sharded_lloyd.py (--tree)
        from oclclust.parallel import sharded
    modules = {"transfer": transfer, "shard": shard_mod, "sharded": sharded}
    tl = threading.local()
    log = {"events": [], "fills": [], "passes": 0, "fed": {}, "on": False}
    lock = threading.Lock()

    def tag():
        return getattr(tl, "tag", None) or ("?", (0, -1))

    def keep(kind, event, nbytes=0):
        if log["on"] and isinstance(event, cl.Event):
            with lock:
                log["events"].append((kind, tag(), nbytes, event))
        return event

    real_copy = cl.enqueue_copy

    def enqueue_copy(queue, dest, src, **kw):
        ev = real_copy(queue, dest, src, **kw)
        size = getattr(src, "nbytes", 0) if isinstance(src, np.ndarray) else \
            getattr(dest, "nbytes", 0)
        return keep("copy", ev, size)
    cl.enqueue_copy = enqueue_copy
    real_call = codegen.SharedKernel.__call__
    codegen.SharedKernel.__call__ = lambda self, *a, **kw: keep("kernel", real_call(self, *a, **kw))
    real_fill = transfer.copy_rows

    def copy_rows(dst, src):
        t = time.perf_counter_ns()
        real_fill(dst, src)
        if log["on"]:
            with lock:
                log["fills"].append((tag(), t, time.perf_counter_ns(), dst.nbytes))
    transfer.copy_rows = copy_rows
    real_feed, real_run = shard_mod.Shard._feed, shard_mod.Shard.run

    def feed(self, i, *a, **kw):
        old = getattr(tl, "tag", None)
        start = self.chunks[i].host_rows[0]
        with lock:   # the n-th feed of a chunk serves the n-th pass
            log["fed"][start] = log["fed"].get(start, 0) + 1
            tl.tag = ("feed", (log["fed"][start], start))
        try:
            return real_feed(self, i, *a, **kw)
        finally:
            tl.tag = old
    shard_mod.Shard._feed = feed

    def run(self, fn, rows=True):
        if rows and self.streamed:
            log["passes"] += 1
        return real_run(self, fn, rows)
    shard_mod.Shard.run = run
    # a chunk's pass is enqueued by _LloydChunk.launch (run, in a tree from before it)
    enqueues = "launch" if hasattr(sharded._LloydChunk, "launch") else "run"
    real_chunk = getattr(sharded._LloydChunk, enqueues)

    def chunk_pass(self, *a, **kw):
        tl.tag = ("pass", (log["passes"], self.chunk.host_rows[0]))
        try:
            return real_chunk(self, *a, **kw)
        finally:
            tl.tag = None
    setattr(sharded._LloydChunk, enqueues, chunk_pass)

    profile = oc.runtime.devices.preferred(select_profiles(oc, args.devices))[0]
    budget = nbytes(args.budget)
    X, _ = blobs(args.rows, args.d, args.k)
    C0 = X[np.random.default_rng(1).choice(len(X), args.k, replace=False)].astype(np.float64)
    print(f"stream_timeline: {profile} [{oc.__file__}]; {args.rows:,} x {args.d} "
          f"({X.nbytes / 1e9:.2f} GB), k={args.k}, budget {budget / 2 ** 30:g} GiB; GLIBC_TUNABLES="
          f"{os.environ.get('GLIBC_TUNABLES', '')!r}", flush=True)
    km = oc.KMeans(args.k, init=C0, n_init=1, max_iter=2, tol=0, devices=[profile])
    km.fit(X[:max(args.k, 20000)])   # kernels built
    variants = [("base", _parse_sets(args.set))]
    for text in args.variant:
        name, sets = text.split(":", 1)
        variants.append((name, _parse_sets(args.set) + _parse_sets(sets)))
    summary = []
    for name, sets in variants:
        saved = []
        for key, value in sets:
            mod, attr = key.split(".")
            saved.append((modules[mod], attr, getattr(modules[mod], attr)))
            setattr(modules[mod], attr, value)
        q = profile.queue()
        man = oc.DeviceManager([profile], memory_budget=budget)
        log.update(events=[], fills=[], passes=0, fed={}, on=True)
        km = oc.KMeans(args.k, init=C0, n_init=1, max_iter=args.iters, tol=0, devices=man)
        t0 = time.perf_counter()
        km.fit(X)
        whole = time.perf_counter() - t0
        log["on"] = False
        mark = cl.enqueue_marker(q)
        mark.wait()
        offset = time.perf_counter_ns() - mark.profile.end   # host ns - device ns
        for _, _, _, ev in log["events"]:
            ev.wait()
        its = [h["seconds"] for h in km.history_]
        print(f"\n== {name} {sets}: fit {whole:.3f} s, iterations "
              f"{' '.join(f'{s:.4f}' for s in its)}", flush=True)
        per = {}
        for kind, (role, key), size, ev in log["events"]:
            if role not in ("feed", "pass"):
                continue
            p, c = key
            per.setdefault((role, p), []).append((c, kind, size, ev.profile.start,
                                                  ev.profile.end))
        fills = {}
        for (role, key), a, b, size in log["fills"]:   # host ns -> device ns
            if role == "feed":
                fills.setdefault(key[0], []).append((a - offset, b - offset, size))
        print(f"{'pass':>4} {'span ms':>8} {'copy busy':>9} {'kern busy':>9} {'both':>7} "
              f"{'copy GB/s':>9} {'fill ms':>8} {'fill GB/s':>9} {'GB':>6}")
        npass = max((p for _, p in per), default=0)
        rows = []
        for p in range(1, npass + 1):
            kern = per.get(("pass", p), [])
            copies = [e for e in per.get(("feed", p), []) if e[1] == "copy"]
            if not kern or not copies:
                continue
            span = (max(e[4] for e in kern) - min(e[3] for e in kern)) / 1e6
            cbusy, cm = union([(e[3], e[4]) for e in copies])
            kbusy, km_ = union([(e[3], e[4]) for e in kern])
            both = intersection(cm, km_)
            gb = sum(e[2] for e in copies) / 1e9
            fl = fills.get(p, [])
            fbusy, _ = union([(a, b) for a, b, _ in fl])
            fgb = sum(s for _, _, s in fl) / 1e9
            rows.append((span, cbusy / 1e6, kbusy / 1e6, both / 1e6, fbusy / 1e6,
                         fgb / (fbusy / 1e9) if fbusy else 0))
            print(f"{p:4d} {span:8.1f} {cbusy / 1e6:9.1f} {kbusy / 1e6:9.1f} {both / 1e6:7.1f} "
                  f"{gb / (cbusy / 1e9) if cbusy else 0:9.1f} {fbusy / 1e6:8.1f} "
                  f"{fgb / (fbusy / 1e9) if fbusy else 0:9.1f} {gb:6.2f}")
        for p in range(max(2, npass - args.detail), npass):
            kern = per.get(("pass", p), [])
            if not kern:
                continue
            base = min(e[3] for e in kern)
            chunks = sorted({e[0] for e in kern})
            print(f"pass {p} chunk by chunk (ms from its first kernel; copy: [first start, "
                  "last end] of its DMAs; fill: host [first, last] of its pieces):")
            for c in chunks:
                cps = [e for e in per.get(("feed", p), []) if e[0] == c and e[1] == "copy"]
                ks = [e for e in kern if e[0] == c]
                fl = [f for f in log["fills"] if f[0] == ("feed", (p, c))]
                line = f"  rows {c:>10}: "
                if cps:
                    line += (f"copy {(min(e[3] for e in cps) - base) / 1e6:8.2f} .. "
                             f"{(max(e[4] for e in cps) - base) / 1e6:8.2f} ({len(cps)} DMAs) ")
                if fl:
                    line += (f"fill {(min(a for _, a, _, _ in fl) - offset - base) / 1e6:8.2f} .. "
                             f"{(max(b for _, _, b, _ in fl) - offset - base) / 1e6:8.2f} ")
                line += (f"kernels {(min(e[3] for e in ks) - base) / 1e6:8.2f} .. "
                         f"{(max(e[4] for e in ks) - base) / 1e6:8.2f} ({len(ks)})")
                print(line)
        mid = rows[1:] or rows
        summary.append((name, float(np.median(its[1:] or its)), whole,
                        *(float(np.median([r[i] for r in mid])) if mid else 0 for i in range(6))))
        for mod, attr, value in saved:
            setattr(mod, attr, value)
    print(f"\nmedians over passes 2..: {'variant':<10} {'s/iter':>7} {'fit s':>6} {'span ms':>7} "
          f"{'copy ms':>7} {'kern ms':>7} {'both ms':>7} {'fill ms':>7} {'fill GB/s':>9}")
    for name, it, whole, span, cb, kb, both, fb, fr in summary:
        print(f"{'':24} {name:<10} {it:7.4f} {whole:6.3f} {span:7.1f} {cb:7.1f} {kb:7.1f} "
              f"{both:7.1f} {fb:7.1f} {fr:9.1f}")


MEASUREMENTS = {
    "speed": (speed_main, DOC_SPEED),
    "probe": (probe_main, DOC_PROBE),
    "timeline": (timeline_main, DOC_TIMELINE),
}


if __name__ == "__main__":
    sys.exit(run_measurement(MEASUREMENTS, __doc__))
