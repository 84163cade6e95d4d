#!/usr/bin/env python3
"""Where one fit spends its time: cProfile of a warm fit of DBSCAN, HDBSCAN,
single linkage or MiniBatchKMeans on blobs (the calls into the device
passes, their counts and cumulative times).

    python bench/profile_fit.py --devices NVIDIA --estimator DBSCAN --n 1000000
    python bench/profile_fit.py --devices NVIDIA --estimator MiniBatchKMeans \
        --n 10000000 --d 128 --k 1024 --batch 65536
"""
import argparse
import cProfile
import pstats
import time

import numpy as np

from _common import add_devices_argument, blobs, import_oclclust, large_blobs

MAKERS = {
    "DBSCAN": lambda oc, dev, a: oc.DBSCAN(eps=2.0, min_samples=10, devices=dev),
    "HDBSCAN": lambda oc, dev, a: oc.HDBSCAN(min_cluster_size=20, min_samples=10, devices=dev),
    "single": lambda oc, dev, a: oc.AgglomerativeClustering(n_clusters=20, linkage="single",
                                                            devices=dev),
    "MiniBatchKMeans": lambda oc, dev, a: oc.MiniBatchKMeans(
        a.k, batch_size=a.batch, max_iter=1, max_no_improvement=None, random_state=0,
        devices=dev),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--estimator", choices=sorted(MAKERS), default="DBSCAN")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--k", type=int, default=20, help="blob centres (and MiniBatchKMeans' k)")
    ap.add_argument("--batch", type=int, default=4096, help="MiniBatchKMeans' batch_size")
    ap.add_argument("--top", type=int, default=25)
    add_devices_argument(ap)
    args = ap.parse_args()
    oc = import_oclclust()
    make = MAKERS[args.estimator]
    kmeans = args.estimator == "MiniBatchKMeans"
    if kmeans:   # float32 rows, as bench/minibatch_speed.py's
        X = large_blobs(args.n, args.d, args.k)
        make(oc, args.devices, args).fit(X[:4 * args.batch])   # builds
    else:
        make(oc, args.devices, args).fit(blobs(600, args.d, args.k).astype(np.float64))
        X = blobs(args.n, args.d, args.k).astype(np.float64)
    prof = cProfile.Profile()
    start = time.perf_counter()
    prof.runcall(make(oc, args.devices, args).fit, X)
    print(f"{args.estimator} {args.n} x {args.d}: {time.perf_counter() - start:.3f} s "
          "(under cProfile)")
    pstats.Stats(prof).sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
