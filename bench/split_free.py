#!/usr/bin/env python3
"""What split-free sums cost: each iterative estimator's fit with the
split-free sums (runtime/exact_sums.py: fixed row blocks, exact folding)
against today's float64 reduction of persistent work-groups' slabs
(``exact_sums.disabled()``), in the same run on the same data and start.

    python bench/split_free.py [cpu]                 # bench/kmeans.py cpu-variants' 1M x 32, k=256
    python bench/split_free.py cpu --n 20000 --rounds 2 --iters 3     # a smoke run
    python bench/split_free.py gpu                   # KMeans 10M x 128 x 1024; FuzzyCMeans,
                                                     # GaussianMixture full 10M x 24 x 100

Measurements (``python bench/split_free.py NAME --help`` gives each one's flags):

    cpu       the CPU runtimes, one at a time (--platforms)
    gpu       the GPUs together (--devices, default gpu: all of them, the rows
              split over them by the manager)
"""
import argparse
import contextlib
import statistics
import sys
import warnings

import numpy as np

from _common import (blobs, import_oclclust, large_blobs, run_measurement, seconds,
                     table as format_table)

ESTIMATORS = ("KMeans", "EnsembleKMeans", "FuzzyCMeans", "GaussianMixture")

DOC_CPU = """Split-free sums against today's on each CPU runtime, per iteration.

Each round fits every estimator twice on each runtime, split-free and
today's (their order alternating round to round, so a loaded machine's
drift hits both), from the same start (the first k rows; GaussianMixture:
equal weights, identity precisions), ``max_iter=--iters, tol=0``.  The
figures are the medians over the rounds of the whole fit's seconds and of
its per-iteration seconds (the median of history_), and the ratio
split-free / today of each.
"""

DOC_GPU = """Split-free sums against today's on the GPUs, per iteration.

As ``cpu``, on --devices together (default: every GPU), at the multi-GPU
shapes: KMeans --n x --d x --k (10M x 128 x 1024), FuzzyCMeans and
GaussianMixture (full) --n x --mix-d x --mix-k (10M x 24 x 100).
"""


