#!/usr/bin/env python3
"""Several devices: one fit spread over several devices, GPUs, MPI ranks or
Dask workers against one device, and the upload of host rows onto several
devices at once.

    python bench/devices.py [kmeans] --devices "NVIDIA,Portable Computing Language" \
        --n 10000000 --d 128 --k 1024 --iters 5
    python bench/devices.py gpus --gpus 2 4 [--only kmeans,mpi]
    python bench/devices.py upload --devices NVIDIA --counts 1 2 4 --rows 10000000 --d 128
    python bench/devices.py mpi --ranks 1 2 4 --cores 4 --n-per-rank 2000000 --d 32 --k 256
    python bench/devices.py dask --workers 1 2 4 --cores 4 --n-per-worker 2000000 --d 32 --k 256
    python bench/devices.py dask-gmm-init --workers 2 --n 400000 --d 8 --k 16
    python bench/devices.py hetero --n 10000000 [--only kmeans,cmeans,gmm]

Measurements (``python bench/devices.py NAME --help`` gives each one's flags):

    kmeans         k-means rows per second of each device alone and of all
                   of them in one fit (DeviceManager): the efficiency
    gpus           whole KMeans / GMM / c-means fits on N GPUs of one host
                   against one GPU, the same under mpiexec, streamed, and
                   KMeans' weak scaling (--only weak: --n rows a GPU; the
                   efficiency t1(n) / tN(N n), the rows' rate N i1 / iN)
    upload         DeviceManager.scatter's pinned staging onto N devices
                   against pageable copies, by device count
    mpi            weak scaling of KMeans over MPI ranks (CPU sub-devices,
                   --mixed GPU ranks)
    dask           weak scaling of KMeans over Dask workers
    dask-gmm-init  GaussianMixture's data-driven starts on Dask workers:
                   seconds and bytes between client and workers
    hetero         a host's unlike devices (GPUs and its CPU) in one fit
                   against each alone: KMeans, FuzzyCMeans, GaussianMixture
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from devices_hetero import DOC_HETERO, hetero_main
from _common import (add_devices_argument, blob_centres, blobs, data_functions,
                     import_oclclust, large_blobs, run_measurement, seconds, select_profiles,
                     table)


# ---- kmeans (formerly bench/multidevice.py) --------------------------------------------

DOC_KMEANS = """k-means throughput of each device alone and of all of them in one fit.

    python bench/devices.py kmeans --devices "NVIDIA,Portable Computing Language" \
        --n 10000000 --d 128 --k 1024 --iters 5

