#!/usr/bin/env python3
"""The whole fit: host rows in, a fitted model out -- what a user's fit
costs, cold and warm, against the anchors in the same run, and its fixed
cost over its iterations.

    python bench/fit.py [speed] --devices NVIDIA                     # issue 36's table
    python bench/fit.py speed --quick --devices "Intel(R) OpenCL"     # CPU-sized shapes
    python bench/fit.py speed --devices NVIDIA --only small-100k,kmeans-1m --json
    python bench/fit.py overhead                                      # fixed cost / iterations
    python bench/fit.py overhead --devices NVIDIA --gmm-n 1000000 --gmm-d 128 --gmm-k 1024

Measurements (``python bench/fit.py NAME --help`` gives each one's flags):

    speed     every row of issue 36's table: cold and warm whole fits of
              KMeans, FuzzyCMeans and GaussianMixture with the PyTorch GEMM
              k-means and scikit-learn on the same rows, KMeans at each
              precision (re-checked rows, float64-argmin agreement),
              streamed and out-of-core (np.memmap) fits against resident,
              EnsembleKMeans' concatenated over data parallelism (one JSON
              line per workload with --json)
    overhead  t(I iterations) / (I x marginal iteration), wall and CPU
              clock, and where GMM's and c-means' fixed costs go
"""
import argparse
import collections
import contextlib
import json
import os
import re
import resource
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np

from _common import (_busy_seconds, add_devices_argument, blobs, fresh_process, has_cuda,
                     import_oclclust, large_blobs, load_rows, random_rows, run_measurement,
                     table)
from kmeans import agreement   # bench/kmeans.py gpu --precisions' float64-argmin check


# ---- speed (formerly bench/fit_speed.py) -----------------------------------------------

DOC_SPEED = """The whole fit as users time it: host numpy rows in, a fitted model out.

Every row of issue 36's table (issue 18's workloads among them) in one run,
each fit timed cold (a fresh process: import, device discovery, programs
from the on-disk cache, the fit) and warm (a second fit in this process),
with the anchors in the same run on the same rows and initial centres: the
PyTorch GEMM k-means recipe (host data to host labels and centres, FP32 and
TF32) where CUDA is, scikit-learn on the host for the small fits.
Per-iteration seconds are the median of ``history_``.

    python bench/fit.py speed --devices NVIDIA                  # every workload
    python bench/fit.py speed --devices NVIDIA --only small-100k,kmeans-1m
    python bench/fit.py speed --devices NVIDIA --only outofcore-100m --memmap-dir /scratch
    python bench/fit.py speed --quick --devices "Intel(R) OpenCL"   # CPU-sized shapes

Cold runs come after the warm ones (the on-disk program cache is then
warm, as for a user's second script) and read the rows the parent wrote to
a temporary .npy file (not timed).  "iters" is the fit's n_iter_ (a fit that
stops changing labels stops before max_iter).  Besides, where a workload
asks for them:

    precisions   kmeans-10m, flash-16m: KMeans warm at each precision=
                 (float32, tf32, bf16; the row's own figures are the first's):
                 the whole fit, its TFLOP/s and median iteration; for tf32
                 and bf16 the rows re-checked per iteration (history_; "-"
                 where the mode runs as float32: every device but an NVIDIA
                 GPU's tensor cores) and, of the last 100,000 rows, the
                 labels at the final centres equal to the float64 argmin,
                 and of those that differ, how many lie within the
                 documented bound of a tie (bench/kmeans.py's agreement)
    resident     stream-20m, outofcore-100m (a memory budget): the same rows
                 fitted without it where the devices hold them at once, and
                 streamed ms/iter over resident ms/iter
    memmap       outofcore-100m (ask with --only): the rows an np.memmap
                 file, written 4M rows at a time under --memmap-dir (51 GB;
                 removed at the end) and fitted from it; no cold runs
    ensemble-32  EnsembleKMeans M=32 on 1M x 2, k=10: concatenated over
                 data parallelism per iteration, per pipelined statistics
                 pass and of the pass's kernels, as ``python -m oclclust
                 tune --kernels ensemble`` measures it (its search of the
                 terms; with --quick the profile's work-groups alone)

One JSON line per workload with --json, else tables at the end.
"""


