"""Hierarchical clustering: oclclust.linkage against scipy and fastcluster.

    python3 bench/hierarchy.py --n 20000 50000 --d 32 \
        --methods ward average single --devices NVIDIA
    python3 bench/hierarchy.py --quick --devices Intel
    python3 bench/hierarchy.py --sizes 20000 100000 1000000 --d 32 \
        --methods single --devices NVIDIA --phases

Single linkage runs on the rows (passes/mst.py: Boruvka's MST, O(N d)
memory) past the condensed matrix and from the profile's
mst_single_rows_from observations on; ward, centroid and median past the
matrix (passes/linkage_rows.py: the chain and the generic algorithm over
centroids); the "engine" column says which ran ("matrix/3": the condensed
matrix across 3 device buffers, as complete / average / weighted run past
the device's largest buffer).  --rows runs every method
that can on the rows whatever the matrix needs (the others are left out):

    python3 bench/hierarchy.py --n 20000 50000 --d 32 \
        --methods centroid median ward --rows --devices NVIDIA
    python3 bench/hierarchy.py --n 50000 1000000 --d 32 --methods ward \
        --rows --fastcluster-max-n 50000 --devices NVIDIA
    python3 bench/hierarchy.py --n 5000 20000 50000 --d 32 --methods ward \
        --ward-rows-from 10000000 --no-fastcluster --devices NVIDIA   # the matrix
    python3 bench/hierarchy.py --n 100000 190000 --d 32 \
        --methods complete average weighted --no-fastcluster --devices NVIDIA
    python3 bench/hierarchy.py --n 20000 --d 32 --methods complete average \
        --buffer-bytes 400000000 --devices NVIDIA      # 4 buffers
(with --buffer-bytes the warm-up set's matrix spans fewer buffers than the
timed ones: their kernels' builds are timed; run a size twice to see them apart)
Ward on the rows runs rounds of reciprocal nearest neighbours, scipy's chain
where nearest neighbours tie: the engine column then says "rows/chain".

The data are ../shared/bench/gpu_host_anchors.py's (blobs(n, d, 50), seed 0,
float32 made float64), fastcluster is called as there (linkage_vector for
ward, single, centroid, median; linkage for the rest) and scipy's linkage
runs only up to --scipy-max-n (it is O(N^2) memory and slow).  Each
oclclust run is checked against the reference (scipy where it ran, else
fastcluster): same merges, heights within --rtol.  Kernels are built on a
small warm-up set first, so compile time is not counted.  --phases times the
distance matrix and the merges apart; --strategy forces the device strategy
(GPUs: one launch a merge/chain step; CPUs: one launch in all).  The exit
status is 1 when any result differs from its reference.
"""
import argparse
import json
import time

import numpy as np

from _common import blobs, import_oclclust, seconds as timed


def fastcluster_fn(method):
    try:
        import fastcluster
    except ImportError:
        return None
    if method in ("single", "centroid", "median", "ward"):
        return fastcluster.linkage_vector
    return fastcluster.linkage


def engine(method, n, device):
    """Which engine oclclust.linkage runs: the rows' MST or the matrix."""
    from oclclust.cluster.hierarchy import linkage_matrix as hc
    from oclclust.passes.linkage import Plan
    plan = Plan(device, np.float64 if device.fp64 else np.float32)
    if method == "single" and hc._single_on_rows(plan, n):
        return "rows"
    if method in hc.EUCLIDEAN_METHODS and not plan.matrix_fits(n):
        return "rows"
    if method == "ward" and hc._ward_on_rows(plan, n):
        return "rows"
    return "matrix" if plan.buffers(n) == 1 else f"matrix/{plan.buffers(n)}"


