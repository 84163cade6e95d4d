#!/usr/bin/env python3
"""FuzzyCMeans against its anchors in the same run: a vectorised numpy
c-means, scikit-fuzzy where installed, and the same GEMM form in PyTorch
where torch and CUDA are (issue 41).

    python bench/cmeans.py                                   # n=1e6, d=24, c=100, 20 iterations
    python bench/cmeans.py --quick --devices "Intel(R) OpenCL"        # CPU-sized, seconds
    python3 bench/cmeans.py --devices NVIDIA                 # the GPU host's measurement
    python3 bench/cmeans.py --devices NVIDIA --variants portable,mma     # the passes side by side

Same data (float32 blobs from make_blobs of ../shared/bench/baselines.py, or
its copy in bench/_common.py), same initial centres (the first c rows), same
fuzzifier and a fixed number of iterations for every library:

    oclclust  FuzzyCMeans(c, m=m, init=C0, tol=0, max_iter=iters, devices=[device],
              precision=p), every p of --precision, on each device of --devices
    numpy     the step of ../shared/bench/gpu_host_anchors.py (float32 GEMM distances,
              memberships, centres), iterated from C0
    torch     the same step in PyTorch on CUDA (row chunks, float64 sums of the
              centres' numerators and denominators), host rows in and host centres
              out, FP32 and TF32
    skfuzzy   skfuzzy.cluster.cmeans(X.T, c, m, error=0, maxiter=.., init=U(C0))

Whole fit (host rows in, a fitted model out): "warm" is the second fit of
the configuration in this process (the first builds the kernels); "cold"
the first fit of a fresh process (this script re-run with a hidden --child
flag, reading the rows from a .npy the parent wrote, not timed) with the
on-disk program cache warm, ``import oclclust`` apart ("import");
"iter_s" the median iteration of the warm fit's ``history_``; "fit_s" the
best of --repeats fits.  torch's "warm" comes after a warm-up run.

Per iteration ("s_per_iter"): oclclust's are timed inside a fit, from the
start of one iteration's pass to the start of the next (the fused kernel,
the reduction, the centre update on the host), averaged over the iterations
after the first (which also sets the pass up), min over --repeats fits;
"fixed_s" is what the fit spent outside them (upload, moments, the final
pass that writes the n x c memberships u_ and copies them to the host).
"resident": the data already on the device as a pyopencl array.  numpy's
is the mean of its iterations after the first, torch's the median of its
in-loop iterations, skfuzzy's its wall clock over its iterations.  "x
numpy" is numpy's s/iter over the row's.

Accuracy ("centre_err"): each library's centres after ``iters`` iterations
against a float64 reference (eq. 1/2 with exact distances, in row blocks;
--no-check skips it), relative to the largest centre coordinate.

Output: a JSON line per figure as it is measured, then the table.  Compare
only runs made back to back on a quiet machine.
"""
import argparse
import importlib.util
import json
import os
import sys
import time
import warnings

import numpy as np

from _common import (DEFAULT_BASELINES, FOREIGN, Figures, add_devices_argument, data_functions,
                     fresh_process, import_oclclust, load_rows, names, select_profiles, timed,
                     torch_cuda_missing, torch_release, version)


# ------------------------------------------------------------------- numpy
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
    """(seconds per iteration, seconds, iterations, centres)."""
    xx = (X * X).sum(1)[:, None]
    V = C0.copy()
    times = []
    for _ in range(args.numpy_iters or args.iters):
        start = time.perf_counter()
        V = numpy_step(X, V, args.m, xx)
        times.append(time.perf_counter() - start)
    return float(np.mean(times[1:] if len(times) > 1 else times)), float(np.sum(times)), \
        len(times), V


def run_skfuzzy(X, C0, args):
    """(seconds per iteration, seconds, iterations)."""
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
    return seconds / int(res[5]), seconds, int(res[5])


