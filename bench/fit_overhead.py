#!/usr/bin/env python3
"""A fit's fixed cost over its iterations (issue 18's CPU goals), and where it goes.

    ratio = t(I iterations) / (I x marginal),  marginal = (t(2I) - t(I)) / I

for a whole fit from host data (tol=0, so exactly that many iterations; the
minimum of --repeats runs each, after an untimed warm-up fit that builds the
kernels).  1.0 would be a fit with no cost besides its iterations.

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
import time
import warnings

import numpy as np

from _common import FOREIGN, blobs, import_oclclust, timed


@contextlib.contextmanager
def clocked(owner, name, into):
    """Sum the wall seconds of every call of owner.name into into[name]."""
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            into[name] = into.get(name, 0.0) + time.perf_counter() - start
    setattr(owner, name, wrapper)
    try:
        yield
    finally:
        setattr(owner, name, original)


def ratio(make, X, iters, repeats):
    """(t(iters), marginal seconds of an iteration, ratio)."""
    def fit(n):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return make(n).fit(X)
    fit(1)   # kernel builds
    t1 = timed(lambda: fit(iters), repeats)[0]
    busy = list(FOREIGN)
    t2 = timed(lambda: fit(2 * iters), repeats)[0]
    busy += FOREIGN
    print(f"  (other processes kept {np.mean(busy):.1f} cores busy meanwhile)")
    marginal = (t2 - t1) / iters
    return t1, marginal, t1 / (iters * marginal)


def report(name, t, marginal, r, goal):
    print(f"{name}: t({ITERS}) {t:.3f} s, marginal {marginal * 1e3:.1f} ms/iteration, "
          f"ratio {r:.2f} (goal <= {goal})")


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
        t, marginal, r = ratio(lambda n: oc.KMeans(256, init=start, n_init=1, max_iter=n,
                                                   tol=0, devices=devices),
                               X, ITERS, args.repeats)
        report("KMeans 1M x 32, k=256", t, marginal, r, 1.25)

    if "gmm" in only:
        n, d, k = args.gmm_n, args.gmm_d, args.gmm_k
        X = blobs(n, d, k, seed=1)

        def gmm(iters):
            return oc.GaussianMixture(k, covariance_type="diag", max_iter=iters, tol=0,
                                      random_state=0, devices=devices)
        t, marginal, r = ratio(gmm, X, ITERS, args.repeats)
        report(f"GaussianMixture diag {n} x {d}, K={k}", t, marginal, r, 2.0)
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

    if "cmeans" in only:
        n, c, iters = args.cm_n, 100, args.cm_iters
        X = blobs(n, 24, c, seed=2)

        def cmeans():
            return oc.FuzzyCMeans(c, max_iter=iters, tol=0, random_state=0, devices=devices)
        cmeans().fit(X)   # kernel builds
        t = timed(lambda: cmeans().fit(X), args.repeats)[0]
        parts = {}
        with clocked(oc.FuzzyCMeans, "_init_centers", parts):
            start = time.perf_counter()
            fc = cmeans().fit(X)
            fitted = time.perf_counter() - start
            fc.u_, fc.labels_
            whole = time.perf_counter() - start
        it = sum(h["seconds"] for h in fc.history_)
        seed = parts["_init_centers"]
        print(f"FuzzyCMeans {n} x 24, c={c}, {iters} iterations: whole fit {t:.3f} s")
        print(f"  one fit, u_ and labels_ read: {whole:.3f} s = seeding {seed:.3f} + "
              f"iterations {it:.3f} ({it / iters * 1e3:.1f} ms each) + rest of fit "
              f"(moments, final pass) {fitted - seed - it:.3f} + reading u_ and labels_ "
              f"{whole - fitted:.3f}")
        start = time.perf_counter()
        fc.predict_proba(X)
        print(f"  predict_proba: {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()
