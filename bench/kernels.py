#!/usr/bin/env python3
"""Kernels alone: a kernel variant against another on the same inputs, per
device, so that a device's terms in devices.yaml follow from a figure.

    python bench/kernels.py [tiles]                          # every device
    python bench/kernels.py tiles --quick                    # small shapes
    python bench/kernels.py tiles --devices NVIDIA           # the GPU host's measurement

Measurements (``python bench/kernels.py NAME --help`` gives each one's flags):

    tiles     register-tiled distances (templates/distance_tile.cl.mako)
              against each kernel's own: linkage's condensed matrix, the
              c-means pass, the diagonal GMM E-step (outputs equal bit for bit)
    gmm-mma   the diagonal GMM's tensor-core E and M kernels (passes/gmm_mma.py)
              spec by spec: E with and without the responsibilities, M at
              each precision, beside the portable kernels (NVIDIA)

The Lloyd pass's own variants are timed by ``python -m oclclust tune`` (and
against faiss-cpu by ``bench/kmeans.py cpu-variants``); the "gemm" Lloyd
variant's sums kernel alone by tools/time_sums.py.
"""
import argparse
import sys
import time

import numpy as np

from _common import import_oclclust, run_measurement


# ---- tiles (formerly bench/distance_tiles.py) ------------------------------------------

DOC_TILES = """Register-tiled distances (templates/distance_tile.cl.mako) against each
kernel's own, per device: the linkage's condensed distance matrix, the fuzzy
c-means pass and the diagonal GMM E-step.

Each pair runs on the same data with the profile term that chooses the tiles
(linkage_distance_tiles, cmeans_distance_tiles, gmm_distance_tiles) off and
on; the outputs must be equal bit for bit (the tiles sum the features in the
same order).  The two alternate --repeats times after a warm-up round, each
call waited for, its output's copy to the host not timed; the medians are
printed with their ratio, so a device's terms in devices.yaml follow from a
figure.

    python bench/kernels.py tiles                       # every device
    python bench/kernels.py tiles --quick               # small shapes
    python3 bench/kernels.py tiles --devices NVIDIA     # the GPU host's measurement
"""


oc = import_oclclust()   # this checkout's oclclust, before its modules below
from oclclust.cluster.mixture import mdl                     # noqa: E402
from oclclust.passes import cmeans as cmeans_pass                 # noqa: E402
from oclclust.passes import gmm as gmm_pass                       # noqa: E402
from oclclust.passes import gmm_specs                             # noqa: E402
from oclclust.passes.linkage import Plan, condensed_distances     # noqa: E402
from oclclust.runtime.partition import DevicePartition            # noqa: E402


def interleaved(plain, tiled, queue, repeats):
    """((plain's output, median s), (tiled's output, median s)): each is a
    (compute, fetch) pair; the computations alternate, so the device's clock
    and load weigh on both alike, and the fetch of the output is not timed."""
    times = ([], [])
    for _ in range(repeats + 1):             # the first round warms up
        for side, (compute, _) in enumerate((plain, tiled)):
            queue.finish()
            start = time.perf_counter()
            compute()
            queue.finish()
            times[side].append(time.perf_counter() - start)
    return tuple((fetch(), float(np.median(t[1:]))) for (_, fetch), t in
                 zip((plain, tiled), times))


def linkage(profile, dtype, n, d, repeats, metric):
    X = np.random.RandomState(0).randn(n, d).astype(dtype)

    def side(tiles):
        plan = Plan(profile.replace(linkage_distance_tiles=tiles), dtype)
        last = {}

        def compute():
            last["out"] = condensed_distances(plan, X=X, metric=metric)[0]
        return (compute, lambda: last["out"].get(plan.queue)), plan.queue
    (plain, q), (tiled, _) = side(0), side(1)
    return interleaved(plain, tiled, q, repeats)


def cmeans(profile, dtype, n, d, c, repeats, m=2.0):
    rng = np.random.RandomState(n)
    X = (rng.randn(n, d) * 3).astype(dtype)
    centers = X[:c].astype(np.float64) + 0.1

    def side(tiles):
        part = DevicePartition(profile.replace(cmeans_distance_tiles=tiles), X)
        step, last = cmeans_pass.CMeansPass(part, c, m), {}

        def compute():
            last["out"] = step.run(centers)
        return (compute, lambda: last["out"]), part.queue
    (plain, q), (tiled, _) = side(0), side(1)
    return interleaved(plain, tiled, q, repeats)


