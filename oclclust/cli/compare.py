"""Strategy benchmark: ``python -m oclclust compare`` times ensemble k-means
statistics passes -- task / data / concatenated parallelism and the KD-tree
leaf mappings (direct / distributed / replicated) -- on every selected device
for a sweep of models M, dimensions d, sizes N and cluster counts K, as in
Ravunnikutty et al., "Ensemble K-means on multi-core architectures".

A measurement is the paper's loop: ``iters`` iterations of the statistics
pass of all M models plus the estimator's model update (KD-tree: the leaf ->
candidate mapping too; on one device the update runs there, one iteration
ahead of the host: passes/ensemble_update.py), after one untimed warm-up
iteration; data upload and tree build are outside the timing.  Reported
per run: seconds per iteration (the mean), effective GB/s of data read (the
rows read by the pass: M times for task and data parallelism, once per
model tile for concatenated), speedups over task and data parallelism, the
statistics pass alone (passes enqueued back to back: s/pass) and its
kernels' execution time by profiling events (dev/pass: the device's work
without the host's enqueueing, which bounds data parallelism's M launches
on a GPU) and, for the KD-tree, the fraction of centroid comparisons kept.
"""
import argparse
import contextlib
import csv
import json
import os
import platform
import sys
import time

import numpy as np

BRUTE = ("task", "data", "concatenated")
MAPPINGS = ("direct", "distributed", "replicated")