GIB = 1 << 30
AGREE_ROWS = 100_000    # rows of a fast precision's float64-argmin check
PRECISIONS = ("float32", "tf32", "bf16")


# --------------------------------------------------------------- workloads
# A fit of n x d rows, k clusters, *iters* iterations (tol=0).  budget: bytes of rows a
# device holds at once (a DeviceManager's memory_budget: the rows stream past it);
# precisions: precision= modes timed, the first the row's; memmap: the rows an np.memmap
# file; models: EnsembleKMeans' M, timed by the tuner's measurement, not by a fit.
Workload = collections.namedtuple("Workload", "estimator n d k iters budget precisions memmap "
                                  "models", defaults=(None, ("float32",), False, None))
WORKLOADS = {
    "kmeans-1m": Workload("KMeans", 1_000_000, 32, 256, 50),
    "kmeans-10m": Workload("KMeans", 10_000_000, 128, 4096, 20, precisions=("float32", "bf16")),
    "small-1k": Workload("KMeans", 1_000, 2, 3, 20),
    "small-10k": Workload("KMeans", 10_000, 8, 8, 20),
    "small-100k": Workload("KMeans", 100_000, 16, 32, 20),
    "stream-20m": Workload("KMeans", 20_000_000, 128, 1024, 10, 2 * GIB),
    "gmm-diag-1m": Workload("GaussianMixture", 1_000_000, 128, 1024, 3),
    "cmeans-1m": Workload("FuzzyCMeans", 1_000_000, 24, 100, 20),
    "flash-16m": Workload("KMeans", 1 << 24, 128, 4096, 5, precisions=PRECISIONS),
    "outofcore-100m": Workload("KMeans", 100_000_000, 128, 4096, 3, 40 * 10 ** 9, memmap=True),
    # the tuner's shape: oclclust.cli.tune_ensemble.PAPER_SHAPE, its 10 iterations
    "ensemble-32": Workload("EnsembleKMeans", 1_000_000, 2, 10, 10, models=32),
}


