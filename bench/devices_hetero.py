"""bench/devices.py hetero: a host's unlike devices (its GPUs and its own CPU)
in one fit against each alone (issue 42, heterogeneous fits)."""
import argparse
import json

import numpy as np

from _common import import_oclclust, large_blobs, seconds, table

MAX_RATE = 1e15   # the largest devices.yaml takes (oclclust.passes.pass_rates.MAX_RATE)

DOC_HETERO = """Heterogeneous fits: each device of a host alone, then all of them in one fit.

    python bench/devices.py hetero                        # the host's devices ("all")
    python bench/devices.py hetero --n 10000000 --only kmeans,gmm --iters 10
    python bench/devices.py hetero --devices "Intel(R) OpenCL,Portable Computing Language" \\
        --as-given --n 100000 --scale 0.125           # a check on one CPU's two runtimes

Cases (--only): kmeans KMeans N x 128, k=1024; cmeans FuzzyCMeans N x 24,
c=100; gmm GaussianMixture full N x 24, K=100 (N: --n, default 10M;
--scale multiplies the 128 / 1024 / 24 / 100 for a small check).  Every
case fits --iters iterations (tol=0, given starts) on each device alone
(devices=[profile]: the devices a DeviceManager of --devices picks, a CPU
beside GPUs as the sub-device that leaves a core per GPU to the host), then
on all of them through DeviceManager(--devices, weights=MODE) for each mode
of --weights (default "auto": measured over unlike devices).  Each fit is
the second of its configuration (a warm-up fit of the same rows first:
kernels built, and for the joint fit its devices timed once, the rates
kept for the next fit of the shape; the first joint fit, which times
them, is reported too: first_fit_seconds, first_fit_efficiency).
Reported: rows per second of the whole fit (upload, calibration, moments,
iterations, last pass) and of the steady iterations (the median of
history_), the joint fit's rows per device, and the efficiency: together
over the sum of the devices alone (the issue's goal: >= 0.9 whole fit).  A
device the joint fit left out (its rate under 1/32 of the sum: its rows
would not pay for its passes) holds 0 rows; the sum alone still counts it.
--yaml prints each device's measured rates as devices.yaml lines
(passes/pass_rates.py), which measured weights then read instead of timing
a calibration pass.
"""


def cases(oc, args):
    """{name: (d, k, make(devices, starts), rate term, work per row)}."""
    s = args.scale
    kd, kk = max(2, round(128 * s)), max(2, round(1024 * s))
    md, mk = max(2, round(24 * s)), max(2, round(100 * s))
    it = args.iters
    return {
        "kmeans": (kd, kk, lambda devs, C0: oc.KMeans(
            len(C0), init=C0, n_init=1, max_iter=it, tol=0, devices=devs),
            "lloyd_rate", kk * kd),
        "cmeans": (md, mk, lambda devs, C0: oc.FuzzyCMeans(
            len(C0), init=C0, max_iter=it, tol=0, devices=devs), "cmeans_rate", mk * md),
        "gmm": (md, mk, lambda devs, C0: oc.GaussianMixture(
            len(C0), covariance_type="full", means_init=C0.astype(np.float64),
            init_params="random_from_data", random_state=0, max_iter=it, tol=0,
            devices=devs),
            "gmm_rate", mk * md * (md + 3) // 2),
    }


def steady(est):
    """Seconds of a steady iteration: the median of history_ past the first."""
    return float(np.median([h["seconds"] for h in est.history_[1:] or est.history_]))


def twice(make, devices, X, C0):
    """The second of two fits (the first builds kernels and buffers)."""
    make(devices, C0).fit(X)
    return seconds(make(devices, C0).fit, X)


def hetero_main(argv=None):
    ap = argparse.ArgumentParser(description=DOC_HETERO.split("\n\n")[0])
    ap.add_argument("--devices", default="all",
                    help='the devices (select_devices: "all", names, comma-separated)')
    ap.add_argument("--as-given", action="store_true",
                    help="take the named devices as a list (two runtimes of one CPU both "
                         "count; no core left to the host)")
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="features and clusters times this (a small check)")
    ap.add_argument("--only", default="kmeans,cmeans,gmm")
    ap.add_argument("--weights", default="auto",
                    help='joint fits\' weights: "auto", "measured", "compute_units", or '
                         'comma-separated numbers; several modes separated by ";"')
    ap.add_argument("--yaml", action="store_true",
                    help="print each device's rates as devices.yaml lines")
    args = ap.parse_args(argv)
    oc = import_oclclust()
    from oclclust.parallel.calibration import forget_rates
    chosen = oc.select_devices(args.devices) if args.as_given else args.devices
    profiles = oc.DeviceManager(chosen).profiles
    print(f"hetero: n={args.n:,} iters={args.iters}; devices: "
          f"{'; '.join(str(p) for p in profiles)}", flush=True)
    results, rates = [], {str(p): {} for p in profiles}
    for name, (d, k, make, term, work) in cases(oc, args).items():
        if name not in args.only.split(","):
            continue
        X = large_blobs(args.n, d, k)
        C0 = X[np.random.default_rng(1).choice(len(X), k, replace=False)].copy()
        rows, whole_alone, iter_alone = [], 0.0, 0.0
        for p in profiles:
            t, est = twice(make, [p], X, C0)
            whole, it = args.n * args.iters / t, args.n / steady(est)
            whole_alone, iter_alone = whole_alone + whole, iter_alone + it
            rates[str(p)][term] = it * work
            rows.append([name, "alone", str(p), f"{t:.3f}", f"{whole:,.0f}", f"{it:,.0f}", "",
                         ""])
        for mode in args.weights.split(";"):
            weights = mode if mode in ("auto", "measured", "compute_units") else \
                [float(w) for w in mode.split(",")]
            # the first joint fit times its devices (forget_rates: none kept
            # from the mode before); the second starts from the rates it kept
            forget_rates()
            cold, _ = seconds(make(oc.DeviceManager(chosen, weights=weights), C0).fit, X)
            t, est = seconds(make(oc.DeviceManager(chosen, weights=weights), C0).fit, X)
            whole, it = args.n * args.iters / t, args.n / steady(est)
            held = ", ".join(f"{n}" for n in est.devices_.values())
            rows.append([name, f"together ({mode})", f"{len(profiles)} devices", f"{t:.3f}",
                         f"{whole:,.0f}", f"{it:,.0f}", f"{whole / whole_alone:.3f}",
                         f"{it / iter_alone:.3f}"])
            record = dict(case=name, n=args.n, d=d, k=k, iters=args.iters, weights=mode,
                          seconds=t, rows_per_s=whole, sum_alone=whole_alone,
                          efficiency=whole / whole_alone, iter_efficiency=it / iter_alone,
                          first_fit_seconds=cold,
                          first_fit_efficiency=args.n * args.iters / cold / whole_alone,
                          rows_per_device=est.devices_)
            results.append(record)
            print(json.dumps(record), f"(rows {held})", flush=True)
        print(table(["case", "fit", "devices", "s", "rows/s (fit)", "rows/s (iter)",
                     "efficiency (fit)", "efficiency (iter)"], rows, left=3), flush=True)
        del X
    if args.yaml:
        print("\n# devices.yaml entries (work per second: passes/pass_rates.py)")
        for p in profiles:
            print(f"- match: {{platform: {p.platform!r}, name: {p.name!r}}}")
            for term, value in rates[str(p)].items():   # a float to YAML: with a dot
                print(f"  {term}: {min(value, MAX_RATE):.6e}")
    return 0 if results else 1
