#!/usr/bin/env python3
"""The mixture family against its anchors: GaussianMixture's EM against
scikit-learn's, FuzzyCMeans against a numpy c-means and scikit-fuzzy, on
the same data and initial parameters, in the same run.

    python bench/mixture.py [gmm]                         # 1M x 24, K=100, full and diag
    python bench/mixture.py gmm --quick
    python bench/mixture.py gmm --devices NVIDIA --n 1000000 --d 128 --k 1024 --cov diag \
        --no-sklearn --variants per-point,mma-e,mma --parts
    python bench/mixture.py cmeans                        # n=1e6, d=24, c=100, 10 iterations
    python bench/mixture.py cmeans --quick --devices NVIDIA

Measurements (``python bench/mixture.py NAME --help`` gives each one's flags):

    gmm       GaussianMixture against scikit-learn, seconds per EM iteration
              (host and resident data; kernel variants, precisions, --parts)
    cmeans    FuzzyCMeans against numpy and scikit-fuzzy, seconds per
              iteration and the centres' accuracy against float64
"""
import argparse
import importlib.util
import os
import statistics
import sys
import time
import warnings

import numpy as np

from _common import (DEFAULT_BASELINES, FOREIGN, add_devices_argument, baselines,
                     data_functions, import_oclclust, run_measurement, seconds,
                     select_profiles, table as format_table, timed, version)


# ---- gmm (formerly bench/gmm.py) -------------------------------------------------------

DOC_GMM = """Time oclclust's GaussianMixture EM against scikit-learn's, per iteration.

Same data, same initial parameters, a fixed number of EM iterations (tol=0)
for both: the data come from make_blobs of ../shared/bench/baselines.py (an
identical copy in bench/_common.py where it is absent) and the start is the
baselines' gmm_init: equal weights, means = the first K points, identity
precisions.  scikit-learn runs --sk-iters iterations (it is slow: 70 s per
iteration with full covariance on the GPU host's 16 cores), on a float64
copy of the data by default (--sk-dtype), as ../shared/bench/gpu_host_anchors.py
timed it; oclclust runs --iters iterations in --dtype (float32 default).

    s/iter  = wall seconds of one fit / iterations (upload and host M step inside)
    resident = the same with the data already on the (first) device, a pyopencl array
    EM s/it = (fit with --iters - fit with 1 iteration) / (--iters - 1): the
              steady per-iteration cost without the upload and set-up
    speedup = scikit-learn s/iter / oclclust's

Every oclclust configuration is fitted once untimed first (kernel builds).
oclclust is also run for --sk-iters iterations: its lower bound is printed
beside scikit-learn's (they should agree to ~1e-5 relative).

    python bench/mixture.py gmm                                   # 1M x 24, K=100, full and diag
    python bench/mixture.py gmm --quick                           # small, for CI
    python3 bench/mixture.py gmm --devices NVIDIA                 # on the GPU host
    python3 bench/mixture.py gmm --devices NVIDIA --n 1000000 --d 128 --k 1024 --cov diag \
        --no-sklearn --variants per-point,mma-e,mma --parts   # old and new, one run

--variants: the kernels to compare (profiles' gmm_mma, gmm_mma_mstep terms):
"default" (the devices' profiles as they are), "per-point" (both 0: the
portable E and M kernels), "mma-e" (the tensor-core diag E step where the
device has tensor cores) and "mma" (its M-step statistics too).  --precision: the estimators' precision modes to run.  --parts: the
E and M passes alone (GmmPass on the first device, the data resident; the
median of 5) beside each fit.
"""


# ../shared/bench/gpu_host_anchors.py on the GPU host (16 cores): s/iteration
ANCHORS = {"full": 70.0, "diag": 11.1}