def phases(X, method, device):
    """(distance-matrix or MST s, merges s, host sort+relabel s) of one
    oclclust run (the rows' MST: (MST s, 0, labelling s))."""
    from oclclust.cluster.hierarchy import linkage_matrix as hc
    from oclclust.passes.linkage import (
        NN_CHAIN,
        Plan,
        condensed_distances,
        nn_chain,
        prim_single,
    )
    from oclclust.passes.linkage_generic import generic_linkage
    from oclclust.passes.linkage_rows import generic_rows, ward_rows
    from oclclust.passes.mst import minimum_spanning_tree
    plan = Plan(device, np.float64 if device.fp64 else np.float32)
    if engine(method, len(X), device) == "rows" and method != "single":
        t0 = time.perf_counter()
        if method == "ward":
            merges = ward_rows(plan, X)
            t1 = time.perf_counter()
            hc._sorted_linkage(*merges, len(X))
            return 0.0, t1 - t0, time.perf_counter() - t1
        generic_rows(plan, X, method)
        return 0.0, time.perf_counter() - t0, 0.0
    if engine(method, len(X), device) == "rows":     # single: the MST
        t0 = time.perf_counter()
        a, b, w = minimum_spanning_tree(plan, X)
        t1 = time.perf_counter()
        Z = np.empty((len(w), 4))
        Z[:, 0], Z[:, 1], Z[:, 2] = a, b, w
        hc.label(Z, len(X))
        return t1 - t0, 0.0, time.perf_counter() - t1
    t0 = time.perf_counter()
    dist, n = condensed_distances(plan, X=X)
    plan.queue.finish()
    t1 = time.perf_counter()
    if method == "single":
        merges = prim_single(plan, dist, n)
    elif method in NN_CHAIN:
        merges = nn_chain(plan, dist, n, method)
    else:
        generic_linkage(plan, dist, n, method)
        return t1 - t0, time.perf_counter() - t1, 0.0
    t2 = time.perf_counter()
    hc._sorted_linkage(*merges, n)
    return t1 - t0, t2 - t1, time.perf_counter() - t2


