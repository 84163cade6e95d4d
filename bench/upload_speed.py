#!/usr/bin/env python3
"""Host rows onto several devices at once: the layout step of a fit
(DeviceManager.scatter: every device's share through its pinned staging,
all devices together) against plain pageable copies, by device count.

    python bench/upload_speed.py --devices NVIDIA --counts 1 2 4 --rows 10000000 --d 128
    python bench/upload_speed.py --devices "Intel(R) OpenCL" --counts 1 --rows 1000000 --d 32

For each count: seconds and GB/s of scatter (best of --repeat) at each
--fill-threads x --piece-mib setting, and of one thread per device each
copying its share from pageable numpy memory (the runtime's own staging).
"""
import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from _common import add_devices_argument, import_oclclust, large_blobs, select_profiles, table


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", type=int, nargs="+", default=[1])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--fill-threads", type=int, nargs="+", default=[0], help="0: as shipped")
    ap.add_argument("--piece-mib", type=int, nargs="+", default=[0], help="0: as shipped")
    ap.add_argument("--repeat", type=int, default=3)
    add_devices_argument(ap)
    args = ap.parse_args()
    oc = import_oclclust()
    from oclclust.runtime import transfer
    X = large_blobs(args.rows, args.d, 64)
    found = select_profiles(oc, args.devices)
    shipped = transfer.FILL_THREADS, transfer.PIECE_BYTES
    rows = []
    for count in args.counts:
        profiles = found[:count]
        for threads in args.fill_threads:
            for piece in args.piece_mib:
                transfer.FILL_THREADS = threads or shipped[0]
                transfer.PIECE_BYTES = (piece << 20) or shipped[1]
                transfer._fill_pool = None   # sized anew
                transfer._shared.clear()     # pinned pieces made anew at this size
                mgr = oc.DeviceManager(profiles)
                mgr.scatter(X[:100_000])     # contexts, staging made
                s = best(lambda: mgr.scatter(X), args.repeat)
                rows.append([str(count), f"scatter, {transfer.FILL_THREADS} fill threads, "
                             f"{transfer.PIECE_BYTES >> 20} MiB pieces", f"{s:.3f}",
                             f"{X.nbytes / s / 1e9:.1f}"])
                print(rows[-1], flush=True)
        contexts = [cl.Context([p.cl_device()]) for p in profiles]
        queues = [cl.CommandQueue(c) for c in contexts]
        shares = np.array_split(np.arange(len(X)), count)
        targets = [cla.empty(q, (len(s), args.d), X.dtype) for q, s in zip(queues, shares)]

        def pageable():
            def one(i):
                s = shares[i]
                cl.enqueue_copy(queues[i], targets[i].data, X[s[0]:s[-1] + 1], is_blocking=True)
            with ThreadPoolExecutor(count) as pool:
                list(pool.map(one, range(count)))
        pageable()
        s = best(pageable, args.repeat)
        rows.append([str(count), "pageable enqueue_copy, a thread per device", f"{s:.3f}",
                     f"{X.nbytes / s / 1e9:.1f}"])
        print(rows[-1], flush=True)
        del targets
    transfer.FILL_THREADS, transfer.PIECE_BYTES = shipped
    print(f"{args.rows} x {args.d} float32 = {X.nbytes / 1e9:.2f} GB")
    print(table(["devices", "path", "seconds", "GB/s"], rows, left=2))


if __name__ == "__main__":
    main()
