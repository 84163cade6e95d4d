#!/usr/bin/env python3
"""Time the "gemm" Lloyd variant's sums kernel (templates/lloyd_accumulate_sums.cl.mako)
alone, with its default rows per work-item against one (the old behaviour).

The rows are random and the labels already assigned (uniform over k); the
kernel is planned as LloydPass plans it (the device's profile with
lloyd_variant "gemm": same slice, work-group size and row segments) and run
--reps times after a warm-up, each launch waited for.  Printed: seconds per
launch and GB/s of x read (n x d values once), and whether the partial sums
of every rows-per-item agree bit for bit (on the default's segments).
--rows-per-item and --segments add other rows per item and (for the default
rows per item) other segment counts to the table.

    python3 tools/time_sums.py --devices NVIDIA --n 10000000 --d 128 --k 4096
    python3 tools/time_sums.py --devices NVIDIA --n 10000000 --d 128 --k 4096 \
        --rows-per-item 4 8 16 --segments 2 4 8 16
    python3 tools/time_sums.py --devices "Intel(R) OpenCL" --n 1000000 --d 32 --k 256
"""
import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import pyopencl.array as cla

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from oclclust.runtime.codegen import kernel                      # noqa: E402
from oclclust.runtime.devices import preferred, select_devices   # noqa: E402
from oclclust.passes.lloyd import LloydPass                     # noqa: E402
from oclclust.passes.lloyd_gemm import segments                 # noqa: E402
from oclclust.parallel.manager import DeviceManager               # noqa: E402
from oclclust.runtime.reduce import partial_buffer               # noqa: E402


class Sums:
    """The sums kernel of *lloyd*'s spec with *rows_per_item* (0: its
    default), launched as LloydPass._enqueue launches it, on *n_segments*
    row segments (None: as segments() chooses)."""

    def __init__(self, lloyd, rows_per_item=0, n_segments=None):
        part, k = lloyd.part, lloyd.k
        spec = lloyd.spec.accumulate_spec()
        self.spec = dataclasses.replace(spec, rows_per_item=rows_per_item or spec.rows_per_item)
        self.segments = n_segments or segments(part, k, self.spec)
        self.slices = lloyd.slices
        self.kernel = kernel(part.queue.context, self.spec, "accumulate_sums")
        self.part_sums = partial_buffer(part.queue, self.segments, k * part.d, part.acc_double)
        self.part_weights = partial_buffer(part.queue, self.segments, k, part.acc_double)
        self.lloyd = lloyd

    def __call__(self, labels):
        part, wg = self.lloyd.part, self.spec.acc_wg
        self.kernel(part.queue, (self.segments * self.slices * wg,), (wg,), part.x.data,
                    np.int64(part.n), np.int64(part.stride), part.weights_arg(), labels.data,
                    self.part_sums.data, self.part_weights.data,
                    np.int64(-(-part.n // self.segments)), np.int32(self.slices))

    def partials(self):
        q = self.lloyd.part.queue
        return self.part_sums.get(q), self.part_weights.get(q)


def seconds_per_launch(sums, labels, reps):
    q = sums.lloyd.part.queue
    sums(labels)                     # warm-up (and the build's first launch)
    q.finish()
    start = time.perf_counter()
    for _ in range(reps):
        sums(labels)
        q.finish()
    return (time.perf_counter() - start) / reps


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", default="all",
                    help="platform or device name substring; the first device matching")
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    ap.add_argument("--weighted", action="store_true", help="random sample weights too")
    ap.add_argument("--rows-per-item", type=int, nargs="*", default=[],
                    help="rows per work-item to time besides the default and 1")
    ap.add_argument("--segments", type=int, nargs="*", default=[],
                    help="row segment counts to time the default rows per item on, "
                         "besides segments()'s choice")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    profile = preferred(select_devices(args.devices))[0].replace(lloyd_variant="gemm")
    rng = np.random.default_rng(0)
    X = rng.random((args.n, args.d), dtype=np.float64 if args.dtype == "float64"
                   else np.float32)
    w = rng.uniform(0.5, 2.0, args.n).astype(X.dtype) if args.weighted else None
    data = DeviceManager([profile]).scatter(X, w)
    del X
    try:
        part = data.chunks[0]
        if len(data.chunks) > 1:
            print(f"(the rows are streamed in {len(data.chunks)} chunks: timing the first, "
                  f"{part.n} rows)")
        lloyd = LloydPass(part, args.k)
        if lloyd.spec.variant != "gemm":
            print(f"{profile}: the gemm variant does not fit ({lloyd.spec.variant} planned)")
            return 1
        labels = cla.to_device(part.queue, rng.integers(0, args.k, part.n, dtype=np.int32))
        default = Sums(lloyd)
        rows = list(dict.fromkeys([default.spec.rows_per_item, 1] + args.rows_per_item))
        spec = default.spec
        print(f"{profile}: n={part.n} d={args.d} k={args.k} {args.dtype}"
              f"{' weighted' if args.weighted else ''}; {lloyd.slices} slices of "
              f"{spec.slice} clusters, work-groups of {spec.acc_wg}, "
              f"{'float64' if spec.acc_double else 'Kahan float'} sums")
        gbytes = part.n * part.d * part.dtype.itemsize / 1e9
        reference, same = None, True
        runs = [(r, None) for r in rows] + [(spec.rows_per_item, s) for s in args.segments]
        for r, n_segments in runs:
            sums = Sums(lloyd, r, n_segments)
            t = seconds_per_launch(sums, labels, args.reps)
            print(f"  rows/item {r:3d}{' (default)' if r == spec.rows_per_item else '':10s} "
                  f"chunk {sums.spec.chunk_rows:6d}  segments {sums.segments:4d}  "
                  f"{t:.6f} s/launch  {gbytes / t:8.2f} GB/s of x", flush=True)
            if n_segments is not None:   # other partials: not comparable
                continue
            check = sums if sums.segments == default.segments else \
                Sums(lloyd, r, default.segments)
            if check is not sums:
                check(labels)
            got = check.partials()
            if reference is None:
                reference = got
            else:
                same &= all(np.array_equal(a, b) for a, b in zip(reference, got))
        print(f"  partial sums on {default.segments} segments bitwise equal across rows/item: "
              f"{'yes' if same else 'NO'}")
        return 0 if same else 1
    finally:
        data.close()


if __name__ == "__main__":
    sys.exit(main())
