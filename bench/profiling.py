#!/usr/bin/env python3
"""Where a fit spends its time: cProfile of a warm fit, timers around a
fit's own functions (phase by phase, or thread by thread over several
devices), and single linkage's phases -- nothing in oclclust changed.

    python bench/profiling.py [cprofile] --devices NVIDIA --estimator DBSCAN --n 1000000
    python bench/profiling.py cprofile --devices NVIDIA --estimator KMeans \
        --n 10000000 --d 128 --k 1024 --host-update
    python bench/profiling.py cprofile-small --devices NVIDIA --shape 10000 8 8
    python bench/profiling.py phases --devices NVIDIA --n 1000000 --d 32 --k 256 --iters 50
    python bench/profiling.py timeline --devices NVIDIA --count 1 2 --n 10000000 --d 128 --k 1024
    python bench/profiling.py single-linkage --devices NVIDIA --n 100000 1000000 --d 32

Measurements (``python bench/profiling.py NAME --help`` gives each one's flags):

    cprofile        cProfile of one warm fit of DBSCAN, HDBSCAN, single
                    linkage, MiniBatchKMeans, KMeans, FuzzyCMeans or
                    GaussianMixture (diag, 5 iterations); --kernels: its
                    device time kernel by kernel instead
    cprofile-small  cProfile of repeated small warm KMeans fits
    phases          a warm KMeans / FuzzyCMeans fit from host rows, phase by
                    phase, and the garbage collector's pauses
    timeline        a warm KMeans fit over one or several devices: the
                    host's round trip and each device's pass per iteration
    single-linkage  single linkage on the rows: MST order, device scans,
                    Boruvka's host rounds, the host's labelling
"""
import argparse
import cProfile
import gc
import pstats
import sys
import threading
import time
from collections import defaultdict

import numpy as np

from _common import (add_devices_argument, blobs, import_oclclust, large_blobs,
                     run_measurement, select_profiles, time_calls)


# ---- cprofile (formerly bench/profile_fit.py) ------------------------------------------

DOC_CPROFILE = """Where one fit spends its time: cProfile of a warm fit of DBSCAN, HDBSCAN,
single linkage, MiniBatchKMeans or KMeans on blobs (the calls into the device
passes, their counts and cumulative times).

    python bench/profiling.py cprofile --devices NVIDIA --estimator DBSCAN --n 1000000
    python bench/profiling.py cprofile --devices NVIDIA --estimator MiniBatchKMeans \
        --n 10000000 --d 128 --k 1024 --batch 65536
    python bench/profiling.py cprofile --devices NVIDIA --count 2 --estimator KMeans \
        --n 10000000 --d 128 --k 1024 --host-update

KMeans: 20 iterations (tol 0) from k rows; --count N takes the first N
matching devices; --threads profiles the device threads' work too (each
shard's run, under its own profiler, merged into the report); --host-update
forces the host's centre update; --kernels times the warm fit's kernels on
the devices instead (every queue made with profiling on: OpenCL's event
times, summed by kernel name, beside the fit's wall time).
"""


class KernelTimes:
    """Every kernel oclclust launches in this process timed on its device:
    queues made with profiling on and each launch's event kept (SharedKernel
    calls and own kernels' cl.enqueue_nd_range_kernel), to be summed by
    name once waited for.  Installed before the first queue is made."""

    def __init__(self):
        import pyopencl as cl
        from oclclust.runtime import codegen
        self.events, self.on, self.event_type = [], False, cl.Event
        plain_queue, shared_call = cl.CommandQueue, codegen.SharedKernel.__call__
        plain_enqueue = cl.enqueue_nd_range_kernel
        times = self

        class ProfiledQueue(plain_queue):
            def __init__(self, context, device=None, properties=None):
                super().__init__(context, device,
                                 cl.command_queue_properties.PROFILING_ENABLE)

        def shared(kern, *args, **kwargs):
            return times.note(kern.raw.function_name, shared_call(kern, *args, **kwargs))

        def own(queue, kern, *args, **kwargs):
            return times.note(kern.function_name, plain_enqueue(queue, kern, *args, **kwargs))

        cl.CommandQueue, codegen.SharedKernel.__call__ = ProfiledQueue, shared
        cl.enqueue_nd_range_kernel = own

    def note(self, name, event):
        if self.on and isinstance(event, self.event_type):
            self.events.append((name, event))
        return event

    def report(self, wall, iterations):
        """Each kernel's launches and device ms (all, and a fit iteration's),
        the largest first."""
        total, count = defaultdict(float), defaultdict(int)
        for name, event in self.events:
            event.wait()
            total[name] += (event.profile.end - event.profile.start) * 1e-6
            count[name] += 1
        print(f"fit {wall * 1e3:.1f} ms wall, kernels {sum(total.values()):.1f} ms "
              f"on the devices ({iterations} iterations):")
        for name in sorted(total, key=total.get, reverse=True):
            print(f"  {name:36s} {count[name]:6d} launches {total[name]:10.2f} ms "
                  f"{total[name] / max(iterations, 1):9.3f} ms/iter")