def fit(cls, X, iters, cov, init, **kw):
    w0, m0, p0 = init
    gm = cls(n_components=len(w0), covariance_type=cov, tol=0.0, max_iter=iters,
             weights_init=w0, means_init=m0, precisions_init=p0, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # ConvergenceWarning: tol=0 never converges
        return seconds(gm.fit, X)


def parts(oc, profile, X, cov, init, repeats=5):
    """(E s, M s, E kernel spec) of one E and one M pass on *profile*'s
    device, the data resident: medians of *repeats* after one untimed pass."""
    from oclclust.cluster.mixture import mdl
    from oclclust.passes.gmm import GmmPass
    from oclclust.runtime.partition import DevicePartition
    w0, m0, p0 = init
    full = cov == "full"
    chol = mdl.cholesky_of_precisions(p0, full)
    cov_ = np.linalg.inv(p0) if full else 1.0 / p0
    records = mdl.records(mdl.Model(w0, m0, cov_, chol), full)
    gp = GmmPass(DevicePartition(profile, X), len(w0), full)
    times = {"E": [], "M": []}
    for r in range(repeats + 1):
        t = time.perf_counter()
        gp.estep(records)
        gp.part.queue.finish()
        e = time.perf_counter() - t
        t = time.perf_counter()
        gp.mstep(m0)
        gp.part.queue.finish()
        if r:
            times["E"].append(e)
            times["M"].append(time.perf_counter() - t)
    return statistics.median(times["E"]), statistics.median(times["M"]), gp.espec


def variant_devices(oc, devices, variant):
    """The devices with the E kernel of *variant* (see the module doc)."""
    if variant == "default":
        return devices
    profiles = oc.select_devices(devices)
    terms = {"per-point": (0, 0), "mma-e": (1, 0), "mma": (1, 1)}[variant]
    return oc.DeviceManager([p.replace(gmm_mma=terms[0], gmm_mma_mstep=terms[1])
                             for p in profiles])


def gmm_main(argv=None):
    ap = argparse.ArgumentParser(description=DOC_GMM.splitlines()[0])
    ap.add_argument("--devices", default=None, help="oclclust devices (default: all / "
                    "$OCLCLUST_DEVICES), e.g. NVIDIA, cpu, 'Intel(R) OpenCL'")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=24)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--iters", type=int, default=10, help="oclclust EM iterations")
    ap.add_argument("--sk-iters", type=int, default=3, help="scikit-learn EM iterations")
    ap.add_argument("--cov", default="full,diag", help="covariance types (full,diag)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--sk-dtype", default="float64", choices=["float32", "float64"])
    ap.add_argument("--no-sklearn", action="store_true")
    ap.add_argument("--baselines", default=str(DEFAULT_BASELINES))
    ap.add_argument("--variants", default="default",
                    help="kernels: default, per-point, mma-e, mma (comma-separated)")
    ap.add_argument("--precision", default="float32",
                    help="precision modes (float32, tf32, bf16; comma-separated)")
    ap.add_argument("--parts", action="store_true", help="time the E and M passes alone")
    ap.add_argument("--quick", action="store_true",
                    help="n=20000, d=8, K=16, 4 iterations (CI smoke run)")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.d, args.k, args.iters, args.sk_iters = 20_000, 8, 16, 4, 2
    if args.iters < 2:
        ap.error("--iters must be >= 2")
    oc = import_oclclust()
    import pyopencl.array as cla
    data, _ = baselines(args.baselines)
    X, _, _ = data.make_blobs(args.n, args.d, args.k)
    X = X.astype(args.dtype)
    print(f"GaussianMixture EM: n={args.n} d={args.d} K={args.k}, oclclust {args.dtype} "
          f"{args.iters} it, scikit-learn {args.sk_dtype} {args.sk_iters} it", flush=True)
    rows = []
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    precisions = [v.strip() for v in args.precision.split(",") if v.strip()]
    for cov in [c.strip() for c in args.cov.split(",") if c.strip()]:
      init = data.gmm_init(X, args.k, cov)
      for variant in variants:
       for precision in precisions:
        devs = variant_devices(oc, args.devices, variant)
        kw = dict(devices=devs, precision=precision)
        fit(oc.GaussianMixture, X, 1, cov, init, **kw)              # builds
        t1, _ = fit(oc.GaussianMixture, X, 1, cov, init, **kw)
        t, gm = fit(oc.GaussianMixture, X, args.iters, cov, init, **kw)
        em = (t - t1) / (args.iters - 1)
        device = ", ".join(gm.devices_)
        first = devs.profiles if hasattr(devs, "profiles") else oc.select_devices(devs)
        first = oc.runtime.devices.preferred(first)[0]
        Xd = cla.to_device(first.queue(), X)
        fit(oc.GaussianMixture, Xd, 1, cov, init, devices=[first], precision=precision)
        tr, _ = fit(oc.GaussianMixture, Xd, args.iters, cov, init, devices=[first],
                    precision=precision)
        del Xd
        label = f"{cov} {variant} {precision}"
        row = dict(cov=cov, label=label, ocl=t / gm.n_iter_, em=em, res=tr / args.iters,
                   device=device, sk=None)
        if args.parts:
            e, m, spec = parts(oc, first, X, cov, init)
            print(f"  {label}: E pass {e:.5f} s, M pass {m:.5f} s, E kernel "
                  f"{type(spec).__name__} {spec}", flush=True)
        if not args.no_sklearn:
            from sklearn.mixture import GaussianMixture
            ts, sk = fit(GaussianMixture, X.astype(args.sk_dtype), args.sk_iters, cov, init)
            _, same = fit(oc.GaussianMixture, X, args.sk_iters, cov, init, **kw)
            row.update(sk=ts / sk.n_iter_, lb=(same.lower_bound_, sk.lower_bound_))
        rows.append(row)
        print(f"  {label}: done on {device}", flush=True)
    print()
    head = f"{'cov variant precision':26} {'oclclust s/iter':>16} {'EM s/it':>10} {'resident':>10} " \
           f"{'sklearn s/iter':>15} {'speedup':>9} {'(EM)':>9} {'(res.)':>9}  " \
           "lower bounds (oclclust / sklearn, same iters)"
    print(head)
    print("-" * len(head))
    for r in rows:
        sk = r["sk"]
        sp = (f"{sk / r['ocl']:9.1f} {sk / r['em']:9.1f} {sk / r['res']:9.1f}" if sk
              else f"{'-':>9} {'-':>9} {'-':>9}")
        lb = f"{r['lb'][0]:.8g} / {r['lb'][1]:.8g}" if sk else ""
        print(f"{r['label']:26} {r['ocl']:16.5f} {r['em']:10.5f} {r['res']:10.5f} "
              f"{(f'{sk:.3f}' if sk else '-'):>15} {sp}  {lb}")
    if (args.n, args.d, args.k) == (1_000_000, 24, 100):
        for r in rows:
            goal = ANCHORS[r["cov"]] / 500
            print(f"goal {r['cov']}: <= {goal:.3f} s/iter (500x the GPU host's scikit-learn "
                  f"{ANCHORS[r['cov']]} s/iter): {'met' if r['ocl'] <= goal else 'not met'} "
                  f"from the host array ({ANCHORS[r['cov']] / r['ocl']:.0f}x), "
                  f"{'met' if r['res'] <= goal else 'not met'} resident "
                  f"({ANCHORS[r['cov']] / r['res']:.0f}x)")
    print(f"devices: {rows[0]['device'] if rows else '-'}")
    return 0


