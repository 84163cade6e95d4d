#!/usr/bin/env python3
"""A fit's fixed cost over its iterations (issue 18's CPU goals), and where it goes.

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

    python bench/fit_overhead.py                       # Intel's CPU runtime
    python bench/fit_overhead.py --devices NVIDIA --gmm-n 1000000 --gmm-d 128 --gmm-k 1024
"""
import argparse
import contextlib
import resource
import time
import warnings

import numpy as np

from _common import _busy_seconds, blobs, import_oclclust


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


def main(argv=None):
    global ITERS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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


if __name__ == "__main__":
    main()
