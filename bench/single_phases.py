#!/usr/bin/env python3
"""Where single linkage on the rows spends its time: the MST's spatial order,
device scans (each finished before the clock reads), Boruvka's host rounds
(of which _known and connected_components), toward_root, and the host's
labelling of the sorted edges (scipy's Z) -- one warm run per size.

    python bench/single_phases.py --devices NVIDIA --n 100000 1000000 --d 32

The data are bench/hierarchical.py's (blobs(n, d, 50), seed 0, float64).
"""
import argparse
import time

import numpy as np

from _common import add_devices_argument, blobs, import_oclclust


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100000])
    ap.add_argument("--d", type=int, default=32)
    add_devices_argument(ap)
    args = ap.parse_args()
    import_oclclust()
    import scipy.sparse.csgraph as csgraph
    import oclclust.passes.mst as mst
    import oclclust.cluster.hierarchy.linkage_matrix as hc
    from oclclust.passes.linkage import Plan
    from oclclust.runtime.devices import preferred, select_devices
    dev = preferred(select_devices(args.devices))[0]
    plan = Plan(dev, np.float64 if dev.fp64 else np.float32)
    stats = {}

    def add(key, seconds, count=1):
        stats[key] = stats.get(key, 0.0) + seconds
        stats[key + "#"] = stats.get(key + "#", 0) + count

    def timer(key, fn):
        def timed(*a, **k):
            t = time.perf_counter()
            out = fn(*a, **k)
            add(key, time.perf_counter() - t)
            return out
        return timed
    real_kernel = mst.nearest_kernel

    def timed_kernel(*a):
        spec, kern = real_kernel(*a)

        def run(q, g, l, *kargs):
            q.finish()
            t = time.perf_counter()
            kern(q, g, l, *kargs)
            q.finish()
            add("scan", time.perf_counter() - t)
            stats["rows"] = stats.get("rows", 0) + int(kargs[4])
        return spec, run
    mst.nearest_kernel = timed_kernel
    mst.spatial_order = timer("order", mst.spatial_order)
    mst._known = timer("known", mst._known)
    mst.toward_root = timer("toward_root", mst.toward_root)
    csgraph.connected_components = timer("components", csgraph.connected_components)
    mst.minimum_spanning_tree(plan, blobs(300, args.d, 5).astype(np.float64))
    print(f"single linkage phases on {dev}; d={args.d}", flush=True)
    for n in args.n:
        X = blobs(n, args.d, 50).astype(np.float64)
        stats.clear()
        t0 = time.perf_counter()
        a, b, w = mst.minimum_spanning_tree(plan, X)
        t1 = time.perf_counter()
        Z = np.empty((n - 1, 4))
        Z[:, 0], Z[:, 1], Z[:, 2] = a, b, w
        hc.label(Z, n)
        t2 = time.perf_counter()
        rest = t1 - t0 - sum(stats.get(k, 0) for k in ("order", "scan", "known", "toward_root",
                                                           "components"))
        print(f"n={n}: MST {t1 - t0:.3f} s = order {stats['order']:.3f} + "
              f"{stats['scan#']} scans {stats['scan']:.3f} ({stats['rows'] / n:.2f} n rows) + "
              f"_known {stats['known']:.3f} + {stats['components#']} rounds' components "
              f"{stats['components']:.3f} + toward_root {stats.get('toward_root', 0):.3f} + "
              f"other host {rest:.3f}; label {t2 - t1:.3f} s; total {t2 - t0:.3f} s",
              flush=True)


if __name__ == "__main__":
    main()