# ---- cmeans (formerly bench/cmeans.py) -------------------------------------------------

DOC_CMEANS = """Time oclclust's FuzzyCMeans against a vectorised numpy c-means (and scikit-fuzzy).

Same data (float32 blobs from make_blobs of ../shared/bench/baselines.py, or
its copy bench/_common.py), same initial centres (the first c rows), same
fuzzifier and a fixed number of iterations for every library:

    oclclust  FuzzyCMeans(c, m=m, init=C0, tol=0, max_iter=iters, devices=[device])
    numpy     the step of ../shared/bench/gpu_host_anchors.py (float32 GEMM distances,
              memberships, centres), iterated from C0
    skfuzzy   skfuzzy.cluster.cmeans(X.T, c, m, error=0, maxiter=.., init=U(C0))

oclclust's seconds per iteration are timed inside a whole fit: from the
start of one iteration's pass to the start of the next pass (the fused
kernel, the reduction, the centre update on the host), averaged over the
iterations after the first (which also sets the pass up), min over
--repeats fits.  The fixed costs of a fit (upload, moments, the final pass
that writes the n x c memberships u_ and copies them to the host) are left
out; "fit s" is a whole fit of ``iters`` iterations and "fixed s" what it
spent outside the iterations.  Accuracy: each library's centres after
``iters`` iterations against a float64 reference (eq. 1/2 with exact
distances, in row blocks; --no-check skips it), relative to the largest
centre coordinate.
"resident": the data already on the device as a pyopencl array.  numpy's
and skfuzzy's figures are wall-clock seconds over their iterations.  The
centres after ``iters`` iterations are compared with numpy's.

    python bench/mixture.py cmeans                                  # n=1e6, d=24, c=100, 10 iterations
    python bench/mixture.py cmeans --quick                          # n=1e5, 5 iterations
    python3 bench/mixture.py cmeans --devices NVIDIA                # the GPU host's measurement

Compare only runs made back to back on a quiet machine.
"""


