#!/usr/bin/env python3
"""The first call: what a fresh process's first fit costs over a warm fit,
and where that time goes.

    python bench/first_call.py --devices "Intel(R) OpenCL"
    python bench/first_call.py --devices "Portable Computing Language" --estimators KMeans
    python bench/first_call.py --devices "NVIDIA CUDA" --repeats 5 --json

Each estimator (KMeans, GaussianMixture, FuzzyCMeans by default) is fitted
on the same 1k rows in fresh processes, after one fresh process that fills
the on-disk caches (rendered sources, and programs where the runtime or
OCLCLUST_PROGRAM_BINARIES keeps them), so the figures are a user's second
script's.  Two kinds of child, ``--repeats`` of each, medians reported:

whole
    ``import oclclust``, scikit-learn's import (what touching an estimator
    first pays, where it is installed), the estimator's module, the first
    fit, then a warm fit (a new estimator of the same parameters) in the
    same process.  "over warm" is the first fit less the warm one.
parts
    The same first fit under cProfile, its cumulative seconds split by the
    real code paths: platform and device discovery (``select_devices``),
    contexts and queues (``devices._queue``: DeviceProfile.queue's first call),
    programs (``codegen.build``: loaded from the on-disk cache, or built),
    plans (``codegen.plan``: choosing a pass's variant, with the programs
    its candidates need), and the rows' upload (``placement.fit_data``
    less its device selection).  The profiler slows Python code, so these
    parts add up to more than the whole fit's figure.
"""
import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time

from _common import add_devices_argument, blobs, fresh_process, import_oclclust, load_rows, table

ESTIMATORS = ("KMeans", "GaussianMixture", "FuzzyCMeans")
N, D, K = 1000, 8, 4

# part name -> the (file suffix, function name) whose cumulative seconds it is;
# a list sums, a ("less", a, b) pair subtracts b from a
PARTS = {
    "discovery": [("oclclust/runtime/devices.py", "select_devices")],
    "contexts": [("oclclust/runtime/devices.py", "_queue")],
    "programs": [("oclclust/runtime/codegen.py", "build")],
    "plans": [("oclclust/runtime/codegen.py", "plan")],
    "upload": ("less", ("oclclust/parallel/placement.py", "fit_data"),
               ("oclclust/parallel/placement.py", "manager_for")),
}
COLUMNS = ["import", "sklearn", "module", "first", "warm", "over warm", "discovery",
           "contexts", "programs", "plans", "upload"]


def estimator(oc, name, devices):
    """An estimator of *name*: K clusters, 20 iterations, one start, fixed seed."""
    size = oc.ESTIMATORS[name].size_param
    params = {size: K, "max_iter": 20, "tol": 0.0, "random_state": 0, "devices": devices}
    if name != "FuzzyCMeans":
        params["n_init"] = 1
    return oc.estimator_class(name)(**params)


# ------------------------------------------------------------------ the child
def child(args):
    X = load_rows(args.rows)                 # in memory, as a user's array (not timed)
    figures = {}
    start = time.perf_counter()
    oc = import_oclclust()
    figures["import"] = time.perf_counter() - start
    start = time.perf_counter()
    try:
        import sklearn.base  # noqa: F401 -- what an estimator's module imports first
    except ImportError:
        pass
    figures["sklearn"] = time.perf_counter() - start
    start = time.perf_counter()
    oc.estimator_class(args.child)
    figures["module"] = time.perf_counter() - start
    est = estimator(oc, args.child, args.devices)
    if args.parts:
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.runcall(est.fit, X)
        figures["first"] = time.perf_counter() - start
        figures.update(parts(pstats.Stats(profile)))
    else:
        start = time.perf_counter()
        est.fit(X)
        figures["first"] = time.perf_counter() - start
        start = time.perf_counter()
        estimator(oc, args.child, args.devices).fit(X)
        figures["warm"] = time.perf_counter() - start
        figures["over warm"] = figures["first"] - figures["warm"]
    print(json.dumps(figures))


def parts(stats):
    """{part: cumulative seconds} of PARTS in a first fit's profile."""
    cumulative = {}
    for (path, _, function), (_, _, _, cum, _) in stats.stats.items():
        key = (path.replace("\\", "/"), function)
        for suffix, name in _functions():
            if function == name and key[0].endswith(suffix):
                cumulative[(suffix, name)] = cumulative.get((suffix, name), 0.0) + cum
    out = {}
    for part, spec in PARTS.items():
        if spec[0] == "less":
            out[part] = cumulative.get(spec[1], 0.0) - cumulative.get(spec[2], 0.0)
        else:
            out[part] = sum(cumulative.get(f, 0.0) for f in spec)
    return out


def _functions():
    for spec in PARTS.values():
        yield from (spec[1:] if spec[0] == "less" else spec)


# ------------------------------------------------------------------ the parent
def run(args):
    X = blobs(N, D, K)
    names = args.estimators.split(",")
    unknown = sorted(set(names) - set(ESTIMATORS))
    if unknown:
        raise SystemExit(f"first_call: unknown estimators {unknown}; one of {ESTIMATORS}")
    base = ["--devices", args.devices] if args.devices else []
    rows = []
    for name in names:
        fresh_process(__file__, ["--child", name] + base, X)        # the on-disk caches filled
        runs = [fresh_process(__file__, ["--child", name] + base, X)
                for _ in range(args.repeats)]
        runs += [dict(fresh_process(__file__, ["--child", name, "--parts"] + base, X),
                      first=None) for _ in range(args.repeats)]
        medians = {}
        for column in COLUMNS:
            values = [r[column] for r in runs if r.get(column) is not None]
            medians[column] = statistics.median(values) if values else None
        if args.json:
            print(json.dumps(dict(bench="first_call", estimator=name, devices=args.devices,
                                  shape=f"{N}x{D}x{K}", repeats=args.repeats, **medians)),
                  flush=True)
        rows.append([name] + ["-" if medians[c] is None else f"{medians[c] * 1e3:.0f}"
                              for c in COLUMNS])
    print(table(["estimator"] + COLUMNS, rows, left=1))
    print(f"ms, median of {args.repeats} fresh processes a column, {N}x{D}x{K}, devices="
          f"{args.devices or 'all'}; first/warm/over warm from plain runs, the parts "
          "(discovery..upload) from cProfiled runs")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_devices_argument(ap)
    ap.add_argument("--estimators", default=",".join(ESTIMATORS),
                    help="comma-separated estimator names (default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes a figure")
    ap.add_argument("--json", action="store_true", help="one JSON line an estimator")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--parts", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rows", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