MAKERS = {
    "DBSCAN": lambda oc, dev, a: oc.DBSCAN(eps=2.0, min_samples=10, devices=dev),
    "HDBSCAN": lambda oc, dev, a: oc.HDBSCAN(min_cluster_size=20, min_samples=10, devices=dev),
    "single": lambda oc, dev, a: oc.AgglomerativeClustering(n_clusters=20, linkage="single",
                                                            devices=dev),
    "MiniBatchKMeans": lambda oc, dev, a: oc.MiniBatchKMeans(
        a.k, batch_size=a.batch, max_iter=1, max_no_improvement=None, random_state=0,
        devices=dev),
    "KMeans": lambda oc, dev, a: oc.KMeans(a.k, init=a.init, n_init=1, max_iter=20, tol=0,
                                           precision=a.precision, devices=dev),
    "FuzzyCMeans": lambda oc, dev, a: oc.FuzzyCMeans(a.k, init=a.init, max_iter=20, tol=0,
                                                     precision=a.precision, devices=dev),
    "GaussianMixture": lambda oc, dev, a: oc.GaussianMixture(
        a.k, covariance_type=a.covariance, means_init=a.init.astype(np.float64), max_iter=5, tol=0,
        init_params="random_from_data", random_state=0, reg_covar=1e-3,
        precision=a.precision, devices=dev),
}


ROWS = ("MiniBatchKMeans", "KMeans", "FuzzyCMeans", "GaussianMixture")   # float32 rows, as the k-means benches'


