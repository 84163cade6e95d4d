#!/usr/bin/env python3
"""Lloyd variants of the CPU runtimes against faiss-cpu, interleaved in one run.

Each round fits faiss-cpu (in a spawned worker, its threads passive) and then
oclclust's KMeans on every CPU runtime with every --variants configuration,
on the same data and initial centres (../shared/bench/baselines.py's, as
bench/kmeans.py), ``max_iter=--iters, tol=0``, data resident on the device
(a pyopencl array) so the figure is the iteration, not the upload.  The
figure is seconds per Lloyd iteration: oclclust's median of its fit's
per-iteration times (history_), faiss' fit time over its iterations.  The
rounds interleave the libraries so a loaded machine's drift hits them all;
the report gives each one's median over the rounds and the median of the
per-round ratios to faiss (ratios only within a round), and the CPU time of
this process per iteration (the work done, whatever else ran).

    python bench/lloyd_cpu.py                    # 1M x 32, k=256, 5 iterations, 5 rounds
    python bench/lloyd_cpu.py --variants rowwise blocked:6x4 blocked:4x4 --rounds 7

A variant is "rowwise", "rowwise:PxC" (points_per_item x centroid_tile),
"blocked", "blocked:RxV" (blocked_rows x blocked_vectors) or "shipped" (the
device's own profile), each with optional "+term=value" profile terms
(shipped+blocked_items_per_unit=8).
"""
import argparse
import multiprocessing
import os
import sys
import time
import warnings

import numpy as np

from _common import DEFAULT_BASELINES, data_functions, import_oclclust, table


def terms_of(name):
    """Profile terms of a --variants name (its "+term=value" tail included)."""
    name, *extra = name.split("+")
    more = {}
    for item in extra:
        key, eq, value = item.partition("=")
        if not eq or not value.isdigit():
            raise ValueError(f"--variants: {item!r} is no term=integer")
        more[key] = int(value)
    if name == "shipped":
        return more
    variant, _, size = name.partition(":")
    if variant not in ("rowwise", "blocked", "tiled", "gemm"):
        raise ValueError(f"--variants: unknown variant {variant!r}")
    terms = dict(lloyd_variant=variant)
    if size:
        a, b = (int(v) for v in size.split("x"))
        keys = {"rowwise": ("points_per_item", "centroid_tile"),
                "blocked": ("blocked_rows", "blocked_vectors")}.get(variant)
        if keys is None:
            raise ValueError(f"--variants: {variant} takes no size")
        terms.update(zip(keys, (a, b)))
    return dict(terms, **more)


# ------------------------------------------------------------ faiss worker
_X = _C0 = None


def _faiss_init(X, C0):
    global _X, _C0
    _X, _C0 = X, C0


def _faiss_fit(k, iters):
    import faiss
    n, d = _X.shape
    km = faiss.Kmeans(d, k, niter=iters, verbose=False, seed=1234,
                      max_points_per_centroid=n, min_points_per_centroid=1)
    cpu = time.process_time()
    start = time.perf_counter()
    km.train(_X, init_centroids=_C0)
    return (time.perf_counter() - start) / iters, (time.process_time() - cpu) / iters


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", nargs="+", default=["rowwise", "blocked"])
    ap.add_argument("--platforms", nargs="+",
                    default=["Portable Computing Language", "Intel(R) OpenCL"])
    ap.add_argument("--no-faiss", action="store_true")
    args = ap.parse_args(argv)
    try:
        configs = [(v, terms_of(v)) for v in args.variants]
    except ValueError as exc:
        ap.error(str(exc))
    oc = import_oclclust()
    import pyopencl.array as cla
    profiles = [p for p in oc.list_devices() if p.type == "cpu"
                and any(plat in p.platform for plat in args.platforms)]
    if not profiles:
        ap.error("no CPU runtime of --platforms found")
    make_blobs, init_centers, source = data_functions(DEFAULT_BASELINES)
    X, _, _ = make_blobs(args.n, args.d, args.k)
    X = np.ascontiguousarray(X, np.float32)
    C0 = init_centers(X, args.k)
    print(f"bench: n={args.n:,} d={args.d} k={args.k} iters={args.iters} "
          f"rounds={args.rounds}; {os.cpu_count()} CPUs; data from {source}", flush=True)
    flops = 2.0 * args.n * args.d * args.k

    def fit(profile, data, max_iter):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return oc.KMeans(n_clusters=args.k, init=C0, n_init=1, max_iter=max_iter, tol=0.0,
                             devices=[profile]).fit(data)

    runs = []   # (label, profile, resident data)
    for profile in profiles:
        data = cla.to_device(profile.queue(), X)
        for name, terms in configs:
            tuned = profile.replace(**terms)
            fit(tuned, data, 1)                              # kernel builds
            runs.append((f"{profile.platform[:24]} {name}", tuned, data))
    pool = None
    if not args.no_faiss:
        env = dict(OMP_WAIT_POLICY="PASSIVE")
        os.environ.update(env)   # the spawned worker inherits it
        pool = multiprocessing.get_context("spawn").Pool(1, _faiss_init, (X, C0))
        pool.apply(_faiss_fit, (args.k, 1))                  # import, first touches
    per_iter = {label: [] for label, _, _ in runs}
    cpu_iter = {label: [] for label, _, _ in runs}
    inertia, spec_of = {}, {}
    if pool is not None:
        per_iter["faiss"], cpu_iter["faiss"] = [], []
    for r in range(args.rounds):
        if pool is not None:
            wall, cpu = pool.apply(_faiss_fit, (args.k, args.iters))
            per_iter["faiss"].append(wall)
            cpu_iter["faiss"].append(cpu)
        for label, profile, data in runs:
            cpu = time.process_time()
            km = fit(profile, data, args.iters)
            cpu_iter[label].append((time.process_time() - cpu) / km.n_iter_)
            per_iter[label].append(float(np.median([h["seconds"] for h in km.history_])))
            inertia[label] = float(km.inertia_)
        print(f"  round {r + 1}: " + ", ".join(f"{label} {v[-1]:.4f}"
                                              for label, v in per_iter.items()), flush=True)
    if pool is not None:
        pool.close()
    for label, profile, _ in runs:   # the variant the planner ran
        from oclclust.passes.lloyd import candidate_specs
        spec = next(candidate_specs(profile, "float32", args.d, args.k, True, False))
        spec_of[label] = (f"{spec.variant} rb={spec.rb} cv={spec.cv} vw={spec.vw}"
                          if spec.variant == "blocked" else
                          f"{spec.variant} ppi={spec.ppi} ct={spec.ctile} vw={spec.vw}")
    head = ["run", "kernel", "s/iter (median)", "GFLOP/s", "cpu-s/iter", "vs faiss (median)",
            "inertia"]
    rows = []
    for label, times in per_iter.items():
        t = np.array(times)
        ratio = ""
        if pool is not None and label != "faiss":
            ratio = f"{np.median(t / np.array(per_iter['faiss'])):.2f}"
        rows.append([label, spec_of.get(label, "faiss-cpu"), f"{np.median(t):.4f}",
                     f"{flops / np.median(t) / 1e9:.0f}", f"{np.median(cpu_iter[label]):.4f}",
                     ratio, f"{inertia[label]:.6g}" if label in inertia else ""])
    print(f"\nLloyd iteration, n={args.n:,} d={args.d} k={args.k}: medians of {args.rounds} "
          f"interleaved rounds; ratio < 1: oclclust faster")
    print(table(head, rows, left=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
