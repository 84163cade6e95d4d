#!/usr/bin/env python3
"""The command timeline of a streamed k-means fit: when each host -> device
copy and each kernel of every pass starts and ends on the device (OpenCL
event profiling), and when the host fills each pinned piece.

    python bench/stream_timeline.py --devices NVIDIA --rows 20000000 --d 128 --k 1024 \
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
import argparse
import os
import sys
import threading
import time

import numpy as np


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
    from stream_speed import blobs, nbytes
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


if __name__ == "__main__":
    main()
