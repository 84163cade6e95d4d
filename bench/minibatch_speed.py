#!/usr/bin/env python3
"""MiniBatchKMeans: oclclust against scikit-learn on the same rows, from the
same random_state (the same draws: both take the same steps), whole fits
from host data: the init on init_size rows, the mini-batch steps, and the
final labels and inertia (compute_labels).

    python bench/minibatch_speed.py --devices NVIDIA --rows 10000000 --dims 128 \\
        --k 1024 --batch 65536 --max-iter 1
    python bench/minibatch_speed.py --devices "Intel(R) OpenCL" --rows 200000 --k 64 --batch 4096

n_steps = max_iter * rows // batch (scikit-learn's rule: --max-iter 1 at 10M
rows and a 65,536 batch is 152 steps), early stopping off (max_no_improvement
None, tol 0) so both take all of them.  A first oclclust fit of a sample
builds the kernels (warm figures); scikit-learn uses every core.
"""
import argparse
import time

import numpy as np

from _common import add_devices_argument, import_oclclust, large_blobs, table


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_devices_argument(ap)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--dims", type=int, default=32)
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--max-iter", type=int, default=1)
    ap.add_argument("--no-sklearn", action="store_true")
    args = ap.parse_args(argv)
    oc = import_oclclust()
    X = large_blobs(args.rows, args.dims, args.k)
    kw = dict(n_clusters=args.k, batch_size=args.batch, max_iter=args.max_iter, random_state=0,
              max_no_improvement=None, tol=0.0)
    devices = args.devices or "all"
    oc.MiniBatchKMeans(devices=devices, **dict(kw, max_iter=1)).fit(X[:4 * args.batch])
    rows = []
    start = time.perf_counter()
    ours = oc.MiniBatchKMeans(devices=devices, **kw).fit(X)
    ours_s = time.perf_counter() - start
    rows.append(["oclclust", devices, f"{ours.n_steps_}", f"{ours_s:.3f}", f"{ours.inertia_:.6g}",
                 "", ""])
    if not args.no_sklearn:
        from sklearn.cluster import MiniBatchKMeans
        start = time.perf_counter()
        ref = MiniBatchKMeans(**kw).fit(X)
        ref_s = time.perf_counter() - start
        rows.append(["scikit-learn", "host CPU", f"{ref.n_steps_}", f"{ref_s:.3f}",
                     f"{ref.inertia_:.6g}", "", ""])
        rows[0][5] = f"{ref_s / ours_s:.1f}x"
        rows[0][6] = f"{ours.inertia_ / ref.inertia_:.4f}"
    print(f"MiniBatchKMeans {args.rows} x {args.dims}, k={args.k}, batch {args.batch}, "
          f"max_iter {args.max_iter}: whole fits (init, steps, final labels)")
    print(table(["library", "devices", "steps", "seconds", "inertia", "speed-up",
                 "inertia ratio"], rows, left=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
