"""oclgrind plugin (issue 5): every ensemble / KD-tree template variant on
tiny inputs -- the statistics pass of each strategy staged in local memory
and from global memory, the labels / inertia pass, the three KD-tree
mappings and the replicas' aggregation -- checked against numpy; the model
update on the device against the host's.

Run:  cd /tmp && PYOPENCL_NO_CACHE=1 oclgrind --data-races --uninitialized \
      --check-api --build-options -cl-opt-disable python tests/harness/oclgrind_driver.py --only ensemble
"""
import dataclasses
import itertools

import numpy as np

from oclgrind_driver import PRECISIONS, close, data, device_manager, mark, profile_for
from oclclust.cluster.kmeans.ensemble import (EnsembleModels, data_moments, ensemble_passes,
                                              fixed_point)
from oclclust.cluster.kmeans.lloyd_loop import fit_lloyd
from oclclust.passes.ensemble import EnsemblePass
from oclclust.runtime.exact_sums import settle
from oclclust.passes.kdtree import MAPPINGS, KDTreePass

KS = (3, 5, 2)          # models of different K; 37 rows, d = 3 (the driver's data)
# (strategy, distributed model order): the order only matters to concatenated
VARIANTS = [("task", False), ("data", False), ("concatenated", True), ("concatenated", False)]
PROFILE = dict(work_group_size=4, groups_per_compute_unit=2)


def expected(X, w, centers):
    """numpy's (sums, weights, inertia, labels) per model, ties to the lowest index."""
    out = []
    for c in centers:
        dist = ((X.astype(np.float64)[:, None] - c[None]) ** 2).sum(-1)
        lab = np.argmin(dist, 1)
        sums = np.zeros_like(c)
        np.add.at(sums, lab, X * w[:, None])
        out.append((sums, np.bincount(lab, w, len(c)), float((w * dist.min(1)).sum()), lab))
    return out


def setting(device, dtype, fp64, weighted, local=None):
    X, w = data(dtype, seed=7)
    profile = profile_for(device, fp64, **PROFILE)
    if local is not None:
        profile = dataclasses.replace(profile, local_mem_size=local, local_memory_fraction=1.0)
    rng = np.random.RandomState(1)
    centers = [X[rng.choice(len(X), k, replace=False)].astype(np.float64) for k in KS]
    ws = w if weighted else None
    host_w = (w if weighted else np.ones(len(X))).astype(np.float64)
    data_ = device_manager(profile).scatter(X, ws)
    fixed = fixed_point(data_, host_w, data_moments(data_)[0])
    return data_, fixed, centers, expected(X, host_w, [c.astype(dtype) for c in centers])


def check_stats(got, want, fixed, what, rtol):
    sums, weights = fixed.to_float(*got)
    off = np.cumsum([0] + list(KS))
    for m, (s, wt, _, _) in enumerate(want):
        close(sums[off[m]:off[m + 1]], s, f"{what} sums of model {m}", rtol)
        close(weights[off[m]:off[m + 1]], wt, f"{what} weights of model {m}", rtol)


def exercise_stats(device, log):
    for dtype, fp64 in PRECISIONS:
        rtol = 1e-4 if dtype == "float32" or not fp64 else 1e-9
        for weighted in (False, True):
            # the default budget stages everything; 100 bytes stages nothing
            for local in (None, 100):
                data_, fixed, centers, want = setting(device, dtype, fp64, weighted, local)
                try:
                    part = data_.chunks[0]
                    for strategy, order in VARIANTS:
                        label = (f"ensemble_stats {strategy} order={order} {dtype} "
                                 f"fp64={fp64} weighted={weighted} staged={local is None}")
                        mark(label)
                        check_stats(EnsemblePass(part, strategy, fixed, order).stats(centers),
                                    want, fixed, label, rtol)
                    if local is None:
                        mark(f"ensemble_assign {dtype} fp64={fp64} weighted={weighted}")
                        inertia, labels, dist = EnsemblePass(part, "concatenated", fixed).assign(
                            centers, labels=True, min_dist=True)
                        for m, (_, _, inert, lab) in enumerate(want):
                            assert np.array_equal(labels[m], lab), f"labels of model {m}"
                            close(settle(inertia)[m], inert, f"inertia of model {m}", rtol)
                finally:
                    data_.close()
    log("ensemble statistics and assign: ok")


def exercise_kdtree(device, log):
    for dtype, fp64 in PRECISIONS:
        rtol = 1e-4 if dtype == "float32" or not fp64 else 1e-9
        for weighted in (False, True):
            data_, fixed, centers, want = setting(device, dtype, fp64, weighted)
            try:
                part = data_.chunks[0]
                for mapping, order in itertools.product(MAPPINGS, (True, False)):
                    label = (f"kdtree_stats {mapping} order={order} {dtype} fp64={fp64} "
                             f"weighted={weighted}")
                    mark(label)
                    # leaves of 5 rows: several leaves per work-group and ragged ones
                    check_stats(KDTreePass(part, mapping, fixed, 5, order).stats(centers),
                                want, fixed, label, rtol)
            finally:
                data_.close()
    log("kdtree mappings: ok")


def exercise_update(device, log):
    """The device's model update against the host's, bit for bit: a few
    iterations of concatenated and KD-tree passes, one model with an empty
    cluster (flagged: the host takes that iteration)."""
    for dtype, fp64 in PRECISIONS:
        if not fp64:
            continue                    # the update is the host's without double
        data_, fixed, centers, _ = setting(device, dtype, fp64, False)
        centers[2][1] = 1e3            # far from every row: its cluster is empty
        host_w = np.ones(data_.n)
        try:
            for strategy, kdtree in (("concatenated", None), ("concatenated", "direct")):
                mark(f"ensemble_update {strategy} {kdtree} {dtype}")
                fits = [fit_lloyd(EnsembleModels(ensemble_passes(data_, fixed, KS, strategy,
                                                                 kdtree, device_update=on)),
                                  [c.copy() for c in centers], 4, 1e-12, data_, host_w)
                        for on in (True, False)]
                for got, want in zip(*fits):
                    for g, w in zip(got, want):
                        assert np.array_equal(g, w), f"ensemble_update {strategy} {kdtree}"
        finally:
            data_.close()
    log("ensemble update: ok")


EXERCISERS = {
    "ensemble_update.cl.mako": [exercise_update],
    "ensemble_stats.cl.mako": [exercise_stats],
    "ensemble_assign.cl.mako": [exercise_stats],
    "kdtree_stats.cl.mako": [exercise_kdtree],
    "kdtree_aggregate.cl.mako": [exercise_kdtree],
    "kdtree_candidates.cl.mako": [exercise_kdtree],
}
