#!/usr/bin/env python3
"""Weak scaling of KMeans across MPI ranks: each rank fits its own rows.

    python bench/mpi_scaling.py --ranks 1 2 4 --cores 4 --n-per-rank 2000000 \
        --d 32 --k 256 --iters 10 [--mixed 1:3] [--mpiexec mpiexec]

The driver launches ``mpiexec -n R`` for each R; every rank takes a CPU
sub-device of --cores compute units (PoCL's CPU by default, --cpu-platform)
and --n-per-rank rows of its own (blobs seeded by rank), so the work per
rank is constant and the ideal time per iteration too.  Efficiency at R
ranks = time per iteration at 1 rank / at R ranks.  --mixed G:C adds one
run of G GPU ranks (the first GPU of --gpu-platform each, its rows scaled
by --gpu-share) beside C CPU ranks.  Time per iteration is the
median of rank 0's iterations (KMeans.history_), which wait for the
slowest rank; a first fit builds the kernels.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from _common import blob_centres, blobs, import_oclclust


def body(args):
    """One rank's part (run under mpiexec)."""
    if args.cores:
        # PoCL starts a worker per hardware thread in every process, whatever
        # the sub-device: R ranks would run R x cores threads on the cores
        os.environ.setdefault("POCL_CPU_MAX_CU_COUNT", str(args.cores))
    from mpi4py import MPI
    oc = import_oclclust()
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if comm.Get_size() != args.expect:   # a launcher of another MPI: singletons
        print(f"error: COMM_WORLD has {comm.Get_size()} rank(s), {args.expect} launched",
              file=sys.stderr)
        return 3
    gpu = rank < args.gpu_ranks
    if gpu:
        devices = [oc.select_devices(args.gpu_platform)[0]]
        n = int(args.n_per_rank * args.gpu_share)
    else:
        cpu = [p for p in oc.select_devices(args.cpu_platform) if p.type == "cpu"][0]
        devices = oc.sub_devices(cpu, [args.cores]) if args.cores else [cpu]
        n = args.n_per_rank
    # every rank's rows about the same centres, its own draws
    centres = blob_centres(args.k, args.d, np.random.default_rng(0))
    X = blobs(n, args.d, args.k, seed=1000 + rank, centres=centres)
    init = centres + np.random.RandomState(1).normal(scale=0.5, size=centres.shape)

    def fit(iters):
        km = oc.KMeans(args.k, init=init, n_init=1, max_iter=iters, tol=0, devices=devices,
                       comm=comm)
        comm.Barrier()
        start = time.perf_counter()
        km.fit(X)
        comm.Barrier()
        return time.perf_counter() - start, km
    fit(1)   # builds the kernels
    seconds, km = fit(args.iters)
    # rank 0's iterations include waiting for the slowest rank: the joint pace
    per_iter = float(np.median([h["seconds"] for h in km.history_]))
    info = comm.gather({"rank": rank, "device": str(devices[0]), "rows": n}, root=0)
    if rank == 0:
        print(json.dumps({"ranks": comm.Get_size(), "per_iter_s": per_iter, "fit_s": seconds,
                          "rows": sum(i["rows"] for i in info), "inertia": km.inertia_,
                          "devices": [i["device"] for i in info]}), flush=True)


PROBE = ("from mpi4py import MPI; MPI.COMM_WORLD.Get_rank() or print("
         "MPI.COMM_WORLD.Get_size(), MPI.Get_library_version().splitlines()[0])")


