#!/usr/bin/env python3
"""Where a warm KMeans fit over one or several devices spends its time: the
fit's own functions wrapped with timers (nothing changed), each call's
thread recorded, then per-iteration means of the host's round trip and of
each device's pass (its upload, the wait for its kernels and reads, the
rest).  What several GPUs lose to the host between passes shows as the
iteration's time less its slowest device's pass.

    python bench/fit_timeline.py --devices NVIDIA --count 1 2 --n 10000000 --d 128 --k 1024
"""
import argparse
import threading
import time
from collections import defaultdict

import numpy as np

from _common import (add_devices_argument, import_oclclust, large_blobs, select_profiles,
                     time_calls)

EVENTS = []   # (name, thread name, start, end)


def wrap(owner, name, label=None):
    time_calls(owner, name, lambda start, end: EVENTS.append(
        (label or name, threading.current_thread().name, start, end)))


def instrument():
    import pyopencl as cl
    from oclclust.cluster.kmeans import lloyd_loop, kmeans
    from oclclust.parallel import device_data
    from oclclust.passes import lloyd
    wrap(device_data.DeviceData, "_layout", "layout")
    wrap(lloyd_loop, "lloyd_step", "iteration")
    wrap(lloyd_loop, "host_update", "host_update")
    wrap(lloyd.LloydPass, "run", "pass")
    wrap(lloyd.LloydPass, "upload", "pass.upload")
    wrap(lloyd.LloydPass, "enqueue", "pass.enqueue")
    wrap(lloyd.LloydPass, "launch", "launch")
    wrap(lloyd.LloydPass, "collect", "collect")
    wrap(kmeans.LloydModel, "finish", "finish")
    wrap(lloyd_loop, "centers_update", "centers_update")
    from oclclust.cluster import _base
    from oclclust.parallel import sharded
    wrap(_base.KCluster, "_fit_on_devices", "fit_body")
    wrap(lloyd, "center_norms", "pass.norms")
    wrap(lloyd, "split_centers", "pass.split")
    wrap(sharded.ShardedPass, "reduce", "reduce")
    wrap(kmeans.LloydModel, "record", "record")
    wrap(lloyd_loop, "history_entry", "history")
    from oclclust.parallel import placement
    wrap(_base, "fit_data", "fit_data")
    wrap(kmeans, "fit_lloyd", "fit_lloyd")
    wrap(kmeans.KMeans, "_init_centers", "init_centers")
    wrap(lloyd_loop.LloydBackend, "relocate", "relocate")
    wrap(np, "bincount", "bincount")
    from oclclust.cluster import _base as base
    orig_relocate = base.relocate_empty

    def relocate_empty(sums, weights, *a, **kw):   # how many clusters were empty
        EVENTS.append((f"empty {int((weights == 0).sum())}", "", 0.0, 0.0))
        return orig_relocate(sums, weights, *a, **kw)
    lloyd_loop.relocate_empty = relocate_empty
    wrap(cl, "wait_for_events", "wait")   # a pass's one wait for its kernels and reads