def gmm(profile, dtype, n, d, k, repeats):
    rng = np.random.RandomState(n)
    X = (rng.randn(n, d) * 3).astype(dtype)
    cov, w = rng.uniform(0.5, 2, (k, d)), rng.uniform(0.5, 1.5, k)
    model = mdl.Model(w / w.sum(), X[:k].astype(np.float64) + 0.3, cov,
                      mdl.precision_cholesky(cov, False))
    records = mdl.records(model, False)

    def side(tiles):
        part = DevicePartition(profile.replace(gmm_distance_tiles=tiles), X)
        step = gmm_pass.GmmPass(part, k, False)
        return (lambda: step.estep(records, store_resp=True),
                lambda: (step.lse.get(part.queue), step.labels.get(part.queue))), part.queue
    (plain, q), (tiled, _) = side(0), side(1)
    return interleaved(plain, tiled, q, repeats)


def equal(a, b):
    if isinstance(a, tuple):
        return all(equal(x, y) for x, y in zip(a, b))
    return np.array_equal(np.asarray(a), np.asarray(b))


def parse_args(argv):
    ap = argparse.ArgumentParser(description=DOC_TILES.split("\n\n")[0])
    ap.add_argument("--devices", default="all", help="devices to time (as in KMeans)")
    ap.add_argument("--linkage", default="20000,32", metavar="N,D")
    ap.add_argument("--cmeans", default="1000000,24,100", metavar="N,D,C")
    ap.add_argument("--gmm", default="1000000,24,100", metavar="N,D,K")
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="small shapes, 2 repeats")
    args = ap.parse_args(argv)
    if args.quick:
        args.linkage, args.cmeans, args.gmm, args.repeats = "600,8", "4000,8,13", "4000,8,13", 2
    for name in ("linkage", "cmeans", "gmm"):
        setattr(args, name, tuple(int(v) for v in getattr(args, name).split(",")))
    return args


def tiles_main(argv=None):
    args = parse_args(argv)
    rows, failed = [], False
    for profile in oc.select_devices(args.devices):
        for dtype in map(np.dtype, args.dtypes):
            if dtype == np.float64 and not profile.fp64:
                continue
            runs = [(f"linkage {metric} {args.linkage}",
                     lambda m=metric: linkage(profile, dtype, *args.linkage, args.repeats, m))
                    for metric in ("euclidean", "cityblock", "chebyshev")]
            runs += [(f"c-means {args.cmeans}",
                      lambda: cmeans(profile, dtype, *args.cmeans, args.repeats)),
                     (f"gmm diag {args.gmm}", lambda: gmm(profile, dtype, *args.gmm,
                                                          args.repeats))]
            for what, run in runs:
                try:
                    (plain, t_plain), (tiled, t_tiled) = run()
                except MemoryError as exc:    # e.g. a matrix beyond the largest buffer
                    print(f"{str(profile)[:40]:40s} {dtype.name:8s} {what:30s} skipped: {exc}")
                    continue
                same = equal(plain, tiled)
                failed |= not same
                rows.append((str(profile)[:40], dtype.name, what, t_plain, t_tiled, same))
                print(f"{rows[-1][0]:40s} {dtype.name:8s} {what:30s} own {t_plain * 1e3:9.2f} ms"
                      f"  tiled {t_tiled * 1e3:9.2f} ms  x{t_plain / t_tiled:5.2f}  "
                      f"{'bitwise equal' if same else 'DIFFERENT'}", flush=True)
    return 1 if failed else 0


DOC_GMM_MMA = """The diagonal GMM's E and M kernels alone, spec by spec, per device.

The data resident, one GmmPass per spec pair (GmmPass's ``specs``): the
planner's tensor-core E kernel (gmm_mma.estep_specs, every work-group size
it offers, at each --precision with the profile's re-check variant) with the
responsibilities stored normalised ("resp"), stored as the log-densities
the tensor-core M kernel normalises ("log", a fit's pass) and not stored
("none"), and its M kernel (gmm_mma.mstep_specs) at each precision reading
either, beside the portable E and M kernels; each the median of --repeats
calls after a warm-up, waited for.
The M statistics of each spec are printed as their largest difference from
the portable kernel's, relative to each column's scale.

    python3 bench/kernels.py gmm-mma --devices NVIDIA                 # 1M x 128, K=1024
    python3 bench/kernels.py gmm-mma --devices NVIDIA --shape 1000000 24 100
    python3 bench/kernels.py gmm-mma --devices NVIDIA --precision bf16  # its E kernels
    python3 bench/kernels.py gmm-mma --devices NVIDIA --shape 1000000 24 100 \
        --precision bf16,tf32,float32     # gmm_mma_one_product_min_dk's measurements
"""