def launcher(args):
    """The mpiexec (with its arguments) whose ranks mpi4py's MPI joins."""
    if args.mpiexec != "auto":
        return [args.mpiexec] + args.mpiexec_args.split()
    for cmd in (["mpiexec"], ["mpirun"], ["/usr/bin/mpiexec"]):
        try:
            out = subprocess.run(cmd + ["-n", "2", sys.executable, "-c", PROBE],
                                 capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.splitlines() and out.splitlines()[0].startswith("2 "):
            print(f"launcher: {' '.join(cmd)} ({out.splitlines()[0][2:]})", flush=True)
            if "Open MPI" in out:   # it binds each rank to a core by default
                cmd = cmd + ["--bind-to", "none", "--oversubscribe"]
            return cmd + args.mpiexec_args.split()
        print(f"launcher: {' '.join(cmd)} does not join mpi4py's ranks: {out.strip()!r}")
    raise SystemExit("no mpiexec joins mpi4py's ranks")


def driver(args):
    mpiexec = launcher(args)
    runs = [(r, 0) for r in args.ranks]
    if args.mixed:
        g, c = (int(v) for v in args.mixed.split(":"))
        runs.append((g + c, g))
    common = ["--n-per-rank", str(args.n_per_rank), "--d", str(args.d), "--k", str(args.k),
              "--iters", str(args.iters), "--cores", str(args.cores),
              "--cpu-platform", args.cpu_platform, "--gpu-platform", args.gpu_platform,
              "--gpu-share", str(args.gpu_share)]
    results = []
    for ranks, gpus in runs:
        cmd = mpiexec[:1] + ["-n", str(ranks)] + mpiexec[1:] + \
            [sys.executable, os.path.abspath(__file__), "--body", "--gpu-ranks", str(gpus),
             "--expect", str(ranks)] + common
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        line = next((l for l in proc.stdout.splitlines() if l.startswith("{")), None)
        if proc.returncode or line is None:
            print(f"ranks={ranks} gpus={gpus}: FAILED (exit {proc.returncode})\n"
                  f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}", flush=True)
            continue
        res = json.loads(line)
        res["gpu_ranks"] = gpus
        results.append(res)
        print(f"ranks={ranks} gpu_ranks={gpus}: {res['per_iter_s']:.4f} s/iteration, "
              f"{res['rows']:,} rows, devices {sorted(set(res['devices']))}", flush=True)
    base = next((r for r in results if r["ranks"] == 1 and not r["gpu_ranks"]), None)
    print(f"\nweak scaling: {args.n_per_rank:,} rows x {args.d} per rank, k={args.k}, "
          f"{args.cores}-core CPU sub-device per rank")
    print(f"{'ranks':>5} {'GPU ranks':>9} {'s/iter':>9} {'rows/s':>12} {'efficiency':>10}")
    for r in results:
        eff = base["per_iter_s"] / r["per_iter_s"] if base and not r["gpu_ranks"] else None
        print(f"{r['ranks']:>5} {r['gpu_ranks']:>9} {r['per_iter_s']:>9.4f} "
              f"{r['rows'] / r['per_iter_s']:>12.3g} " + (f"{eff:>10.3f}" if eff else f"{'-':>10}"))
    return 0 if len(results) == len(runs) else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--cores", type=int, default=4,
                    help="compute units of each rank's CPU sub-device (0: the whole CPU)")
    ap.add_argument("--n-per-rank", type=int, default=2_000_000)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--mixed", help="G:C -- also run G GPU ranks with C CPU ranks")
    ap.add_argument("--gpu-share", type=float, default=8.0,
                    help="a GPU rank's rows as a multiple of --n-per-rank (default 8)")
    ap.add_argument("--cpu-platform", default="Portable Computing Language")
    ap.add_argument("--gpu-platform", default="NVIDIA")
    ap.add_argument("--mpiexec", default="auto",
                    help="the launcher (default auto: the first of mpiexec, mpirun whose "
                         "ranks mpi4py joins)")
    ap.add_argument("--mpiexec-args", default="", help="extra mpiexec arguments")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per mpiexec run")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    ap.add_argument("--body", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--gpu-ranks", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--expect", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.n_per_rank, args.k, args.iters, args.cores = 20_000, 16, 3, 1
    return body(args) if args.body else driver(args)


if __name__ == "__main__":
    sys.exit(main())
