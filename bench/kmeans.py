#!/usr/bin/env python3
"""Time oclclust's k-means against scikit-learn (and faiss-cpu) per OpenCL device.

Same data, same initial centres, same fixed number of Lloyd iterations for
every library: the data and the initial centres come from make_blobs and
init_centers of ../shared/bench/baselines.py (--baselines; an identical copy
in bench/_data.py where that file is absent), and every library runs
``max_iter=--iters`` with ``tol=0`` from those centres:

    oclclust  KMeans(n_clusters=k, init=C0, n_init=1, max_iter=iters, tol=0, devices=[device])
    sklearn   KMeans(n_clusters=k, init=C0, n_init=1, max_iter=iters, tol=0, algorithm="lloyd")
    faiss     Kmeans(d, k, niter=iters, max_points_per_centroid=n).train(X, init_centroids=C0)

The figure is wall-clock seconds of one fit (min of --repeats) divided by the
iterations it ran (n_iter_), as baselines.py reports it.  oclclust is timed
once per device on the host array (the copy to the device is inside the
time, as scikit-learn's input checks are in its) and once with the data
already resident on the device as a pyopencl array ("resident"); every
oclclust configuration is fitted once untimed first (kernel builds).

    python bench/kmeans.py                        # n=1e6, d=32, k=256, 10 iterations
    python bench/kmeans.py --quick                # n=1e5
    python bench/kmeans.py --devices NVIDIA --n 10000000 --d 128 --k 4096 --iters 5 --no-sklearn

Compare only runs made back to back on a quiet machine.
"""
import argparse
import importlib.util
import json
import multiprocessing
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from _common import (DEFAULT_BASELINES, FOREIGN, add_devices_argument, data_functions,
                     import_oclclust, select_profiles, table as format_table, timed, version)


class UsageError(Exception):
    pass


# -------------------------------------------------------------- the runs
def run_oclclust(oc, profile, X, C0, args, resident):
    import pyopencl.array as cla
    params = dict(n_clusters=args.k, init=C0, n_init=1, max_iter=args.iters, tol=0.0,
                  devices=[profile], precision=getattr(args, "precision", "float32"))
    data = X
    upload_s = None
    if resident:
        start = time.perf_counter()
        data = cla.to_device(profile.queue(), X)
        profile.queue().finish()
        upload_s = time.perf_counter() - start
    start = time.perf_counter()
    with warnings.catch_warnings():   # one iteration may leave clusters empty: no matter
        warnings.simplefilter("ignore")
        oc.KMeans(**dict(params, max_iter=1)).fit(data)   # kernel builds, first touches
    warmup_s = time.perf_counter() - start
    best, times, km = timed(lambda: oc.KMeans(**params).fit(data), args.repeats)
    return dict(lib="oclclust", variant="resident" if resident else "host-array",
                device=profile.name, platform=profile.platform, type=profile.type,
                seconds=best, times=times, n_iter=int(km.n_iter_),
                seconds_per_iter=best / km.n_iter_, inertia=float(km.inertia_),
                iteration_median_s=float(np.median([h["seconds"] for h in km.history_])),
                rechecked=[h.get("rechecked") for h in km.history_],
                warmup_s=warmup_s, upload_s=upload_s, foreign_cores=max(FOREIGN, default=None),
                centers=km.cluster_centers_, labels=km.labels_)


def run_sklearn(X, C0, args):
    from sklearn.cluster import KMeans

    def fit():
        return KMeans(n_clusters=args.k, init=C0, n_init=1, max_iter=args.iters, tol=0.0,
                      algorithm="lloyd").fit(X)
    best, times, km = timed(fit, args.repeats)
    return dict(lib="sklearn", variant="lloyd", device="host CPU", platform="-", type="cpu",
                seconds=best, times=times, n_iter=int(km.n_iter_),
                seconds_per_iter=best / km.n_iter_, inertia=float(km.inertia_),
                foreign_cores=max(FOREIGN, default=None),
                centers=km.cluster_centers_, labels=km.labels_)