def make_blobs(n, d, k, seed=0):
    """shared/bench/baselines.py's generator: centres uniform in [-10, 10]^d,
    N(0, I) noise, shuffled, float32."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-10, 10, size=(k, d))
    X = centres[rng.integers(0, k, n)] + rng.standard_normal((n, d))
    return X[rng.permutation(n)].astype(np.float32)


class Progress:
    """tqdm when installed, else one updating stderr line."""

    def __init__(self, total, quiet=False):
        self.total, self.done, self.quiet, self.bar = total, 0, quiet, None
        if not quiet:
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, file=sys.stderr, leave=False)
            except ImportError:
                pass

    def step(self, label):
        self.done += 1
        if self.bar is not None:
            self.bar.set_description(label[:40])
            self.bar.update()
        elif not self.quiet:
            print(f"\r[{self.done}/{self.total}] {label[:60]:60s}", end="", file=sys.stderr,
                  flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()
        elif not self.quiet:
            print(file=sys.stderr)


@contextlib.contextmanager
def ensemble_on(profile, X, M, K, strategy, kdtree, leaf_size, order):
    """(data, engine, host weights) of a setting on *X*: host rows, or a
    device array taken as it is (on its own queue)."""
    from ..cluster.kmeans.ensemble import data_moments, ensemble_passes, fixed_point
    from ..parallel.manager import DeviceManager
    data = DeviceManager([profile]).scatter(X, None)
    try:
        host_w = np.ones(data.n, X.dtype)
        mean = data_moments(data)[0]
        engine = ensemble_passes(data, fixed_point(data, host_w, mean), [K] * M, strategy,
                                 kdtree, leaf_size=leaf_size,
                                 distributed=None if order is None else order == "distributed")
        engine.prepare()
        yield data, engine, host_w
    finally:
        data.close()


def time_run(profile, X, M, K, strategy, kdtree, iters, leaf_size, seed=0, order=None):
    """(seconds per iteration, seconds per pipelined statistics pass, the
    pass's kernels' device seconds, data reads per pass, kept fraction) of
    one setting."""
    import pyopencl as cl
    import pyopencl.array as cla
    from ..cluster.kmeans.ensemble import EnsembleModels
    from ..cluster.kmeans.lloyd_loop import lloyd_step
    from ..passes.ensemble import model_tiles, pack
    rng = np.random.default_rng(seed)
    centers = [X[rng.choice(len(X), K, replace=False)].astype(np.float64) for _ in range(M)]
    setting = (M, K, strategy, kdtree, leaf_size, order)
    with ensemble_on(profile, X, *setting) as (data, engine, host_w):
        models = EnsembleModels(engine)

        def iteration(iterations_left=None):
            # the estimator's own update of all models; tol < 0: none stops
            lloyd_step(models, centers, list(range(M)), -1.0, data, host_w, iterations_left)
        iteration()                         # warm-up: kernels built, buffers allocated
        # the mean: with the update on the device iterations run ahead, and
        # a runtime may complete two at once (one long wait, one none)
        start = time.perf_counter()
        for i in range(iters):
            iteration(iterations_left=iters - i - 1)
        seconds = (time.perf_counter() - start) / iters
        engine.centers_to_host(centers)
        chunk = data.chunks[0]
        # the statistics pass alone: passes enqueued back to back, one wait
        # (the device's time and the launches; no reads, no host update)
        stats_pass, queue = engine.stats_pass(chunk), chunk.queue
        queue.finish()
        start = time.perf_counter()
        for _ in range(iters):
            stats_pass.enqueue(centers)
        queue.finish()
        pass_seconds = (time.perf_counter() - start) / iters
        if kdtree:
            reads, kept = 1, stats_pass.pruned_fraction
        elif strategy == "concatenated":
            _, off = pack(centers, X.dtype)
            reads = len(model_tiles(off, profile.local_memory_budget, X.shape[1],
                                    X.dtype.itemsize))
            kept = 1.0
        else:
            reads, kept = M, 1.0
    # the kernels' own execution time, by profiling events: on a profiling
    # queue, apart from the timings above (its commands cost the host more)
    queue = cl.CommandQueue(profile.queue().context,
                            properties=cl.command_queue_properties.PROFILING_ENABLE)
    with ensemble_on(profile, cla.to_device(queue, X), *setting) as (data, engine, _):
        stats_pass = engine.stats_pass(data.chunks[0])
        stats_pass.enqueue(centers)         # warm-up
        events = [e for _ in range(iters) for e in stats_pass.enqueue(centers)]
        queue.finish()
        device_seconds = sum(e.profile.end - e.profile.start for e in events) * 1e-9 / iters
    return seconds, pass_seconds, device_seconds, reads, kept


def baseline_runs(X, M, K, iters, seed=0):
    """scikit-learn (and faiss) fitting the M models one after another."""
    out = []
    rng = np.random.default_rng(seed)
    inits = [X[rng.choice(len(X), K, replace=False)] for _ in range(M)]
    try:
        from sklearn.cluster import KMeans
        start = time.perf_counter()
        for c in inits:
            KMeans(K, init=c, n_init=1, max_iter=iters, tol=0, algorithm="lloyd").fit(X)
        out.append(("sklearn", (time.perf_counter() - start) / iters))
    except ImportError:
        pass
    try:
        import faiss
        start = time.perf_counter()
        for c in inits:
            km = faiss.Kmeans(X.shape[1], K, niter=iters, max_points_per_centroid=len(X))
            km.train(X, init_centroids=np.ascontiguousarray(c, np.float32))
        out.append(("faiss", (time.perf_counter() - start) / iters))
    except ImportError:
        pass
    return out


def settings(args):
    """Every (sweep, n, k, d, M, strategy, kdtree, model order) to run, in order."""
    runs, orders = [], args.orders or [None]
    for n in args.n:
        for k in args.k:
            for d in args.d:
                for M in args.models:
                    for s in args.strategies:
                        for o in (orders if s == "concatenated" else [None]):
                            runs.append(("models", n, k, d, M, s, None, o))
                    runs += [("models", n, k, d, M, "concatenated", m, o)
                             for m in args.kdtree for o in orders]
            for d in args.kd_d:
                for m in [None] + list(args.kdtree):
                    runs += [("dims", n, k, d, args.kd_models, "concatenated", m, o)
                             for o in orders]
    return runs


def run(args):
    from ..runtime.devices import select_devices
    profiles = select_devices(args.devices)
    runs = settings(args)
    progress = Progress(len(runs) * len(profiles), args.no_progress)
    records, cache, blobs = [], {}, {}
    for profile in profiles:
        for sweep, n, k, d, M, strategy, kdtree, order in runs:
            key = (str(profile), n, k, d, M, strategy, kdtree, order)
            label = f"{profile.name[:12]} {sweep} N={n} d={d} M={M} {kdtree or strategy}"
            progress.step(label)
            if key in cache:
                rec = dict(cache[key], sweep=sweep)
            else:
                if (n, d, k) not in blobs:
                    blobs.clear()
                    blobs[(n, d, k)] = make_blobs(n, d, k, args.seed)
                X = blobs[(n, d, k)]
                seconds, pass_s, device_s, reads, kept = time_run(
                    profile, X, M, k, strategy, kdtree, args.iters, args.leaf_size, args.seed,
                    order)
                if order is None:
                    from ..passes.ensemble import EnsembleTerms
                    order = profile.terms(EnsembleTerms).order
                rec = dict(sweep=sweep, device=str(profile), n=n, k=k, d=d, models=M,
                           strategy=strategy, kdtree=kdtree or "none",
                           order=order if strategy == "concatenated" else "-", iters=args.iters,
                           seconds_per_iter=seconds, seconds_per_pass=pass_s,
                           device_seconds_per_pass=device_s,
                           gb_per_s=reads * X.nbytes / seconds / 1e9, kept=kept)
                cache[key] = rec
            records.append(rec)
        if args.baselines:
            for n in args.n:
                for k in args.k:
                    for d in args.d:
                        X = make_blobs(n, d, k, args.seed)
                        for M in args.models:
                            for lib, seconds in baseline_runs(X, M, k, args.iters, args.seed):
                                records.append(dict(
                                    sweep="baseline", device=f"{lib} (host)", n=n, k=k, d=d,
                                    models=M, strategy=lib, kdtree="none", order="-",
                                    iters=args.iters,
                                    seconds_per_iter=seconds, seconds_per_pass=None,
                                    device_seconds_per_pass=None,
                                    gb_per_s=M * X.nbytes / seconds / 1e9, kept=1.0))
            args.baselines = False          # host libraries: once, not per device
    progress.close()
    add_speedups(records)
    return records


SPEEDUPS = {"speedup": "seconds_per_iter", "pass_speedup": "seconds_per_pass",
            "device_speedup": "device_seconds_per_pass"}


def add_speedups(records):
    """speedup_vs_task / _vs_data: task (data) parallelism's time at the same
    point over this one's, per iteration; pass_speedup_*: the same for the
    pipelined statistics pass; device_speedup_*: for its kernels' device time."""
    for base in ("task", "data"):
        ref = {(r["device"], r["n"], r["k"], r["d"], r["models"]): r for r in records
               if r["strategy"] == base and r["kdtree"] == "none"}
        for r in records:
            b = ref.get((r["device"], r["n"], r["k"], r["d"], r["models"]))
            for name, field in SPEEDUPS.items():
                r[f"{name}_vs_{base}"] = None if b is None or not r[field] \
                    else b[field] / r[field]