# ------------------------------------------------------------------- torch
def torch_cmeans(X, C0, m, iters, tf32, chunk=1 << 18):
    """numpy_step's GEMM form in PyTorch on CUDA, host rows in, host centres
    out: per row chunk the distances by one matrix product, the memberships,
    the weighted sums by another, summed in float64.  *tf32*: TF32 matrix
    products.  Returns (seconds, median iteration seconds, centres)."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.cuda.synchronize()
    start = time.perf_counter()
    x = torch.from_numpy(np.ascontiguousarray(X, np.float32)).cuda()
    v = torch.from_numpy(np.asarray(C0, np.float32)).cuda()
    (n, d), c = x.shape, len(v)
    xx = (x * x).sum(1, keepdim=True)
    f64 = dict(device="cuda", dtype=torch.float64)
    its = []
    for _ in range(iters):
        t = time.perf_counter()
        vv = (v * v).sum(1)
        num, den = torch.zeros(c, d, **f64), torch.zeros(c, **f64)
        for s in range(0, n, chunk):
            xs = x[s:s + chunk]
            d2 = torch.addmm(vv, xs, v.t(), alpha=-2.0).add_(xx[s:s + chunk]).clamp_min_(1e-12)
            inv = d2.reciprocal_() if m == 2 else d2.pow_(-1.0 / (m - 1))
            u = inv / inv.sum(1, keepdim=True)
            w = u * u if m == 2 else u.pow_(m)
            num += (w.t() @ xs).double()
            den += w.sum(0, dtype=torch.float64)
        v = (num / den[:, None]).float()
        torch.cuda.synchronize()
        its.append(time.perf_counter() - t)
    out = v.cpu().numpy()
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    return wall, float(np.median(its)), out


# ---------------------------------------------------------------- oclclust
def pass_starts(sharded):
    """Record when each pass of CMeansShards starts (a list, in order)."""
    starts, original = [], sharded.CMeansShards.run

    def run(self, centers, update=True, write_u=False):
        starts.append(time.perf_counter())
        return original(self, centers, update, write_u)
    sharded.CMeansShards.run = run
    return starts, lambda: setattr(sharded.CMeansShards, "run", original)


def median_iteration(model):
    its = [h["seconds"] for h in model.history_ if "seconds" in h]
    return float(np.median(its)) if its else None


def estimator(oc, profile, C0, args, precision):
    return oc.FuzzyCMeans(len(C0), m=args.m, init=C0, tol=0.0, max_iter=args.iters,
                          devices=[profile], precision=precision)


def run_oclclust(oc, profile, X, C0, args, precision, resident):
    """Fits of one configuration: {figure: value} and the fitted model."""
    import pyopencl.array as cla
    from oclclust.cluster.mixture import cmeans_shards as sharded
    data = X
    if resident:
        data = cla.to_device(profile.queue(), X)
        profile.queue().finish()
    starts, restore = pass_starts(sharded)
    per_iter = []

    def fit():
        starts.clear()
        fc = estimator(oc, profile, C0, args, precision).fit(data)
        # starts: every iteration's pass, then the final memberships pass
        iters = np.diff(starts[:fc.n_iter_ + 1])
        per_iter.append(float(np.mean(iters[1:] if len(iters) > 1 else iters)))
        return fc
    try:
        start = time.perf_counter()
        fit()                                     # kernel builds, first touches
        warmup = time.perf_counter() - start
        per_iter.clear()
        best, times, fc = timed(fit, args.repeats)
    finally:
        restore()
    per_iter = min(per_iter)
    return dict(warm_s=times[0], iter_s=median_iteration(fc), fit_s=best,
                s_per_iter=per_iter, fixed_s=best - per_iter * fc.n_iter_,
                warmup_s=warmup, other_cores=max(FOREIGN, default=None)), fc


VARIANTS = {"portable": 0, "mma": 1}   # the profiles' cmeans_mma term


def variant_profile(profile, variant):
    """*profile* with the c-means pass of *variant* ("default": as it is)."""
    return profile if variant == "default" else profile.replace(cmeans_mma=VARIANTS[variant])


def child(args):
    """A fresh process's first fit (--child DEVICE-INDEX,PRECISION,VARIANT)."""
    index, precision, variant = args.child.split(",")
    X = load_rows(args.rows)
    start = time.perf_counter()
    oc = import_oclclust()
    imported = time.perf_counter() - start
    profile = variant_profile(select_profiles(oc, args.devices)[int(index)], variant)
    _, init_centers, _ = data_functions(args.baselines)
    fc = estimator(oc, profile, init_centers(X, args.c), args, precision)
    start = time.perf_counter()
    fc.fit(X)
    print(json.dumps(dict(s=time.perf_counter() - start, import_s=imported,
                          iter_s=median_iteration(fc), n_iter=int(fc.n_iter_))))
    return 0