def timed(call, queue, repeats):
    """Median seconds of *call* (after one untimed call), each waited for."""
    call()
    queue.finish()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        queue.finish()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def gmm_mma_main(argv=None):
    from oclclust.passes import gmm_mma
    ap = argparse.ArgumentParser(description=DOC_GMM_MMA.split("\n\n")[0])
    ap.add_argument("--devices", default="NVIDIA", help="devices to time (as in KMeans)")
    ap.add_argument("--shape", nargs=3, type=int, default=[1_000_000, 128, 1024],
                    metavar=("N", "D", "K"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--precision", default="float32",
                    help="the tensor-core E kernels' (comma-separated; the profile's "
                         "re-check variant; each precision's own kernel, whatever d K)")
    args = ap.parse_args(argv)
    n, d, k = args.shape
    rng = np.random.RandomState(0)
    centres = rng.uniform(-10, 10, (k, d))
    X = (centres[rng.randint(0, k, n)] + rng.randn(n, d)).astype(np.float32)
    cov = rng.uniform(0.5, 2, (k, d))
    model = mdl.Model(np.full(k, 1.0 / k), centres + 0.3, cov,
                      mdl.precision_cholesky(cov, False))
    records = mdl.records(model, False)
    for profile in oc.select_devices(args.devices):
        portable = profile.replace(gmm_mma=0, gmm_mma_mstep=0, gmm_distance_tiles=0)
        pe = next(gmm_specs._estep_specs(portable, np.float32, d, False, k))
        pm = next(gmm_specs._mstep_specs(portable, np.float32, d, False))
        # (gmm_mma_one_product_min_dk 0: "tf32"/"bf16" their one-product kernels at any d K)
        own = profile.replace(gmm_mma_one_product_min_dk=0)
        esteps = [pe] + [spec for precision in args.precision.split(",")
                         for spec in gmm_specs._estep_specs(own, np.float32, d, False, k, precision)
                         if isinstance(spec, gmm_mma.MmaEStepSpec)
                         and spec.local_bytes() <= profile.local_memory_budget]
        msteps = [pm] + [spec for precision in ("float32", "tf32") for spec in
                         gmm_mma.mstep_specs(profile, np.float32, d, precision=precision)]
        part = DevicePartition(profile, X)
        want = None
        print(f"{profile}: n={n} d={d} K={k}", flush=True)
        stores = {"resp": (True, False), "log": (True, True), "none": (False, False)}
        for espec in esteps:
            # the M kernel that reads log-densities where there is one
            gp = gmm_pass.GmmPass(part, k, False, specs=(espec, msteps[-1]))
            for name, (store, for_mstep) in stores.items():
                t = timed(lambda: gp.estep_sums(records, store, for_mstep), part.queue,
                          args.repeats)
                print(f"  E {type(espec).__name__} {getattr(espec, 'precision', 'float32')} "
                      f"wg={espec.wg} store "
                      f"{name if gp.resp_log or name != 'log' else 'resp'}: "
                      f"{t * 1e3:8.2f} ms", flush=True)
        for mspec in msteps:
            gp = gmm_pass.GmmPass(part, k, False, specs=(esteps[-1], mspec))
            for name in ("resp", "log"):
                gp.estep_sums(records, *stores[name])
                t = timed(lambda: gp.mstep_sums(model.means), part.queue, args.repeats)
                got = gp.mstep(model.means)
                want = got if want is None else want
                scale = np.abs(want).max(axis=0, keepdims=True) + 1.0
                print(f"  M {type(mspec).__name__} {getattr(mspec, 'precision', 'float32')} "
                      f"reading {name if gp.resp_log or name == 'resp' else 'resp'}: "
                      f"{t * 1e3:8.2f} ms  max |diff| {np.abs(got - want).max():.3g} "
                      f"({np.abs((got - want) / scale).max():.3g} of its column's scale)",
                      flush=True)
        del part
    return 0


MEASUREMENTS = {
    "tiles": (tiles_main, DOC_TILES),
    "gmm-mma": (gmm_mma_main, DOC_GMM_MMA),
}


if __name__ == "__main__":
    sys.exit(run_measurement(MEASUREMENTS, __doc__))
