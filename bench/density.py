"""Density clustering: oclclust's HDBSCAN (and the other density estimators
listed in ESTIMATORS) against scikit-learn's, in the same run.

    python3 bench/density.py --devices NVIDIA --sizes 10000 100000 1000000
    python3 bench/density.py --devices "Intel(R) OpenCL" --sizes 2000 10000

Data: _common.blobs(n, d, 20) (../shared/bench's float32 blobs, made
float64).  scikit-learn runs up to --sklearn-max-n rows (its HDBSCAN is
O(N log N) to O(N^2) on the host's cores); each oclclust result is compared
with it: "same" is the fraction of rows with scikit-learn's exact label and
"ARI" the adjusted Rand index (HDBSCAN is exact up to 20,000 rows, where
tied heights run Prim's on the rows; past that a tied height may condense
otherwise).  Kernels are built on a small warm-up set first.  --phases
splits HDBSCAN's time into core distances, MST and the host's tree.  A new
estimator is one more Bench row in ESTIMATORS.
"""
import argparse
import time
from typing import Callable, NamedTuple

import numpy as np

from _common import add_devices_argument, blobs, import_oclclust, table, timed


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
]


def hdbscan_phases(oc, X, params, devices):
    """(core distances s, MST s, host tree s) of one HDBSCAN fit's parts."""
    from oclclust.cluster.density.hdbscan.hdbscan import PRIM_TIES_UP_TO
    from oclclust.passes.linkage import plan_for
    from oclclust.cluster.density.hdbscan.tree import hdbscan_labels
    from oclclust.passes.mst import minimum_spanning_tree
    from oclclust.passes.neighbours import core_distances, prim_edges
    plan = plan_for(devices)
    t0 = time.perf_counter()
    core = core_distances(plan, X, params["min_samples"])
    t1 = time.perf_counter()
    a, b, w = minimum_spanning_tree(plan, X, "euclidean", core=core, ties="any")
    if np.any(w[1:] == w[:-1]) and len(X) <= PRIM_TIES_UP_TO:
        a, b, w = prim_edges(plan, X, "euclidean", core)
    t2 = time.perf_counter()
    hdbscan_labels(a, b, w, params["min_cluster_size"])
    return t1 - t0, t2 - t1, time.perf_counter() - t2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", "--n", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--k", type=int, default=20, help="blob centres")
    ap.add_argument("--sklearn-max-n", type=int, default=100000)
    ap.add_argument("--estimators", nargs="+", default=[b.name for b in ESTIMATORS])
    ap.add_argument("--phases", action="store_true")
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
    warm = blobs(600, args.d, args.k).astype(np.float64)
    for b in benches:                     # kernel builds out of the timings
        b.ours(oc, b.params, args.devices).fit(warm)
    rows = []
    for n in args.sizes:
        X = blobs(n, args.d, args.k).astype(np.float64)
        for b in benches:
            t_oc, _, ours = timed(lambda: b.ours(oc, b.params, args.devices).fit(X))
            t_sk, same, ari = None, "", ""
            if n <= args.sklearn_max_n:
                t_sk, _, theirs = timed(lambda: b.theirs(b.params).fit(X))
                same = f"{np.mean(ours.labels_ == theirs.labels_):.4f}"
                ari = f"{adjusted_rand_score(theirs.labels_, ours.labels_):.4f}"
            clusters = len(set(ours.labels_.tolist()) - {-1, -2, -3})
            rows.append([str(n), b.name, f"{t_oc:.3f}",
                         f"{t_sk:.3f}" if t_sk else "-",
                         f"{t_sk / t_oc:.1f}x" if t_sk else "-", str(clusters), same, ari])
            print(table(["n", "estimator", "oclclust s", "sklearn s", "speed-up",
                         "clusters", "same", "ARI"], rows[-1:]), flush=True)
            if args.phases and b.name == "HDBSCAN":
                t_core, t_mst, t_tree = hdbscan_phases(oc, X, b.params, args.devices)
                print(f"  phases: core distances {t_core:.3f} s, MST {t_mst:.3f} s, "
                      f"host tree {t_tree:.3f} s", flush=True)
    print()
    print(table(["n", "estimator", "oclclust s", "sklearn s", "speed-up", "clusters",
                 "same", "ARI"], rows))


if __name__ == "__main__":
    main()