def cprofile_main():
    ap = argparse.ArgumentParser(description=DOC_CPROFILE.splitlines()[0])
    ap.add_argument("--estimator", choices=sorted(MAKERS), default="DBSCAN")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--k", type=int, default=20, help="blob centres (and MiniBatchKMeans' k)")
    ap.add_argument("--batch", type=int, default=4096, help="MiniBatchKMeans' batch_size")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--count", type=int, default=0, help="the first N matching devices")
    ap.add_argument("--host-update", action="store_true", help="KMeans: the host's update")
    ap.add_argument("--covariance", default="diag", help="GaussianMixture's covariance_type")
    ap.add_argument("--precision", default="float32",
                    help="KMeans', FuzzyCMeans' and GaussianMixture's precision")
    ap.add_argument("--threads", action="store_true",
                    help="profile each device thread's shard runs too (merged)")
    ap.add_argument("--cold", action="store_true",
                    help="profile the process's first fit (devices, contexts, programs from "
                         "the on-disk cache, pinned staging) instead of a warm one")
    ap.add_argument("--kernels", action="store_true",
                    help="the warm fit's device time kernel by kernel instead of cProfile")
    add_devices_argument(ap)
    args = ap.parse_args()
    oc = import_oclclust()
    kernel_times = KernelTimes() if args.kernels else None
    make = MAKERS[args.estimator]
    if args.count:
        args.devices = oc.DeviceManager(select_profiles(oc, args.devices)[:args.count],
                                        weights="compute_units")
    if args.host_update:
        from oclclust.cluster.kmeans import kmeans
        kmeans.DEVICE_UPDATE = False
    if args.estimator in ROWS:
        X = large_blobs(args.n, args.d, args.k)
        args.init = X[np.random.default_rng(1).choice(len(X), args.k, replace=False)].copy()
        if args.cold:
            profiled(make(oc, args.devices, args).fit, X, args,
                     "the process's first fit, under cProfile", ("cumulative",))
            return
        make(oc, args.devices, args).fit(X[:max(4 * args.batch, 2 * args.k)])   # builds
    else:
        make(oc, args.devices, args).fit(blobs(600, args.d, args.k).astype(np.float64))
        X = blobs(args.n, args.d, args.k).astype(np.float64)
    est = make(oc, args.devices, args)
    if kernel_times:
        kernel_times.on = True
    start = time.perf_counter()
    est.fit(X)
    wall = time.perf_counter() - start
    print(f"{args.estimator} {args.n} x {args.d}: {wall:.3f} s")
    if getattr(est, "history_", None):
        its = [h["seconds"] for h in est.history_[1:] if "seconds" in h]
        print(f"  per iteration (median of {len(its)}): {np.median(its) * 1e3:.2f} ms")
    if kernel_times:
        kernel_times.report(wall, getattr(est, "n_iter_", 0))
        return
    profiled(make(oc, args.devices, args).fit, X, args, "under cProfile",
             ("cumulative", "tottime"))


def profiled(fit, X, args, what, orders):
    """fit(X) under cProfile: its time, then the top calls in each order
    (with --threads, the device threads' shard runs merged in)."""
    prof, threads = cProfile.Profile(), []
    # Python 3.12's cProfile (sys.monitoring) sees every thread already
    if getattr(args, "threads", False) and sys.version_info < (3, 12):
        from oclclust.parallel import shard
        plain = shard.Shard.run

        def run(self, fn, rows=True):
            if threading.current_thread() is threading.main_thread():
                return plain(self, fn, rows)
            mine = cProfile.Profile()
            threads.append(mine)
            return mine.runcall(plain, self, fn, rows)
        shard.Shard.run = run
    start = time.perf_counter()
    prof.runcall(fit, X)
    print(f"{args.estimator} {args.n} x {args.d}: {time.perf_counter() - start:.3f} s ({what}"
          + (f"; {len(threads)} thread runs merged" if threads else "") + ")")
    for order in orders:
        stats = pstats.Stats(prof)
        for other in threads:
            stats.add(other)
        stats.sort_stats(order).print_stats(args.top)


# ---- cprofile-small (formerly bench/profile_small.py) ----------------------------------

DOC_CPROFILE_SMALL = """Where a small warm KMeans fit spends its time: cProfile of repeated fits.

    python bench/profiling.py cprofile-small --devices NVIDIA --shape 10000 8 8 [--top 40]
"""


def cprofile_small_main(argv=None):
    ap = argparse.ArgumentParser(description=DOC_CPROFILE_SMALL.split("\n\n")[0])
    ap.add_argument("--devices", default="Portable")
    ap.add_argument("--shape", type=int, nargs=3, default=[10000, 8, 8], metavar=("N", "D", "K"))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--fits", type=int, default=50)
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args(argv)
    oc = import_oclclust()
    n, d, k = args.shape
    X = np.random.default_rng(0).normal(size=(n, d)).astype(np.float32)
    km = oc.KMeans(k, init=X[:k].copy(), n_init=1, max_iter=args.iters, tol=0,
                   devices=oc.select_devices(args.devices))
    km.fit(X)
    times = []
    for _ in range(args.fits):
        start = time.perf_counter()
        km.fit(X)
        times.append(time.perf_counter() - start)
    print(f"{n} x {d}, k={k}, {km.n_iter_} iterations: warm fit {np.median(times) * 1e3:.2f} ms "
          f"(median of {args.fits})")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.fits):
        km.fit(X)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)
    return 0


# ---- phases (formerly bench/fit_phases.py) ---------------------------------------------