def compare(Z, ref, rtol):
    """(same merges, largest relative height difference) of Z against ref."""
    same = bool(np.array_equal(Z[:, [0, 1, 3]], ref[:, [0, 1, 3]]))
    scale = np.maximum(np.abs(ref[:, 2]), 1e-300)
    return same, float(np.max(np.abs(Z[:, 2] - ref[:, 2]) / scale))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", "--sizes", type=int, nargs="+", default=[20000, 50000])
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--methods", nargs="+", default=["ward", "average", "single"],
                    choices=["single", "complete", "average", "weighted", "centroid",
                             "median", "ward"])
    ap.add_argument("--devices", default=None, help="oclclust devices (e.g. NVIDIA, Intel)")
    ap.add_argument("--scipy-max-n", type=int, default=20000,
                    help="run scipy only up to this n (default 20000)")
    ap.add_argument("--no-scipy", action="store_true", help="skip scipy")
    ap.add_argument("--no-fastcluster", action="store_true", help="skip fastcluster")
    ap.add_argument("--fastcluster-max-n", type=int, default=0,
                    help="run fastcluster only up to this n (0: every n); ward's "
                         "linkage_vector is O(N^2) time, hours at 1,000,000")
    ap.add_argument("--rtol", type=float, default=1e-9, help="height tolerance (relative)")
    ap.add_argument("--quick", action="store_true", help="small sizes (n=1000, 2000; d=8)")
    ap.add_argument("--strategy", choices=["auto", "persistent", "launches"], default="auto",
                    help="device strategy: one launch for the whole run (CPUs' default) or "
                         "a few launches a merge (GPUs' default)")
    ap.add_argument("--phases", action="store_true",
                    help="run oclclust once more, timing the distance matrix and the merges "
                         "apart (device work finished before each clock read)")
    ap.add_argument("--rows", action="store_true",
                    help="run single, ward, centroid and median on the rows (O(N d) "
                         "memory) whatever the matrix needs; leave out the other methods")
    ap.add_argument("--buffer-bytes", type=int, default=0,
                    help="the matrix's largest buffer (the linkage_buffer_bytes term; "
                         "0: the device's): split the matrix to time the split")
    ap.add_argument("--ward-rows-from", type=int, default=0,
                    help="the linkage_ward_rows_from term (0: the profile's): ward from "
                         "this many observations on the rows where the matrix fits; a "
                         "large value times the matrix's chain")
    ap.add_argument("--json", help="also write the rows here (JSON lines)")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.d = [1000, 2000], 8
    if args.rows:
        from oclclust.passes.linkage import Plan
        Plan.matrix_fits = lambda self, n: False
        args.methods = [m for m in args.methods
                        if m in ("single", "ward", "centroid", "median")]

    oc = import_oclclust()
    from oclclust.runtime.devices import preferred, select_devices
    if args.strategy != "auto":
        from oclclust.passes.linkage import Plan
        init = Plan.__init__

        def forced(self, *a, **k):
            init(self, *a, **k)
            self.persistent = args.strategy == "persistent"
        Plan.__init__ = forced
    device = preferred(select_devices(args.devices))[0]
    if args.buffer_bytes:
        device = device.replace(linkage_buffer_bytes=args.buffer_bytes)
    if args.ward_rows_from:
        device = device.replace(linkage_ward_rows_from=args.ward_rows_from)
    args.devices = [device]
    print(f"oclclust on {device}; d={args.d}; methods {', '.join(args.methods)}; "
          f"strategy {args.strategy}", flush=True)
    warm = blobs(300, args.d, 5).astype(np.float64)
    for method in args.methods:                 # build the kernels outside the timings
        oc.linkage(warm, method, devices=args.devices)
    if "single" in args.methods:                # and the rows' MST kernels
        from oclclust.passes.linkage import Plan
        from oclclust.passes.mst import minimum_spanning_tree
        minimum_spanning_tree(Plan(device, np.float64 if device.fp64 else np.float32), warm)

    rows = []
    header = (f"{'n':>7} {'method':>9} {'engine':>9} {'oclclust s':>11} {'scipy s':>9} {'fastcl. s':>10} "
              f"{'x scipy':>8} {'x fastcl.':>9} {'vs':>11} {'merges':>7} {'max rel dh':>10}")
    print(header)
    print("-" * len(header), flush=True)
    from oclclust.passes import linkage_rows
    chained, chain = [], linkage_rows.ward_chain
    linkage_rows.ward_chain = lambda *a: chained.append(1) or chain(*a)
    for n in args.n:
        X = blobs(n, args.d, 50).astype(np.float64)
        for method in args.methods:
            chained.clear()
            t_oc, Z = timed(oc.linkage, X, method, devices=args.devices)
            t_sp = t_fc = None
            ref, ref_name = None, "-"
            if not args.no_scipy and n <= args.scipy_max_n:
                from scipy.cluster.hierarchy import linkage
                t_sp, ref = timed(linkage, X, method)
                ref_name = "scipy"
            fn = None if args.no_fastcluster else fastcluster_fn(method)
            if args.fastcluster_max_n and n > args.fastcluster_max_n:
                fn = None
            if fn is not None:
                t_fc, Zf = timed(fn, X, method=method, metric="euclidean")
                if ref is None:
                    ref, ref_name = Zf, "fastcluster"
                del Zf
            same, dh = compare(Z, ref, args.rtol) if ref is not None else (None, None)
            row = dict(n=n, d=args.d, method=method, device=str(device),
                       engine=engine(method, n, device) + ("/chain" if chained else ""),
                       oclclust_s=t_oc,
                       scipy_s=t_sp, fastcluster_s=t_fc, reference=ref_name,
                       same_merges=same, max_rel_height_diff=dh,
                       heights_ok=None if dh is None else dh <= args.rtol)
            rows.append(row)

            def fmt(v, spec):
                return format(v, spec) if v is not None else "-"
            print(f"{n:>7} {method:>9} {row['engine']:>9} {t_oc:>11.3f} {fmt(t_sp, '9.3f'):>9} "
                  f"{fmt(t_fc, '10.3f'):>10} {fmt(t_sp and t_sp / t_oc, '8.1f'):>8} "
                  f"{fmt(t_fc and t_fc / t_oc, '9.1f'):>9} {ref_name:>11} "
                  f"{fmt(same, ''):>7} {fmt(dh, '10.1e'):>10}", flush=True)
            if args.phases:
                t_d, t_m, t_h = phases(X, method, device)
                row.update(distances_s=t_d, merges_s=t_m, host_s=t_h)
                first = ("distance matrix" if row["engine"].startswith("matrix") else
                         "MST" if method == "single" else "matrix (none: rows)")
                print(f"{'':>7} {'':>9} phases: {first} {t_d:.3f} s, merges "
                      f"{t_m:.3f} s, host sort+relabel {t_h:.3f} s", flush=True)
            if dh is not None and (not same or dh > args.rtol):
                print(f"  !! {method} n={n}: oclclust differs from {ref_name}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")
    return 0 if all(r["same_merges"] in (None, True) and r["heights_ok"] in (None, True)
                    for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
