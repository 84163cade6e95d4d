#!/usr/bin/env python3
"""GaussianMixture's EM against its anchors in the same run: scikit-learn,
and the PyTorch EM recipe where torch and CUDA are (issue 41).

    python bench/gmm.py                           # issue 41's shapes, float32, tf32, bf16
    python bench/gmm.py --quick --devices "Intel(R) OpenCL"      # CPU-sized, seconds
    python3 bench/gmm.py --devices NVIDIA --no-sklearn            # on the GPU host
    python3 bench/gmm.py --devices NVIDIA --shapes diag-128 --variants per-point,mma-e,mma --parts

The shapes (--shapes; --n/--d/--k/--cov time one shape of your own instead):

    diag-128  diag 1M x 128, K=1024: the whole fit (3 iterations from host
              rows, init_params="random_from_data", means_init = K random
              rows) cold and warm, and per iteration
    full-24   full 1M x 24, K=100: per iteration
    diag-24   diag 1M x 24, K=100: per iteration

Whole fit: host numpy rows in, a fitted model out, as a user times it.
"warm" is the second fit in this process (the first builds the kernels);
"cold" is the first fit of a fresh process (this script re-run with a
hidden --child flag, reading the rows from a .npy the parent wrote, not
timed): import, device discovery and the fit, with the on-disk program
cache warm (the warm fits ran first, as for a user's second script);
"import" is its ``import oclclust``, outside "cold".  "iter" is the
median EM iteration of the warm fit's ``history_``.

Per iteration: the same data and initial parameters (equal weights, means
= the first K rows, identity precisions; make_blobs and gmm_init of
../shared/bench/baselines.py or their copy in bench/_common.py) and a fixed
number of iterations (tol=0) for every library:

    s/iter    a fit of --iters iterations from host rows / iterations
    EM s/it   (that fit - a 1-iteration fit) / (--iters - 1): the steady
              iteration without the upload and set-up
    median    the median iteration of the fit's history_
    resident  s/iter with the rows already on the (first) device
    E, M      --parts: the E and M passes alone at the precision (GmmPass
              on the first device, the data resident, the M statistics
              settled on the device as a one-device fit's; the median of 5)
    bound     lower_bound_ after --iters iterations (scikit-learn's after
              --sk-iters, beside ours after as many: "bound@sk")

Every precision in --precision, every kernel variant in --variants:
"default" (the devices' profiles as they are), "per-point" (the portable E
and M kernels), "mma-e" (the tensor-core E steps where the device has
tensor cores: diag, and full or tied at every d), "mma" (the diag M-step
statistics too), "mma-lanes" (those,
the "tf32"/"bf16" re-check made by each row's lanes) and "mma-packed"
(those, the "bf16" chunks staged as bfloat16 pairs).  Every oclclust
configuration is fitted once untimed first (kernel builds).

Anchors: scikit-learn on a float64 copy (--sk-dtype) for --sk-iters
iterations (it is slow: 70 s per iteration with full covariance on the GPU
host's 16 cores); the PyTorch EM recipe (diag only: four matrix products
and a softmax per row chunk, float64 sums of the statistics, host rows in
and host parameters out, FP32 and TF32) where torch finds CUDA, from the
same start (per iteration: its bound agrees with ours) -- else the run says
it skipped it.  "x sklearn" is scikit-learn's s/iter over our EM s/it;
"x torch" the recipe's median iteration (TF32 against our tf32 and bf16,
FP32 against float32) over ours.

Output: a JSON line per figure as it is measured, then the tables.
"""
import argparse
import json
import math
import statistics
import sys
import time
import warnings

import numpy as np

from _common import (DEFAULT_BASELINES, Figures, baselines, fresh_process, import_oclclust,
                     load_rows, names, random_rows, seconds, torch_cuda_missing,
                     torch_release)


# name: (covariance, n, d, K, whole-fit iterations or None: per iteration only)
SHAPES = {
    "diag-128": ("diag", 1_000_000, 128, 1024, 3),
    "full-24": ("full", 1_000_000, 24, 100, None),
    "diag-24": ("diag", 1_000_000, 24, 100, None),
}
QUICK = {
    "diag-128": ("diag", 5_000, 16, 16, 3),
    "full-24": ("full", 5_000, 8, 8, None),
    "diag-24": ("diag", 5_000, 8, 8, None),
}

# ../shared/bench/gpu_host_anchors.py on the GPU host (16 cores): scikit-learn
# s/iteration at 1M x 24, K=100
ANCHORS = {"full": 70.0, "diag": 11.1}