DOC_PHASES = """Where a warm KMeans or FuzzyCMeans fit from host rows spends its time,
phase by phase (the fit's functions wrapped with timers, nothing changed):
placing the rows, the Lloyd loop (its host-update iterations apart), the
final pass and labels, the rest; c-means: the rows, the moments, the start,
the iterations, the final memberships pass (and the passes' set-up in it);
and the garbage collector's pauses.

    python bench/profiling.py phases --devices NVIDIA --n 1000000 --d 32 --k 256 --iters 50
    python bench/profiling.py phases --devices NVIDIA --estimator FuzzyCMeans --n 1000000 --d 24 \
        --k 100 --iters 20
"""


def phases_main():
    ap = argparse.ArgumentParser(description=DOC_PHASES.split("\n\n")[0])
    add_devices_argument(ap)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--estimator", choices=("KMeans", "FuzzyCMeans"), default="KMeans")
    args = ap.parse_args()
    oc = import_oclclust()
    from oclclust.cluster import _base
    from oclclust.cluster.mixture import cmeans
    from oclclust.cluster.kmeans import kmeans, lloyd_loop
    from oclclust.cluster.mixture import cmeans_shards
    from oclclust.cluster.kmeans import lloyd_shards as sharded_lloyd
    spent = defaultdict(float)

    def timed(owner, name, label):
        def add(start, end):
            spent[label] += end - start
        time_calls(owner, name, add)
    timed(_base, "fit_data", "rows placed (fit_data)")
    if args.estimator == "KMeans":
        timed(kmeans, "fit_lloyd", "Lloyd loop (fit_lloyd)")
        timed(lloyd_loop, "host_update", "  of which host-update iterations")
        timed(kmeans.LloydModel, "finish", "  of which finish (final pass, labels)")
        timed(sharded_lloyd.LloydShards, "centers_to_host", "  of which centers_to_host")
        loop = "Lloyd loop (fit_lloyd)"
    else:
        timed(cmeans.FuzzyCMeans, "_fit", "c-means (_fit)")
        timed(cmeans.FuzzyCMeans, "_mean_and_tol", "  of which moments (_mean_and_tol)")
        timed(cmeans.FuzzyCMeans, "_init_centers", "  of which start (_init_centers)")
        timed(cmeans_shards.CMeansShards, "run", "  of which iterations (CMeansShards.run)")
        timed(cmeans_shards.CMeansShards, "memberships", "  of which final pass (memberships)")
        timed(cmeans.CMeansPass, "__init__", "    passes made (CMeansPass.__init__)")
        loop = "c-means (_fit)"
    gc_t = {}

    def on_gc(phase, info):
        if phase == "start":
            gc_t["t"] = time.perf_counter()
        elif "t" in gc_t:
            spent["gc pauses"] += time.perf_counter() - gc_t.pop("t")
    gc.callbacks.append(on_gc)
    X = large_blobs(args.n, args.d, args.k)
    C0 = X[np.random.default_rng(1).choice(len(X), args.k, replace=False)].copy()
    if args.estimator == "KMeans":
        make = lambda: oc.KMeans(args.k, init=C0, n_init=1, max_iter=args.iters,   # noqa
                                 tol=0, devices=args.devices)
    else:
        make = lambda: oc.FuzzyCMeans(args.k, m=2.0, init=C0, max_iter=args.iters,   # noqa
                                      tol=0, devices=args.devices)
    make().fit(X)
    walls, runs = [], []
    for _ in range(args.repeats):
        spent.clear()
        t = time.perf_counter()
        km = make().fit(X)
        walls.append(time.perf_counter() - t)
        runs.append(dict(spent))
    i = int(np.argmin(walls))
    its = [h["seconds"] for h in km.history_]
    print(f"{args.estimator} {args.n} x {args.d} x {args.k}, {args.iters} iterations: "
          "best warm fit "
          f"{walls[i] * 1e3:.1f} ms (median {np.median(walls) * 1e3:.1f}); iterations: "
          f"median {np.median(its) * 1e3:.3f} ms, sum {sum(its) * 1e3:.1f} ms, first "
          f"{its[0] * 1e3:.2f} ms, max {max(its) * 1e3:.2f} ms")
    for label, s in runs[i].items():
        print(f"  {label:42s} {s * 1e3:8.2f} ms")
    outside = walls[i] - runs[i].get("rows placed (fit_data)", 0) - runs[i].get(loop, 0)
    print(f"  {'outside these':42s} {outside * 1e3:8.2f} ms")