def variant(r):
    name = r["strategy"] if r["kdtree"] == "none" else f"kdtree-{r['kdtree']}"
    return name if r["order"] == "-" else f"{name}/{r['order'][:4]}"


def table(records):
    head = (f"{'device':34s} {'sweep':8s} {'N':>8s} {'K':>3s} {'d':>3s} {'M':>3s} "
            f"{'variant':26s} {'s/iter':>9s} {'GB/s':>7s} {'vs TP':>6s} {'vs DP':>6s} "
            f"{'s/pass':>9s} {'vs TP':>6s} {'vs DP':>6s} {'dev/pass':>9s} {'vs DP':>6s} "
            f"{'kept':>5s}")
    lines = [head, "-" * len(head)]
    ratio = lambda v: "" if v is None else f"{v:.2f}"   # noqa: E731
    seconds = lambda v: "" if v is None else f"{v:.5f}"   # noqa: E731
    for r in records:
        lines.append(f"{r['device'][:34]:34s} {r['sweep']:8s} {r['n']:8d} {r['k']:3d} "
                     f"{r['d']:3d} {r['models']:3d} {variant(r):26s} {r['seconds_per_iter']:9.5f} "
                     f"{r['gb_per_s']:7.2f} {ratio(r['speedup_vs_task']):>6s} "
                     f"{ratio(r['speedup_vs_data']):>6s} {seconds(r['seconds_per_pass']):>9s} "
                     f"{ratio(r['pass_speedup_vs_task']):>6s} "
                     f"{ratio(r['pass_speedup_vs_data']):>6s} "
                     f"{seconds(r['device_seconds_per_pass']):>9s} "
                     f"{ratio(r['device_speedup_vs_data']):>6s} {r['kept']:5.2f}")
    return "\n".join(lines)