QUICK = {
    "kmeans-1m": Workload("KMeans", 200_000, 32, 64, 10),
    "kmeans-10m": Workload("KMeans", 200_000, 32, 64, 10, precisions=("float32", "bf16")),
    "small-1k": Workload("KMeans", 1_000, 2, 3, 20),
    "small-10k": Workload("KMeans", 10_000, 8, 8, 20),
    "small-100k": Workload("KMeans", 100_000, 16, 32, 20),
    "stream-20m": Workload("KMeans", 400_000, 32, 64, 5, 400_000 * 32 * 4 // 8),
    "gmm-diag-1m": Workload("GaussianMixture", 200_000, 32, 64, 3),
    "cmeans-1m": Workload("FuzzyCMeans", 200_000, 24, 100, 10),
    "flash-16m": Workload("KMeans", 1 << 18, 32, 64, 5, precisions=PRECISIONS),
    "outofcore-100m": Workload("KMeans", 300_000, 32, 64, 3, 300_000 * 32 * 4 // 3,
                               memmap=True),
    "ensemble-32": Workload("EnsembleKMeans", 20_000, 2, 10, 3, models=32),
}


DEFAULT = ["small-1k", "small-10k", "small-100k", "kmeans-1m", "cmeans-1m", "gmm-diag-1m",
           "kmeans-10m", "stream-20m", "flash-16m", "ensemble-32"]   # out of core: --only


def describe(spec):
    return (f"{spec.n}x{spec.d}x{spec.k}" + (f" M={spec.models}" if spec.models else "")
            + (f" budget {spec.budget / GIB:.3g} GiB" if spec.budget else "")
            + (" memmap" if spec.memmap else ""))


@contextlib.contextmanager
def rows_of(spec, folder=None):
    """The workload's rows: large_blobs in memory, or for a memmap workload
    the same made block by block into an np.memmap file in a temporary
    folder under *folder* (removed at the end, also on error), reopened
    read-only as a user's file would be."""
    if not spec.memmap:
        yield large_blobs(spec.n, spec.d, spec.k)
        return
    where = tempfile.mkdtemp(prefix="oclclust_fit_", dir=folder)
    try:
        path, shape = os.path.join(where, "rows.f32"), (spec.n, spec.d)
        large_blobs(*shape, spec.k, out=np.memmap(path, np.float32, "w+", shape=shape)).flush()
        yield np.memmap(path, np.float32, "r", shape=shape)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def estimator(oc, spec, C0, devices, precision="float32"):
    devs = oc.DeviceManager(devices, memory_budget=spec.budget) if spec.budget else devices
    common = dict(max_iter=spec.iters, tol=0, devices=devs, precision=precision)
    if spec.estimator == "KMeans":
        return oc.KMeans(spec.k, init=C0, n_init=1, **common)
    if spec.estimator == "FuzzyCMeans":
        return oc.FuzzyCMeans(spec.k, m=2.0, init=C0, **common)
    return oc.GaussianMixture(spec.k, covariance_type="diag", means_init=C0.astype(np.float64),
                              init_params="random_from_data", random_state=0, **common)


def fit_seconds(oc, spec, X, C0, devices, precision="float32"):
    """(wall seconds of one fit, median iteration seconds, the model)."""
    est = estimator(oc, spec, C0, devices, precision)
    start = time.perf_counter()
    est.fit(X)
    wall = time.perf_counter() - start
    its = [h["seconds"] for h in (getattr(est, "history_", None) or [])
           if isinstance(h, dict) and "seconds" in h]
    return wall, (float(np.median(its)) if its else None), est


def warm_fits(oc, spec, X, C0, args, precision="float32"):
    """fit_seconds of the least wall of --repeats fits, after one untimed
    (the first in this process of this spec and precision: kernel builds)."""
    fit_seconds(oc, spec, X, C0, args.devices, precision)
    return min((fit_seconds(oc, spec, X, C0, args.devices, precision)
                for _ in range(args.repeats)), key=lambda w: w[0])


def checked_labels(profile, X, model, precision):
    """A fast precision's figures: rows re-checked each iteration (0 or
    none where it runs as float32) and agreement()'s on the last AGREE_ROWS
    rows."""
    rechecked = [h["rechecked"] for h in model.history_ if isinstance(h, dict)
                 and h.get("rechecked") is not None]
    sub = np.ascontiguousarray(X[-min(len(X), AGREE_ROWS):])
    same, _, (differ, within) = agreement(profile, sub, model.cluster_centers_, precision)
    return dict(rechecked=rechecked or None, agree=same, agree_rows=len(sub), differ=differ,
                within=within)


def held_resident(manager, X):
    """Whether a fit without memory_budget holds *X* on the devices at once:
    each device's share of the rows within the manager's own budget of it
    (its memory_fraction of global_mem_size, less a pass's per-row state:
    the headroom the fit itself leaves), else that fit would stream too."""
    w = manager.current_weights()
    return all(X.nbytes * wi / w.sum() <= manager.budget(p, X.shape[1], X.dtype)
               for p, wi in zip(manager.profiles, w))


# ----------------------------------------------------------------- anchors
def torch_fit(X, C0, iters, tf32, chunk=1 << 18):
    """The faiss recipe in PyTorch, host rows in, host labels and centres out
    (../shared/bench/gpu_user.py's torch_kmeans_e2e): seconds."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.cuda.synchronize()
    start = time.perf_counter()
    x = torch.from_numpy(X).cuda()
    c = torch.from_numpy(C0).cuda()
    n, k = x.shape[0], c.shape[0]
    lab = torch.empty(n, dtype=torch.int64, device="cuda")

    def assign(c):
        cc = (c * c).sum(1)
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            lab[s:e] = torch.addmm(cc.unsqueeze(0), x[s:e], c.t(), beta=1, alpha=-2).argmin(1)

    for _ in range(iters):
        assign(c)
        sums = torch.zeros_like(c).index_add_(0, lab, x)
        cnt = torch.bincount(lab, minlength=k).float()
        c = torch.where(cnt[:, None] > 0, sums / cnt.clamp(min=1)[:, None], c)
    assign(c)
    lab.cpu().numpy(), c.cpu().numpy()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def sklearn_fit(X, C0, iters):
    from sklearn.cluster import KMeans
    start = time.perf_counter()
    KMeans(len(C0), init=C0, n_init=1, max_iter=iters, tol=0).fit(X)
    return time.perf_counter() - start


def ensemble(profile, spec, quick):
    """EnsembleKMeans' concatenated over data parallelism per iteration,
    per pipelined pass and of the pass's kernels: tune_ensemble's own
    measurement (its search of the terms) on *profile*, the ratios read
    from the lines it returns (its figures, as the devices.yaml comments)."""
    from oclclust.cli.tune_ensemble import tune_ensemble
    _, notes = tune_ensemble(profile, [(spec.n, spec.d, spec.k, spec.models)], quick,
                             spec.iters, log=lambda line: print(line, file=sys.stderr))
    found = re.search(r"over data: ([\d.]+)x \(pass ([\d.]+)x, kernels ([\d.]+)x\)",
                      "\n".join(notes))
    ratios = zip(("over_data", "over_data_pass", "over_data_kernels"),
                 map(float, found.groups() if found else ()))
    return dict(ratios, notes=notes, devices=str(profile))


# -------------------------------------------------------------------- runs
def cold(name, X, args, warm_up=False):
    """A fresh process's first fit of *name* on the rows *X* (*warm_up*:
    after oclclust.warm_up of its shape, timed apart)."""
    argv = ["speed", "--child", name] + (["--warm-up"] if warm_up else [])
    argv += ["--devices", args.devices] if args.devices else []
    argv += ["--quick"] if args.quick else []
    return fresh_process(__file__, argv, X, timeout=1200)


def child(args):
    X = load_rows(args.rows)             # in memory, as a user's array (not timed)
    spec = (QUICK if args.quick else WORKLOADS)[args.child]
    C0 = random_rows(X, spec.k)
    start = time.perf_counter()
    oc = import_oclclust()
    getattr(oc, spec.estimator)       # its module: scikit-learn's base classes, where installed
    imported = time.perf_counter() - start
    warmed = None
    if args.warm_up:   # the devices, programs and staging of this shape, ahead of the fit
        start = time.perf_counter()
        oc.warm_up(args.devices, [(estimator(oc, spec, C0, None), spec.d)])
        warmed = time.perf_counter() - start
    wall, it, _ = fit_seconds(oc, spec, X, C0, args.devices)
    print(json.dumps({"s": wall, "import_s": imported, "iter_s": it, "warm_up_s": warmed}))


def measure(oc, name, spec, args, manager, cuda, line):
    """The figures of workload *name* into *line* as they come (those made
    before an error stay)."""
    n, d, k, iters = spec.n, spec.d, spec.k, spec.iters
    flop = 2.0 * n * k * d * (iters + 1)
    with rows_of(spec, args.memmap_dir) as X:
        C0 = random_rows(X, k)
        runs = {}
        for precision in spec.precisions:
            wall, it, model = warm_fits(oc, spec, X, C0, args, precision)
            figures = runs[precision] = dict(warm_s=wall, iter_s=it)
            if spec.estimator == "KMeans":
                figures["tflops"] = flop / wall / 1e12
            if precision != "float32":
                figures.update(checked_labels(manager.profiles[0], X, model, precision))
            if len(runs) == 1:   # the row's own figures
                line.update(figures, iters=int(np.max(model.n_iter_)),
                            devices=str(model.devices_))
        if len(runs) > 1:
            line["precisions"] = runs
        if spec.budget and held_resident(manager, X):   # the same rows, held at once
            wall, it, _ = warm_fits(oc, spec._replace(budget=None), X, C0, args)
            line.update(resident_s=wall, resident_iter_s=it)
            if it and line["iter_s"]:
                line["streamed_over_resident"] = line["iter_s"] / it
        # the on-disk cache is warm now; a memmap's fit from an in-memory copy is not its own
        if not args.no_cold and not spec.memmap and X.nbytes < 8 * 10 ** 9:
            for key, warm_up in (("cold", False), ("warmed", True)):
                try:
                    line[key] = cold(name, X, args, warm_up)
                except Exception as exc:   # noqa: BLE001 -- reported, the rest goes on
                    line[key] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
        if spec.estimator == "KMeans":
            if cuda and not spec.budget and n * d * 4 < 40 * 10 ** 9:
                torch_fit(X[:min(n, 100_000)], C0, 1, False)      # CUDA warm-up
                for tf32 in (False, True):
                    line[f"torch_{'tf32' if tf32 else 'fp32'}_s"] = min(
                        torch_fit(X, C0, iters, tf32) for _ in range(args.repeats))
            if n <= 1_000_000 and not args.no_sklearn:
                line["sklearn_s"] = min(sklearn_fit(X, C0, iters) for _ in range(3))


def run(args):
    oc = import_oclclust()
    shapes = QUICK if args.quick else WORKLOADS
    names = args.only.split(",") if args.only else [n for n in DEFAULT if n in shapes]
    cuda = has_cuda() and not args.no_torch
    manager = oc.DeviceManager(args.devices)   # the fits' devices, as a fit picks them
    rows = []
    for name in names:
        spec = shapes[name]
        line = dict(bench="fit_speed", workload=name, estimator=spec.estimator,
                    shape=describe(spec), iters=spec.iters)
        try:
            if spec.models:
                line.update(ensemble(manager.profiles[0], spec, args.quick))
            else:
                measure(oc, name, spec, args, manager, cuda, line)
        except Exception as exc:   # noqa: BLE001 -- reported, the rest goes on
            line["error"] = f"{type(exc).__name__}: {exc}"[:120]
            print(f"fit_speed: {name}: {line['error']}", file=sys.stderr)
        if args.json:
            print(json.dumps(line), flush=True)
        rows.append(line)
    print_table(rows)


def ms(value):
    return "-" if value is None else f"{value * 1e3:.1f}"


def num(value, fmt="{:.2f}"):
    return "-" if value is None else fmt.format(value)


def print_table(rows):
    fits = [r for r in rows if r["estimator"] != "EnsembleKMeans"]
    head = ["workload", "shape", "iters", "import ms", "cold ms", "warm_up ms", "then ms",
            "warm ms", "ms/iter", "TFLOP/s", "torch fp32", "torch tf32", "sklearn",
            "resident ms/iter", "streamed/resident"]
    cells = []
    for r in fits:
        if "error" in r:
            cells.append([r["workload"], r["shape"], str(r["iters"]), r["error"][:40]]
                         + ["-"] * (len(head) - 4))
            continue
        c, w = r.get("cold", {}), r.get("warmed", {})
        cells.append([r["workload"], r["shape"], str(r["iters"]), ms(c.get("import_s")),
                      ms(c.get("s")) if "error" not in c else c["error"][:30],
                      ms(w.get("warm_up_s")) if "error" not in w else w["error"][:30],
                      ms(w.get("s")),
                      ms(r["warm_s"]), ms(r["iter_s"]), num(r.get("tflops")),
                      ms(r.get("torch_fp32_s")), ms(r.get("torch_tf32_s")),
                      ms(r.get("sklearn_s")), ms(r.get("resident_iter_s")),
                      num(r.get("streamed_over_resident"))])
    if cells:
        print(table(head, cells))
        print("ms: whole fit from host rows (cold: the first fit of a fresh process, after "
              "`import oclclust`; warm_up: oclclust.warm_up of its shape in another fresh "
              "process, then: its first fit after that); ms/iter: median of history_; "
              "resident: the same rows without the memory budget")
    modes = [[r["workload"], mode, ms(f["warm_s"]), ms(f["iter_s"]), num(f.get("tflops")),
              num(float(np.median(f["rechecked"])) if any(f.get("rechecked") or ()) else None,
                  "{:.0f}"),
              num(f.get("agree"), "{:.5%}"), num(f.get("differ"), "{}"),
              num(f.get("within"), "{}")]
             for r in fits for mode, f in r.get("precisions", {}).items()]
    if modes:
        print("\n" + table(["workload", "precision", "warm ms", "ms/iter", "TFLOP/s",
                            "re-checked/iter", "= float64 argmin", "differing",
                            "within tie bound"], modes, left=2))
        print(f"re-checked/iter: median over the iterations (-: none, the mode runs as "
              f"float32 here); of the last {AGREE_ROWS:,} rows, labels at the final centres "
              "equal to the float64 argmin, the others, and those of them within the "
              "documented bound of a tie")
    ensembles = [[r["workload"], r["shape"], str(r["iters"])]
                 + ([r["error"][:60], "-", "-"] if "error" in r else
                    [num(r.get(key), "{:.2f}x") for key in
                     ("over_data", "over_data_pass", "over_data_kernels")])
                 for r in rows if r["estimator"] == "EnsembleKMeans"]
    if ensembles:
        print("\n" + table(["workload", "shape", "iters", "concatenated/data", "pass",
                            "kernels"], ensembles))
        print("EnsembleKMeans, concatenated over data parallelism (python -m oclclust tune "
              "--kernels ensemble's measurement): seconds per iteration, per pipelined "
              "statistics pass, of the pass's kernels")


def speed_main(argv=None):
    ap = argparse.ArgumentParser(description=DOC_SPEED.split("\n\n")[0])
    add_devices_argument(ap)
    ap.add_argument("--quick", action="store_true", help="CPU-sized shapes")
    ap.add_argument("--only", help="comma-separated workloads: " + ", ".join(WORKLOADS))
    ap.add_argument("--repeats", type=int, default=3, help="warm fits (the best is kept)")
    ap.add_argument("--no-cold", action="store_true", help="skip the fresh-process runs")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-sklearn", action="store_true")
    ap.add_argument("--memmap-dir", help="where outofcore-100m's np.memmap file is written "
                                         "(51 GB; default the system's temporary folder)")
    ap.add_argument("--json", action="store_true", help="a JSON line per workload")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--rows", help=argparse.SUPPRESS)
    ap.add_argument("--warm-up", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    shapes = QUICK if args.quick else WORKLOADS
    for name in (args.only.split(",") if args.only else []):
        if name not in shapes:
            ap.error(f"unknown workload {name!r}; choose from {', '.join(shapes)}")
    if args.child:
        return child(args)
    return run(args)


# ---- overhead (formerly bench/fit_overhead.py) -----------------------------------------

DOC_OVERHEAD = """A fit's fixed cost over its iterations (issue 18's CPU goals), and where it goes.

    ratio = t(I iterations) / (I x marginal),  marginal = (t(2I) - t(I)) / I