# ---- timeline (formerly bench/fit_timeline.py) -----------------------------------------

DOC_TIMELINE = """Where a warm KMeans fit over one or several devices spends its time: the
fit's own functions wrapped with timers (nothing changed), each call's
thread recorded, then per-iteration means of the host's round trip and of
each device's pass (its upload, the wait for its kernels and reads, the
rest).  What several GPUs lose to the host between passes shows as the
iteration's time less its slowest device's pass.

    python bench/profiling.py timeline --devices NVIDIA --count 1 2 --n 10000000 --d 128 --k 1024
"""


EVENTS = []   # (name, thread name, start, end)


def wrap(owner, name, label=None):
    time_calls(owner, name, lambda start, end: EVENTS.append(
        (label or name, threading.current_thread().name, start, end)))


def instrument():
    import pyopencl as cl
    from oclclust.cluster.kmeans import lloyd_loop, kmeans
    from oclclust.parallel import device_data
    from oclclust.passes import lloyd
    wrap(device_data.DeviceData, "_layout", "layout")
    wrap(lloyd_loop, "lloyd_step", "iteration")
    wrap(lloyd_loop, "host_update", "host_update")
    wrap(lloyd.LloydPass, "run", "pass")
    wrap(lloyd.LloydPass, "upload", "pass.upload")
    wrap(lloyd.LloydPass, "enqueue", "pass.enqueue")
    wrap(lloyd.LloydPass, "launch", "launch")
    wrap(lloyd.LloydPass, "collect", "collect")
    wrap(kmeans.LloydModel, "finish", "finish")
    wrap(lloyd_loop, "centers_update", "centers_update")
    from oclclust.cluster import _base
    from oclclust.parallel import sharded
    wrap(_base.KCluster, "_fit_on_devices", "fit_body")
    wrap(lloyd, "center_norms", "pass.norms")
    wrap(lloyd, "split_centers", "pass.split")
    wrap(sharded.ShardedPass, "reduce", "reduce")
    wrap(kmeans.LloydModel, "record", "record")
    wrap(lloyd_loop, "history_entry", "history")
    from oclclust.parallel import placement
    wrap(_base, "fit_data", "fit_data")
    wrap(kmeans, "fit_lloyd", "fit_lloyd")
    wrap(kmeans.KMeans, "_init_centers", "init_centers")
    wrap(lloyd_loop.LloydBackend, "relocate", "relocate")
    wrap(np, "bincount", "bincount")
    from oclclust.cluster import empty_clusters
    orig_relocate = empty_clusters.relocate_empty

    def relocate_empty(sums, weights, *a, **kw):   # how many clusters were empty
        EVENTS.append((f"empty {int((weights == 0).sum())}", "", 0.0, 0.0))
        return orig_relocate(sums, weights, *a, **kw)
    lloyd_loop.relocate_empty = relocate_empty
    wrap(cl, "wait_for_events", "wait")   # a pass's one wait for its kernels and reads


