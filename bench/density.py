"""Density clustering: oclclust's HDBSCAN (and the other density estimators
listed in ESTIMATORS) against scikit-learn's, in the same run.

    python3 bench/density.py --devices NVIDIA --sizes 10000 100000 1000000
    python3 bench/density.py --devices "Intel(R) OpenCL" --sizes 2000 10000
    python3 bench/density.py --devices NVIDIA --estimators DBSCAN DBSCAN-brute \
        --d 2 3 8 --neighbours 30 --sizes 1000000 10000000 --sklearn-max-n 1000000

Data: _common.blobs(n, d, 20) (../shared/bench's float32 blobs, made
float64).  scikit-learn runs up to --sklearn-max-n rows (its HDBSCAN is
O(N log N) to O(N^2) on the host's cores); each oclclust result is compared
with it: "same" is the fraction of rows with scikit-learn's exact label and
"ARI" the adjusted Rand index (HDBSCAN is exact up to 20,000 rows, where
tied heights run Prim's on the rows; past that a tied height may condense
otherwise).  --neighbours N: DBSCAN's eps for each size and dimension such
that a blob's centre has about N rows within eps (the rows of a blob thin
out as n shrinks and d grows; without it eps=2.0); DBSCAN runs with
algorithm="auto" (the grid where it wins), DBSCAN-brute with "brute".
Kernels are built on a small warm-up set first.  --phases
splits HDBSCAN's time into core distances (over the grid of cells from
GRID_FROM rows, as algorithm="auto" runs them; the MST's tiles made beside
them, as the fit makes them), MST (over its hierarchy of tiles from
GRID_FROM rows) and the host's tree
(from the MST edges: the single-linkage tree, labels and probabilities, the
record dbscan_clustering cuts; the best of 3).  A new
estimator is one more Bench row in ESTIMATORS.
"""
import argparse
import math
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, NamedTuple

import numpy as np

from _common import add_devices_argument, blobs, import_oclclust, table, timed


def eps_for(n, d, k, neighbours):
    """eps that puts about *neighbours* rows of blobs(n, d, k) within eps of
    a blob's centre: n/k rows of unit normal density times the eps-ball's volume."""
    ball = np.pi ** (d / 2) / math.gamma(d / 2 + 1)
    return float((neighbours * k / n * (2 * np.pi) ** (d / 2) / ball) ** (1 / d))


class Bench(NamedTuple):
    name: str
    ours: Callable       # (oc, params, devices) -> an unfitted oclclust estimator
    theirs: Callable     # (params) -> an unfitted scikit-learn estimator
    params: dict


def _sk_hdbscan(params):
    from sklearn.cluster import HDBSCAN
    return HDBSCAN(copy=False, **params)


def _sk_dbscan(params):
    from sklearn.cluster import DBSCAN
    return DBSCAN(n_jobs=-1, **params)


ESTIMATORS = [
    Bench("HDBSCAN", lambda oc, p, dev: oc.HDBSCAN(devices=dev, **p), _sk_hdbscan,
          dict(min_cluster_size=20, min_samples=10)),
    Bench("DBSCAN", lambda oc, p, dev: oc.DBSCAN(devices=dev, **p), _sk_dbscan,
          dict(eps=2.0, min_samples=10)),
    Bench("DBSCAN-brute", lambda oc, p, dev: oc.DBSCAN(devices=dev, algorithm="brute", **p),
          _sk_dbscan, dict(eps=2.0, min_samples=10)),
]


def host_tree(a, b, w, min_cluster_size, repeats=3):
    """The host's part of a fit from the MST edges (the single-linkage tree,
    labels and probabilities, scikit-learn's record of the tree), its best
    time of *repeats* (the host's share is short and noisy)."""
    from oclclust.cluster.density.hdbscan.tree import single_linkage, tree_labels, tree_record
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        tree = single_linkage(a, b, w)
        tree_labels(tree, min_cluster_size)
        tree_record(tree)
        best = min(best, time.perf_counter() - t0)
    return best


