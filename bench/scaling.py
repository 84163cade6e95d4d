#!/usr/bin/env python3
"""The scaling model of docs/guide/scaling.rst, measured: an iteration's
time on N GPUs of one host split into its terms, the model's 4-GPU
prediction from the 1- and 2-GPU terms against the 4-GPU measurement, and
its projection to 8, 16 and 128 GPUs over MPI.

    python bench/scaling.py --gpus 1 2 4                       # every estimator
    python bench/scaling.py --gpus 1 2 4 --only kmeans --bandwidth-gbs 25

Per estimator (KMeans 10M x 128 x 1024, FuzzyCMeans and GaussianMixture
full 10M x 24 x 100, warm fits from host rows, median iteration of
history_):

    t(N)   an iteration on N GPUs (one process, equal shares);
    P(m)   an iteration of one GPU alone on m rows, at m = n/N: the pass and
           the one device's own update (its launches, its reads);
    R(N)   the host's sum of the N devices' statistics (AdditiveStats.total,
           alone, settled: timed inside the N-GPU fit, per iteration);
    H(N)   = t(N) - P(n/N) - R(N): what the host adds for N devices beyond
           one's (launches and writes a device, waiting for the slowest).

The model: t(N) = P(n/N) + R(N) + H(N).  P is measured at every share
(for projections, P(m) = p0 + p1 m fitted over them); R is measured at
every N (host work alone: the same on any GPU; projected, R(N) = r0 + r1 N
fitted over N >= 2); H(N) = h N for N >= 2 (each device costs the host
the same: its launches, its writes), 0 on one GPU (whose own host work is
inside P).  The 4-GPU prediction is the one term not measured at 4 GPUs,
H(4) = 2 H(2), added to the measured P(n/4) and R(4).
Projected, G GPUs are G / --per-host ranks of --per-host GPUs each: a
host's R + H are the ones measured at --per-host GPUs (the model's where
not measured), and the ranks add the S-byte statistics vector in a ring
all-reduce, A(R) = 2 (R - 1) / R * S / B + 2 (R - 1) alpha (B:
--bandwidth-gbs, alpha: --latency-us; assumed, not measured here).
Strong scaling keeps n; weak scaling keeps n per GPU.
"""
import argparse
import json
import time
from collections import defaultdict

import numpy as np

from _common import import_oclclust, large_blobs, table, time_calls


class ReductionClock:
    """The seconds the host spends summing the devices' statistics
    (AdditiveStats.total, alone, settled), on any thread."""

    def __init__(self):
        from oclclust.runtime.reduce import AdditiveStats
        self.seconds = 0.0
        total = AdditiveStats.__dict__["total"].__func__

        def timed_total(cls, parts):
            start = time.perf_counter()
            try:
                return total(cls, parts)
            finally:
                self.seconds += time.perf_counter() - start
        AdditiveStats.total = classmethod(timed_total)   # time_calls would bind it to the base
        for name in ("alone", "settled"):
            time_calls(AdditiveStats, name, self.add)

    def add(self, start, end):
        self.seconds += end - start