for a whole fit from host data (tol=0, so exactly that many iterations; the
minimum of --repeats runs each, after an untimed warm-up fit that builds the
kernels), by the wall clock and by this process's CPU time (all threads: on
the CPU runtimes the kernels' too; steadier where other processes share the
cores).  1.0 would be a fit with no cost besides its iterations.

    KMeans           1M x 32, k=256, given centres    (goal <= 1.25)
    GaussianMixture  200k x 32, K=64, diag, "kmeans"  (goal <= 2.0)
    FuzzyCMeans      200k x 24, c=100: the whole fit, and its parts

The breakdown times the parts with time.perf_counter around the estimators'
own steps: GMM's initialisation (_initial_model: the k-means fit and the
initial statistics) and the EM iterations (history_); c-means' seeding, its
iterations (history_) and the tail (the final pass writing u_, and labels_).

    python bench/fit.py overhead                       # Intel's CPU runtime
    python bench/fit.py overhead --devices NVIDIA --gmm-n 1000000 --gmm-d 128 --gmm-k 1024
"""


@contextlib.contextmanager
def clocked(owner, name, into, clock=time.perf_counter, key=None):
    """Sum the seconds (by *clock*) of every call of owner.name into
    into[key or name]."""
    original, key = getattr(owner, name), key or name

    def wrapper(*args, **kwargs):
        start = clock()
        try:
            return original(*args, **kwargs)
        finally:
            into[key] = into.get(key, 0.0) + clock() - start
    setattr(owner, name, wrapper)
    try:
        yield
    finally:
        setattr(owner, name, original)


def process_seconds():
    """CPU seconds of this process, all its threads (a CPU runtime's kernels
    included): on a machine others share, steadier than the wall clock."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def clocked_fit(fit, n, repeats):
    """(min wall seconds, min process CPU seconds) of *repeats* fit(n)."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), process_seconds()
        fit(n)
        walls.append(time.perf_counter() - wall)
        cpus.append(process_seconds() - cpu)
    return min(walls), min(cpus)


def read_all(fc):
    return fc.labels_, fc.u_


def ratio(make, X, iters, repeats):
    """{clock: (t(iters), marginal seconds of an iteration, ratio)} for the
    wall clock and the process's CPU time."""
    def fit(n):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return make(n).fit(X)
    fit(1)   # kernel builds
    busy = _busy_seconds()
    start = time.perf_counter()
    one, two = clocked_fit(fit, iters, repeats), clocked_fit(fit, 2 * iters, repeats)
    if busy is not None:
        wall = time.perf_counter() - start
        other = (_busy_seconds() - busy) / wall
        print(f"  (all processes kept {other:.1f} cores busy meanwhile, this one included)")
    out = {}
    for clock, t1, t2 in (("wall", one[0], two[0]), ("cpu", one[1], two[1])):
        marginal = (t2 - t1) / iters
        out[clock] = t1, marginal, t1 / (iters * marginal)
    return out


