#!/usr/bin/env python3
"""Where one fit spends its time: cProfile of a warm fit of DBSCAN, HDBSCAN,
single linkage, MiniBatchKMeans or KMeans on blobs (the calls into the device
passes, their counts and cumulative times).

    python bench/profile_fit.py --devices NVIDIA --estimator DBSCAN --n 1000000
    python bench/profile_fit.py --devices NVIDIA --estimator MiniBatchKMeans \
        --n 10000000 --d 128 --k 1024 --batch 65536
    python bench/profile_fit.py --devices NVIDIA --count 2 --estimator KMeans \
        --n 10000000 --d 128 --k 1024 --host-update

KMeans: 20 iterations (tol 0) from k rows; --count N takes the first N
matching devices (threads beyond the first are not seen by cProfile: compare
the per-iteration medians); --host-update forces the host's centre update.
"""
import argparse
import cProfile
import pstats
import time

import numpy as np

from _common import add_devices_argument, blobs, import_oclclust, large_blobs, select_profiles

MAKERS = {
    "DBSCAN": lambda oc, dev, a: oc.DBSCAN(eps=2.0, min_samples=10, devices=dev),
    "HDBSCAN": lambda oc, dev, a: oc.HDBSCAN(min_cluster_size=20, min_samples=10, devices=dev),
    "single": lambda oc, dev, a: oc.AgglomerativeClustering(n_clusters=20, linkage="single",
                                                            devices=dev),
    "MiniBatchKMeans": lambda oc, dev, a: oc.MiniBatchKMeans(
        a.k, batch_size=a.batch, max_iter=1, max_no_improvement=None, random_state=0,
        devices=dev),
    "KMeans": lambda oc, dev, a: oc.KMeans(a.k, init=a.init, n_init=1, max_iter=20, tol=0,
                                           devices=dev),
    "FuzzyCMeans": lambda oc, dev, a: oc.FuzzyCMeans(a.k, init=a.init, max_iter=20, tol=0,
                                                     devices=dev),
}
ROWS = ("MiniBatchKMeans", "KMeans", "FuzzyCMeans")   # float32 rows, as the k-means benches'



def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--estimator", choices=sorted(MAKERS), default="DBSCAN")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--k", type=int, default=20, help="blob centres (and MiniBatchKMeans' k)")
    ap.add_argument("--batch", type=int, default=4096, help="MiniBatchKMeans' batch_size")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--count", type=int, default=0, help="the first N matching devices")
    ap.add_argument("--host-update", action="store_true", help="KMeans: the host's update")
    ap.add_argument("--cold", action="store_true",
                    help="profile the process's first fit (devices, contexts, programs from "
                         "the on-disk cache, pinned staging) instead of a warm one")
    add_devices_argument(ap)
    args = ap.parse_args()
    oc = import_oclclust()
    make = MAKERS[args.estimator]
    if args.count:
        args.devices = oc.DeviceManager(select_profiles(oc, args.devices)[:args.count],
                                        weights="compute_units")
    if args.host_update:
        from oclclust.cluster.kmeans import kmeans
        kmeans.DEVICE_UPDATE = False
    if args.estimator in ROWS:
        X = large_blobs(args.n, args.d, args.k)
        args.init = X[np.random.default_rng(1).choice(len(X), args.k, replace=False)].copy()
        if args.cold:
            profiled(make(oc, args.devices, args).fit, X, args,
                     "the process's first fit, under cProfile", ("cumulative",))
            return
        make(oc, args.devices, args).fit(X[:max(4 * args.batch, 2 * args.k)])   # builds
    else:
        make(oc, args.devices, args).fit(blobs(600, args.d, args.k).astype(np.float64))
        X = blobs(args.n, args.d, args.k).astype(np.float64)
    est = make(oc, args.devices, args)
    start = time.perf_counter()
    est.fit(X)
    print(f"{args.estimator} {args.n} x {args.d}: {time.perf_counter() - start:.3f} s")
    if getattr(est, "history_", None):
        its = [h["seconds"] for h in est.history_[1:] if "seconds" in h]
        print(f"  per iteration (median of {len(its)}): {np.median(its) * 1e3:.2f} ms")
    profiled(make(oc, args.devices, args).fit, X, args, "under cProfile",
             ("cumulative", "tottime"))


def profiled(fit, X, args, what, orders):
    """fit(X) under cProfile: its time, then the top calls in each order."""
    prof = cProfile.Profile()
    start = time.perf_counter()
    prof.runcall(fit, X)
    print(f"{args.estimator} {args.n} x {args.d}: {time.perf_counter() - start:.3f} s ({what})")
    for order in orders:
        pstats.Stats(prof).sort_stats(order).print_stats(args.top)


if __name__ == "__main__":
    main()