def run_faiss(X, C0, args):
    import faiss
    n, d = X.shape

    def fit():
        km = faiss.Kmeans(d, args.k, niter=args.iters, verbose=False, seed=1234,
                          max_points_per_centroid=n, min_points_per_centroid=1)
        km.train(X, init_centroids=C0)
        return km
    best, times, km = timed(fit, args.repeats)
    return dict(lib="faiss", variant="lloyd", device="host CPU", platform="-", type="cpu",
                seconds=best, times=times, n_iter=args.iters,
                seconds_per_iter=best / args.iters, inertia=float(km.obj[-1]),
                foreign_cores=max(FOREIGN, default=None), centers=np.asarray(km.centroids))


# ---------------------------------------------------------------- report
def table(records):
    by_lib = {r["lib"]: r for r in records if r["lib"] in ("sklearn", "faiss")}
    head = ["library", "runtime / device", "variant", "iters", "s/iter", "fit s",
            "vs sklearn", "vs faiss", "inertia"]
    rows = []
    for r in records:
        where = r["device"] if r["lib"] != "oclclust" else f"{r['platform']}: {r['device']}"
        ratio = {lib: (f"{r['seconds_per_iter'] / b['seconds_per_iter']:.2f}"
                       if lib in by_lib and r["lib"] == "oclclust" else "")
                 for lib, b in ((lib, by_lib.get(lib)) for lib in ("sklearn", "faiss"))}
        rows.append([r["lib"], where, r["variant"], str(r["n_iter"]),
                     f"{r['seconds_per_iter']:.4f}", f"{r['seconds']:.3f}",
                     ratio["sklearn"], ratio["faiss"], f"{r['inertia']:.6g}"])
    return format_table(head, rows)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Time oclclust's k-means against scikit-learn and faiss-cpu on each "
                    "OpenCL device (same data, init and iterations).",
        epilog="Ratios are oclclust's seconds per iteration over the baseline's: below 1 "
               "is faster.")
    ap.add_argument("--n", type=int, default=None,
                    help="points (default 1000000; 100000 with --quick)")
    ap.add_argument("--d", type=int, default=32, help="features (default 32)")
    ap.add_argument("--k", type=int, default=256, help="clusters (default 256)")
    ap.add_argument("--iters", type=int, default=10, help="Lloyd iterations (default 10)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="timed fits per configuration; the minimum is reported (default 3)")
    ap.add_argument("--quick", action="store_true", help="n=100000 (unless --n is given)")
    add_devices_argument(ap)
    ap.add_argument("--seed", type=int, default=None,
                    help="data seed (default: baselines.py's, 12345)")
    ap.add_argument("--baselines", default=str(DEFAULT_BASELINES),
                    help=f"baselines.py to take make_blobs/init_centers from "
                         f"(default {DEFAULT_BASELINES})")
    ap.add_argument("--no-sklearn", action="store_true", help="skip scikit-learn")
    ap.add_argument("--no-faiss", action="store_true", help="skip faiss-cpu")
    ap.add_argument("--no-resident", action="store_true",
                    help="skip the runs with the data already on the device")
    ap.add_argument("--json", metavar="OUT", help="write the measurements to OUT (JSON)")
    args = ap.parse_args(argv)
    if args.n is None:
        args.n = 100_000 if args.quick else 1_000_000
    for name in ("n", "d", "k", "iters", "repeats"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name} must be at least 1")
    if args.k > args.n:
        raise UsageError(f"--k ({args.k}) must not exceed --n ({args.n})")
    return args


def main(argv=None):
    try:
        args = parse_args(argv)
        oc = import_oclclust()
        profiles = select_profiles(oc, args.devices)
    except (UsageError, ValueError) as exc:   # ValueError: --devices matches none
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2

    make_blobs, init_centers, source = data_functions(args.baselines)
    print(f"bench: n={args.n:,} d={args.d} k={args.k} iters={args.iters} "
          f"repeats={args.repeats}; {os.cpu_count()} CPU(s) {platform.processor() or ''}")
    print(f"bench: data and init from {source}")
    print(f"bench: oclclust {oc.__version__} ({Path(oc.__file__).parent}), numpy "
          f"{np.__version__}, sklearn {version('sklearn')}, faiss {version('faiss')}, "
          f"pyopencl {version('pyopencl')}", flush=True)
    start = time.perf_counter()
    blob_args = (args.n, args.d, args.k) + (() if args.seed is None else (args.seed,))
    X, _, _ = make_blobs(*blob_args)
    C0 = init_centers(X, args.k)
    print(f"bench: data made in {time.perf_counter() - start:.1f} s", flush=True)

    records, failures = [], 0

    def done(rec):
        extra = ""
        if rec.get("warmup_s") is not None:
            extra += f", warm-up {rec['warmup_s']:.2f} s"
        if rec.get("upload_s") is not None:
            extra += f", upload {rec['upload_s']:.2f} s"
        if rec.get("foreign_cores") is not None:
            extra += f", other load {rec['foreign_cores']:.1f} cores"
        print(f"  {rec['lib']:9s} {rec['variant']:10s} {rec['device']}: "
              f"{rec['seconds_per_iter']:.4f} s/iter ({rec['n_iter']} iterations, fit "
              f"{rec['seconds']:.3f} s{extra}), inertia {rec['inertia']:.6g}", flush=True)
        records.append(rec)

    # each baseline in a fresh process: a thread pool left behind slows
    # whatever runs after it (2 cores, 1M x 32, k=256: faiss after sklearn
    # 0.535 s/iter, alone 0.27; sklearn after faiss 0.380, alone 0.268), and
    # an OpenCL CPU runtime's worker threads may linger too
    spawn = multiprocessing.get_context("spawn")
    for lib, skip, runner in (("sklearn", args.no_sklearn, run_sklearn),
                              ("faiss", args.no_faiss, run_faiss)):
        if skip:
            print(f"bench: {lib} skipped (--no-{lib})")
            continue
        if importlib.util.find_spec(lib) is None:
            print(f"bench: {lib} not installed: skipped")
            continue
        print(f"bench: {lib}", flush=True)
        with spawn.Pool(1) as pool:
            done(pool.apply(runner, (X, C0, args)))

    for profile in profiles:
        print(f"bench: oclclust on {profile.name} [{profile.platform}]", flush=True)
        for resident in (False,) if args.no_resident else (False, True):
            try:
                done(run_oclclust(oc, profile, X, C0, args, resident))
            except Exception as exc:   # one runtime failing must not hide the others
                failures += 1
                msg = str(exc).splitlines()[0] if str(exc) else ""
                print(f"  oclclust FAILED on {profile}: {type(exc).__name__}: {msg}",
                      flush=True)
    sk = next((r for r in records if r["lib"] == "sklearn"), None)
    if sk is not None:
        for r in records:
            if r["lib"] == "oclclust":
                off = (np.abs(r["centers"] - sk["centers"]).max(axis=1) >
                       1e-4 * np.abs(sk["centers"]).max())
                r["centers_off_vs_sklearn"] = int(off.sum())
                r["labels_off_vs_sklearn"] = int((r["labels"] != sk["labels"]).sum())
                r["inertia_rel_diff_vs_sklearn"] = abs(r["inertia"] - sk["inertia"]) / sk["inertia"]

    print(f"\nk-means, n={args.n:,} d={args.d} k={args.k}, {args.iters} fixed iterations "
          f"from the same init; seconds per iteration (min of {args.repeats}); "
          "ratio < 1: oclclust faster")
    print(table(records))
    for r in records:
        if "centers_off_vs_sklearn" in r:
            print(f"  vs scikit-learn, {r['platform']} {r['variant']}: "
                  f"{r['labels_off_vs_sklearn']} of {args.n} labels and "
                  f"{r['centers_off_vs_sklearn']} of {args.k} centres differ (by more than "
                  f"1e-4 of the largest coordinate), inertia within {r['inertia_rel_diff_vs_sklearn']:.1e}")
    if any(r["lib"] == "faiss" for r in records):
        print("  faiss's inertia is its objective at the last iteration, before that "
              "iteration's centre update (as baselines.py reports it)")
    busy = [r for r in records if (r.get("foreign_cores") or 0) > 0.3]
    if busy:
        print(f"  WARNING: other processes kept up to "
              f"{max(r['foreign_cores'] for r in busy):.1f} of {os.cpu_count()} cores busy "
              f"during {len(busy)} measurement(s): rerun on a quiet machine to compare")
    if args.json:
        meta = dict(n=args.n, d=args.d, k=args.k, iters=args.iters, repeats=args.repeats,
                    data_source=source, cpus=os.cpu_count(), host=platform.node(),
                    versions={m: version(m) for m in ("numpy", "sklearn", "faiss",
                                                      "pyopencl", "oclclust")})
        out = [{k: v for k, v in r.items() if k not in ("centers", "labels")} for r in records]
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "records": out}, fh, indent=2)
        print(f"bench: wrote {args.json}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
