#!/usr/bin/env python3
"""oclclust KMeans on a GPU against a PyTorch FP32 GEMM k-means and scikit-learn.

Same data and initial centres for all (make_blobs / init_centers, as in
bench/kmeans.py), fixed iteration counts (tol=0):

    oclclust  KMeans(k, init=C0, n_init=1, max_iter=iters, tol=0), data resident on the GPU
    torch     the faiss recipe: ||x||^2 - 2 x.c + ||c||^2 by GEMM in row chunks, argmin,
              index_add; TF32 off (full FP32) and, for reference, on
    sklearn   KMeans(..., algorithm="lloyd") on the host's cores; --sklearn-iters
              iterations on the big shapes (one sklearn iteration there takes tens of s)

Prints seconds per iteration, effective TFLOP/s (2*n*k*d per iteration) and
the ratio of every baseline's time to oclclust's.  --sweep first times the
Lloyd pass alone over the tuner's configurations (oclclust.cli.tune) on the first
workload, and fits with the fastest.

    python bench/gpu_kmeans.py --devices NVIDIA                 # the three workloads
    python bench/gpu_kmeans.py --devices NVIDIA --sweep --workloads 10000000,128,4096,5
    python bench/gpu_kmeans.py --quick --devices "Intel(R) OpenCL"
"""
import argparse
import importlib.util
import sys
import time
import warnings

import numpy as np

import kmeans as bk
from _common import DEFAULT_BASELINES, data_functions, import_oclclust

WORKLOADS = ["10000000,128,4096,5", "6000000,128,4096,5", "1000000,32,256,10"]
QUICK = ["20000,16,64,3"]


def torch_kmeans(X, C0, iters, tf32, chunk=1 << 18):
    """Seconds per iteration and inertia of the GEMM k-means on the CUDA GPU."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    dev = torch.device("cuda")
    x = torch.from_numpy(X).to(dev)
    c = torch.from_numpy(C0).to(dev)
    n, k = x.shape[0], c.shape[0]
    xx = (x * x).sum(1)

    def iteration(c):
        cc = (c * c).sum(1)
        sums = torch.zeros_like(c)
        counts = torch.zeros(k, device=dev, dtype=torch.float32)
        inertia = torch.zeros((), device=dev, dtype=torch.float64)
        for s in range(0, n, chunk):
            xs = x[s:s + chunk]
            dist = torch.addmm(cc[None], xs, c.T, alpha=-2.0)   # ||c||^2 - 2 x.c
            best, lab = dist.min(1)
            inertia += (best + xx[s:s + chunk]).double().sum()
            sums.index_add_(0, lab, xs)
            counts.index_add_(0, lab, torch.ones_like(best))
        empty = counts == 0
        new = sums / counts.clamp(min=1)[:, None]
        new[empty] = c[empty]
        return new, inertia
    c, _ = iteration(c)                     # warm-up (cuBLAS handles, allocations)
    c = torch.from_numpy(C0).to(dev)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        c, inertia = iteration(c)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters, float(inertia)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", default="gpu", help="oclclust devices (default gpu)")
    ap.add_argument("--workloads", nargs="+", default=None, metavar="N,D,K,ITERS")
    ap.add_argument("--quick", action="store_true", help="one tiny workload")
    ap.add_argument("--sweep", action="store_true", help="time the tuner's configurations "
                    "on the first workload first, fit with the fastest")
    ap.add_argument("--sweep-quick", action="store_true", help="the tuner's short list")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-sklearn", action="store_true")
    ap.add_argument("--sklearn-iters", type=int, default=1,
                    help="iterations of sklearn where n*k*d > 1e10 (default 1)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--baselines", default=str(DEFAULT_BASELINES))
    args = ap.parse_args(argv)
    args.workloads = [tuple(int(v) for v in w.split(","))
                      for w in (args.workloads or (QUICK if args.quick else WORKLOADS))]
    return args


def main(argv=None):
    args = parse_args(argv)
    oc = import_oclclust()
    from oclclust.cli import tune
    profile = oc.select_devices(args.devices)[0]
    make_blobs, init_centers, source = data_functions(args.baselines)
    print(f"gpu_kmeans: {profile} driver {profile.driver_version}; data from {source}",
          flush=True)
    has_torch = importlib.util.find_spec("torch") is not None and not args.no_torch
    if has_torch:
        import torch
        has_torch = torch.cuda.is_available()
    if not has_torch:
        print("gpu_kmeans: torch (with CUDA) not available or --no-torch: skipped")
    rows = []
    for w, (n, d, k, iters) in enumerate(args.workloads):
        start = time.perf_counter()
        X, _, _ = make_blobs(n, d, k)
        C0 = init_centers(X, k)
        flop = 2.0 * n * d * k
        print(f"\n== n={n:,} d={d} k={k} iters={iters} (data {time.perf_counter() - start:.0f}"
              " s)", flush=True)
        if args.sweep and w == 0:
            best, _ = tune.tune_device(profile, [(n, d, k)], args.sweep_quick, repeats=2)
            profile = profile.replace(**best)
            print(f"sweep: fitting with {tune._label(best)}", flush=True)
        ns = argparse.Namespace(k=k, iters=iters, repeats=args.repeats)
        rec = bk.run_oclclust(oc, profile, X, C0, ns, resident=True)
        from oclclust.runtime.codegen import plans
        spec = [s for (p, *_), (s, _) in plans("lloyd").items() if p == profile and s.update]
        # the whole fit over its iterations (validation, moments and the final
        # labels pass included), and the median Lloyd iteration of history_
        results = {"oclclust": (rec["seconds_per_iter"], rec["inertia"]),
                   "oclclust-iter": (rec["iteration_median_s"], float("nan"))}
        print(f"  oclclust: {rec['seconds_per_iter']:.4f} s/iter, spec {spec[-1] if spec else '?'}",
              flush=True)
        import pyopencl.array as cla
        x_dev = cla.to_device(profile.queue(), X)
        sec, _ = tune.time_pass(profile, x_dev, C0.astype(np.float64), repeats=2)
        x_dev.data.release()
        if sec is not None:   # the Lloyd pass alone: no estimator work around it
            results["oclclust-pass"] = (sec, float("nan"))
        if has_torch:
            for tf32 in (False, True):
                try:
                    results[f"torch-{'tf32' if tf32 else 'fp32'}"] = torch_kmeans(X, C0, iters,
                                                                                   tf32)
                except Exception as exc:   # out of memory, no CUDA...: say so, go on
                    print(f"  torch tf32={tf32}: {type(exc).__name__}: {exc}")
        if not args.no_sklearn:
            sk_iters = iters if n * k * d <= 1e10 else min(iters, args.sklearn_iters)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sk = bk.run_sklearn(X, C0, argparse.Namespace(k=k, iters=sk_iters, repeats=1))
            results[f"sklearn({sk_iters} it)"] = (sk["seconds_per_iter"], sk["inertia"])
        ours = results["oclclust"][0]
        for lib, (sec, inertia) in results.items():
            rows.append((f"{n}x{d} k={k}", lib, sec, flop / sec / 1e12, sec / ours, inertia))
            print(f"  {lib:16s} {sec:9.4f} s/iter {flop / sec / 1e12:8.2f} TFLOP/s "
                  f"{sec / ours:8.2f}x oclclust's time", flush=True)
        del X
    print("\nworkload            library           s/iter   TFLOP/s  time/oclclust  inertia")
    for shape, lib, sec, tf, ratio, inertia in rows:
        print(f"{shape:19s} {lib:16s} {sec:8.4f} {tf:9.2f} {ratio:14.2f}  {inertia:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