def numpy_step(X, V, m, xx):
    """One Bezdek iteration as ../shared/bench/gpu_host_anchors.py times it."""
    vv = (V * V).sum(1)[None]
    D2 = np.maximum(xx - 2 * X @ V.T + vv, 1e-12)
    inv = D2 ** (-1.0 / (m - 1)) if m != 2 else 1.0 / D2
    U = inv / inv.sum(1, keepdims=True)
    W = U ** m if m != 2 else U * U
    return (W.T @ X) / W.sum(0)[:, None]


def reference64(X, C0, m, iters, block=200_000):
    """Centres after *iters* Bezdek iterations in float64 (memberships from
    ratios to each row's nearest distance: eq. 1 without overflow)."""
    V = C0.astype(np.float64)
    for _ in range(iters):
        num, den = np.zeros_like(V), np.zeros(len(V))
        vv = (V * V).sum(1)[None]
        for s in range(0, len(X), block):
            x = X[s:s + block].astype(np.float64)
            d2 = np.maximum((x * x).sum(1)[:, None] - 2 * x @ V.T + vv, 0)
            dmin = d2.min(1, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(dmin > 0, (dmin / d2) ** (1 / (m - 1)), (d2 == 0) * 1.0)
            W = (r / r.sum(1, keepdims=True)) ** m
            num += W.T @ x
            den += W.sum(0)
        V = num / den[:, None]
    return V


def run_numpy(X, C0, args):
    xx = (X * X).sum(1)[:, None]
    V = C0.copy()
    times = []
    for _ in range(args.iters):
        start = time.perf_counter()
        V = numpy_step(X, V, args.m, xx)
        times.append(time.perf_counter() - start)
    per_iter = float(np.mean(times[1:] if len(times) > 1 else times))
    return dict(lib="numpy", variant="float32 GEMM", device="host CPU", n_iter=args.iters,
                seconds_per_iter=per_iter, seconds=float(np.sum(times)), centers=V)


def run_skfuzzy(X, C0, args):
    import skfuzzy
    iters = min(args.iters, args.skfuzzy_iters)
    X64, C64 = X.astype(np.float64), C0.astype(np.float64)   # U(C0): skfuzzy starts from u
    d2 = np.maximum((X64 * X64).sum(1)[:, None] - 2 * X64 @ C64.T + (C64 * C64).sum(1)[None],
                    1e-12)
    inv = d2 ** (-1.0 / (args.m - 1))
    U0 = (inv / inv.sum(1, keepdims=True)).T
    del X64, d2, inv
    start = time.perf_counter()
    res = skfuzzy.cluster.cmeans(X.T, len(C0), args.m, error=0.0, maxiter=iters, init=U0)
    seconds = time.perf_counter() - start
    return dict(lib="skfuzzy", variant="float64", device="host CPU", n_iter=int(res[5]),
                seconds_per_iter=seconds / int(res[5]), seconds=seconds, centers=None)


def pass_starts(sharded):
    """Record when each pass of CMeansShards starts (a list, in order)."""
    starts, original = [], sharded.CMeansShards.run

    def run(self, centers, update=True, write_u=False):
        starts.append(time.perf_counter())
        return original(self, centers, update, write_u)
    sharded.CMeansShards.run = run
    return starts


def run_oclclust(oc, profile, X, C0, args, resident):
    import pyopencl.array as cla
    from oclclust.cluster.mixture import cmeans_shards as sharded
    data = X
    if resident:
        data = cla.to_device(profile.queue(), X)
        profile.queue().finish()
    starts = pass_starts(sharded)
    per_iter = []

    def fit():
        starts.clear()
        fc = oc.FuzzyCMeans(args.c, m=args.m, init=C0, tol=0.0, max_iter=args.iters,
                            devices=[profile]).fit(data)
        # starts: every iteration's pass, then the final memberships pass
        iters = np.diff(starts[:fc.n_iter_ + 1])
        per_iter.append(float(np.mean(iters[1:] if len(iters) > 1 else iters)))
        return fc
    start = time.perf_counter()
    fit()                                     # kernel builds, first touches
    warmup = time.perf_counter() - start
    per_iter.clear()
    best, times, fc = timed(fit, args.repeats)
    per_iter = min(per_iter)
    return dict(lib="oclclust", variant="resident" if resident else "host-array",
                device=f"{profile.platform}: {profile.name}", n_iter=int(fc.n_iter_),
                seconds_per_iter=per_iter, seconds=best, fixed_s=best - per_iter * fc.n_iter_,
                warmup_s=warmup, objective=fc.objective_, centers=fc.cluster_centers_,
                foreign_cores=max(FOREIGN, default=None))


def table(records, ref, exact):
    head = ["library", "device", "variant", "iters", "s/iter", "fit s", "fixed s",
            "speedup vs numpy", "centre error"]
    rows = []
    for r in records:
        speed = (f"{ref['seconds_per_iter'] / r['seconds_per_iter']:.1f}x"
                 if ref and r is not ref and r["seconds_per_iter"] > 0 else "")
        diff = ""
        if exact is not None and r.get("centers") is not None and r["n_iter"] == len(exact[1]):
            scale = np.abs(exact[0]).max()
            diff = f"{np.abs(r['centers'] - exact[0]).max() / scale:.1e}"
        rows.append([r["lib"], r["device"], r["variant"], str(r["n_iter"]),
                     f"{r['seconds_per_iter']:.4f}", f"{r['seconds']:.3f}",
                     f"{r['fixed_s']:.3f}" if "fixed_s" in r else "", speed, diff])
    return format_table(head, rows)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Time oclclust's FuzzyCMeans against numpy and scikit-fuzzy on each "
                    "OpenCL device (same data, init, m and iterations).",
        epilog="speedup: numpy's seconds per iteration over the library's.")
    ap.add_argument("--n", type=int, default=None, help="rows (default 1000000; 100000 "
                    "with --quick)")
    ap.add_argument("--d", type=int, default=24, help="features (default 24)")
    ap.add_argument("--c", type=int, default=100, help="clusters (default 100)")
    ap.add_argument("--m", type=float, default=2.0, help="fuzzifier (default 2)")
    ap.add_argument("--iters", type=int, default=None,
                    help="fixed iterations (default 10; 5 with --quick)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="timed fits per configuration; the minimum is used (default 3)")
    ap.add_argument("--quick", action="store_true", help="n=100000, 5 iterations")
    add_devices_argument(ap)
    ap.add_argument("--no-numpy", action="store_true", help="skip the numpy reference")
    ap.add_argument("--no-skfuzzy", action="store_true", help="skip scikit-fuzzy")
    ap.add_argument("--skfuzzy-iters", type=int, default=3,
                    help="scikit-fuzzy iterations (default 3: it is slow)")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the float64 reference the centres are checked against")
    ap.add_argument("--no-resident", action="store_true",
                    help="skip the runs with the data already on the device")
    ap.add_argument("--baselines", default=str(DEFAULT_BASELINES),
                    help="baselines.py to take make_blobs/init_centers from")
    args = ap.parse_args(argv)
    args.n = args.n or (100_000 if args.quick else 1_000_000)
    args.iters = args.iters or (5 if args.quick else 10)
    if min(args.n, args.d, args.c, args.iters, args.repeats) < 1 or args.c > args.n:
        ap.error("--n, --d, --c, --iters, --repeats must be >= 1 and --c <= --n")
    if not args.m > 1:
        ap.error("--m must be > 1")
    return args


def cmeans_main(argv=None):
    args = parse_args(argv)
    oc = import_oclclust()
    try:
        profiles = select_profiles(oc, args.devices)
    except ValueError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2
    make_blobs, init_centers, source = data_functions(args.baselines)
    print(f"bench: fuzzy c-means n={args.n:,} d={args.d} c={args.c} m={args.m} "
          f"iters={args.iters} repeats={args.repeats}; {os.cpu_count()} CPU(s)")
    print(f"bench: data and init from {source}; numpy {np.__version__}, pyopencl "
          f"{version('pyopencl')}, skfuzzy {version('skfuzzy')}", flush=True)
    X, _, _ = make_blobs(args.n, args.d, args.c)
    C0 = init_centers(X, args.c)
    records, ref = [], None
    if not args.no_numpy:
        print("bench: numpy", flush=True)
        ref = run_numpy(X, C0, args)
        records.append(ref)
    if not args.no_skfuzzy and importlib.util.find_spec("skfuzzy") is not None:
        print("bench: skfuzzy", flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            records.append(run_skfuzzy(X, C0, args))
    elif not args.no_skfuzzy:
        print("bench: skfuzzy not installed: skipped")
    failures = 0
    for profile in profiles:
        for resident in (False,) if args.no_resident else (False, True):
            print(f"bench: oclclust on {profile} ({'resident' if resident else 'host array'})",
                  flush=True)
            try:
                rec = run_oclclust(oc, profile, X, C0, args, resident)
            except Exception as exc:   # one runtime failing must not hide the others
                failures += 1
                print(f"  FAILED: {type(exc).__name__}: {str(exc).splitlines()[0]}")
                continue
            print(f"  {rec['seconds_per_iter']:.4f} s/iter, fit {rec['seconds']:.3f} s "
                  f"(warm-up {rec['warmup_s']:.2f} s, other load "
                  f"{rec['foreign_cores'] or 0:.1f} cores)", flush=True)
            records.append(rec)
    exact = None
    if not args.no_check:
        print("bench: float64 reference for the accuracy column", flush=True)
        exact = reference64(X, C0, args.m, args.iters), range(args.iters)
    print(f"\nfuzzy c-means, n={args.n:,} d={args.d} c={args.c} m={args.m}, fixed iterations "
          "from the same centres; oclclust s/iter: iterations timed inside a fit")
    print(table(records, ref, exact))
    return 1 if failures else 0


MEASUREMENTS = {
    "gmm": (gmm_main, DOC_GMM),
    "cmeans": (cmeans_main, DOC_CMEANS),
}


if __name__ == "__main__":
    sys.exit(run_measurement(MEASUREMENTS, __doc__))