def arguments(doc, n, d, k, mix_d, mix_k, devices):
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--n", type=int, default=n, help=f"rows (default {n:,})")
    ap.add_argument("--d", type=int, default=d, help=f"KMeans' features (default {d})")
    ap.add_argument("--k", type=int, default=k, help=f"KMeans' clusters (default {k})")
    ap.add_argument("--mix-d", type=int, default=mix_d,
                    help=f"FuzzyCMeans' and GaussianMixture's features (default {mix_d})")
    ap.add_argument("--mix-k", type=int, default=mix_k,
                    help=f"their clusters / components (default {mix_k})")
    ap.add_argument("--models", type=int, default=4, help="EnsembleKMeans' (default 4)")
    ap.add_argument("--cov", default="full", choices=("full", "diag", "tied", "spherical"),
                    help="GaussianMixture's covariance_type (default full)")
    ap.add_argument("--iters", type=int, default=5, help="iterations a fit (default 5)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    ap.add_argument("--estimators", nargs="+", default=list(ESTIMATORS), choices=ESTIMATORS)
    ap.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    if devices is None:
        ap.add_argument("--platforms", nargs="+",
                        default=["Portable Computing Language", "Intel(R) OpenCL"])
    else:
        ap.add_argument("--devices", default=devices, help=f"(default {devices})")
    return ap


def make_fit(oc, name, args, X, devices):
    """fit() of estimator *name* on X from a fixed start, max_iter=iters, tol=0."""
    k = args.k if name in ("KMeans", "EnsembleKMeans") else args.mix_k
    start = np.asarray(X[:k], np.float64)
    common = dict(max_iter=args.iters, tol=0, devices=devices)
    if name == "KMeans":
        make = lambda: oc.KMeans(k, init=start, n_init=1, **common)   # noqa: E731
    elif name == "EnsembleKMeans":
        make = lambda: oc.EnsembleKMeans(   # noqa: E731
            k, n_models=args.models, init=np.stack([start] * args.models), **common)
    elif name == "FuzzyCMeans":
        make = lambda: oc.FuzzyCMeans(k, init=start, **common)   # noqa: E731
    else:
        d = X.shape[1]
        precisions = {"full": np.broadcast_to(np.eye(d), (k, d, d)).copy(),
                      "diag": np.ones((k, d)), "tied": np.eye(d),
                      "spherical": np.ones(k)}[args.cov]
        make = lambda: oc.GaussianMixture(   # noqa: E731
            k, covariance_type=args.cov, weights_init=np.full(k, 1.0 / k), means_init=start,
            precisions_init=precisions, **common)

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # not converged in --iters: as asked
            return make().fit(X)
    return fit


def compare(oc, cases, rounds):
    """{label: {how: [(whole fit s, per-iteration s)]}} over *rounds* rounds
    of every case (label, fit), split-free and today's alternating."""
    from oclclust.runtime import exact_sums
    # the context a fit runs in: split-free is the default
    ways = {"split-free": contextlib.nullcontext, "today": exact_sums.disabled}
    for _, fit in cases:   # kernel builds, first touches
        for way in ways.values():
            with way():
                fit()
    out = {label: {how: [] for how in ways} for label, _ in cases}
    for r in range(rounds):
        order = list(ways) if r % 2 == 0 else list(ways)[::-1]
        for label, fit in cases:
            for how in order:
                with ways[how]():
                    wall, est = seconds(fit)
                per_iter = statistics.median(h["seconds"] for h in est.history_)
                out[label][how].append((wall, per_iter))
        print(f"  round {r + 1}: " + ", ".join(
            f"{label} {v['split-free'][-1][1]:.4f}/{v['today'][-1][1]:.4f}"
            for label, v in out.items()), flush=True)
    return out


def report(results):
    rows = []
    for label, ways in results.items():
        med = {how: [statistics.median(v[i] for v in runs) for i in (0, 1)]
               for how, runs in ways.items()}
        sf, today = med["split-free"], med["today"]
        rows.append([label, f"{sf[0]:.4f}", f"{today[0]:.4f}", f"{sf[0] / today[0]:.3f}",
                     f"{sf[1]:.5f}", f"{today[1]:.5f}", f"{sf[1] / today[1]:.3f}"])
    print()
    print(format_table(["fit", "whole s split-free", "today", "ratio",
                        "per iter s split-free", "today", "ratio"], rows, left=1))


def cases_on(oc, args, devices, where):
    """(label, fit) of every --estimators on *devices*."""
    data = {}
    out = []
    for name in args.estimators:
        d = args.d if name in ("KMeans", "EnsembleKMeans") else args.mix_d
        k = args.k if name in ("KMeans", "EnsembleKMeans") else args.mix_k
        if d not in data:
            data[d] = large_blobs(args.n, d, k).astype(args.dtype, copy=False)
        shape = f"{args.n:,} x {d} x {k}"
        out.append((f"{where} {name} {shape}", make_fit(oc, name, args, data[d], devices)))
    return out


def cpu_main(argv=None):
    args = arguments(DOC_CPU, 1_000_000, 32, 256, 24, 100, None).parse_args(argv)
    oc = import_oclclust()
    profiles = [p for p in oc.list_devices() if p.type == "cpu"
                and any(plat in p.platform for plat in args.platforms)]
    if not profiles:
        sys.exit("no CPU runtime of --platforms found")
    cases = [c for p in profiles for c in cases_on(oc, args, [p], p.platform[:24])]
    print(f"bench: iters={args.iters} rounds={args.rounds} dtype={args.dtype}", flush=True)
    report(compare(oc, cases, args.rounds))
    return 0


def gpu_main(argv=None):
    args = arguments(DOC_GPU, 10_000_000, 128, 1024, 24, 100, "gpu").parse_args(argv)
    oc = import_oclclust()
    profiles = oc.select_devices(args.devices)
    if not profiles:
        sys.exit(f"no device matches --devices {args.devices}")
    cases = cases_on(oc, args, profiles, f"{len(profiles)} x {profiles[0].name[:20]}")
    print(f"bench: iters={args.iters} rounds={args.rounds} dtype={args.dtype} on "
          f"{len(profiles)} device(s)", flush=True)
    report(compare(oc, cases, args.rounds))
    return 0


MEASUREMENTS = {
    "cpu": (cpu_main, DOC_CPU),
    "gpu": (gpu_main, DOC_GPU),
}


if __name__ == "__main__":
    sys.exit(run_measurement(MEASUREMENTS, __doc__))
