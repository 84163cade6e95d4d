"""Auto-tuner: time Lloyd kernel configurations on each selected device and
write the fastest as a devices.yaml entry keyed by device name and driver.

    python -m oclclust tune [--devices gpu] [--shapes 2000000,128,4096 ...]
                            [--out FILE | --shipped] [--quick]

A configuration is a set of profile terms (lloyd_variant and its tiles); it
is timed as the Lloyd pass the planner builds from the profile it gives, on
resident random blobs of each shape.  The winner has the least geometric mean
of its time relative to the best on each shape.  Entries go to the user file
($OCLCLUST_DEVICES_YAML, else $XDG_CONFIG_HOME/oclclust/devices.yaml, by
default ~/.config/oclclust/devices.yaml), which oclclust reads by default
after the shipped devices.yaml; --shipped writes that one.
"""
import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from .tune_results import default_path, relative_score, write_entries

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


def main(argv=None):
    ap = argparse.ArgumentParser(prog="oclclust tune", description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", default="all", help="devices to tune (as in KMeans)")
    ap.add_argument("--shapes", nargs="+", type=parse_shape, metavar="N,D,K",
                    help="problem shapes timed (default: per device type)")
    ap.add_argument("--out", type=Path, help=f"file to write (default {default_path()})")
    ap.add_argument("--shipped", action="store_true",
                    help="write the repository's shipped devices.yaml instead")
    ap.add_argument("--quick", action="store_true", help="a few configurations, tiny shape")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--configs", type=Path, metavar="YAML",
                    help="time these profile-term sets (a YAML list of mappings) instead")
    ap.add_argument("--no-update", action="store_true",
                    help="time the assignment alone (no sums), as predict runs it")
    args = ap.parse_args(argv)
    configs = None
    if args.configs:
        from ..runtime.profiles import ProfileError, check_terms
        configs = yaml.safe_load(args.configs.read_text())
        if not isinstance(configs, list) or not all(isinstance(c, dict) and "lloyd_variant" in c
                                                    for c in configs):
            ap.error("--configs: a YAML list of mappings, each with lloyd_variant")
        try:
            configs = [check_terms(c, f"{args.configs} entry {i}") for i, c in enumerate(configs)]
        except ProfileError as exc:
            ap.error(f"--configs: {exc}")
    from ..runtime.devices import select_devices
    from ..runtime.resources import shipped_profiles_path
    path = shipped_profiles_path() if args.shipped else (args.out or default_path())
    try:
        profiles = select_devices(args.devices)
    except ValueError as exc:
        ap.error(str(exc))
    entries = []
    for profile in profiles:
        shapes = args.shapes or [parse_shape(s) for s in
                                 (QUICK_SHAPES if args.quick else DEFAULT_SHAPES[profile.type])]
        print(f"tune: {profile} (driver {profile.driver_version})", flush=True)
        tried = configs or configurations(profile, args.quick)
        best, times = tune_device(profile, shapes, args.quick, args.repeats, configs=tried,
                                  update=not args.no_update)
        row = times[tried.index(best)]
        print(f"tune: best {_label(best)}", flush=True)
        entries.append((profile, {"lloyd": (best, [lloyd_note(shapes, row)])}))
    print(f"tune: wrote {write_entries(path, entries)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