def summarise(fit_start, fit_end):
    print(f"  whole fit {1e3 * (fit_end - fit_start):.1f} ms")
    span = defaultdict(float)
    for name, _, s, e in EVENTS:
        if name in ("layout", "finish", "fit_body", "fit_data", "fit_lloyd", "init_centers",
                    "relocate", "bincount"):
            span[name] += e - s
    iters = sorted((s, e) for name, _, s, e in EVENTS if name == "iteration")
    print(f"  layout {1e3 * span['layout']:.1f} ms, finish {1e3 * span['finish']:.1f} ms, "
          f"{len(iters)} iterations {1e3 * sum(e - s for s, e in iters):.1f} ms, "
          f"rest {1e3 * (fit_end - fit_start - span['layout'] - span['finish'] - sum(e - s for s, e in iters)):.1f} ms, "
          f"of which after the fit's body (its objects released) "
          f"{1e3 * (fit_end - fit_start - span['fit_body']):.1f} ms")
    print("  fit_data {:.1f} (layout inside), fit_lloyd {:.1f} (iterations and finish inside), "
          "init_centers {:.1f}, bincount {:.1f}, relocate {:.1f} ms; first iterations {} ms".format(
              *[1e3 * span[k] for k in ("fit_data", "fit_lloyd", "init_centers", "bincount",
                                        "relocate")],
              ", ".join(f"{1e3 * (e - s):.1f}" for s, e in iters[:3])))
    print("  relocations: " + ", ".join(n for n, *_ in EVENTS if n.startswith("empty")))
    rows = []
    for s, e in iters[2:]:   # warm iterations
        inside = [(n, t, a, b) for n, t, a, b in EVENTS if a >= s and b <= e]
        per = defaultdict(lambda: defaultdict(float))
        for n, t, a, b in inside:
            per[t][n] += b - a
        passes = {t: v for t, v in per.items() if v.get("pass")}
        main = threading.main_thread().name
        slowest = max(passes.values(), key=lambda v: v["pass"]) if passes else {}
        update = sum(b - a for n, _, a, b in inside if n == "centers_update")
        reduce_ = [b - a for n, t, a, b in inside if n == "reduce" and t == main]
        small = {n: sum(b - a for m, _, a, b in inside if m == n)
                 for n in ("pass.norms", "pass.split", "record", "history")}
        main_thread = per[main]
        enq = "launch" in main_thread and "pass" not in main_thread
        rows.append((e - s, main_thread["launch"] + main_thread["collect"] if enq
                     else slowest.get("pass", 0), slowest.get("pass.upload", 0),
                     slowest.get("pass.enqueue", 0), slowest.get("wait", 0),
                     update, len(passes), sum(reduce_), *small.values(),
                     main_thread["launch"] if enq else 0, main_thread["collect"] if enq else 0))
    if rows:
        m = np.mean(rows, axis=0) * 1e3
        print(f"  per iteration (mean of {len(rows)}): {m[0]:.2f} ms; slowest device's pass "
              f"{m[1]:.2f} (upload {m[2]:.2f}, enqueue {m[3]:.2f}, wait {m[4]:.2f}, "
              f"rest {m[1] - m[2] - m[3] - m[4]:.2f}); outside the passes {m[0] - m[1]:.2f} "
              f"(centres update {m[5]:.2f}); passes seen {int(rows[0][6])}; main thread's reduce {m[7]:.2f}; all threads' norms "
              f"{m[8]:.2f}, split {m[9]:.2f}; record {m[10]:.2f}, history {m[11]:.2f}"
              + (f"; launched from the main thread: launches {m[12]:.2f}, collects {m[13]:.2f}"
                 if m[12] else ""))


def timeline_main():
    ap = argparse.ArgumentParser(description=DOC_TIMELINE.split("\n\n")[0])
    add_devices_argument(ap)
    ap.add_argument("--count", type=int, nargs="+", default=[1])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--host-update", action="store_true", help="one device: the host's update")
    args = ap.parse_args()
    oc = import_oclclust()
    if args.host_update:
        from oclclust.cluster.kmeans import kmeans
        kmeans.DEVICE_UPDATE = False
    instrument()
    X = large_blobs(args.n, args.d, args.k)
    C0 = X[np.random.default_rng(1).choice(len(X), args.k, replace=False)].copy()
    profiles = select_profiles(oc, args.devices)
    for count in args.count:
        mgr = oc.DeviceManager(profiles[:count], weights="compute_units")
        make = lambda: oc.KMeans(args.k, init=C0, n_init=1, max_iter=args.iters, tol=0,
                                 devices=mgr)
        make().fit(X[:200_000])
        make().fit(X)   # warm: every kernel and pinned array made
        EVENTS.clear()
        start = time.perf_counter()
        make().fit(X)
        end = time.perf_counter()
        print(f"{count} device(s), {args.n} x {args.d}, k={args.k}, {args.iters} iterations"
              + (" (host update)" if args.host_update else ""))
        summarise(start, end)