def summarise(fit_start, fit_end):
    print(f"  whole fit {1e3 * (fit_end - fit_start):.1f} ms")
    span = defaultdict(float)
    for name, _, s, e in EVENTS:
        if name in ("layout", "finish", "fit_body", "fit_data", "fit_lloyd", "init_centers",
                    "relocate", "bincount"):
            span[name] += e - s
    iters = sorted((s, e) for name, _, s, e in EVENTS if name == "iteration")
    print(f"  layout {1e3 * span['layout']:.1f} ms, finish {1e3 * span['finish']:.1f} ms, "
          f"{len(iters)} iterations {1e3 * sum(e - s for s, e in iters):.1f} ms, "
          f"rest {1e3 * (fit_end - fit_start - span['layout'] - span['finish'] - sum(e - s for s, e in iters)):.1f} ms, "
          f"of which after the fit's body (its objects released) "
          f"{1e3 * (fit_end - fit_start - span['fit_body']):.1f} ms")
    print("  fit_data {:.1f} (layout inside), fit_lloyd {:.1f} (iterations and finish inside), "
          "init_centers {:.1f}, bincount {:.1f}, relocate {:.1f} ms; first iterations {} ms".format(
              *[1e3 * span[k] for k in ("fit_data", "fit_lloyd", "init_centers", "bincount",
                                        "relocate")],
              ", ".join(f"{1e3 * (e - s):.1f}" for s, e in iters[:3])))
    print("  relocations: " + ", ".join(n for n, *_ in EVENTS if n.startswith("empty")))
    rows = []
    for s, e in iters[2:]:   # warm iterations
        inside = [(n, t, a, b) for n, t, a, b in EVENTS if a >= s and b <= e]
        per = defaultdict(lambda: defaultdict(float))
        for n, t, a, b in inside:
            per[t][n] += b - a
        passes = {t: v for t, v in per.items() if v.get("pass")}
        main = threading.main_thread().name
        slowest = max(passes.values(), key=lambda v: v["pass"]) if passes else {}
        update = sum(b - a for n, _, a, b in inside if n == "centers_update")
        reduce_ = [b - a for n, t, a, b in inside if n == "reduce" and t == main]
        small = {n: sum(b - a for m, _, a, b in inside if m == n)
                 for n in ("pass.norms", "pass.split", "record", "history")}
        main_thread = per[main]
        enq = "launch" in main_thread and "pass" not in main_thread
        rows.append((e - s, main_thread["launch"] + main_thread["collect"] if enq
                     else slowest.get("pass", 0), slowest.get("pass.upload", 0),
                     slowest.get("pass.enqueue", 0), slowest.get("wait", 0),
                     update, len(passes), sum(reduce_), *small.values(),
                     main_thread["launch"] if enq else 0, main_thread["collect"] if enq else 0))
    if rows:
        m = np.mean(rows, axis=0) * 1e3
        print(f"  per iteration (mean of {len(rows)}): {m[0]:.2f} ms; slowest device's pass "
              f"{m[1]:.2f} (upload {m[2]:.2f}, enqueue {m[3]:.2f}, wait {m[4]:.2f}, "
              f"rest {m[1] - m[2] - m[3] - m[4]:.2f}); outside the passes {m[0] - m[1]:.2f} "
              f"(centres update {m[5]:.2f}); passes seen {int(rows[0][6])}; main thread's reduce {m[7]:.2f}; all threads' norms "
              f"{m[8]:.2f}, split {m[9]:.2f}; record {m[10]:.2f}, history {m[11]:.2f}"
              + (f"; launched from the main thread: launches {m[12]:.2f}, collects {m[13]:.2f}"
                 if m[12] else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_devices_argument(ap)
    ap.add_argument("--count", type=int, nargs="+", default=[1])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--host-update", action="store_true", help="one device: the host's update")
    args = ap.parse_args()
    oc = import_oclclust()
    if args.host_update:
        from oclclust.cluster.kmeans import kmeans
        kmeans.DEVICE_UPDATE = False
    instrument()
    X = large_blobs(args.n, args.d, args.k)
    C0 = X[np.random.default_rng(1).choice(len(X), args.k, replace=False)].copy()
    profiles = select_profiles(oc, args.devices)
    for count in args.count:
        mgr = oc.DeviceManager(profiles[:count], weights="compute_units")
        make = lambda: oc.KMeans(args.k, init=C0, n_init=1, max_iter=args.iters, tol=0,
                                 devices=mgr)
        make().fit(X[:200_000])
        make().fit(X)   # warm: every kernel and pinned array made
        EVENTS.clear()
        start = time.perf_counter()
        make().fit(X)
        end = time.perf_counter()
        print(f"{count} device(s), {args.n} x {args.d}, k={args.k}, {args.iters} iterations"
              + (" (host update)" if args.host_update else ""))
        summarise(start, end)


if __name__ == "__main__":
    main()
