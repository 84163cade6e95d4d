"""Auto-tuner: time kernel configurations on each selected device and
write the fastest as a devices.yaml entry keyed by device name and driver.

    python -m oclclust tune [--devices gpu] [--kernels lloyd ensemble]
                            [--shapes 2000000,128,4096 ...]
                            [--ensemble-shapes 1000000,2,10,32 ...]
                            [--out FILE | --shipped] [--quick]

--kernels names what is tuned: lloyd (the default) and ensemble
(EnsembleKMeans' strategy and statistics pass: cli/tune_ensemble.py).  A
Lloyd configuration is a set of profile terms (lloyd_variant and its tiles);
it is timed as the Lloyd pass the planner builds from the profile it gives,
on resident random blobs of each shape.  The winner has the least geometric
mean of its time relative to the best on each shape.  A device's kernels
share its entry: a tune of some keeps the others' terms (cli/tune_results.py).
Entries go to the user file ($OCLCLUST_DEVICES_YAML, else
$XDG_CONFIG_HOME/oclclust/devices.yaml, by default
~/.config/oclclust/devices.yaml), which oclclust reads by default after the
shipped devices.yaml; --shipped writes that one.
"""
import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from .tune_ensemble import PAPER_SHAPE, QUICK_SHAPE, label, tune_ensemble
from .tune_results import KERNELS, default_path, relative_score, write_entries

DEFAULT_SHAPES = {"gpu": ["2000000,128,4096", "1000000,32,256"],
                  "cpu": ["200000,32,256"], "accelerator": ["200000,32,256"]}
QUICK_SHAPES = ["4000,16,40"]


def _gemm(tm, tn, rm, rn, kc, vw, prefetch=None):
    terms = dict(lloyd_variant="gemm", tile_rows=tm, tile_columns=tn, tile_reg_rows=rm,
                 tile_reg_columns=rn, tile_depth=kc, tile_vector_width=vw)
    if prefetch is not None:   # else the profile's
        terms["lloyd_prefetch"] = prefetch
    return terms


