#!/usr/bin/env python3
"""Whole fits on several GPUs of one host against one GPU (issue 20).

    python bench/multi_gpu.py --gpus 2                    # KMeans, GMM, c-means, MPI
    python bench/multi_gpu.py --gpus 2 4                  # 2 and 4 GPUs against one 1-GPU run
    python bench/multi_gpu.py --gpus 2 --only kmeans,mpi
    python bench/multi_gpu.py --gpus 2 --only stream --stream-rows 200000000

kmeans   KMeans 10M x 128, k=1024, 20 iterations from host rows: whole fit
         on 1 GPU and on N (equal shares), efficiency t1 / (N tN), and the
         per-iteration speedup (median of history_).
gmm      GaussianMixture full 10M x 24, K=100 and FuzzyCMeans 10M x 24, c=100:
cmeans   per-iteration speedup of N GPUs over one.
mpi      the same KMeans under mpiexec, one rank per GPU (each binds the GPU
         of its local rank): the model equals the one process's over the same
         N GPUs bit for bit (the same shares, summed in the same order).
stream   KMeans on more rows than the GPUs hold (--stream-rows, streamed
         through each GPU's budget): seconds per iteration against the
         N GPUs' resident rate.
Rows: bench/_common.blobs (noise repeating every 4M rows past 20M rows).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from _common import import_oclclust, large_blobs, table

GIB = 1 << 30


SMOKE = []   # --smoke PLATFORM: sub-devices of a CPU stand in for the GPUs (a check here)


def gpus(oc, count):
    if SMOKE:
        cpu = oc.select_devices(SMOKE[0])[0]
        return [cpu] if count == 1 else oc.sub_devices(cpu, [1] * count)
    found = oc.select_devices("gpu")
    if len(found) < count:
        raise SystemExit(f"multi_gpu: {count} GPUs asked for, {len(found)} found")
    return found[:count]


def median_iteration(est):
    return float(np.median([h["seconds"] for h in est.history_[1:] or est.history_]))


def fit(oc, make, X, devices):
    est = make(oc.DeviceManager(devices, weights="compute_units"))
    start = time.perf_counter()
    est.fit(X)
    return time.perf_counter() - start, median_iteration(est), est


WARM = ["full"]   # --warm


def compare(oc, name, make, X, counts, rows):
    """One 1-GPU fit, then one fit on each count of GPUs: their models.  Each
    configuration is warmed first: --warm full (the default) by a fit of
    the same rows, so the timed fit is the second of its size on its
    devices, as a user's warm fit; --warm small by a fit of 200k rows only
    (its kernels built, but the page-locked staging and the per-row buffers
    of the full size are made in the timed fit: a process's first fit of
    that size)."""
    for count in (1, *counts):
        fit(oc, make, X if WARM[0] == "full" else X[:min(len(X), 200_000)], gpus(oc, count))
    t1, i1, _ = fit(oc, make, X, gpus(oc, 1))
    models = {}
    for count in counts:
        tn, i_n, models[count] = fit(oc, make, X, gpus(oc, count))
        rows.append(dict(case=name, gpus=count, whole_1=t1, whole_n=tn,
                         efficiency=t1 / (count * tn), iter_1=i1, iter_n=i_n,
                         iter_speedup=i1 / i_n))
        print(json.dumps(rows[-1]), flush=True)
    return models


def kmeans_maker(k, iters, C0):
    return lambda devs: __import__("oclclust").KMeans(k, init=C0, n_init=1, max_iter=iters,
                                                       tol=0, devices=devs)


def mpi_body(args):
    """One rank: its share of the rows (equal shares, as the one process's
    split), the fit over its GPU; rank 0 writes the centres."""
    from mpi4py import MPI
    oc = import_oclclust()
    comm = MPI.COMM_WORLD
    X = large_blobs(args.n, 128, 1024)
    C0 = X[np.random.default_rng(1).choice(len(X), 1024, replace=False)].copy()
    from oclclust.parallel.shares import split_rows
    counts = split_rows(len(X), np.ones(comm.Get_size()))
    start = int(np.sum(counts[:comm.Get_rank()]))
    mine = X[start:start + counts[comm.Get_rank()]]
    comm.Barrier()
    t = time.perf_counter()
    km = oc.KMeans(1024, init=C0, n_init=1, max_iter=args.iters, tol=0, devices="gpu",
                   comm=comm).fit(mine)
    seconds = time.perf_counter() - t
    if comm.Get_rank() == 0:
        np.save(args.out, km.cluster_centers_)
        print(json.dumps(dict(mpi_seconds=seconds, devices=str(km.devices_))), flush=True)


def run(args):
    oc = import_oclclust()
    only = set(args.only.split(","))
    rows, counts = [], args.gpus
    if only & {"kmeans", "mpi"}:
        X = large_blobs(args.n, 128, 1024)
        C0 = X[np.random.default_rng(1).choice(len(X), 1024, replace=False)].copy()
        joint = compare(oc, "KMeans 10M x 128 x 1024", kmeans_maker(1024, args.iters, C0), X,
                        counts, rows) if "kmeans" in only else {}
        for count in counts if "mpi" in only else ():
            if count not in joint:
                joint[count] = fit(oc, kmeans_maker(1024, args.iters, C0), X,
                                   gpus(oc, count))[2]
            out = os.path.join(tempfile.mkdtemp(), "centres.npy")
            env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                       OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            proc = subprocess.run(["mpiexec", "-n", str(count), sys.executable, __file__,
                                   "--mpi-body", "--out", out, "--n", str(args.n),
                                   "--iters", str(args.iters)],
                                  capture_output=True, text=True, env=env, timeout=600)
            print(proc.stdout.strip()[-2000:], proc.stderr.strip()[-2000:], flush=True)
            if proc.returncode == 0:
                ranks, ref = np.load(out), joint[count].cluster_centers_
                rows.append(dict(case=f"MPI {count} ranks (one GPU each)", gpus=count,
                                 same_bits=bool(np.array_equal(ranks, ref)),
                                 max_diff=float(np.abs(ranks - ref).max())))
                print(json.dumps(rows[-1]), flush=True)
        del X
    if only & {"gmm", "cmeans"}:
        X = large_blobs(args.n, 24, 100)
        V0 = X[np.random.default_rng(2).choice(len(X), 100, replace=False)].copy()
        if "gmm" in only:
            compare(oc, "GaussianMixture full 10M x 24 x 100", lambda devs: oc.GaussianMixture(
                100, covariance_type="full", means_init=V0.astype(np.float64),
                init_params="random_from_data", random_state=0, max_iter=4, tol=0,
                devices=devs), X, counts, rows)
        if "cmeans" in only:
            compare(oc, "FuzzyCMeans 10M x 24 x 100", lambda devs: oc.FuzzyCMeans(
                100, init=V0, max_iter=6, tol=0, devices=devs), X, counts, rows)
        del X
    if "stream" in only:
        X = large_blobs(args.stream_rows, 128, 1024)
        C0 = X[np.random.default_rng(1).choice(len(X), 1024, replace=False)].copy()
        count = max(counts)
        many = gpus(oc, count)
        resident = fit(oc, kmeans_maker(1024, 3, C0), X[:20_000_000], many)[1]
        budget = int(args.budget_gib * GIB)
        mgr = oc.DeviceManager(many, weights="compute_units", memory_budget=budget)
        km = oc.KMeans(1024, init=C0, n_init=1, max_iter=3, tol=0, devices=mgr)
        t = time.perf_counter()
        km.fit(X)
        it = median_iteration(km)
        bound = resident * len(X) / 20_000_000
        rows.append(dict(case=f"KMeans {len(X)} x 128 x 1024 streamed ({X.nbytes / 1e9:.0f} GB)",
                         gpus=count, whole_n=time.perf_counter() - t, iter_n=it,
                         resident_rate_iter=bound, ratio=it / bound))
        print(json.dumps(rows[-1]), flush=True)
    head = ["case", "gpus", "whole 1 s", "whole N s", "efficiency", "iter 1 s", "iter N s",
            "iter speedup", "other"]

    def f(r, key, fmt="{:.3f}"):
        return fmt.format(r[key]) if key in r else "-"
    print(table(head, [[r["case"], str(r["gpus"]), f(r, "whole_1"), f(r, "whole_n"),
                        f(r, "efficiency"), f(r, "iter_1", "{:.4f}"), f(r, "iter_n", "{:.4f}"),
                        f(r, "iter_speedup", "{:.2f}"),
                        (f"same bits {r['same_bits']}, max diff {r['max_diff']:.2e}"
                         if "same_bits" in r else
                         f"x resident rate {r['ratio']:.2f}" if "ratio" in r else "")]
                       for r in rows], left=1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, nargs="+", default=[2],
                    help="counts of GPUs, each against the same 1-GPU run")
    ap.add_argument("--only", default="kmeans,mpi,gmm,cmeans")
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--stream-rows", type=int, default=200_000_000)
    ap.add_argument("--budget-gib", type=float, default=32.0, help="per GPU, when streaming")
    ap.add_argument("--warm", choices=["full", "small"], default="full",
                    help="warm each configuration by a fit of all rows, or of 200k (compare)")
    ap.add_argument("--mpi-body", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--smoke", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.smoke:
        SMOKE.append(args.smoke)
    WARM[0] = args.warm
    return mpi_body(args) if args.mpi_body else run(args)


if __name__ == "__main__":
    sys.exit(main())
