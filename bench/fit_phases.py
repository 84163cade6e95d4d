#!/usr/bin/env python3
"""Where a warm KMeans or FuzzyCMeans fit from host rows spends its time,
phase by phase (the fit's functions wrapped with timers, nothing changed):
placing the rows, the Lloyd loop (its host-update iterations apart), the
final pass and labels, the rest; c-means: the rows, the moments, the start,
the iterations, the final memberships pass (and the passes' set-up in it);
and the garbage collector's pauses.

    python bench/fit_phases.py --devices NVIDIA --n 1000000 --d 32 --k 256 --iters 50
    python bench/fit_phases.py --devices NVIDIA --estimator FuzzyCMeans --n 1000000 --d 24 \
        --k 100 --iters 20
"""
import argparse
import gc
import time
from collections import defaultdict

import numpy as np

from _common import add_devices_argument, import_oclclust, large_blobs, time_calls


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_devices_argument(ap)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--estimator", choices=("KMeans", "FuzzyCMeans"), default="KMeans")
    args = ap.parse_args()
    oc = import_oclclust()
    from oclclust.cluster import _base
    from oclclust.cluster.mixture import cmeans
    from oclclust.cluster.kmeans import kmeans, lloyd_loop
    from oclclust.parallel import sharded
    from oclclust.cluster.kmeans import lloyd_shards as sharded_lloyd
    spent = defaultdict(float)

    def timed(owner, name, label):
        def add(start, end):
            spent[label] += end - start
        time_calls(owner, name, add)
    timed(_base, "fit_data", "rows placed (fit_data)")
    if args.estimator == "KMeans":
        timed(kmeans, "fit_lloyd", "Lloyd loop (fit_lloyd)")
        timed(lloyd_loop, "host_update", "  of which host-update iterations")
        timed(kmeans.LloydModel, "finish", "  of which finish (final pass, labels)")
        timed(sharded_lloyd.LloydShards, "centers_to_host", "  of which centers_to_host")
        loop = "Lloyd loop (fit_lloyd)"
    else:
        timed(cmeans.FuzzyCMeans, "_fit", "c-means (_fit)")
        timed(cmeans.FuzzyCMeans, "_mean_and_tol", "  of which moments (_mean_and_tol)")
        timed(cmeans.FuzzyCMeans, "_init_centers", "  of which start (_init_centers)")
        timed(sharded.CMeansShards, "run", "  of which iterations (CMeansShards.run)")
        timed(sharded.CMeansShards, "memberships", "  of which final pass (memberships)")
        timed(cmeans.CMeansPass, "__init__", "    passes made (CMeansPass.__init__)")
        loop = "c-means (_fit)"
    gc_t = {}

    def on_gc(phase, info):
        if phase == "start":
            gc_t["t"] = time.perf_counter()
        elif "t" in gc_t:
            spent["gc pauses"] += time.perf_counter() - gc_t.pop("t")
    gc.callbacks.append(on_gc)
    X = large_blobs(args.n, args.d, args.k)
    C0 = X[np.random.default_rng(1).choice(len(X), args.k, replace=False)].copy()
    if args.estimator == "KMeans":
        make = lambda: oc.KMeans(args.k, init=C0, n_init=1, max_iter=args.iters,   # noqa
                                 tol=0, devices=args.devices)
    else:
        make = lambda: oc.FuzzyCMeans(args.k, m=2.0, init=C0, max_iter=args.iters,   # noqa
                                      tol=0, devices=args.devices)
    make().fit(X)
    walls, runs = [], []
    for _ in range(args.repeats):
        spent.clear()
        t = time.perf_counter()
        km = make().fit(X)
        walls.append(time.perf_counter() - t)
        runs.append(dict(spent))
    i = int(np.argmin(walls))
    its = [h["seconds"] for h in km.history_]
    print(f"{args.estimator} {args.n} x {args.d} x {args.k}, {args.iters} iterations: "
          "best warm fit "
          f"{walls[i] * 1e3:.1f} ms (median {np.median(walls) * 1e3:.1f}); iterations: "
          f"median {np.median(its) * 1e3:.3f} ms, sum {sum(its) * 1e3:.1f} ms, first "
          f"{its[0] * 1e3:.2f} ms, max {max(its) * 1e3:.2f} ms")
    for label, s in runs[i].items():
        print(f"  {label:42s} {s * 1e3:8.2f} ms")
    outside = walls[i] - runs[i].get("rows placed (fit_data)", 0) - runs[i].get(loop, 0)
    print(f"  {'outside these':42s} {outside * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