def report(name, clocks, goal):
    for clock, (t, marginal, r) in clocks.items():
        print(f"{name} [{clock}]: t({ITERS}) {t:.3f} s, marginal {marginal * 1e3:.1f} "
              f"ms/iteration, ratio {r:.2f} (goal <= {goal})")


ITERS = 5


def overhead_main(argv=None):
    global ITERS
    ap = argparse.ArgumentParser(description=DOC_OVERHEAD.splitlines()[0])
    ap.add_argument("--devices", default="Intel(R) OpenCL")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--iters", type=int, default=ITERS, help="I (default 5)")
    ap.add_argument("--only", default="kmeans,gmm,cmeans")
    ap.add_argument("--gmm-n", type=int, default=200_000)
    ap.add_argument("--gmm-d", type=int, default=32)
    ap.add_argument("--gmm-k", type=int, default=64)
    ap.add_argument("--cm-n", type=int, default=200_000)
    ap.add_argument("--cm-iters", type=int, default=20)
    args = ap.parse_args(argv)
    ITERS = args.iters
    oc = import_oclclust()
    devices = oc.select_devices(args.devices)
    print(f"devices: {[p.name for p in devices]} ({devices[0].platform})")
    only = args.only.split(",")

    if "kmeans" in only:
        X = blobs(1_000_000, 32, 256, seed=0)
        start = X[:256].astype(np.float64)   # given centres: no seeding in the fixed cost
        report("KMeans 1M x 32, k=256", ratio(
            lambda n: oc.KMeans(256, init=start, n_init=1, max_iter=n, tol=0, devices=devices),
            X, ITERS, args.repeats), 1.25)

    if "gmm" in only:
        n, d, k = args.gmm_n, args.gmm_d, args.gmm_k
        X = blobs(n, d, k, seed=1)

        def gmm(iters):
            return oc.GaussianMixture(k, covariance_type="diag", max_iter=iters, tol=0,
                                      random_state=0, devices=devices)
        report(f"GaussianMixture diag {n} x {d}, K={k}", ratio(gmm, X, ITERS, args.repeats),
               2.0)
        parts = {}
        with clocked(oc.GaussianMixture, "_initial_model", parts):
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                gm = gmm(ITERS).fit(X)
            whole = time.perf_counter() - start
        em = sum(h["seconds"] for h in gm.history_)
        init = parts["_initial_model"]
        print(f"  one fit: {whole:.3f} s = initialisation {init:.3f} + EM iterations "
              f"{em:.3f} + rest {whole - init - em:.3f}")
        start = time.perf_counter()
        gm.predict_proba(X)
        print(f"  predict_proba: {time.perf_counter() - start:.3f} s")
        for init in ("kmeans", "k-means++", "random", "random_from_data"):
            walls, cpus = [], []
            for _ in range(args.repeats):
                parts = {}
                with clocked(oc.GaussianMixture, "_initial_model", parts), \
                        clocked(oc.GaussianMixture, "_initial_model", parts, process_seconds,
                                "cpu"):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        gmm(1).set_params(init_params=init).fit(X)
                walls.append(parts["_initial_model"])
                cpus.append(parts["cpu"])
            print(f"  initialisation {init}: {min(walls):.3f} s ({min(cpus):.3f} CPU s)")

    if "cmeans" in only:
        n, c, iters = args.cm_n, 100, args.cm_iters
        X = blobs(n, 24, c, seed=2)

        def cmeans():
            return oc.FuzzyCMeans(c, max_iter=iters, tol=0, random_state=0, devices=devices)
        cmeans().fit(X)   # kernel builds
        t, cpu = clocked_fit(lambda _: cmeans().fit(X), None, args.repeats)
        read, read_cpu = clocked_fit(lambda _: read_all(cmeans().fit(X)), None, args.repeats)
        parts = {}
        with clocked(oc.FuzzyCMeans, "_init_centers", parts):
            start = time.perf_counter()
            fc = cmeans().fit(X)
            fitted = time.perf_counter() - start
            fc.u_, fc.labels_
            whole = time.perf_counter() - start
        it = sum(h["seconds"] for h in fc.history_)
        seed = parts["_init_centers"]
        print(f"FuzzyCMeans {n} x 24, c={c}, {iters} iterations: whole fit {t:.3f} s "
              f"({cpu:.3f} CPU s); with labels_ and u_ read {read:.3f} s ({read_cpu:.3f} CPU s)")
        print(f"  one fit, u_ and labels_ read: {whole:.3f} s = seeding {seed:.3f} + "
              f"iterations {it:.3f} ({it / iters * 1e3:.1f} ms each) + rest of fit "
              f"(moments, final pass) {fitted - seed - it:.3f} + reading u_ and labels_ "
              f"{whole - fitted:.3f}")
        start = time.perf_counter()
        fc.predict_proba(X)
        print(f"  predict_proba: {time.perf_counter() - start:.3f} s")


MEASUREMENTS = {
    "speed": (speed_main, DOC_SPEED),
    "overhead": (overhead_main, DOC_OVERHEAD),
}


if __name__ == "__main__":
    sys.exit(run_measurement(MEASUREMENTS, __doc__))
