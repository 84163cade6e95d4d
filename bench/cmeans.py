#!/usr/bin/env python3
"""Time oclclust's FuzzyCMeans against a vectorised numpy c-means (and scikit-fuzzy).

Same data (float32 blobs from make_blobs of ../shared/bench/baselines.py, or
its copy bench/_data.py), same initial centres (the first c rows), same
fuzzifier and a fixed number of iterations for every library:

    oclclust  FuzzyCMeans(c, m=m, init=C0, tol=0, max_iter=iters, devices=[device])
    numpy     the step of ../shared/bench/gpu_host_anchors.py (float32 GEMM distances,
              memberships, centres), iterated from C0
    skfuzzy   skfuzzy.cluster.cmeans(X.T, c, m, error=0, maxiter=.., init=U(C0))

oclclust's seconds per iteration are timed inside a whole fit: from the
start of one iteration's pass to the start of the next pass (the fused
kernel, the reduction, the centre update on the host), averaged over the
iterations after the first (which also sets the pass up), min over
--repeats fits.  The fixed costs of a fit (upload, moments, the final pass
that writes the n x c memberships u_ and copies them to the host) are left
out; "fit s" is a whole fit of ``iters`` iterations and "fixed s" what it
spent outside the iterations.  Accuracy: each library's centres after
``iters`` iterations against a float64 reference (eq. 1/2 with exact
distances, in row blocks; --no-check skips it), relative to the largest
centre coordinate.
"resident": the data already on the device as a pyopencl array.  numpy's
and skfuzzy's figures are wall-clock seconds over their iterations.  The
centres after ``iters`` iterations are compared with numpy's.

    python bench/cmeans.py                                  # n=1e6, d=24, c=100, 10 iterations
    python bench/cmeans.py --quick                          # n=1e5, 5 iterations
    python3 bench/cmeans.py --devices NVIDIA                # the GPU host's measurement

Compare only runs made back to back on a quiet machine.
"""
import argparse
import importlib.util
import os
import sys
import time
import warnings

import numpy as np

from _common import (DEFAULT_BASELINES, FOREIGN, add_devices_argument, data_functions,
                     import_oclclust, select_profiles, table as format_table, timed, version)


def numpy_step(X, V, m, xx):
    """One Bezdek iteration as ../shared/bench/gpu_host_anchors.py times it."""
    vv = (V * V).sum(1)[None]
    D2 = np.maximum(xx - 2 * X @ V.T + vv, 1e-12)
    inv = D2 ** (-1.0 / (m - 1)) if m != 2 else 1.0 / D2
    U = inv / inv.sum(1, keepdims=True)
    W = U ** m if m != 2 else U * U
    return (W.T @ X) / W.sum(0)[:, None]


