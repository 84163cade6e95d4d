"""oclgrind plugin: KMeans's centre update on the device (passes/lloyd_update.py)
-- the summary's pairwise sums against np.sum over sizes that split the sum's
tree over the work-group and over a work-item's stack, and whole fits of
each Lloyd variant with the update on the device against the host's, bit
for bit, through an empty cluster (the host's iteration).

Run:  cd /tmp && PYOPENCL_NO_CACHE=1 oclgrind --data-races --uninitialized \
      --check-api --build-options -cl-opt-disable python tests/harness/oclgrind_driver.py --only lloyd_update
"""
import numpy as np
import pyopencl.array as cla

import oclclust as oc
from oclgrind_driver import (GEMM_PROFILE, LLOYD_PROFILE, PRECISIONS, data, device_manager, mark,
                             profile_for)
from oclclust.cluster.kmeans import kmeans
from oclclust.passes import lloyd_update
from oclclust.passes.lloyd import LloydPass, LloydSpec
from oclclust.passes.lloyd_mma import mma_specs
from oclclust.runtime.codegen import kernel
from oclclust.runtime.partition import DevicePartition

K = 5


def exercise_summary(device, log):
    """summarize, work-groups of 1 and 4: sums of one block, of a split
    top (sizes over 128) and of subtrees deeper than the split."""
    q = device.queue()
    rng = np.random.RandomState(2)
    for wg in (1, 4):
        spec = lloyd_update.SummarySpec(dtype="float32", acc_double=True, k=K, wg=wg)
        mark(f"lloyd summary wg={wg}")
        summarize = kernel(q.context, spec, "summarize")
        for n_moved, groups in ((5, 3), (130, 37), (700, 129)):
            moved = rng.rand(n_moved) * np.exp(rng.uniform(-20, 20, n_moved))
            inertia = rng.rand(groups) * np.exp(rng.uniform(-20, 20, groups))
            flags = rng.randint(0, 3, (groups, 2)).astype(np.int32)
            weights = np.array([1.0, 0.0, 2.0, 3.0, 1.0]) if groups % 2 else np.ones(K)
            # re-checked rows counted in one case of two (a fast precision's pass)
            rechecked = rng.randint(0, 50, groups).astype(np.int32)
            counted = groups if groups % 2 else 0
            dev = [cla.to_device(q, a) for a in (moved, inertia, flags.ravel(), weights,
                                                 rechecked)]
            R = lloyd_update.RESULTS
            results = cla.zeros(q, 3 * R, np.float64)   # written in slot 1 of 3
            summarize(q, (wg,), (wg,), dev[0].data, np.int64(n_moved), dev[1].data,
                      dev[2].data, np.int64(groups), dev[4].data, np.int64(counted),
                      dev[3].data, results.data, np.int64(1))
            want = [0.0] * R + [np.sum(moved), np.sum(inertia), flags[:, 0].sum(),
                                flags[:, 1].sum(), float((weights == 0).any()),
                                rechecked[:counted].sum()] + [0.0] * R
            if results.get(q).tolist() != want:
                raise AssertionError(f"summary wg={wg} of {n_moved}, {groups}: "
                                     f"{results.get(q)} != {want}")
    log("lloyd summary: ok")


def exercise_fits(device, log):
    """Fits with the update on the device and on the host, each Lloyd
    variant, weighted and not, and gemm's with the update by one work-group
    (unweighted: lloyd_update_group.cl.mako); one initial centre far from
    every row (its cluster empty: the host's first iteration)."""
    count = 0
    for dtype, fp64 in PRECISIONS:
        if not fp64:
            continue                    # the update is the host's without double
        X, w = data(dtype, seed=5)
        init = X[[0, 9, 18, 27, 36]].astype(np.float64)
        init[4] = 1e3
        for terms in (LLOYD_PROFILE, dict(LLOYD_PROFILE, lloyd_variant="rowwise"),
                      GEMM_PROFILE, dict(GEMM_PROFILE, lloyd_update_group=1)):
            profile = profile_for(device, fp64, **terms)
            for weights in (None, w):
                fits = []
                for on in (True, False):
                    mark(f"lloyd_update fit {dtype} {terms.get('lloyd_variant', 'tiled')} "
                         f"group={terms.get('lloyd_update_group', 0)} "
                         f"weighted={weights is not None} device={on}")
                    saved, kmeans.DEVICE_UPDATE = kmeans.DEVICE_UPDATE, on
                    try:
                        fits.append(oc.KMeans(K, init=init, n_init=1, max_iter=5, tol=0.0,
                                              devices=device_manager(profile))
                                    .fit(X, sample_weight=weights))
                    finally:
                        kmeans.DEVICE_UPDATE = saved
                a, b = fits
                if not (np.array_equal(a.cluster_centers_, b.cluster_centers_)
                        and np.array_equal(a.labels_, b.labels_) and a.inertia_ == b.inertia_
                        and a.n_iter_ == b.n_iter_
                        and [h["center_shift"] for h in a.history_] ==
                        [h["center_shift"] for h in b.history_]):
                    raise AssertionError(f"lloyd_update {dtype} {terms}: device fit differs")
                count += 1
    log(f"lloyd_update fits: {count}")


def exercise_group_split(device, log):
    """The one-group update of an "mma" pass (its products emulated) with
    the split of the new centres, every precision: three iterations' tiles,
    rounding terms and centres equal to the separate kernels'."""
    rng = np.random.RandomState(7)
    n, d, k = 64, 5, 3
    X = rng.randn(n, d).astype(np.float32)
    for precision in ("float32", "tf32", "bf16"):
        got = []
        for group in (0, 1):
            mark(f"lloyd_update group split {precision} group={group}")
            profile = profile_for(device, True, **dict(GEMM_PROFILE, lloyd_variant="mma",
                                                       lloyd_update_group=group))
            part = DevicePartition(profile, X)
            base = dict(dtype="float32", acc_double=True, d=d, k=k, update=True, weighted=False)
            spec = next(s for s in mma_specs(profile, base, LloydSpec, precision, emulate=True)
                        if s.wg == 128)
            lp = LloydPass(part, k, spec=spec, precision=precision)
            resident = lloyd_update.ResidentCenters(lp, depth=1)
            labels = cla.zeros(part.queue, n, np.int32) - 1
            resident.start(X[:k].astype(np.float64), labels)
            shifts = [resident.step()[1] for _ in range(3)]
            tiles = [lp.centers.get().view(np.uint32)]
            if precision != "float32":
                tiles.append(lp.center_rounding.get().view(np.uint32))
            got.append((shifts, tiles, resident.centers_to_host()))
        (a, ta, ca), (b, tb, cb) = got
        if not (a == b and all(np.array_equal(x, y) for x, y in zip(ta, tb))
                and np.array_equal(ca, cb)):
            raise AssertionError(f"lloyd_update group split {precision}: differs")
    log("lloyd_update group split: 3 precisions")


EXERCISERS = {
    "lloyd_summary.cl.mako": [exercise_summary, exercise_fits],
    "lloyd_new_centers.cl.mako": [exercise_fits],
    "lloyd_update_group.cl.mako": [exercise_fits, exercise_group_split],
}