# --------------------------------------------------------------------- run
def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="x numpy: numpy's seconds per iteration over the row's.")
    ap.add_argument("--n", type=int, default=None, help="rows (default 1000000; 10000 "
                    "with --quick)")
    ap.add_argument("--d", type=int, default=24, help="features (default 24)")
    ap.add_argument("--c", type=int, default=None, help="clusters (default 100; 32 with --quick)")
    ap.add_argument("--m", type=float, default=2.0, help="fuzzifier (default 2)")
    ap.add_argument("--iters", type=int, default=None,
                    help="fixed iterations (default 20; 5 with --quick)")
    ap.add_argument("--precision", default="float32,tf32,bf16",
                    help="oclclust's precision modes (comma-separated; default all three)")
    ap.add_argument("--variants", default="default",
                    help="c-means passes (comma-separated): default (the profiles' own), "
                         "portable (cmeans_mma 0), mma (cmeans_mma 1: tensor cores where "
                         "there are some)")
    ap.add_argument("--repeats", type=int, default=None, help="timed fits per configuration; "
                    "the minimum is used (default 3; 2 with --quick)")
    ap.add_argument("--quick", action="store_true",
                    help="n=10000, c=32, 5 iterations, 2 repeats (CI smoke run: seconds)")
    add_devices_argument(ap)
    ap.add_argument("--no-numpy", action="store_true", help="skip the numpy reference")
    ap.add_argument("--numpy-iters", type=int, default=0,
                    help="numpy's iterations (default --iters: its centres are then checked)")
    ap.add_argument("--no-skfuzzy", action="store_true", help="skip scikit-fuzzy")
    ap.add_argument("--skfuzzy-iters", type=int, default=3,
                    help="scikit-fuzzy iterations (default 3: it is slow)")
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch c-means")
    ap.add_argument("--no-cold", action="store_true", help="skip the fresh-process fits")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the float64 reference the centres are checked against")
    ap.add_argument("--no-resident", action="store_true",
                    help="skip the runs with the data already on the device")
    ap.add_argument("--baselines", default=str(DEFAULT_BASELINES),
                    help="baselines.py to take make_blobs/init_centers from")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--rows", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.n = args.n or (10_000 if args.quick else 1_000_000)
    args.c = args.c or (32 if args.quick else 100)
    args.iters = args.iters or (5 if args.quick else 20)
    args.repeats = args.repeats or (2 if args.quick else 3)
    if min(args.n, args.d, args.c, args.iters, args.repeats) < 1 or args.c > args.n:
        ap.error("--n, --d, --c, --iters, --repeats must be >= 1 and --c <= --n")
    if not args.m > 1:
        ap.error("--m must be > 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        return child(args)
    oc = import_oclclust()
    try:
        profiles = select_profiles(oc, args.devices)
    except ValueError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2
    make_blobs, init_centers, source = data_functions(args.baselines)
    print(f"cmeans: n={args.n:,} d={args.d} c={args.c} m={args.m} iters={args.iters} "
          f"repeats={args.repeats}; {os.cpu_count()} CPU(s)")
    print(f"cmeans: data and init from {source}; numpy {np.__version__}, pyopencl "
          f"{version('pyopencl')}, skfuzzy {version('skfuzzy')}", flush=True)
    X, _, _ = make_blobs(args.n, args.d, args.c)
    C0 = init_centers(X, args.c)
    exact = None
    if not args.no_check:
        print("cmeans: float64 reference for the accuracy column", flush=True)
        exact = reference64(X, C0, args.m, args.iters)
    figures = Figures("cmeans", ["lib", "device", "config"],
                      ["cold_s", "import_s", "warm_s", "iter_s", "fit_s", "s_per_iter",
                       "fixed_s", "x_numpy", "centre_err"])
    extra = dict(n=args.n, d=args.d, c=args.c, m=args.m)
    ref = None

    def accuracy(key, centres, iters):
        if exact is not None and centres is not None and iters == args.iters:
            figures.add(key, "centre_err",
                        float(np.abs(centres - exact).max() / np.abs(exact).max()), **extra)

    def versus_numpy(key, per_iter):
        if ref:
            figures.add(key, "x_numpy", ref / per_iter, **extra)

    if not args.no_numpy:
        print("cmeans: numpy", flush=True)
        ref, total, iters, V = run_numpy(X, C0, args)
        key = ("numpy", "host CPU", "float32 GEMM")
        figures.add(key, "s_per_iter", ref, iters=iters, **extra)
        figures.add(key, "fit_s", total, iters=iters, **extra)
        accuracy(key, V, iters)
    if args.no_skfuzzy:
        pass
    elif importlib.util.find_spec("skfuzzy") is None:
        print("cmeans: skfuzzy not installed: skipped")
    else:
        print("cmeans: skfuzzy", flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            per_iter, total, iters = run_skfuzzy(X, C0, args)
        key = ("skfuzzy", "host CPU", "float64")
        figures.add(key, "s_per_iter", per_iter, iters=iters, **extra)
        figures.add(key, "fit_s", total, iters=iters, **extra)
        versus_numpy(key, per_iter)
    reason = "--no-torch" if args.no_torch else torch_cuda_missing()
    if reason:
        print(f"cmeans: the PyTorch c-means anchor skipped: {reason}")
    else:
        print("cmeans: torch", flush=True)
        torch_cmeans(X[:min(len(X), 100_000)], C0, args.m, 1, False)     # CUDA warm-up
        for tf32 in (False, True):
            key = ("torch", "CUDA", "tf32" if tf32 else "fp32")
            wall, per_iter, V = min((torch_cmeans(X, C0, args.m, args.iters, tf32)
                                     for _ in range(args.repeats)), key=lambda r: r[0])
            figures.add(key, "warm_s", wall, iters=args.iters, **extra)
            figures.add(key, "s_per_iter", per_iter, iters=args.iters, **extra)
            versus_numpy(key, per_iter)
            accuracy(key, V, args.iters)
        torch_release()
    failures = 0
    platforms = [p.platform for p in profiles]
    runs = [(index, base, variant) for index, base in enumerate(profiles)
            for variant in names(args.variants)]
    for index, base, variant in runs:
        profile = variant_profile(base, variant)
        device = profile.platform if platforms.count(profile.platform) == 1 else \
            f"{profile.platform}: {profile.name}"
        extra["device_name"] = profile.name
        for precision in names(args.precision):
            for resident in (False,) if args.no_resident else (False, True):
                key = ("oclclust", device, f"{'resident' if resident else 'host-array'} "
                                           f"{precision}"
                                           + ("" if variant == "default" else f" {variant}"))
                print(f"cmeans: oclclust on {device}, {key[2]}", flush=True)
                try:
                    figs, fc = run_oclclust(oc, profile, X, C0, args, precision, resident)
                except Exception as exc:   # one runtime failing must not hide the others
                    failures += 1
                    print(f"  FAILED: {type(exc).__name__}: {str(exc).splitlines()[0]}")
                    continue
                print(f"  warm-up {figs.pop('warmup_s'):.2f} s, other load "
                      f"{figs.pop('other_cores') or 0:.1f} cores", flush=True)
                ex = dict(extra, iters=int(fc.n_iter_))
                if not resident and not args.no_cold:
                    argv = ["--child", f"{index},{precision},{variant}", "--n", str(args.n), "--d",
                            str(args.d), "--c", str(args.c), "--m", str(args.m), "--iters",
                            str(args.iters), "--baselines", args.baselines]
                    argv += ["--devices", args.devices] if args.devices else []
                    try:
                        cold = fresh_process(__file__, argv, X)
                        figures.add(key, "cold_s", cold["s"], **ex)
                        figures.add(key, "import_s", cold["import_s"], **ex)
                    except Exception as exc:   # noqa: BLE001 -- reported, the rest goes on
                        print(f"  cold fit FAILED: {exc}")
                for figure, value in figs.items():
                    figures.add(key, figure, value, **ex)
                versus_numpy(key, figs["s_per_iter"])
                accuracy(key, fc.cluster_centers_, int(fc.n_iter_))

    def cell(figure, value):
        return f"{value:.1e}" if figure == "centre_err" else \
            f"{value:.1f}x" if figure.startswith("x_") else f"{value:.4g}"
    print(f"\nfuzzy c-means, n={args.n:,} d={args.d} c={args.c} m={args.m}, {args.iters} "
          "iterations from the same centres; seconds (cold: a fresh process's first fit, "
          "import apart; warm: the second in this process)")
    print(figures.table(cell))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