# ---- single-linkage (formerly bench/single_phases.py) ----------------------------------

DOC_SINGLE_LINKAGE = """Where single linkage on the rows spends its time: the MST's spatial order,
device scans (each finished before the clock reads), Boruvka's host rounds
(of which _known and connected_components), toward_root, and the host's
labelling of the sorted edges (scipy's Z) -- one warm run per size.

    python bench/profiling.py single-linkage --devices NVIDIA --n 100000 1000000 --d 32

The data are bench/hierarchy.py's (blobs(n, d, 50), seed 0, float64).
"""


def single_linkage_main():
    ap = argparse.ArgumentParser(description=DOC_SINGLE_LINKAGE.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100000])
    ap.add_argument("--d", type=int, default=32)
    add_devices_argument(ap)
    args = ap.parse_args()
    import_oclclust()
    import scipy.sparse.csgraph as csgraph
    import oclclust.passes.mst as mst
    import oclclust.cluster.hierarchy.linkage_matrix as hc
    from oclclust.passes.linkage import Plan
    from oclclust.runtime.devices import preferred, select_devices
    dev = preferred(select_devices(args.devices))[0]
    plan = Plan(dev, np.float64 if dev.fp64 else np.float32)
    stats = {}

    def add(key, seconds, count=1):
        stats[key] = stats.get(key, 0.0) + seconds
        stats[key + "#"] = stats.get(key + "#", 0) + count

    def timer(key, fn):
        def timed(*a, **k):
            t = time.perf_counter()
            out = fn(*a, **k)
            add(key, time.perf_counter() - t)
            return out
        return timed
    real_kernel = mst.nearest_kernel

    def timed_kernel(*a):
        spec, kern = real_kernel(*a)

        def run(q, g, l, *kargs):
            q.finish()
            t = time.perf_counter()
            kern(q, g, l, *kargs)
            q.finish()
            add("scan", time.perf_counter() - t)
            stats["rows"] = stats.get("rows", 0) + int(kargs[4])
        return spec, run
    mst.nearest_kernel = timed_kernel
    mst.spatial_order = timer("order", mst.spatial_order)
    mst._known = timer("known", mst._known)
    mst.toward_root = timer("toward_root", mst.toward_root)
    csgraph.connected_components = timer("components", csgraph.connected_components)
    mst.minimum_spanning_tree(plan, blobs(300, args.d, 5).astype(np.float64))
    print(f"single linkage phases on {dev}; d={args.d}", flush=True)
    for n in args.n:
        X = blobs(n, args.d, 50).astype(np.float64)
        stats.clear()
        t0 = time.perf_counter()
        a, b, w = mst.minimum_spanning_tree(plan, X)
        t1 = time.perf_counter()
        Z = np.empty((n - 1, 4))
        Z[:, 0], Z[:, 1], Z[:, 2] = a, b, w
        hc.label(Z, n)
        t2 = time.perf_counter()
        rest = t1 - t0 - sum(stats.get(k, 0) for k in ("order", "scan", "known", "toward_root",
                                                           "components"))
        print(f"n={n}: MST {t1 - t0:.3f} s = order {stats['order']:.3f} + "
              f"{stats['scan#']} scans {stats['scan']:.3f} ({stats['rows'] / n:.2f} n rows) + "
              f"_known {stats['known']:.3f} + {stats['components#']} rounds' components "
              f"{stats['components']:.3f} + toward_root {stats.get('toward_root', 0):.3f} + "
              f"other host {rest:.3f}; label {t2 - t1:.3f} s; total {t2 - t0:.3f} s",
              flush=True)


MEASUREMENTS = {
    "cprofile": (cprofile_main, DOC_CPROFILE),
    "cprofile-small": (cprofile_small_main, DOC_CPROFILE_SMALL),
    "phases": (phases_main, DOC_PHASES),
    "timeline": (timeline_main, DOC_TIMELINE),
    "single-linkage": (single_linkage_main, DOC_SINGLE_LINKAGE),
}


if __name__ == "__main__":
    sys.exit(run_measurement(MEASUREMENTS, __doc__))
