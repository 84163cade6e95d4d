#!/usr/bin/env python3
"""Where a small warm KMeans fit spends its time: cProfile of repeated fits.

    python bench/profile_small.py --devices NVIDIA --shape 10000 8 8 [--top 40]
"""
import argparse
import cProfile
import pstats
import sys
import time

import numpy as np

from _common import import_oclclust


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", default="Portable")
    ap.add_argument("--shape", type=int, nargs=3, default=[10000, 8, 8], metavar=("N", "D", "K"))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--fits", type=int, default=50)
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args(argv)
    oc = import_oclclust()
    n, d, k = args.shape
    X = np.random.default_rng(0).normal(size=(n, d)).astype(np.float32)
    km = oc.KMeans(k, init=X[:k].copy(), n_init=1, max_iter=args.iters, tol=0,
                   devices=oc.select_devices(args.devices))
    km.fit(X)
    times = []
    for _ in range(args.fits):
        start = time.perf_counter()
        km.fit(X)
        times.append(time.perf_counter() - start)
    print(f"{n} x {d}, k={k}, {km.n_iter_} iterations: warm fit {np.median(times) * 1e3:.2f} ms "
          f"(median of {args.fits})")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.fits):
        km.fit(X)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