def reference64(X, C0, m, iters, block=200_000):
    """Centres after *iters* Bezdek iterations in float64 (memberships from
    ratios to each row's nearest distance: eq. 1 without overflow)."""
    V = C0.astype(np.float64)
    for _ in range(iters):
        num, den = np.zeros_like(V), np.zeros(len(V))
        vv = (V * V).sum(1)[None]
        for s in range(0, len(X), block):
            x = X[s:s + block].astype(np.float64)
            d2 = np.maximum((x * x).sum(1)[:, None] - 2 * x @ V.T + vv, 0)
            dmin = d2.min(1, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(dmin > 0, (dmin / d2) ** (1 / (m - 1)), (d2 == 0) * 1.0)
            W = (r / r.sum(1, keepdims=True)) ** m
            num += W.T @ x
            den += W.sum(0)
        V = num / den[:, None]
    return V


def run_numpy(X, C0, args):
    xx = (X * X).sum(1)[:, None]
    V = C0.copy()
    times = []
    for _ in range(args.iters):
        start = time.perf_counter()
        V = numpy_step(X, V, args.m, xx)
        times.append(time.perf_counter() - start)
    per_iter = float(np.mean(times[1:] if len(times) > 1 else times))
    return dict(lib="numpy", variant="float32 GEMM", device="host CPU", n_iter=args.iters,
                seconds_per_iter=per_iter, seconds=float(np.sum(times)), centers=V)


def run_skfuzzy(X, C0, args):
    import skfuzzy
    iters = min(args.iters, args.skfuzzy_iters)
    X64, C64 = X.astype(np.float64), C0.astype(np.float64)   # U(C0): skfuzzy starts from u
    d2 = np.maximum((X64 * X64).sum(1)[:, None] - 2 * X64 @ C64.T + (C64 * C64).sum(1)[None],
                    1e-12)
    inv = d2 ** (-1.0 / (args.m - 1))
    U0 = (inv / inv.sum(1, keepdims=True)).T
    del X64, d2, inv
    start = time.perf_counter()
    res = skfuzzy.cluster.cmeans(X.T, len(C0), args.m, error=0.0, maxiter=iters, init=U0)
    seconds = time.perf_counter() - start
    return dict(lib="skfuzzy", variant="float64", device="host CPU", n_iter=int(res[5]),
                seconds_per_iter=seconds / int(res[5]), seconds=seconds, centers=None)


def pass_starts(sharded):
    """Record when each pass of CMeansShards starts (a list, in order)."""
    starts, original = [], sharded.CMeansShards.run

    def run(self, centers, update=True, write_u=False):
        starts.append(time.perf_counter())
        return original(self, centers, update, write_u)
    sharded.CMeansShards.run = run
    return starts


def run_oclclust(oc, profile, X, C0, args, resident):
    import pyopencl.array as cla
    from oclclust.parallel import sharded
    data = X
    if resident:
        data = cla.to_device(profile.queue(), X)
        profile.queue().finish()
    starts = pass_starts(sharded)
    per_iter = []

    def fit():
        starts.clear()
        fc = oc.FuzzyCMeans(args.c, m=args.m, init=C0, tol=0.0, max_iter=args.iters,
                            devices=[profile]).fit(data)
        # starts: every iteration's pass, then the final memberships pass
        iters = np.diff(starts[:fc.n_iter_ + 1])
        per_iter.append(float(np.mean(iters[1:] if len(iters) > 1 else iters)))
        return fc
    start = time.perf_counter()
    fit()                                     # kernel builds, first touches
    warmup = time.perf_counter() - start
    per_iter.clear()
    best, times, fc = timed(fit, args.repeats)
    per_iter = min(per_iter)
    return dict(lib="oclclust", variant="resident" if resident else "host-array",
                device=f"{profile.platform}: {profile.name}", n_iter=int(fc.n_iter_),
                seconds_per_iter=per_iter, seconds=best, fixed_s=best - per_iter * fc.n_iter_,
                warmup_s=warmup, objective=fc.objective_, centers=fc.cluster_centers_,
                foreign_cores=max(FOREIGN, default=None))


def table(records, ref, exact):
    head = ["library", "device", "variant", "iters", "s/iter", "fit s", "fixed s",
            "speedup vs numpy", "centre error"]
    rows = []
    for r in records:
        speed = (f"{ref['seconds_per_iter'] / r['seconds_per_iter']:.1f}x"
                 if ref and r is not ref and r["seconds_per_iter"] > 0 else "")
        diff = ""
        if exact is not None and r.get("centers") is not None and r["n_iter"] == len(exact[1]):
            scale = np.abs(exact[0]).max()
            diff = f"{np.abs(r['centers'] - exact[0]).max() / scale:.1e}"
        rows.append([r["lib"], r["device"], r["variant"], str(r["n_iter"]),
                     f"{r['seconds_per_iter']:.4f}", f"{r['seconds']:.3f}",
                     f"{r['fixed_s']:.3f}" if "fixed_s" in r else "", speed, diff])
    return format_table(head, rows)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Time oclclust's FuzzyCMeans against numpy and scikit-fuzzy on each "
                    "OpenCL device (same data, init, m and iterations).",
        epilog="speedup: numpy's seconds per iteration over the library's.")
    ap.add_argument("--n", type=int, default=None, help="rows (default 1000000; 100000 "
                    "with --quick)")
    ap.add_argument("--d", type=int, default=24, help="features (default 24)")
    ap.add_argument("--c", type=int, default=100, help="clusters (default 100)")
    ap.add_argument("--m", type=float, default=2.0, help="fuzzifier (default 2)")
    ap.add_argument("--iters", type=int, default=None,
                    help="fixed iterations (default 10; 5 with --quick)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="timed fits per configuration; the minimum is used (default 3)")
    ap.add_argument("--quick", action="store_true", help="n=100000, 5 iterations")
    add_devices_argument(ap)
    ap.add_argument("--no-numpy", action="store_true", help="skip the numpy reference")
    ap.add_argument("--no-skfuzzy", action="store_true", help="skip scikit-fuzzy")
    ap.add_argument("--skfuzzy-iters", type=int, default=3,
                    help="scikit-fuzzy iterations (default 3: it is slow)")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the float64 reference the centres are checked against")
    ap.add_argument("--no-resident", action="store_true",
                    help="skip the runs with the data already on the device")
    ap.add_argument("--baselines", default=str(DEFAULT_BASELINES),
                    help="baselines.py to take make_blobs/init_centers from")
    args = ap.parse_args(argv)
    args.n = args.n or (100_000 if args.quick else 1_000_000)
    args.iters = args.iters or (5 if args.quick else 10)
    if min(args.n, args.d, args.c, args.iters, args.repeats) < 1 or args.c > args.n:
        ap.error("--n, --d, --c, --iters, --repeats must be >= 1 and --c <= --n")
    if not args.m > 1:
        ap.error("--m must be > 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    oc = import_oclclust()
    try:
        profiles = select_profiles(oc, args.devices)
    except ValueError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2
    make_blobs, init_centers, source = data_functions(args.baselines)
    print(f"bench: fuzzy c-means n={args.n:,} d={args.d} c={args.c} m={args.m} "
          f"iters={args.iters} repeats={args.repeats}; {os.cpu_count()} CPU(s)")
    print(f"bench: data and init from {source}; numpy {np.__version__}, pyopencl "
          f"{version('pyopencl')}, skfuzzy {version('skfuzzy')}", flush=True)
    X, _, _ = make_blobs(args.n, args.d, args.c)
    C0 = init_centers(X, args.c)
    records, ref = [], None
    if not args.no_numpy:
        print("bench: numpy", flush=True)
        ref = run_numpy(X, C0, args)
        records.append(ref)
    if not args.no_skfuzzy and importlib.util.find_spec("skfuzzy") is not None:
        print("bench: skfuzzy", flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            records.append(run_skfuzzy(X, C0, args))
    elif not args.no_skfuzzy:
        print("bench: skfuzzy not installed: skipped")
    failures = 0
    for profile in profiles:
        for resident in (False,) if args.no_resident else (False, True):
            print(f"bench: oclclust on {profile} ({'resident' if resident else 'host array'})",
                  flush=True)
            try:
                rec = run_oclclust(oc, profile, X, C0, args, resident)
            except Exception as exc:   # one runtime failing must not hide the others
                failures += 1
                print(f"  FAILED: {type(exc).__name__}: {str(exc).splitlines()[0]}")
                continue
            print(f"  {rec['seconds_per_iter']:.4f} s/iter, fit {rec['seconds']:.3f} s "
                  f"(warm-up {rec['warmup_s']:.2f} s, other load "
                  f"{rec['foreign_cores'] or 0:.1f} cores)", flush=True)
            records.append(rec)
    exact = None
    if not args.no_check:
        print("bench: float64 reference for the accuracy column", flush=True)
        exact = reference64(X, C0, args.m, args.iters), range(args.iters)
    print(f"\nfuzzy c-means, n={args.n:,} d={args.d} c={args.c} m={args.m}, fixed iterations "
          "from the same centres; oclclust s/iter: iterations timed inside a fit")
    print(table(records, ref, exact))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
