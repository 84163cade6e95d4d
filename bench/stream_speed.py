#!/usr/bin/env python3
"""Streaming at the link's speed: one k-means iteration streamed through a
memory budget vs resident, and the host -> device rates beneath it.

    python bench/stream_speed.py --devices NVIDIA --rows 20000000 --d 128 --k 1024 \
        --budget 2GiB
    python bench/stream_speed.py --devices "Intel(R) OpenCL" --quick

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
import argparse
import os
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from _common import add_devices_argument, import_oclclust, select_profiles, table

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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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


if __name__ == "__main__":
    main()
