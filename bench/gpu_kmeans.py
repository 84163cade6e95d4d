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
the ratio of every baseline's time to oclclust's.  --precisions times
oclclust at each of KMeans's precision modes (float32, tf32, bf16), with the
rows re-checked per iteration and the fraction of labels equal to the
float64 argmin at the fit's final centres on --agree-rows rows.  --flash
is flash-kmeans' shape, 2^24 x 128, k=4096 (flash_blobs: blobs whose noise
repeats every 2^22 rows, float32 draws; the first k rows the initial centres).
--sweep first times the Lloyd pass alone over the tuner's configurations
(oclclust.cli.tune) on the first workload, and fits with the fastest.

    python bench/gpu_kmeans.py --devices NVIDIA                 # the three workloads
    python bench/gpu_kmeans.py --devices NVIDIA --sweep --workloads 10000000,128,4096,5
    python bench/gpu_kmeans.py --quick --devices "Intel(R) OpenCL"
    python bench/gpu_kmeans.py --devices NVIDIA --flash --precisions float32,tf32,bf16 \
        --no-torch --no-sklearn
"""
import argparse
import importlib.util
import sys
import time
import warnings

import numpy as np

import kmeans as bk
from _common import DEFAULT_BASELINES, blob_centres, data_functions, import_oclclust

WORKLOADS = ["10000000,128,4096,5", "6000000,128,4096,5", "1000000,32,256,10"]
QUICK = ["20000,16,64,3"]
FLASH = ["16777216,128,4096,3"]     # flash-kmeans' H200 shape: 2^24 x 128, k=4096


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
    ap.add_argument("--flash", action="store_true", help="flash-kmeans' shape " + FLASH[0])
    ap.add_argument("--precisions", default="float32",
                    help="KMeans precision modes to time, comma-separated (default float32)")
    ap.add_argument("--mma-sweep", action="store_true",
                    help="time the planned mma spec of each --precisions mode and its "
                         "neighbours (kpar, mt, wg) on the first workload's Lloyd pass")
    ap.add_argument("--agree-rows", type=int, default=1 << 16,
                    help="rows of the float64-argmin agreement check (default 65536)")
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
                      for w in (args.workloads or (QUICK if args.quick else
                                                   FLASH if args.flash else WORKLOADS))]
    args.precisions = args.precisions.split(",")
    return args


def flash_blobs(n, d, k, block=1 << 22):
    """bench/_common.blobs' rows (k centres uniform in [-10, 10]^d plus unit
    normal noise) with the noise drawn for *block* rows and repeated: 2^31
    normal draws take most of a minute, 2^29 a quarter of it."""
    rng = np.random.default_rng(0)
    centres = blob_centres(k, d, rng)
    noise = rng.standard_normal((min(block, n), d), dtype=np.float32)
    X = centres[rng.integers(0, k, n)]
    for s in range(0, n, len(noise)):
        X[s:s + len(noise)] += noise[:n - s]
    return X


def mma_sweep(profile, X, C0, precisions):
    """The planned mma spec of each precision and its neighbours (kpar 1 or
    2, mt halved or doubled, work-groups of 128 or 256), each offered alone
    to LloydPass (checked and built as the planner's pick), timed on X."""
    import dataclasses
    import pyopencl.array as cla
    from oclclust.passes.lloyd import LloydPass
    from oclclust.runtime.partition import DevicePartition
    part = DevicePartition(profile, cla.to_device(profile.queue(), X))
    for precision in precisions:
        planned = LloydPass(part, len(C0), precision=precision).spec
        if planned.variant != "mma":
            print(f"  sweep {precision}: planned {planned.variant}, no mma variant")
            continue
        trials = [planned]
        for kw in (dict(kpar=3 - planned.kpar), dict(mt=max(1, planned.mt // 2)),
                   dict(mt=planned.mt * 2), dict(wg=128)):
            spec = dataclasses.replace(planned, **kw)
            spec = dataclasses.replace(spec, tm=spec.wg // 32 * 16 * spec.mt)
            if spec not in trials:
                trials.append(spec)
        for spec in trials:
            try:
                lloyd = LloydPass(part, len(C0), spec=spec)
                labels = cla.empty(part.queue, part.n, np.int32)
                labels.fill(-1)
                lloyd.run(C0.astype(np.float64), labels)
                best = np.inf
                for _ in range(2):
                    part.queue.finish()
                    start = time.perf_counter()
                    lloyd.run(C0.astype(np.float64), labels)
                    part.queue.finish()
                    best = min(best, time.perf_counter() - start)
                print(f"  sweep {precision}: wg={spec.wg} mt={spec.mt} kpar={spec.kpar}: "
                      f"{best:.4f} s/pass", flush=True)
            except Exception as exc:   # over the registers or local memory: say so
                print(f"  sweep {precision}: wg={spec.wg} mt={spec.mt} kpar={spec.kpar}: "
                      f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}", flush=True)


def agreement(profile, X, centres, precision):
    """The fraction of *X*'s rows whose Lloyd label (at *centres*, in
    *precision*) is the float64 argmin, and the rows the pass re-checked."""
    import pyopencl.array as cla
    from oclclust.passes.lloyd import LloydPass
    from oclclust.runtime.partition import DevicePartition
    part = DevicePartition(profile, cla.to_device(profile.queue(), X))
    lloyd = LloydPass(part, len(centres), update=False, precision=precision)
    labels = cla.empty(part.queue, part.n, np.int32)
    labels.fill(-1)
    stats = lloyd.run(centres.astype(np.float64), labels)
    X64, C64 = X.astype(np.float64), centres.astype(np.float64)
    d2 = (C64 * C64).sum(1)[None] - 2 * X64 @ C64.T    # + ||x||^2: the same argmin
    return float(np.mean(labels.get() == d2.argmin(1))), stats.n_rechecked


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
        if args.flash:   # float32 draws: make_blobs' float64 would take minutes here
            X = flash_blobs(n, d, k)
            C0 = X[:k].copy()
        else:
            X, _, _ = make_blobs(n, d, k)
            C0 = init_centers(X, k)
        flop = 2.0 * n * d * k
        print(f"\n== n={n:,} d={d} k={k} iters={iters} (data {time.perf_counter() - start:.0f}"
              " s)", flush=True)
        if args.sweep and w == 0:
            best, _ = tune.tune_device(profile, [(n, d, k)], args.sweep_quick, repeats=2)
            profile = profile.replace(**best)
            print(f"sweep: fitting with {tune._label(best)}", flush=True)
        if args.mma_sweep and w == 0:
            mma_sweep(profile, X, C0, args.precisions)
        results = {}
        sub = X[-min(args.agree_rows, n):]
        for precision in args.precisions:
            tag = "" if precision == "float32" else f"-{precision}"
            ns = argparse.Namespace(k=k, iters=iters, repeats=args.repeats, precision=precision)
            rec = bk.run_oclclust(oc, profile, X, C0, ns, resident=True)
            from oclclust.runtime.codegen import plans
            spec = [s for (p, *rest), (s, _) in plans("lloyd").items()   # the fit's plan
                    if p == profile and s.update and rest[-2] is None and rest[-1] == precision]
            # the whole fit over its iterations (validation, moments and the final
            # labels pass included), and the median Lloyd iteration of history_
            results["oclclust" + tag] = (rec["seconds_per_iter"], rec["inertia"])
            results["oclclust-iter" + tag] = (rec["iteration_median_s"], float("nan"))
            print(f"  oclclust {precision}: {rec['seconds_per_iter']:.4f} s/iter, "
                  f"spec {spec[-1] if spec else '?'}", flush=True)
            if precision != "float32":
                print(f"  {precision}: rows re-checked per iteration {rec['rechecked']}",
                      flush=True)
            import pyopencl.array as cla
            x_dev = cla.to_device(profile.queue(), X)
            sec, _ = tune.time_pass(profile, x_dev, C0.astype(np.float64), repeats=2,
                                    precision=precision)
            x_dev.data.release()
            if sec is not None:   # the Lloyd pass alone: no estimator work around it
                results["oclclust-pass" + tag] = (sec, float("nan"))
            same, rechecked = agreement(profile, sub, rec["centers"], precision)
            print(f"  {precision}: labels equal to the float64 argmin at the final centres: "
                  f"{same:.6%} of {len(sub)} rows ({rechecked} re-checked)", flush=True)
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
        ours = results[next(iter(results))][0]
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