Each device first fits alone (devices=[profile]); then one fit spreads the
rows over all of them through a DeviceManager (weights "measured" by default:
a calibration pass, then rebalancing from the iterations' timings).  The
figure of merit is the efficiency: rows per second together over the sum of
rows per second alone.  Times are whole fits (upload, moments, iterations,
final assignment; the calibration too for the joint fit), after a warm-up fit
that builds the kernels.  Data and initial centres as bench/kmeans.py per-device.
"""


def timed_fit(oc, devices, X, C0, iters):
    km = oc.KMeans(len(C0), init=C0, n_init=1, max_iter=iters, tol=0, devices=devices)
    return seconds(km.fit, X)


def kmeans_main(argv=None):
    ap = argparse.ArgumentParser(description=DOC_KMEANS.split("\n\n")[0])
    ap.add_argument("--devices", default="all",
                    help='comma-separated platform/device name substrings, or "all"')
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--weights", default="measured",
                    help='"measured", "compute_units", or comma-separated numbers; several '
                         'modes separated by ";" run one after another')
    ap.add_argument("--host-cores", type=int, default=1,
                    help="CPU cores per GPU left to the host threads in the joint fit "
                         "(the CPU device becomes a sub-device of the rest; 0: none)")
    ap.add_argument("--baselines", default=None, help="baselines.py for the data (optional)")
    args = ap.parse_args(argv)
    oc = import_oclclust()
    profiles = oc.DeviceManager(args.devices).profiles
    make_blobs, init_centers, source = data_functions(args.baselines or "")
    X, _, _ = make_blobs(args.n, args.d, args.k)
    C0 = init_centers(X, args.k)
    print(f"multidevice: n={args.n:,} d={args.d} k={args.k} iters={args.iters}; data from "
          f"{source}", flush=True)
    for p in profiles:   # build every kernel once
        timed_fit(oc, [p], X[:max(args.k, 20000)], C0, 1)
    rows, iter_alone = [], []
    for p in profiles:
        seconds, km = timed_fit(oc, [p], X, C0, args.iters)
        rows.append((str(p), seconds))
        iter_alone.append(float(np.median([h["seconds"] for h in km.history_[1:]])))
        print(f"  alone     {p}: fit {seconds:.3f} s, {args.n * args.iters / seconds:,.0f} "
              "rows/s", flush=True)
    alone = sum(args.n * args.iters / s for _, s in rows)
    alone_iter = sum(args.n / it for it in iter_alone)
    for mode in args.weights.split(";"):
        weights = (mode if mode in ("measured", "compute_units")
                   else [float(w) for w in mode.split(",")])
        together_profiles = (oc.parallel.manager.reserve_host_cores(profiles, args.host_cores)
                             if args.host_cores else profiles)
        for p in together_profiles:   # a sub-device builds its kernels anew
            if p not in profiles:
                timed_fit(oc, [p], X[:max(args.k, 20000)], C0, 1)
        manager = oc.DeviceManager(together_profiles, weights=weights)
        seconds, km = timed_fit(oc, manager, X, C0, args.iters)
        together = args.n * args.iters / seconds
        per_iter = float(np.median([h["seconds"] for h in km.history_[1:]]))
        print(f"  together  {len(profiles)} devices ({mode} weights, {args.host_cores} host "
              f"core(s) per GPU): fit {seconds:.3f} s, {together:,.0f} rows/s; rows "
              f"{km.devices_}; re-laid out {km.reshards_} times; median iteration "
              f"{per_iter:.4f} s")
        print(f"efficiency ({mode}): whole fit {together / alone:.3f}, "
              f"steady iterations {args.n / per_iter / alone_iter:.3f}", flush=True)


# ---- gpus (formerly bench/multi_gpu.py) ------------------------------------------------

DOC_GPUS = """Whole fits on several GPUs of one host against one GPU (issue 20).

    python bench/devices.py gpus --gpus 2                    # KMeans, GMM, c-means, MPI
    python bench/devices.py gpus --gpus 2 4                  # 2 and 4 GPUs against one 1-GPU run
    python bench/devices.py gpus --gpus 2 --only kmeans,mpi
    python bench/devices.py gpus --gpus 2 --only stream --stream-rows 200000000

kmeans   KMeans 10M x 128, k=1024, 20 iterations from host rows: whole fit
         on 1 GPU and on N (equal shares), efficiency t1 / (N tN), and the
         per-iteration speedup (median of history_).
gmm      GaussianMixture full 10M x 24, K=100 and FuzzyCMeans 10M x 24, c=100:
cmeans   per-iteration speedup of N GPUs over one.
mpi      the same KMeans under mpiexec, one rank per GPU (each binds the GPU
         of its local rank): the model equals the one process's over the same
         N GPUs bit for bit (the same shares, summed in the same order), and
         its warm fit's time against the one process's (both the second fit
         of their configuration).
ensemble EnsembleKMeans 10M x 8, 32 models of k=16: per-iteration speedup of
         N GPUs over one with their shared device-side update, and the same
         N-GPU fit with the host's update (the A/B in one run).
stream   KMeans on more rows than the GPUs hold (--stream-rows, streamed
         through each GPU's budget of --budget-gib): each GPU alone streaming
         its share (the others idle), then all at once: the sum of the rates
         alone over the rate together (1.0: the GPUs share nothing but the
         host's memory).
Rows: bench/_common.blobs (noise repeating every 4M rows past 20M rows).
"""


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
    t1, i1, one = fit(oc, make, X, gpus(oc, 1))
    models = {}
    for count in counts:
        tn, i_n, models[count] = fit(oc, make, X, gpus(oc, count))
        rows.append(dict(case=name, gpus=count, whole_1=t1, whole_n=tn,
                         efficiency=t1 / (count * tn), iter_1=i1, iter_n=i_n,
                         iter_speedup=i1 / i_n, same_bits=same_model(one, models[count])))
        print(json.dumps(rows[-1]), flush=True)
    return models


MODEL = ("cluster_centers_", "means_", "covariances_", "weights_", "labels_", "n_iter_")


def same_model(a, b):
    """Whether two fits' models are the same bits (split-free sums: any
    number of devices gives one device's model)."""
    return all(np.array_equal(getattr(a, name), getattr(b, name))
               for name in MODEL if hasattr(a, name))


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
    for _ in range(2):   # the second fit timed: warm, as the one-process fits beside it
        comm.Barrier()
        t = time.perf_counter()
        km = oc.KMeans(1024, init=C0, n_init=1, max_iter=args.iters, tol=0, devices="gpu",
                       comm=comm).fit(mine)
        comm.Barrier()
        seconds = time.perf_counter() - t
    if comm.Get_rank() == 0:
        np.save(args.out, km.cluster_centers_)
        print(json.dumps(dict(mpi_seconds=seconds, iter_seconds=median_iteration(km),
                              devices=str(km.devices_))), flush=True)


def gpus_run(args):
    oc = import_oclclust()
    only = set(args.only.split(","))
    rows, counts = [], args.gpus
    if only & {"kmeans", "mpi"}:
        X = large_blobs(args.n, 128, 1024)
        C0 = X[np.random.default_rng(1).choice(len(X), 1024, replace=False)].copy()
        joint = compare(oc, "KMeans 10M x 128 x 1024", kmeans_maker(1024, args.iters, C0), X,
                        counts, rows) if "kmeans" in only else {}
        one_process = {r["gpus"]: r for r in rows if r["case"].startswith("KMeans")}
        for count in counts if "mpi" in only else ():
            if count not in joint:
                fit(oc, kmeans_maker(1024, args.iters, C0), X, gpus(oc, count))   # warm
                tn, i_n, joint[count] = fit(oc, kmeans_maker(1024, args.iters, C0), X,
                                            gpus(oc, count))
                one_process[count] = dict(whole_n=tn, iter_n=i_n)
            out = os.path.join(tempfile.mkdtemp(), "centres.npy")
            env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                       OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            # (Open MPI binds a rank to one core by default: its uploads' fill
            # threads then share it, 5.5 GB/s where one process's reach 22)
            mpiexec = launcher(argparse.Namespace(mpiexec="auto", mpiexec_args=""))
            proc = subprocess.run([*mpiexec, "-n", str(count), sys.executable, __file__, "gpus",
                                   "--mpi-body", "--out", out, "--n", str(args.n),
                                   "--iters", str(args.iters)],
                                  capture_output=True, text=True, env=env, timeout=600)
            print(proc.stdout.strip()[-2000:], proc.stderr.strip()[-2000:], flush=True)
            if proc.returncode == 0:
                ranks, ref = np.load(out), joint[count].cluster_centers_
                timed, mine = json.loads(proc.stdout.strip().splitlines()[-1]), one_process[count]
                # the ranks' warm fit against the one process's over as many GPUs, same run
                rows.append(dict(case=f"MPI {count} ranks (one GPU each)", gpus=count,
                                 whole_n=timed["mpi_seconds"], iter_n=timed["iter_seconds"],
                                 of_one_process=mine["whole_n"] / timed["mpi_seconds"],
                                 iter_of_one_process=mine["iter_n"] / timed["iter_seconds"],
                                 same_bits=bool(np.array_equal(ranks, ref)),
                                 max_diff=float(np.abs(ranks - ref).max())))
                print(json.dumps(rows[-1]), flush=True)
        del X
    if "weak" in only:   # --n rows a GPU: the 1-GPU fit's n against N GPUs' N n
        X = large_blobs(max(counts) * args.n, 128, 1024)
        C0 = X[np.random.default_rng(1).choice(args.n, 1024, replace=False)].copy()
        make = kmeans_maker(1024, args.iters, C0)
        for count in (1, *counts):   # warm: each configuration's size once
            fit(oc, make, X[:count * args.n], gpus(oc, count))
        t1, i1, _ = fit(oc, make, X[:args.n], gpus(oc, 1))
        for count in counts:
            tn, i_n, _ = fit(oc, make, X[:count * args.n], gpus(oc, count))
            rows.append(dict(case=f"KMeans {args.n:,} rows a GPU x 128 x 1024 (weak)",
                             gpus=count, whole_1=t1, whole_n=tn, efficiency=t1 / tn, iter_1=i1,
                             iter_n=i_n, iter_speedup=count * i1 / i_n))
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
    if "ensemble" in only:
        ensemble_run(oc, args, counts, rows)
    if "stream" in only:
        X = large_blobs(args.stream_rows, 128, 1024)
        C0 = X[np.random.default_rng(1).choice(len(X), 1024, replace=False)].copy()
        count = max(counts)
        many = gpus(oc, count)
        budget = int(args.budget_gib * GIB)

        def streamed(devices, rows_):
            mgr = oc.DeviceManager(devices, weights="compute_units", memory_budget=budget)
            km = oc.KMeans(1024, init=C0, n_init=1, max_iter=3, tol=0, devices=mgr)
            t = time.perf_counter()
            km.fit(rows_)
            return time.perf_counter() - t, median_iteration(km)
        streamed(many, X[:1_000_000])   # kernels built
        # each GPU alone streaming its share (the others idle), then all of them at once
        share = len(X) // count
        alone = [share / streamed([g], X[i * share:(i + 1) * share])[1]
                 for i, g in enumerate(many)]
        whole, it = streamed(many, X)
        rows.append(dict(case=f"KMeans {len(X)} x 128 x 1024 streamed ({X.nbytes / 1e9:.0f} GB)",
                         gpus=count, whole_n=whole, iter_n=it, rows_per_s=len(X) / it,
                         alone_rows_per_s=alone, ratio=sum(alone) / (len(X) / it)))
        print(json.dumps(rows[-1]), flush=True)
    head = ["case", "gpus", "whole 1 s", "whole N s", "efficiency", "iter 1 s", "iter N s",
            "iter speedup", "other"]

    def f(r, key, fmt="{:.3f}"):
        return fmt.format(r[key]) if key in r else "-"
    print(table(head, [[r["case"], str(r["gpus"]), f(r, "whole_1"), f(r, "whole_n"),
                        f(r, "efficiency"), f(r, "iter_1", "{:.4f}"), f(r, "iter_n", "{:.4f}"),
                        f(r, "iter_speedup", "{:.2f}"),
                        (f"same bits {r['same_bits']}, max diff {r['max_diff']:.2e}, "
                         f"one process's time / the ranks' {r['of_one_process']:.3f} "
                         f"(per iteration {r['iter_of_one_process']:.3f})"
                         if "max_diff" in r else
                         f"this iteration / the shared update's: "
                         f"{r['shared_over_host']:.2f}, same model: {r['same_bits']}"
                         if "shared_over_host" in r else
                         f"same model as 1 GPU: {r['same_bits']}" if "same_bits" in r else
                         f"sum of the GPUs' streamed rates alone / together {r['ratio']:.2f}"
                         if "ratio" in r else "")]
                       for r in rows], left=1))


def ensemble_run(oc, args, counts, rows):
    """EnsembleKMeans on 1 and N GPUs (compare), then on N GPUs with the
    host's update instead of the devices' shared one (ensemble_update.
    centers_can_be_shared off): its median iteration against the shared
    update's, the same model."""
    from oclclust.passes import ensemble_update
    X = large_blobs(args.n, 8, 16)
    name = f"EnsembleKMeans {args.n:,} x 8, 32 models of k=16"
    make = lambda devs: oc.EnsembleKMeans(16, 32, init="random", max_iter=args.iters, tol=0,
                                          random_state=0, devices=devs)
    shared = compare(oc, name, make, X, counts, rows)
    can_share = ensemble_update.centers_can_be_shared
    ensemble_update.centers_can_be_shared = lambda data, comm: False
    try:
        for count in counts:
            fit(oc, make, X, gpus(oc, count))   # warm
            tn, i_n, host = fit(oc, make, X, gpus(oc, count))
            mine = next(r for r in rows if r["case"] == name and r["gpus"] == count)
            rows.append(dict(case=name + ", host update", gpus=count, whole_n=tn, iter_n=i_n,
                             shared_over_host=i_n / mine["iter_n"],
                             same_bits=same_model(host, shared[count])))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        ensemble_update.centers_can_be_shared = can_share


def gpus_main(argv=None):
    ap = argparse.ArgumentParser(description=DOC_GPUS.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, nargs="+", default=[2],
                    help="counts of GPUs, each against the same 1-GPU run")
    ap.add_argument("--only", default="kmeans,mpi,gmm,cmeans,ensemble")
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
    return mpi_body(args) if args.mpi_body else gpus_run(args)


# ---- upload (formerly bench/upload_speed.py) -------------------------------------------

DOC_UPLOAD = """Host rows onto several devices at once: the layout step of a fit
(DeviceManager.scatter: every device's share through its pinned staging,
all devices together) against plain pageable copies, by device count.

    python bench/devices.py upload --devices NVIDIA --counts 1 2 4 --rows 10000000 --d 128
    python bench/devices.py upload --devices "Intel(R) OpenCL" --counts 1 --rows 1000000 --d 32

For each count: seconds and GB/s of scatter (best of --repeat) at each
--fill-threads x --piece-mib setting, and of one thread per device each
copying its share from pageable numpy memory (the runtime's own staging).
"""


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def upload_main():
    ap = argparse.ArgumentParser(description=DOC_UPLOAD.splitlines()[0])
    ap.add_argument("--counts", type=int, nargs="+", default=[1])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--fill-threads", type=int, nargs="+", default=[0], help="0: as shipped")
    ap.add_argument("--piece-mib", type=int, nargs="+", default=[0], help="0: as shipped")
    ap.add_argument("--repeat", type=int, default=3)
    add_devices_argument(ap)
    args = ap.parse_args()
    oc = import_oclclust()
    from oclclust.runtime import transfer
    X = large_blobs(args.rows, args.d, 64)
    found = select_profiles(oc, args.devices)
    shipped = transfer.FILL_THREADS, transfer.PIECE_BYTES
    rows = []
    for count in args.counts:
        profiles = found[:count]
        for threads in args.fill_threads:
            for piece in args.piece_mib:
                transfer.FILL_THREADS = threads or shipped[0]
                transfer.PIECE_BYTES = (piece << 20) or shipped[1]
                transfer._fill_pool = None   # sized anew
                transfer._shared.clear()     # pinned pieces made anew at this size
                mgr = oc.DeviceManager(profiles)
                mgr.scatter(X[:100_000])     # contexts, staging made
                s = best(lambda: mgr.scatter(X), args.repeat)
                rows.append([str(count), f"scatter, {transfer.FILL_THREADS} fill threads, "
                             f"{transfer.PIECE_BYTES >> 20} MiB pieces", f"{s:.3f}",
                             f"{X.nbytes / s / 1e9:.1f}"])
                print(rows[-1], flush=True)
        contexts = [cl.Context([p.cl_device()]) for p in profiles]
        queues = [cl.CommandQueue(c) for c in contexts]
        shares = np.array_split(np.arange(len(X)), count)
        targets = [cla.empty(q, (len(s), args.d), X.dtype) for q, s in zip(queues, shares)]

        def pageable():
            def one(i):
                s = shares[i]
                cl.enqueue_copy(queues[i], targets[i].data, X[s[0]:s[-1] + 1], is_blocking=True)
            with ThreadPoolExecutor(count) as pool:
                list(pool.map(one, range(count)))
        pageable()
        s = best(pageable, args.repeat)
        rows.append([str(count), "pageable enqueue_copy, a thread per device", f"{s:.3f}",
                     f"{X.nbytes / s / 1e9:.1f}"])
        print(rows[-1], flush=True)
        del targets
    transfer.FILL_THREADS, transfer.PIECE_BYTES = shipped
    print(f"{args.rows} x {args.d} float32 = {X.nbytes / 1e9:.2f} GB")
    print(table(["devices", "path", "seconds", "GB/s"], rows, left=2))


# ---- mpi (formerly bench/mpi_scaling.py) -----------------------------------------------

DOC_MPI = """Weak scaling of KMeans across MPI ranks: each rank fits its own rows.

    python bench/devices.py mpi --ranks 1 2 4 --cores 4 --n-per-rank 2000000 \
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
            [sys.executable, os.path.abspath(__file__), "mpi", "--body", "--gpu-ranks", str(gpus),
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


def scaling_arguments(ap, unit):
    """The flags the MPI and Dask weak-scaling measurements share; *unit*:
    "rank" or "worker" (--ranks / --workers, --n-per-rank / --n-per-worker)."""
    ap.add_argument(f"--{unit}s", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--cores", type=int, default=4,
                    help=f"compute units of each {unit}'s CPU sub-device (0: the whole CPU)")
    ap.add_argument(f"--n-per-{unit}", type=int, default=2_000_000)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--gpu-share", type=float, default=8.0,
                    help=f"a GPU {unit}'s rows as a multiple of --n-per-{unit} (default 8)")
    ap.add_argument("--cpu-platform", default="Portable Computing Language")
    ap.add_argument("--gpu-platform", default="NVIDIA")


def mpi_main(argv=None):
    ap = argparse.ArgumentParser(description=DOC_MPI.split("\n\n")[0])
    scaling_arguments(ap, "rank")
    ap.add_argument("--mixed", help="G:C -- also run G GPU ranks with C CPU ranks")
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


# ---- dask (formerly bench/dask_scaling.py) ---------------------------------------------

DOC_DASK = """Weak scaling of KMeans across Dask workers: each worker holds its own rows.

    python bench/devices.py dask --workers 1 2 4 --cores 4 --n-per-worker 2000000 \
        --d 32 --k 256 --iters 10 [--repeat 3] [--pin] [--gpu] [--quick]

For each W, a LocalCluster of W worker processes (one thread each) starts;
each worker makes --n-per-worker rows of its own (blobs seeded by worker,
one dask block, made on the worker: the client never holds rows) and fits
on a CPU sub-device of --cores compute units (PoCL's CPU by default,
--cpu-platform), so the work per worker is constant and the ideal time per
iteration too.  Efficiency at W workers = time per iteration at 1 worker /
at W workers (bench/devices.py mpi's measure).  --gpu adds one run with the
first GPU of --gpu-platform as one worker, its rows scaled by --gpu-share.
Time per iteration is the median of KMeans.history_'s iterations (each one
task per block and the client's sum); a first fit builds the kernels.
"""


def physical_first():
    """This host's logical CPUs, one per physical core first, then their
    hyperthread siblings: consecutive slices of it share no core while
    they can."""
    cpus = sorted(os.sched_getaffinity(0))

    def rank(cpu):
        top = f"/sys/devices/system/cpu/cpu{cpu}/topology/"
        try:
            with open(top + "thread_siblings_list") as f:
                first = int(f.read().replace("-", ",").split(",")[0])
        except OSError:
            return (0, cpu)
        return (cpu != first, cpu)
    return sorted(cpus, key=rank)


def pin(cpus):
    """Binds every thread of this process, and the threads it starts later
    (PoCL's pool among them), to *cpus*."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:   # a thread that has ended
            pass


def worker_rows(seed, n, d, k, cpus=None):
    """One worker's rows (run on the worker, before any OpenCL there)."""
    if cpus:
        pin(cpus)
    centres = blob_centres(k, d, np.random.default_rng(0))
    return blobs(n, d, k, seed=seed, centres=centres)


def dask_run(args, workers, gpu=False):
    """{workers, per_iter_s, ...} of a fit on a fresh LocalCluster."""
    import dask.array as da
    from distributed import Client, LocalCluster
    from oclclust.parallel.dask import workers_info
    oc = import_oclclust()
    if gpu:
        devices = [oc.select_devices(args.gpu_platform)[0]]
        n = int(args.n_per_worker * args.gpu_share)
    else:
        cpu = [p for p in oc.select_devices(args.cpu_platform) if p.type == "cpu"][0]
        devices = oc.sub_devices(cpu, [args.cores]) if args.cores else [cpu]
        n = args.n_per_worker
    # PoCL starts a thread per hardware thread in every process, whatever the
    # sub-device: W workers would run W x cores threads on the cores
    env = {"POCL_CPU_MAX_CU_COUNT": str(args.cores)} if args.cores and not gpu else {}
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.abspath(__file__)), str(os.path.dirname(oc.__path__[0]))] +
        [p for p in [os.environ.get("PYTHONPATH")] if p])
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, env=env) as cluster, Client(cluster) as client:
        addrs = sorted(workers_info(client))
        order = physical_first()
        cpus = [order[w * args.cores:(w + 1) * args.cores]
                if args.pin and args.cores and not gpu else None for w in range(workers)]
        parts = [client.submit(worker_rows, 1000 + w, n, args.d, args.k, cpus[w], workers=[a],
                               pure=False) for w, a in enumerate(addrs)]
        X = da.concatenate([da.from_delayed(p, shape=(n, args.d), dtype=np.float32)
                            for p in parts])
        centres = blob_centres(args.k, args.d, np.random.default_rng(0))
        init = centres + np.random.RandomState(1).normal(scale=0.5, size=centres.shape)

        def fit(iters):
            km = oc.KMeans(args.k, init=init, n_init=1, max_iter=iters, tol=0,
                           devices=devices)
            start = time.perf_counter()
            km.fit(X)
            return time.perf_counter() - start, km
        fit(1)   # builds the kernels on every worker
        seconds, km = fit(args.iters)
    per_iter = float(np.median([h["seconds"] for h in km.history_]))
    return {"workers": workers, "gpu": gpu, "per_iter_s": per_iter, "fit_s": seconds,
            "cpus": cpus,
            "rows": n * workers, "inertia": km.inertia_, "devices": sorted(km.devices_)}


def dask_main(argv=None):
    ap = argparse.ArgumentParser(description=DOC_DASK.split("\n\n")[0])
    scaling_arguments(ap, "worker")
    ap.add_argument("--gpu", action="store_true", help="also run the GPU as one worker")
    ap.add_argument("--pin", action="store_true",
                    help="bind each worker to --cores CPUs of its own, physical cores first "
                         "(by default the OS schedules them)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run every configuration this many times, in turn, and keep each "
                         "one's fastest (a shared host's noise only slows a run down)")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    args = ap.parse_args(argv)
    if args.quick:
        args.n_per_worker, args.k, args.iters, args.cores = 20_000, 16, 3, 1
        args.workers = [w for w in args.workers if w <= 2]
    best = {}
    for _ in range(args.repeat):
        for workers, gpu in ([(w, False) for w in args.workers] +
                             ([(1, True)] if args.gpu else [])):
            res = dask_run(args, workers, gpu)
            print(json.dumps(res), flush=True)
            if (workers, gpu) not in best or res["per_iter_s"] < best[workers, gpu]["per_iter_s"]:
                best[workers, gpu] = res
    results = list(best.values())
    base = next((r for r in results if r["workers"] == 1 and not r["gpu"]), None)
    print(f"\nweak scaling: {args.n_per_worker:,} rows x {args.d} per worker, k={args.k}, "
          f"{args.cores}-core CPU sub-device per worker"
          f"{', bound to its own CPUs' if args.pin else ''}, fastest of {args.repeat} dask_run(s)")
    print(f"{'workers':>7} {'GPU':>4} {'s/iter':>9} {'rows/s':>12} {'efficiency':>10}")
    for r in results:
        eff = base["per_iter_s"] / r["per_iter_s"] if base and not r["gpu"] else None
        print(f"{r['workers']:>7} {'yes' if r['gpu'] else 'no':>4} {r['per_iter_s']:>9.4f} "
              f"{r['rows'] / r['per_iter_s']:>12.3g} " + (f"{eff:>10.3f}" if eff else f"{'-':>10}"))
    return 0


# ---- dask-gmm-init (formerly bench/dask_gmm_init.py) -----------------------------------

DOC_DASK_GMM_INIT = """GaussianMixture's data-driven starts on Dask workers: what an init costs
and what travels between the client and the workers.

    python bench/devices.py dask-gmm-init [--workers 2] [--n 400000] [--d 8] [--k 16] \
        [--blocks 8] [--inits random kmeans k-means++] [--platform NAME]

A LocalCluster of --workers worker processes; the rows (blobs) are made on
the workers in --blocks blocks.  Each init is fitted with max_iter=1 (the
start and one EM pass); reported: the fit's wall time (the median of
--repeat fits after one that builds the kernels) and the largest object
the client sent with a task and received from a gather (bytes pickled).
"""


def rows(n, d, k, blocks):
    import dask.array as da
    centres = np.random.RandomState(0).uniform(-20, 20, size=(k, d))
    x = da.random.RandomState(0).normal(size=(n, d), chunks=(-(-n // blocks), d))
    return x + da.from_array(centres)[da.arange(n, chunks=x.chunks[0]) % k]


def dask_gmm_init_main():
    ap = argparse.ArgumentParser(description=DOC_DASK_GMM_INIT.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--n", type=int, default=400_000)
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--inits", nargs="+", default=["random", "kmeans", "k-means++"])
    ap.add_argument("--platform", default=None, help="OpenCL platform name (default: any)")
    args = ap.parse_args()
    oc = import_oclclust()
    import cloudpickle
    from distributed import Client, LocalCluster
    devices = None if args.platform is None else [
        p for p in oc.list_devices() if p.platform == args.platform][:1]
    with LocalCluster(n_workers=args.workers, threads_per_worker=1,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        X = rows(args.n, args.d, args.k, args.blocks).persist()
        most = {"sent": 0, "received": 0}
        submit, gather_remote = client.submit, client._gather_remote

        def submitting(fn, *a, **kw):
            size = len(cloudpickle.dumps((a, {k: v for k, v in kw.items() if k != "workers"})))
            most["sent"] = max(most["sent"], size)
            return submit(fn, *a, **kw)

        async def gathering(*a, **kw):
            response = await gather_remote(*a, **kw)
            for value in response.get("data", {}).values():
                most["received"] = max(most["received"], len(cloudpickle.dumps(value)))
            return response
        client.submit, client._gather_remote = submitting, gathering
        print(f"{args.workers} workers, {args.n} x {args.d} rows in {args.blocks} blocks, "
              f"K={args.k}; rows' bytes {args.n * args.d * 8}")
        for init in args.inits:
            times = []
            for _ in range(args.repeat + 1):
                start = time.perf_counter()
                oc.GaussianMixture(args.k, init_params=init, max_iter=1, random_state=0,
                                   covariance_type="diag", devices=devices).fit(X)
                times.append(time.perf_counter() - start)
            print(f"{init:>12}: fit {statistics.median(times[1:]):.3f} s; largest sent "
                  f"{most['sent']} B, received {most['received']} B", flush=True)
            most.update(sent=0, received=0)
    return 0


MEASUREMENTS = {
    "kmeans": (kmeans_main, DOC_KMEANS),
    "gpus": (gpus_main, DOC_GPUS),
    "upload": (upload_main, DOC_UPLOAD),
    "mpi": (mpi_main, DOC_MPI),
    "dask": (dask_main, DOC_DASK),
    "dask-gmm-init": (dask_gmm_init_main, DOC_DASK_GMM_INIT),
    "hetero": (hetero_main, DOC_HETERO),
}


if __name__ == "__main__":
    sys.exit(run_measurement(MEASUREMENTS, __doc__))