def configurations(profile, quick=False):
    """Candidate profile terms for *profile*'s kind of device."""
    if quick:
        return [dict(lloyd_variant="rowwise"), dict(lloyd_variant="blocked"),
                dict(lloyd_variant="tiled"), _gemm(16, 16, 2, 2, 8, 2)]
    if profile.type == "gpu":
        gemm = [_gemm(*t) for t in itertools.product(
            (64, 128), (64, 128), (4, 8), (4, 8), (8, 16), (4, 1))
            if (t[0] // t[2]) * (t[1] // t[3]) in (64, 128, 256)]
        # deeper chunks (fewer barriers) and wider centroid tiles (more reuse
        # of a staged point tile)
        gemm += [_gemm(*t) for t in ((128, 128, 8, 8, 32, 4), (128, 256, 8, 16, 16, 4),
                                     (128, 256, 8, 16, 32, 4), (256, 128, 16, 8, 16, 4))]
        # double-buffered chunks (one barrier each): 128 x 256 tiles of 8 x 16
        # registers, 8 deep, beat the best single-buffered tile (devices.yaml, NVIDIA)
        gemm += [_gemm(*t, prefetch=2) for t in (
            (128, 256, 8, 16, 8, 4), (128, 256, 8, 16, 4, 4), (64, 256, 8, 16, 4, 4),
            (128, 128, 8, 8, 16, 4), (128, 128, 8, 8, 8, 4), (64, 128, 8, 8, 16, 4))]
        tiled = [dict(lloyd_variant="tiled", work_group_size=wg, centroid_tile=ct)
                 for wg, ct in ((128, 16), (128, 8), (256, 8))]
        # tensor cores (NVIDIA, compute capability 8+; skipped where it falls back)
        return [dict(lloyd_variant="mma")] + gemm + tiled
    rowwise = [dict(lloyd_variant="rowwise", points_per_item=p, centroid_tile=c)
               for p, c in ((3, 3), (2, 4), (4, 2), (1, 4), (2, 2))]
    # register blocks: rows x native vectors of centroids (AVX-512's 32
    # registers hold 6 x 4 or 12 x 2; AVX2's 16 hold 3 x 4 or 4 x 2), chunks
    # of blocks per panel, work-items a compute unit (0: the profile's)
    blocked = [dict(lloyd_variant="blocked", blocked_rows=r, blocked_vectors=v,
                    blocked_chunk=c, blocked_items_per_unit=i)
               for r, v, c, i in ((6, 4, 8, 0), (6, 4, 4, 0), (6, 4, 8, 8), (12, 2, 8, 0),
                                  (4, 4, 16, 0), (8, 2, 8, 0), (3, 4, 8, 0), (4, 2, 8, 0))]
    return blocked + rowwise + [_gemm(32, 32, 4, 4, 16, 4), _gemm(64, 64, 8, 8, 16, 8),
                      dict(lloyd_variant="tiled")]


def blobs(n, d, k, seed=0):
    """Float32 random blobs and k initial centres (the first k rows)."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-10, 10, (k, d)).astype(np.float32)
    X = rng.standard_normal((n, d), dtype=np.float32)
    X += centres[rng.integers(0, k, n)]
    return X, X[:k].astype(np.float64)


def time_pass(profile, x_dev, centres, repeats=3, update=True, precision="float32"):
    """(best seconds of one Lloyd pass, the spec it ran), or (None, reason);
    *precision*: LloydPass's (the mma variant's fast modes)."""
    import pyopencl as cl
    import pyopencl.array as cla
    from ..runtime.codegen import KernelBuildError
    from ..passes.lloyd import LloydPass
    from ..runtime.partition import DevicePartition
    try:
        part = DevicePartition(profile, x_dev)
        lloyd = LloydPass(part, len(centres), update=update, precision=precision)
        labels = cla.empty(part.queue, part.n, np.int32)
        cl.enqueue_fill_buffer(part.queue, labels.data, np.int32(-1), 0, labels.nbytes)
        lloyd.run(centres, labels)                 # first touches
        best = np.inf
        for _ in range(repeats):
            part.queue.finish()
            start = time.perf_counter()
            lloyd.run(centres, labels)
            part.queue.finish()
            best = min(best, time.perf_counter() - start)
        return best, lloyd.spec
    except (KernelBuildError, cl.Error, MemoryError) as exc:
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}"


def tune_device(profile, shapes, quick=False, repeats=3, log=print, configs=None, update=True):
    """(best terms, times: configurations x shapes) for one device over
    *shapes* (n, d, k); *update* False times the assignment alone (predict)."""
    import pyopencl.array as cla
    configs = configs or configurations(profile, quick)
    times = np.full((len(configs), len(shapes)), np.nan)
    for s, (n, d, k) in enumerate(shapes):
        X, centres = blobs(n, d, k)
        x_dev = cla.to_device(profile.queue(), X)
        del X
        for c, terms in enumerate(configs):
            trial = profile.replace(**terms)
            seconds, spec = time_pass(trial, x_dev, centres, repeats, update)
            if seconds is not None and spec.variant != terms["lloyd_variant"]:
                seconds, spec = None, f"fell back to {spec.variant}"
            if seconds is not None:
                times[c, s] = seconds
            flops = 2.0 * n * d * k / seconds if seconds else 0
            log(f"  {_label(terms):44s} {n},{d},{k}: "
                + (f"{seconds:.4f} s/pass {flops / 1e12:7.2f} TFLOP/s" if seconds
                   else f"skipped ({spec})"))
        x_dev.data.release()
    ok = ~np.isnan(times).any(axis=1)
    if not ok.any():
        raise RuntimeError(f"no configuration ran on every shape on {profile}")
    best = configs[int(np.flatnonzero(ok)[np.argmin(relative_score(times[ok]))])]
    return best, times


def _label(terms):
    return " ".join(f"{k.replace('lloyd_', '')}={v}" for k, v in terms.items())


def lloyd_note(shapes, times):
    """The Lloyd winner's figures: its seconds a pass on each shape."""
    return "; ".join(f"{n}x{d} k={k}: {t:.4g} s/pass" for (n, d, k), t in zip(shapes, times))


def parse_shape(text):
    try:
        n, d, k = (int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape must be n,d,k; got {text!r}") from None
    if min(n, d, k) < 1 or k > n:
        raise argparse.ArgumentTypeError(f"shape needs n >= k >= 1 and d >= 1: {text!r}")
    return n, d, k


def parse_ensemble_shape(text):
    """n,d,k,m: rows, features, clusters a model and models."""
    head, _, models = text.rpartition(",")
    if head.count(",") != 2 or not models.strip().lstrip("-").isdigit():
        raise argparse.ArgumentTypeError(f"ensemble shape must be n,d,k,m; got {text!r}")
    if int(models) < 1:
        raise argparse.ArgumentTypeError(f"ensemble shape needs m >= 1 models: {text!r}")
    return (*parse_shape(head), int(models))


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _shape(shape):
    return ",".join(map(str, shape))


def parser():
    ap = argparse.ArgumentParser(prog="oclclust tune", description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", default="all", help="devices to tune (as in KMeans)")
    ap.add_argument("--kernels", nargs="+", choices=KERNELS, default=["lloyd"],
                    help="what is tuned: lloyd (its variants and tiles; the default), ensemble "
                         "(EnsembleKMeans' strategy for 'auto', model order, atomics and "
                         "work-groups); a device's entry keeps the terms of those not tuned")
    ap.add_argument("--shapes", nargs="+", type=parse_shape, metavar="N,D,K",
                    help="Lloyd's problem shapes timed (default: per device type)")
    ap.add_argument("--ensemble-shapes", nargs="+", type=parse_ensemble_shape,
                    metavar="N,D,K,M",
                    help="the ensembles timed: rows, features, clusters a model, models "
                         f"(default {_shape(PAPER_SHAPE)}, the paper's; --quick "
                         f"{_shape(QUICK_SHAPE)})")
    ap.add_argument("--out", type=Path, help=f"file to write (default {default_path()})")
    ap.add_argument("--shipped", action="store_true",
                    help="write the repository's shipped devices.yaml instead")
    ap.add_argument("--quick", action="store_true", help="a few configurations, tiny shape")
    ap.add_argument("--repeats", type=positive, default=3, help="Lloyd passes timed (the best)")
    ap.add_argument("--iters", type=positive,
                    help="ensemble iterations timed a configuration (default 10; --quick 3)")
    ap.add_argument("--configs", type=Path, metavar="YAML",
                    help="time these Lloyd profile-term sets (a YAML list of mappings) instead")
    ap.add_argument("--no-update", action="store_true",
                    help="time the Lloyd assignment alone (no sums), as predict runs it")
    return ap


def lloyd_configs(ap, path):
    """The Lloyd configurations of the --configs file at *path*, checked."""
    from ..runtime.profiles import ProfileError, check_terms
    configs = yaml.safe_load(path.read_text())
    if not isinstance(configs, list) or not all(isinstance(c, dict) and "lloyd_variant" in c
                                                for c in configs):
        ap.error("--configs: a YAML list of mappings, each with lloyd_variant")
    try:
        return [check_terms(c, f"{path} entry {i}") for i, c in enumerate(configs)]
    except ProfileError as exc:
        ap.error(f"--configs: {exc}")


def tune_lloyd(profile, args, configs):
    """The Lloyd part of *profile*'s entry: (winning terms, [its figures])."""
    shapes = args.shapes or [parse_shape(s) for s in
                             (QUICK_SHAPES if args.quick else DEFAULT_SHAPES[profile.type])]
    tried = configs or configurations(profile, args.quick)
    best, times = tune_device(profile, shapes, args.quick, args.repeats, configs=tried,
                              update=not args.no_update)
    print(f"tune: best {_label(best)}", flush=True)
    return best, [lloyd_note(shapes, times[tried.index(best)])]


def main(argv=None):
    ap = parser()
    args = ap.parse_args(argv)
    # each kernel's own flags without it tune nothing: a usage error, not a silent no-op
    for flag, kernel in (("shapes", "lloyd"), ("configs", "lloyd"), ("no_update", "lloyd"),
                         ("ensemble_shapes", "ensemble"), ("iters", "ensemble")):
        if getattr(args, flag) and kernel not in args.kernels:
            ap.error(f"--{flag.replace('_', '-')} is {kernel}'s: add --kernels {kernel}")
    configs = lloyd_configs(ap, args.configs) if args.configs else None
    from ..runtime.devices import select_devices
    from ..runtime.resources import shipped_profiles_path
    path = shipped_profiles_path() if args.shipped else (args.out or default_path())
    try:
        profiles = select_devices(args.devices)
    except ValueError as exc:
        ap.error(str(exc))
    entries = []
    for profile in profiles:
        print(f"tune: {profile} (driver {profile.driver_version})", flush=True)
        parts = {}
        if "lloyd" in args.kernels:
            parts["lloyd"] = tune_lloyd(profile, args, configs)
        if "ensemble" in args.kernels:
            shapes = args.ensemble_shapes or [QUICK_SHAPE if args.quick else PAPER_SHAPE]
            terms, notes = tune_ensemble(profile, shapes, args.quick,
                                         args.iters or (3 if args.quick else 10))
            print(f"tune: ensemble best {label(terms)}", flush=True)
            for note in notes:
                print(f"tune: {note}", flush=True)
            parts["ensemble"] = terms, notes
        entries.append((profile, parts))
    print(f"tune: wrote {write_entries(path, entries)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