def write(records, out, args):
    os.makedirs(out, exist_ok=True)
    meta = dict(argv=sys.argv[1:], host=platform.node(), python=platform.python_version(),
                time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), iters=args.iters)
    with open(os.path.join(out, "compare.json"), "w") as fh:
        json.dump({"meta": meta, "records": records}, fh, indent=1)
    with open(os.path.join(out, "compare.csv"), "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
    return plot(records, out)


def plot(records, out):
    """The paper's figures as PNGs (with matplotlib): time vs models for
    TP/DP/CP per device, the three KD-tree mappings vs models, KD-tree vs
    brute force over d.  Returns the files written."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no figures (pip install 'oclclust[plot]')",
              file=sys.stderr)
        return []
    files = []

    def save(fig, ax, name, title, xlabel):
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("seconds per iteration")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out, name)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)

    models = [r for r in records if r["sweep"] == "models"]
    for i, dev in enumerate(sorted({r["device"] for r in models})):
        for n, k, d in sorted({(r["n"], r["k"], r["d"]) for r in models if r["device"] == dev}):
            mine = [r for r in models if (r["device"], r["n"], r["k"], r["d"]) == (dev, n, k, d)]
            for kind, wanted in (("strategies", lambda r: r["kdtree"] == "none"),
                                 ("kdtree", lambda r: r["kdtree"] != "none"
                                  or r["strategy"] == "concatenated")):
                fig, ax = plt.subplots(figsize=(5, 3.6))
                lines = {}
                for r in filter(wanted, mine):
                    lines.setdefault(variant(r), []).append((r["models"], r["seconds_per_iter"]))
                for name, pts in lines.items():
                    ax.plot(*zip(*sorted(pts)), marker="o", label=name)
                save(fig, ax, f"{kind}_dev{i}_n{n}_k{k}_d{d}.png",
                     f"{dev}\nN={n} K={k} d={d}", "models M")
    dims = [r for r in records if r["sweep"] == "dims"]
    for i, dev in enumerate(sorted({r["device"] for r in dims})):
        for n, k, M in sorted({(r["n"], r["k"], r["models"]) for r in dims
                               if r["device"] == dev}):
            fig, ax = plt.subplots(figsize=(5, 3.6))
            lines = {}
            for r in dims:
                if (r["device"], r["n"], r["k"], r["models"]) == (dev, n, k, M):
                    name = variant(r).replace("concatenated", "brute force (CP)")
                    lines.setdefault(name, []).append((r["d"], r["seconds_per_iter"]))
            for name, pts in lines.items():
                ax.plot(*zip(*sorted(pts)), marker="o", label=name)
            save(fig, ax, f"kdtree_vs_brute_dev{i}_n{n}_k{k}_m{M}.png",
                 f"{dev}\nN={n} K={k} M={M}", "dimensions d")
    return files


QUICK = dict(n=[20000], k=[10], models=[1, 4, 8], d=[2], kd_d=[2, 8], kd_models=4, iters=3)
FULL = dict(n=[1000000], k=[10], models=[1, 2, 4, 8, 16, 32], d=[2], kd_d=[2, 4, 8, 16, 32],
            kd_models=10, iters=10)


def parser():
    ap = argparse.ArgumentParser(
        prog="python -m oclclust compare", description=__doc__.split("\n\n")[0])
    # each help names its default once, in its own words (not argparse's "(default: None)")
    ap.add_argument("--devices", default="all",
                    help="devices to time: 'all', 'cpu', 'gpu', or comma-separated "
                         "platform/device name substrings (e.g. NVIDIA) (default all)")
    ap.add_argument("--n", type=int, nargs="+", help=f"data sizes N (default {FULL['n']})")
    ap.add_argument("--k", type=int, nargs="+", help=f"clusters per model K (default {FULL['k']})")
    ap.add_argument("--models", type=int, nargs="+",
                    help=f"ensemble sizes M of the strategy sweep (default {FULL['models']})")
    ap.add_argument("--d", type=int, nargs="+",
                    help=f"dimensions of the strategy sweep (default {FULL['d']})")
    ap.add_argument("--kd-d", type=int, nargs="*",
                    help=f"dimensions of the KD-tree vs brute-force sweep (default {FULL['kd_d']}; "
                         "none: skip it)")
    ap.add_argument("--kd-models", type=int,
                    help=f"models M of the KD-tree vs brute-force sweep (default {FULL['kd_models']})")
    ap.add_argument("--iters", type=int, help=f"timed iterations (default {FULL['iters']})")
    ap.add_argument("--strategies", nargs="*", choices=BRUTE, default=list(BRUTE),
                    help=f"brute-force strategies to time (default {' '.join(BRUTE)})")
    ap.add_argument("--kdtree", nargs="*", choices=MAPPINGS, default=list(MAPPINGS),
                    help=f"KD-tree leaf mappings to time (default {' '.join(MAPPINGS)}; "
                         "none: no KD-tree runs)")
    ap.add_argument("--orders", nargs="+", choices=("distributed", "uniform"),
                    help="model access orders of the concatenated and KD-tree passes to "
                         "time (default the device profile's); 'distributed' is the "
                         "paper's (work-item i starts at model i mod M)")
    ap.add_argument("--leaf-size", type=int, default=None,
                    help="KD-tree leaf size (default the device profile's)")
    ap.add_argument("--seed", type=int, default=0, help="data and init seed (default 0)")
    ap.add_argument("--quick", action="store_true",
                    help=f"small CI sweep, under a minute on 2 CPU cores ({QUICK}); "
                         "explicit flags still win; devices default to the first CPU")
    ap.add_argument("--baselines", action="store_true",
                    help="also time scikit-learn / faiss (where installed) fitting the M "
                         "models one after another on the host")
    ap.add_argument("--out", help="directory for compare.json, compare.csv and PNG figures")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    defaults = QUICK if args.quick else FULL
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.quick and args.devices == "all":
        from ..runtime.devices import select_devices
        args.devices = [select_devices("cpu")[0]]
    records = run(args)
    print(table(records))
    if args.out:
        for path in write(records, args.out, args):
            print(f"figure: {path}")
        print(f"results: {os.path.join(args.out, 'compare.json')}, "
              f"{os.path.join(args.out, 'compare.csv')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
