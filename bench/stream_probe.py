#!/usr/bin/env python3
"""Where a streamed k-means iteration's time goes: the host fill of pinned
pieces by 1..16 threads, the DMA alone, the two at once, pageable copies
on several queues, the staging pipeline by piece size, then a streamed fit
with its fills, waits and chunk passes timed (runtime.transfer and
parallel.shard wrapped, nothing changed).

    python bench/stream_probe.py --devices NVIDIA --rows 20000000 --d 128 --k 1024 \
        --budget 2GiB
"""
import argparse
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from _common import add_devices_argument, import_oclclust, select_profiles
from stream_speed import blobs, nbytes


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

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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


if __name__ == "__main__":
    main()