def hdbscan_phases(oc, X, params, devices):
    """(core distances s, MST s, host tree s) of one HDBSCAN fit's parts."""
    from oclclust.cluster.density.hdbscan.hdbscan import GRID_FROM, PRIM_TIES_UP_TO
    from oclclust.passes.linkage import plan_for
    from oclclust.passes.mst import minimum_spanning_tree, tiles_work
    from oclclust.passes.neighbours import core_distances, prim_edges
    plan = plan_for(devices)
    t0 = time.perf_counter()
    index = len(X) >= GRID_FROM
    # as HDBSCAN's fit: the MST's tiles made on a thread beside the core
    # pass, whose nearest rows start the MST
    with ThreadPoolExecutor(1) as pool:
        tiles = pool.submit(tiles_work(plan, X, "euclidean", core=True, index=index))
        core, nearest = core_distances(plan, X, params["min_samples"], grid=index,
                                       neighbours=True)
        tiles = tiles.result()
    t1 = time.perf_counter()
    a, b, w = minimum_spanning_tree(plan, X, "euclidean", core=core, ties="any", index=index,
                                    nearest=nearest, tiles=tiles)
    if np.any(w[1:] == w[:-1]) and len(X) <= PRIM_TIES_UP_TO:
        a, b, w = prim_edges(plan, X, "euclidean", core)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, host_tree(a, b, w, params["min_cluster_size"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", "--n", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--d", type=int, nargs="+", default=[8])
    ap.add_argument("--k", type=int, default=20, help="blob centres")
    ap.add_argument("--sklearn-max-n", type=int, default=100000)
    ap.add_argument("--estimators", nargs="+", default=[b.name for b in ESTIMATORS])
    ap.add_argument("--phases", action="store_true")
    ap.add_argument("--neighbours", type=float, default=None,
                    help="DBSCAN's eps for about this many rows within eps of a blob's centre")
    add_devices_argument(ap)
    args = ap.parse_args()
    oc = import_oclclust()
    import sklearn
    from sklearn.metrics import adjusted_rand_score
    benches = [b for b in ESTIMATORS if b.name in args.estimators]
    from oclclust.runtime.devices import preferred, select_devices
    device = preferred(select_devices(args.devices))[0]
    print(f"oclclust on {device}; scikit-learn {sklearn.__version__}; d={args.d}, "
          f"{args.k} blobs", flush=True)
    header = ["n", "d", "estimator", "eps", "oclclust s", "sklearn s", "speed-up",
              "clusters", "same", "ARI"]
    rows = []
    for d in args.d:
        # past HDBSCAN's GRID_FROM rows, so its fits' kernels are built too
        warm = blobs(5000, d, args.k).astype(np.float64)
        for b in benches:                     # kernel builds out of the timings
            small = {**b.params, "eps": 0.1} if "eps" in b.params else b.params
            b.ours(oc, small, args.devices).fit(warm)     # (small eps: DBSCAN's grid)
        for n in args.sizes:
            X = blobs(n, d, args.k).astype(np.float64)
            for b in benches:
                params = dict(b.params)
                if args.neighbours and "eps" in params:
                    params["eps"] = eps_for(n, d, args.k, args.neighbours)
                t_oc, _, ours = timed(lambda: b.ours(oc, params, args.devices).fit(X))
                t_sk, same, ari = None, "", ""
                if n <= args.sklearn_max_n:
                    t_sk, _, theirs = timed(lambda: b.theirs(params).fit(X))
                    same = f"{np.mean(ours.labels_ == theirs.labels_):.4f}"
                    ari = f"{adjusted_rand_score(theirs.labels_, ours.labels_):.4f}"
                clusters = len(set(ours.labels_.tolist()) - {-1, -2, -3})
                rows.append([str(n), str(d), b.name, f"{params.get('eps', ''):.4g}"
                             if "eps" in params else "-", f"{t_oc:.3f}",
                             f"{t_sk:.3f}" if t_sk else "-",
                             f"{t_sk / t_oc:.1f}x" if t_sk else "-", str(clusters), same, ari])
                print(table(header, rows[-1:]), flush=True)
                if args.phases and b.name == "HDBSCAN":
                    t_core, t_mst, t_tree = hdbscan_phases(oc, X, b.params, args.devices)
                    print(f"  phases: core distances {t_core:.3f} s, MST {t_mst:.3f} s, "
                          f"host tree {t_tree:.3f} s", flush=True)
    print()
    print(table(header, rows))


if __name__ == "__main__":
    main()
