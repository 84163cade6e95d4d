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

import numpy as np

from _common import data_functions, import_oclclust, seconds


def timed_fit(oc, devices, X, C0, iters):
    km = oc.KMeans(len(C0), init=C0, n_init=1, max_iter=iters, tol=0, devices=devices)
    return seconds(km.fit, X)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", default="all",
                    help='comma-separated platform/device name substrings, or "all"')
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--weights", default="measured",
                    help='"measured", "compute_units", or comma-separated numbers; several '
                         'modes separated by ";" run one after another')
    ap.add_argument("--host-cores", type=int, default=1,
                    help="CPU cores per GPU left to the host threads in the joint fit "
                         "(the CPU device becomes a sub-device of the rest; 0: none)")
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
    rows, iter_alone = [], []
    for p in profiles:
        seconds, km = timed_fit(oc, [p], X, C0, args.iters)
        rows.append((str(p), seconds))
        iter_alone.append(float(np.median([h["seconds"] for h in km.history_[1:]])))
        print(f"  alone     {p}: fit {seconds:.3f} s, {args.n * args.iters / seconds:,.0f} "
              "rows/s", flush=True)
    alone = sum(args.n * args.iters / s for _, s in rows)
    alone_iter = sum(args.n / it for it in iter_alone)
    for mode in args.weights.split(";"):
        weights = (mode if mode in ("measured", "compute_units")
                   else [float(w) for w in mode.split(",")])
        together_profiles = (oc.parallel.manager.reserve_host_cores(profiles, args.host_cores)
                             if args.host_cores else profiles)
        for p in together_profiles:   # a sub-device builds its kernels anew
            if p not in profiles:
                timed_fit(oc, [p], X[:max(args.k, 20000)], C0, 1)
        manager = oc.DeviceManager(together_profiles, weights=weights)
        seconds, km = timed_fit(oc, manager, X, C0, args.iters)
        together = args.n * args.iters / seconds
        per_iter = float(np.median([h["seconds"] for h in km.history_[1:]]))
        print(f"  together  {len(profiles)} devices ({mode} weights, {args.host_cores} host "
              f"core(s) per GPU): fit {seconds:.3f} s, {together:,.0f} rows/s; rows "
              f"{km.devices_}; re-laid out {km.reshards_} times; median iteration "
              f"{per_iter:.4f} s")
        print(f"efficiency ({mode}): whole fit {together / alone:.3f}, "
              f"steady iterations {args.n / per_iter / alone_iter:.3f}", flush=True)

if __name__ == "__main__":
    main()
