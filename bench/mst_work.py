"""The work of HDBSCAN's device MST, round by round: Boruvka's rows scanned,
nodes tested, tiles scanned and distances computed (passes/mst.py boruvka's
*stats*, counted by the kernel), and the MST's time without the counts.

    python3 bench/mst_work.py --devices "Intel(R) OpenCL" --sizes 100000 --d 3 8

Data: _common.blobs(n, d, 20) made float64, core distances over the grid
with min_samples (10: bench/density.py's HDBSCAN), the MST over the tiles'
hierarchy (index=True: algorithm="auto" past GRID_FROM rows).
"""
import argparse
import time

import numpy as np

from _common import add_devices_argument, blobs, import_oclclust, table


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", "--n", type=int, nargs="+", default=[100000])
    ap.add_argument("--d", type=int, nargs="+", default=[3])
    ap.add_argument("--k", type=int, default=20, help="blob centres")
    ap.add_argument("--min-samples", type=int, default=10)
    ap.add_argument("--no-seed", action="store_true",
                    help="no nearest rows from the core distances' pass (Boruvka from scratch)")
    ap.add_argument("--repeats", type=int, default=1, help="MST timings (the best)")
    add_devices_argument(ap)
    args = ap.parse_args()
    import_oclclust()
    from oclclust.passes.linkage import plan_for
    from oclclust.passes.mst import boruvka, minimum_spanning_tree
    from oclclust.passes.neighbours import core_distances
    plan = plan_for(args.devices)
    print(f"on {plan.queue.device.name.strip()}", flush=True)
    for d in args.d:
        warm = blobs(5000, d, args.k).astype(np.float64)
        core, nearest = core_distances(plan, warm, args.min_samples, grid=True, neighbours=True)
        minimum_spanning_tree(plan, warm, core=core, ties="any", index=True, nearest=nearest)
        for n in args.sizes:
            X = blobs(n, d, args.k).astype(np.float64)
            t0 = time.perf_counter()
            core, nearest = core_distances(plan, X, args.min_samples, grid=True,
                                           neighbours=not args.no_seed)
            t_core = time.perf_counter() - t0
            best = np.inf
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                minimum_spanning_tree(plan, X, core=core, ties="any", index=True, nearest=nearest)
                best = min(best, time.perf_counter() - t0)
            stats = []
            boruvka(plan, np.ascontiguousarray(X, plan.dtype), n, d, "euclidean", core,
                    index=True, stats=stats, nearest=nearest)
            names = list(stats[0])
            rows = [[str(r)] + [f"{s[k]:,}" for k in names] for r, s in enumerate(stats)]
            rows.append(["all", ""] + [f"{sum(s[k] for s in stats):,}" for k in names[1:]])
            print(f"\nn={n} d={d}: core {t_core:.2f} s, MST {best:.2f} s", flush=True)
            print(table(["round"] + names, rows, left=1), flush=True)


if __name__ == "__main__":
    main()