def estimators(oc, iters):
    """{name: (rows' shape (n, d, k), make(devices, X) -> estimator, the
    statistics' float64 values an iteration)}."""
    def kmeans(devices, X):
        C0 = X[np.random.default_rng(1).choice(len(X), 1024, replace=False)].copy()
        return oc.KMeans(1024, init=C0, n_init=1, max_iter=iters, tol=0, devices=devices)

    def starts(X, k):
        return X[np.random.default_rng(2).choice(len(X), k, replace=False)].copy()

    def cmeans(devices, X):
        return oc.FuzzyCMeans(100, init=starts(X, 100), max_iter=iters, tol=0, devices=devices)

    def gmm(devices, X):
        return oc.GaussianMixture(100, covariance_type="full",
                                  means_init=starts(X, 100).astype(np.float64),
                                  init_params="random_from_data", random_state=0,
                                  max_iter=max(2, iters // 4), tol=0, devices=devices)
    # words a value: exact_sums.ARRAY_WORDS (3) for the k x d sums
    return {"kmeans": ((10_000_000, 128, 1024), kmeans, 3 * 1024 * (128 + 1)),
            "cmeans": ((10_000_000, 24, 100), cmeans, 3 * 100 * (24 + 1)),
            "gmm": ((10_000_000, 24, 100), gmm, 3 * 100 * (1 + 24 + 24 * 25 // 2) + 3 * 100)}


def median_iteration(est):
    return float(np.median([h["seconds"] for h in est.history_[1:] or est.history_]))


def measure(oc, gpus, make, X, clock, repeats):
    """(median iteration, host reduction seconds an iteration) of warm fits:
    the medians over *repeats* fits."""
    mgr = oc.DeviceManager(gpus, weights="compute_units")
    make(mgr, X).fit(X)   # warm: kernels, pinned staging, per-row buffers
    its, reductions = [], []
    for _ in range(repeats):
        clock.seconds = 0.0
        est = make(mgr, X).fit(X)
        its.append(median_iteration(est))
        reductions.append(clock.seconds / max(1, len(est.history_)))
    return float(np.median(its)), float(np.median(reductions))


def ring_allreduce(ranks, nbytes, bandwidth, latency):
    if ranks < 2:
        return 0.0
    return 2 * (ranks - 1) / ranks * nbytes / bandwidth + 2 * (ranks - 1) * latency


def model(name, n, m, counts, args, out):
    """Fit the model to the measured terms *m* ({N: dict}), check its 4-GPU
    prediction, project over MPI; rows of the report into *out*."""
    shares = np.array([n / c for c in counts], float)
    p1, p0 = np.polyfit(shares, [m[c]["P"] for c in counts], 1)
    several = [c for c in counts if c > 1]
    h = m[2]["H"] / 2 if 2 in counts else 0.0
    if len(several) > 1:
        r1, r0 = np.polyfit(several, [m[c]["R"] for c in several], 1)
    else:
        r1, r0 = (m[several[0]]["R"] / several[0], 0.0) if several else (0.0, 0.0)
    for c in counts:
        predicted = m[c]["P"] + m[c]["R"] + (h * c if c > 1 else 0.0)
        out.append(dict(estimator=name, gpus=c, t=m[c]["t"], P=m[c]["P"], R=m[c]["R"],
                        H=m[c]["H"], speedup=m[1]["t"] / m[c]["t"],
                        predicted=predicted, miss=predicted / m[c]["t"] - 1))
        print(json.dumps(out[-1]), flush=True)
    # projections: G GPUs as G / per_host ranks of per_host GPUs (one rank: one host)
    nbytes = 8 * m["values"]
    bw, lat = args.bandwidth_gbs * 1e9, args.latency_us * 1e-6
    t1 = m[1]["t"]
    for g in args.project:
        per_host = min(args.per_host, g)
        ranks = g // per_host
        local = ((m[per_host]["R"] + m[per_host]["H"]) if per_host in counts   # measured
                 else (r0 + r1 * per_host + h * per_host) if per_host > 1 else 0.0)
        allreduce = ring_allreduce(ranks, nbytes, bw, lat)
        strong = p0 + p1 * n / g + local + allreduce
        weak = t1 + local + allreduce
        out.append(dict(estimator=name, gpus=g, ranks=ranks, per_host=per_host,
                        projected_strong=strong, strong_efficiency=t1 / (g * strong),
                        projected_weak=weak, weak_efficiency=t1 / weak, allreduce=allreduce))
        print(json.dumps(out[-1]), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--only", default="kmeans,cmeans,gmm")
    ap.add_argument("--n", type=int, default=None, help="rows (default: each estimator's 10M)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3, help="timed fits a configuration")
    ap.add_argument("--project", type=int, nargs="+", default=[8, 16, 128])
    ap.add_argument("--per-host", type=int, default=4, help="GPUs a rank drives when projecting")
    ap.add_argument("--bandwidth-gbs", type=float, default=25.0,
                    help="the interconnect's bandwidth a rank (200 Gb/s InfiniBand: 25)")
    ap.add_argument("--latency-us", type=float, default=5.0, help="a message's latency")
    ap.add_argument("--devices", default="gpu",
                    help='the devices the GPUs are taken from (a check here: "Portable" '
                         'splits a CPU into sub-devices)')
    ap.add_argument("--terms", help="a run's output: its measured terms (JSON lines) modelled "
                                    "again, nothing measured (other --bandwidth-gbs, ...)")
    args = ap.parse_args(argv)
    counts = sorted(set(args.gpus) | {1})
    rows = []
    if args.terms:
        for name, (shape, _, values) in estimators(None, args.iters).items():
            m = defaultdict(dict, values=values)
            for line in open(args.terms):
                got = json.loads(line) if line.startswith("{") else {}
                if got.get("estimator") == name and "t" in got and "speedup" not in got:
                    m[got["gpus"]] = {key: got[key] for key in "tPRH"}
            if all(c in m for c in counts) and name in args.only.split(","):
                model(name, args.n or shape[0], m, counts, args, rows)
        return report(rows)
    oc = import_oclclust()
    clock = ReductionClock()
    found = oc.select_devices(args.devices)

    def take(c):
        if len(found) == 1 and c > 1 and found[0].type == "cpu":   # c sub-devices
            return oc.sub_devices(found[0], [1] * c)
        if len(found) < c:
            raise SystemExit(f"scaling: {c} GPUs asked for, {len(found)} found")
        return found[:c]
    for name, (shape, make, values) in estimators(oc, args.iters).items():
        if name not in args.only.split(","):
            continue
        n = args.n or shape[0]
        X = large_blobs(n, shape[1], shape[2])
        m = defaultdict(dict, values=values)
        for c in counts:
            t, r = measure(oc, take(c), make, X, clock, args.repeats)
            p = t if c == 1 else measure(oc, take(1), make, X[:n // c], clock, args.repeats)[0]
            m[c] = dict(t=t, P=p, R=r if c > 1 else 0.0, H=t - p - (r if c > 1 else 0.0))
            print(json.dumps(dict(estimator=name, gpus=c, **m[c])), flush=True)
        model(name, n, m, counts, args, rows)
        del X
    report(rows)


def report(rows):
    measured = [r for r in rows if "t" in r]
    ms = lambda v: f"{1e3 * v:.2f}"
    print(table(["estimator", "GPUs", "t ms", "P(n/N)", "R", "H", "speedup", "model ms",
                 "model/measured - 1"],
                [[r["estimator"], str(r["gpus"]), ms(r["t"]), ms(r["P"]), ms(r["R"]), ms(r["H"]),
                  f"{r['speedup']:.2f}", ms(r["predicted"]), f"{r['miss']:+.1%}"]
                 for r in measured], left=1))
    projected = [r for r in rows if "projected_strong" in r]
    print(table(["estimator", "GPUs", "ranks x GPUs", "all-reduce ms", "strong ms",
                 "strong eff", "weak ms", "weak eff"],
                [[r["estimator"], str(r["gpus"]), f"{r['ranks']} x {r['per_host']}",
                  ms(r["allreduce"]), ms(r["projected_strong"]), f"{r['strong_efficiency']:.2f}",
                  ms(r["projected_weak"]), f"{r['weak_efficiency']:.2f}"]
                 for r in projected], left=1))


if __name__ == "__main__":
    main()
