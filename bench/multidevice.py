#!/usr/bin/env python3
"""k-means throughput of each device alone and of all of them in one fit.

    python bench/multidevice.py --devices "NVIDIA,Portable Computing Language" \
        --n 10000000 --d 128 --k 1024 --iters 5

Each device first fits alone (devices=[profile]); then one fit spreads the
rows over all of them through a DeviceManager (weights "measured" by default:
a calibration pass, then rebalancing from the iterations' timings).  The
figure of merit is the efficiency: rows per second together over the sum of
rows per second alone.  Times are whole fits (upload, moments, iterations,
final assignment; the calibration too for the joint fit), after a warm-up fit
that builds the kernels.  Data and initial centres as bench/kmeans.py.
"""
import argparse
import time

from kmeans import data_functions, import_oclclust


def timed_fit(oc, devices, X, C0, iters):
    km = oc.KMeans(len(C0), init=C0, n_init=1, max_iter=iters, tol=0, devices=devices)
    start = time.perf_counter()
    km.fit(X)
    return time.perf_counter() - start, km


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", default="all",
                    help='comma-separated platform/device name substrings, or "all"')
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--weights", default="measured",
                    help='"measured", "compute_units", or comma-separated numbers')
    ap.add_argument("--baselines", default=None, help="baselines.py for the data (optional)")
    args = ap.parse_args(argv)
    oc = import_oclclust()
    profiles = oc.DeviceManager(args.devices).profiles
    make_blobs, init_centers, source = data_functions(args.baselines or "")
    X, _, _ = make_blobs(args.n, args.d, args.k)
    C0 = init_centers(X, args.k)
    print(f"multidevice: n={args.n:,} d={args.d} k={args.k} iters={args.iters}; data from "
          f"{source}", flush=True)
    for p in profiles:   # build every kernel once
        timed_fit(oc, [p], X[:max(args.k, 20000)], C0, 1)
    rows = []
    for p in profiles:
        seconds, _ = timed_fit(oc, [p], X, C0, args.iters)
        rows.append((str(p), seconds))
        print(f"  alone     {p}: fit {seconds:.3f} s, {args.n * args.iters / seconds:,.0f} "
              "rows/s", flush=True)
    weights = (args.weights if args.weights in ("measured", "compute_units")
               else [float(w) for w in args.weights.split(",")])
    manager = oc.DeviceManager(profiles, weights=weights)
    seconds, km = timed_fit(oc, manager, X, C0, args.iters)
    alone = sum(args.n * args.iters / s for _, s in rows)
    together = args.n * args.iters / seconds
    print(f"  together  {len(profiles)} devices ({args.weights} weights): fit {seconds:.3f} s, "
          f"{together:,.0f} rows/s; rows {km.devices_}; re-laid out {km.reshards_} times")
    print(f"\nefficiency: together / sum of alone = {together:,.0f} / {alone:,.0f} = "
          f"{together / alone:.3f}")


if __name__ == "__main__":
    main()
