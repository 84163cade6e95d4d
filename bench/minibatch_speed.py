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
--seeds N: random_state 0..N-1 (one seed's inertia moves by several per cent
with the draws: the quality compared is the mean over the seeds, each seed's
pair from the same draws).
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
    ap.add_argument("--seeds", type=int, default=1, help="random_state 0..N-1")
    args = ap.parse_args(argv)
    oc = import_oclclust()
    X = large_blobs(args.rows, args.dims, args.k)
    kw = dict(n_clusters=args.k, batch_size=args.batch, max_iter=args.max_iter, random_state=0,
              max_no_improvement=None, tol=0.0)
    devices = args.devices or "all"
    oc.MiniBatchKMeans(devices=devices, **dict(kw, max_iter=1)).fit(X[:4 * args.batch])
    rows, ours_i, ref_i = [], [], []
    for seed in range(args.seeds):
        kw["random_state"] = seed
        start = time.perf_counter()
        ours = oc.MiniBatchKMeans(devices=devices, **kw).fit(X)
        ours_s = time.perf_counter() - start
        ours_i.append(ours.inertia_)
        rows.append([f"oclclust, seed {seed}", devices, f"{ours.n_steps_}", f"{ours_s:.3f}",
                     f"{ours.inertia_:.6g}", "", ""])
        if args.no_sklearn:
            continue
        from sklearn.cluster import MiniBatchKMeans
        start = time.perf_counter()
        ref = MiniBatchKMeans(**kw).fit(X)
        ref_s = time.perf_counter() - start
        ref_i.append(ref.inertia_)
        rows.append([f"scikit-learn, seed {seed}", "host CPU", f"{ref.n_steps_}",
                     f"{ref_s:.3f}", f"{ref.inertia_:.6g}", "", ""])
        rows[-2][5] = f"{ref_s / ours_s:.1f}x"
        rows[-2][6] = f"{ours.inertia_ / ref.inertia_:.4f}"
        print(rows[-2], rows[-1], flush=True)
    if ref_i and args.seeds > 1:
        rows.append([f"mean of {args.seeds} seeds", "", "", "", "", "",
                     f"{np.mean(ours_i) / np.mean(ref_i):.4f}"])
    print(f"MiniBatchKMeans {args.rows} x {args.dims}, k={args.k}, batch {args.batch}, "
          f"max_iter {args.max_iter}: whole fits (init, steps, final labels)")
    print(table(["library", "devices", "steps", "seconds", "inertia", "speed-up",
                 "inertia ratio"], rows, left=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