# ----------------------------------------------------------------- oclclust
def fit(cls, X, iters, cov, init, **kw):
    """(seconds, model) of a fit of *iters* EM iterations from *init*."""
    w0, m0, p0 = init
    gm = cls(n_components=len(w0), covariance_type=cov, tol=0.0, max_iter=iters,
             weights_init=w0, means_init=m0, precisions_init=p0, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # ConvergenceWarning: tol=0 never converges
        return seconds(gm.fit, X)


def median_iteration(model):
    its = [h["seconds"] for h in getattr(model, "history_", None) or []
           if isinstance(h, dict) and "seconds" in h]
    return float(np.median(its)) if its else None


def whole_fit(oc, X, cov, K, iters, devices, precision):
    """(seconds, median iteration, model) of a user's fit from host rows:
    init_params="random_from_data", means_init = K random rows."""
    gm = oc.GaussianMixture(K, covariance_type=cov, means_init=random_rows(X, K).astype(np.float64),
                            init_params="random_from_data", random_state=0, max_iter=iters,
                            tol=0, devices=devices, precision=precision)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wall, _ = seconds(gm.fit, X)
    return wall, median_iteration(gm), gm


def variant_devices(oc, devices, variant):
    """The devices with the E kernel of *variant* (see the module doc)."""
    if variant == "default":
        return devices
    profiles = oc.select_devices(devices)
    terms = {"per-point": (0, 0, 0, 0), "mma-e": (1, 0, 0, 0), "mma": (1, 1, 0, 0),
             "mma-lanes": (1, 1, 1, 0), "mma-packed": (1, 1, 1, 1)}[variant]
    return oc.DeviceManager([p.replace(gmm_mma=terms[0], gmm_mma_mstep=terms[1],
                                       gmm_mma_lane_recheck=terms[2],
                                       gmm_mma_packed_chunks=terms[3],
                                       gmm_mma_full=terms[0], gmm_mma_full_min_d=0)
                             for p in profiles])


def first_device(oc, devs):
    profiles = devs.profiles if hasattr(devs, "profiles") else oc.select_devices(devs)
    return oc.runtime.devices.preferred(profiles)[0]


def parts(profile, X, cov, init, precision, repeats=5):
    """(E s, M s, E kernel spec) of one E and one M pass at *precision* on
    *profile*'s device, the data resident, as a one-device fit runs them
    (the E step's responsibilities for the M step alone: log-densities where
    the M kernel normalises them, GmmPass.estep_sums' for_mstep; the M
    statistics settled on the device, mstep_sums' settle): medians of
    *repeats* after one untimed pass."""
    from oclclust.cluster.mixture import mdl
    from oclclust.passes.gmm import GmmPass
    from oclclust.runtime.partition import DevicePartition
    w0, m0, p0 = init
    full = cov == "full"
    chol = mdl.cholesky_of_precisions(p0, full)
    cov_ = np.linalg.inv(p0) if full else 1.0 / p0
    records = mdl.records(mdl.Model(w0, m0, cov_, chol), full)
    gp = GmmPass(DevicePartition(profile, X), len(w0), full, precision=precision)
    times = {"E": [], "M": []}
    for r in range(repeats + 1):
        t = time.perf_counter()
        gp.estep_sums(records, for_mstep=True)
        gp.part.queue.finish()
        e = time.perf_counter() - t
        t = time.perf_counter()
        gp.mstep_sums(m0, settle=True)
        gp.part.queue.finish()
        if r:
            times["E"].append(e)
            times["M"].append(time.perf_counter() - t)
    return statistics.median(times["E"]), statistics.median(times["M"]), gp.espec


# ------------------------------------------------------------------ PyTorch
def torch_gmm_diag(X, weights, means, variances, iters, tf32, chunk=1 << 18, reg_covar=1e-6):
    """Diagonal-covariance EM in PyTorch on CUDA, host rows in, host
    parameters out: per row chunk the log-densities in two matrix products
    (x^2 . (1/var) and x . (mu/var)), a softmax, the statistics in two more
    (r' x, r' x^2), summed in float64; scikit-learn's M step (var = E[x^2] -
    mu^2 + reg_covar).  *tf32*: TF32 matrix products.

    Returns (seconds, median iteration seconds, the last E step's mean
    log-likelihood -- scikit-learn's lower_bound_ --, (w, mu, var))."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.cuda.synchronize()
    start = time.perf_counter()
    x = torch.from_numpy(np.ascontiguousarray(X, np.float32)).cuda()
    n, d = x.shape
    w, mu, var = (torch.from_numpy(np.asarray(a, np.float32)).cuda()
                  for a in (weights, means, variances))
    K = len(w)
    f64 = dict(device="cuda", dtype=torch.float64)
    its, loglik = [], torch.zeros((), **f64)
    for it in range(iters):
        t = time.perf_counter()
        prec = 1.0 / var
        const = (0.5 * torch.log(prec).sum(1) - 0.5 * d * math.log(2 * math.pi) + torch.log(w)
                 - 0.5 * (mu * mu * prec).sum(1))
        nk, s1, s2 = torch.zeros(K, **f64), torch.zeros(K, d, **f64), torch.zeros(K, d, **f64)
        for s in range(0, n, chunk):
            xs = x[s:s + chunk]
            x2 = xs * xs
            lp = torch.addmm(const, x2, prec.t(), alpha=-0.5).addmm_(xs, (mu * prec).t())
            if it == iters - 1:   # the bound of the last E step only: no extra pass before
                loglik += torch.logsumexp(lp, 1).sum(dtype=torch.float64)
            r = torch.softmax(lp, dim=1)
            nk += r.sum(0, dtype=torch.float64)
            s1 += (r.t() @ xs).double()
            s2 += (r.t() @ x2).double()
        mean = s1 / nk[:, None]
        mu, var, w = mean.float(), (s2 / nk[:, None] - mean * mean + reg_covar).float(), \
            (nk / n).float()
        torch.cuda.synchronize()
        its.append(time.perf_counter() - t)
    out = w.cpu().numpy(), mu.cpu().numpy(), var.cpu().numpy()
    bound = float(loglik) / n
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    return wall, float(np.median(its)), bound, out


def torch_warm_up(X, d, K):
    """CUDA context, cuBLAS handles and kernels, on a few rows (untimed)."""
    for tf32 in (False, True):
        torch_gmm_diag(X[:min(len(X), 100_000)], np.full(K, 1.0 / K), X[:K],
                       np.ones((K, d)), 1, tf32)


# ---------------------------------------------------------------------- run
def child(args):
    """A fresh process's first whole fit (--child cov,K,iters,variant,precision)."""
    cov, K, iters, variant, precision = args.child.split(",")
    X = load_rows(args.rows)
    start = time.perf_counter()
    oc = import_oclclust()
    imported = time.perf_counter() - start
    devs = variant_devices(oc, args.devices, variant)
    wall, it, gm = whole_fit(oc, X, cov, int(K), int(iters), devs, precision)
    print(json.dumps(dict(s=wall, import_s=imported, iter_s=it, n_iter=int(gm.n_iter_))))
    return 0


def run_whole(oc, name, X, shape, args, whole, torch_reason):
    cov, n, d, K, iters = shape
    extra = dict(n=n, d=d, K=K, iters=iters)
    for variant in names(args.variants):
        for precision in names(args.precision):
            devs = variant_devices(oc, args.devices, variant)
            key = (name, "oclclust", f"{variant} {precision}")
            whole_fit(oc, X, cov, K, iters, devs, precision)              # builds
            wall, it, gm = whole_fit(oc, X, cov, K, iters, devs, precision)
            device = ", ".join(gm.devices_)
            whole.add(key, "warm_s", wall, device=device, **extra)
            whole.add(key, "iter_s", it, device=device, **extra)
            if not args.no_cold:
                argv = ["--child", f"{cov},{K},{iters},{variant},{precision}"]
                argv += ["--devices", args.devices] if args.devices else []
                try:
                    c = fresh_process(__file__, argv, X)
                except Exception as exc:   # noqa: BLE001 -- reported, the rest goes on
                    print(f"gmm: {name} cold fit failed: {exc}", file=sys.stderr)
                else:
                    whole.add(key, "cold_s", c["s"], device=device, **extra)
                    whole.add(key, "import_s", c["import_s"], **extra)
            print(f"gmm: {name} whole fit {variant} {precision} done on {device}", flush=True)
    if cov == "diag" and torch_reason is None:
        start = random_rows(X, K)
        for tf32 in (False, True):
            key = (name, "torch", "tf32" if tf32 else "fp32")
            best = min((torch_gmm_diag(X, np.full(K, 1.0 / K), start, np.ones((K, d)), iters,
                                       tf32) for _ in range(args.repeats)),
                       key=lambda r: r[0])
            whole.add(key, "warm_s", best[0], **extra)
            whole.add(key, "iter_s", best[1], **extra)
        torch_release()


def run_iterations(oc, name, X, shape, data, args, per, torch_reason):
    import pyopencl.array as cla
    cov, n, d, K, _ = shape
    init = data.gmm_init(X, K, cov)
    extra = dict(n=n, d=d, K=K)
    sk = None
    if not args.no_sklearn:
        from sklearn.mixture import GaussianMixture
        ts, model = fit(GaussianMixture, X.astype(args.sk_dtype), args.sk_iters, cov, init)
        sk = ts / model.n_iter_
        key = (name, "sklearn", args.sk_dtype)
        per.add(key, "s_per_iter", sk, iters=int(model.n_iter_), **extra)
        per.add(key, "bound@sk", float(model.lower_bound_), iters=int(model.n_iter_), **extra)
        print(f"gmm: {name} scikit-learn done", flush=True)
    anchor = {}
    if cov == "diag" and torch_reason is None:
        w0, m0, p0 = init
        for tf32 in (False, True):
            key = (name, "torch", "tf32" if tf32 else "fp32")
            wall, it, bound, _ = min((torch_gmm_diag(X, w0, m0, 1.0 / p0, args.iters, tf32)
                                      for _ in range(args.repeats)), key=lambda r: r[0])
            anchor[tf32] = it
            per.add(key, "s_per_iter", wall / args.iters, iters=args.iters, **extra)
            per.add(key, "median_s", it, iters=args.iters, **extra)
            per.add(key, "bound", bound, iters=args.iters, **extra)
        torch_release()
    for variant in names(args.variants):
        for precision in names(args.precision):
            devs = variant_devices(oc, args.devices, variant)
            kw = dict(devices=devs, precision=precision)
            key = (name, "oclclust", f"{variant} {precision}")
            fit(oc.GaussianMixture, X, 1, cov, init, **kw)              # builds
            t1, _ = fit(oc.GaussianMixture, X, 1, cov, init, **kw)
            t, gm = fit(oc.GaussianMixture, X, args.iters, cov, init, **kw)
            em, med = (t - t1) / (args.iters - 1), median_iteration(gm)
            ex = dict(extra, iters=int(gm.n_iter_), device=", ".join(gm.devices_))
            per.add(key, "s_per_iter", t / gm.n_iter_, **ex)
            per.add(key, "em_s", em, **ex)
            per.add(key, "median_s", med, **ex)
            first = first_device(oc, devs)
            if not args.no_resident:
                Xd = cla.to_device(first.queue(), X)
                fit(oc.GaussianMixture, Xd, 1, cov, init, devices=[first], precision=precision)
                tr, _ = fit(oc.GaussianMixture, Xd, args.iters, cov, init, devices=[first],
                            precision=precision)
                del Xd
                per.add(key, "resident_s", tr / args.iters, **ex)
            per.add(key, "bound", float(gm.lower_bound_), **ex)
            if args.parts:
                e, m, spec = parts(first, X, cov, init, precision)
                per.add(key, "E_s", e, **ex)
                per.add(key, "M_s", m, **ex, kernel=f"{type(spec).__name__} {spec}")
            if sk is not None:
                _, same = fit(oc.GaussianMixture, X, args.sk_iters, cov, init, **kw)
                per.add(key, "bound@sk", float(same.lower_bound_), **ex)
                per.add(key, "x_sklearn", sk / em, **ex)
            tf32 = precision != "float32"
            if anchor and med:
                per.add(key, "x_torch", anchor[tf32] / med, **ex,
                        against=f"torch {'tf32' if tf32 else 'fp32'}")
            print(f"gmm: {name} per iteration {variant} {precision} done on {ex['device']}",
                  flush=True)


def goals(per, shapes):
    """The 500x goal of the 1M x 24, K=100 shapes against the GPU host's scikit-learn."""
    for key, figs in per.rows.items():
        shape = shapes[key[0]]
        if key[1] != "oclclust" or shape[1:4] != (1_000_000, 24, 100):
            continue
        anchor = ANCHORS[shape[0]]
        for figure in ("s_per_iter", "resident_s"):
            if figs.get(figure):
                print(f"goal {key[0]} {key[2]} {figure}: <= {anchor / 500:.3f} s/iter (500x the "
                      f"GPU host's scikit-learn {anchor} s/iter): "
                      f"{'met' if figs[figure] <= anchor / 500 else 'not met'} "
                      f"({anchor / figs[figure]:.0f}x)")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", default=None, help="oclclust devices (default: all / "
                    "$OCLCLUST_DEVICES), e.g. NVIDIA, cpu, 'Intel(R) OpenCL'")
    ap.add_argument("--shapes", default=",".join(SHAPES),
                    help=f"shapes to run (default all: {', '.join(SHAPES)})")
    ap.add_argument("--n", type=int, help="one shape of your own: rows (with --d, --k, --cov)")
    ap.add_argument("--d", type=int, help="its features")
    ap.add_argument("--k", type=int, help="its components")
    ap.add_argument("--cov", default="diag", help="its covariance types (full,diag)")
    ap.add_argument("--whole-iters", type=int, default=0,
                    help="its whole fit's iterations (default 0: per iteration only)")
    ap.add_argument("--iters", type=int, default=None,
                    help="EM iterations of the per-iteration fits (default 10; 4 with --quick)")
    ap.add_argument("--sk-iters", type=int, default=None,
                    help="scikit-learn EM iterations (default 3; 2 with --quick)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--sk-dtype", default="float64", choices=["float32", "float64"])
    ap.add_argument("--precision", default="float32,tf32,bf16",
                    help="precision modes (comma-separated; default float32,tf32,bf16)")
    ap.add_argument("--variants", default="default",
                    help="kernels: default, per-point, mma-e, mma, mma-lanes, mma-packed "
                         "(comma-separated)")
    ap.add_argument("--parts", action="store_true", help="time the E and M passes alone")
    ap.add_argument("--repeats", type=int, default=1,
                    help="PyTorch runs per figure after its warm-up, the best kept (default 1)")
    ap.add_argument("--no-sklearn", action="store_true")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-cold", action="store_true", help="skip the fresh-process fits")
    ap.add_argument("--no-resident", action="store_true",
                    help="skip the fits with the rows already on the device")
    ap.add_argument("--baselines", default=str(DEFAULT_BASELINES))
    ap.add_argument("--quick", action="store_true",
                    help="CPU-sized shapes, 4 iterations (CI smoke run: seconds)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--rows", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.iters = args.iters or (4 if args.quick else 10)
    args.sk_iters = args.sk_iters or (2 if args.quick else 3)
    if args.iters < 2:
        ap.error("--iters must be >= 2")
    table = QUICK if args.quick else SHAPES
    if args.n or args.d or args.k:
        if not (args.n and args.d and args.k):
            ap.error("--n, --d and --k go together")
        args.shapes = {f"{cov}-{args.n}x{args.d}x{args.k}":
                       (cov, args.n, args.d, args.k, args.whole_iters or None)
                       for cov in names(args.cov)}
    else:
        unknown = [s for s in names(args.shapes) if s not in table]
        if unknown:
            ap.error(f"unknown shapes {unknown}; choose from {', '.join(table)}")
        args.shapes = {s: table[s] for s in names(args.shapes)}
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        return child(args)
    oc = import_oclclust()
    data, source = baselines(args.baselines)
    torch_reason = "--no-torch" if args.no_torch else torch_cuda_missing()
    if torch_reason:
        print(f"gmm: the PyTorch EM anchor skipped: {torch_reason}", flush=True)
    keys = ["shape", "lib", "config"]
    whole = Figures("gmm-whole", keys, ["cold_s", "import_s", "warm_s", "iter_s"])
    per = Figures("gmm-iteration", keys, ["s_per_iter", "em_s", "median_s", "resident_s", "E_s",
                                          "M_s", "x_sklearn", "x_torch", "bound", "bound@sk"])
    warmed = False
    for name, shape in args.shapes.items():
        cov, n, d, K, whole_iters = shape
        X = data.make_blobs(n, d, K)[0].astype(args.dtype)
        print(f"gmm: {name}: {cov} n={n} d={d} K={K}, whole fit "
              f"{f'{whole_iters} iterations' if whole_iters else '-'}, per iteration "
              f"{args.iters} iterations (scikit-learn {args.sk_dtype} {args.sk_iters}); "
              f"data from {source}", flush=True)
        if cov != "diag" and torch_reason is None:
            print(f"gmm: {name}: no PyTorch anchor (the recipe is diag only)")
        if cov == "diag" and torch_reason is None and not warmed:
            torch_warm_up(X, d, K)
            warmed = True
        if whole_iters:
            run_whole(oc, name, X, shape, args, whole, torch_reason)
        run_iterations(oc, name, X, shape, data, args, per, torch_reason)
        del X

    def cell(figure, value):
        return f"{value:.8g}" if figure.startswith("bound") else \
            f"{value:.1f}x" if figure.startswith("x_") else f"{value:.4g}"
    if whole.rows:
        print("\nwhole fit from host rows, seconds (cold: a fresh process's first fit, "
              "import apart; warm: the second in this process; iter_s: its median iteration)")
        print(whole.table(cell))
    print(f"\nper iteration, seconds ({args.iters} iterations; scikit-learn {args.sk_iters}; "
          "bound: lower_bound_ after them)")
    print(per.table(cell))
    goals(per, args.shapes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
