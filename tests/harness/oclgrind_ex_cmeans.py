"""oclgrind plugin: every variant of templates/cmeans/cmeans_pass.cl.mako (fuzzy c-means).

Each precision of PRECISIONS (float32 with double sums, float64, float32
with Kahan sums) runs the pass in all three modes (statistics, memberships
written out, objective only), weighted and not, m == 2 and not, over a
cycle of the layout axes (rows per tile with one and several work-items per
row, centres staged at once / in chunks / read from global memory, tile
memberships in local or global memory, the row in private memory or not,
statistics in registers or in the global slab, one and several column
blocks with padded tile rows, statistics in centre-major and in row-major
order (CPUs)), each with the distances per row and as register tiles
(distance_tile.cl.mako), on rows where one centre coincides with a
row; results are checked against numpy.  Whole fits (k-means++ seeding,
the manager, resident and streamed in chunks) follow.  The labels kernel
(cmeans_labels.cl.mako) against numpy's argmax: ties, NaN, a ragged
last work-group.  The tensor-core pass (cmeans_mma_pass.cl.mako) with its
products emulated in plain OpenCL (its PTX runs on NVIDIA GPUs only:
tests/passes/test_cmeans_mma.py), float32 with double and with Kahan sums,
every mode, weighted and not, m == 2 and not, memberships in local and in
global memory, work-groups of 8 and 4 warps, the statistics on the
(emulated) tensor cores and the portable way, the products summed with
float fma and as the tensor cores' truncation (truncate), precision
float32 (3xTF32), tf32 and bf16 (one product a step).
"""
import dataclasses
import itertools

import numpy as np
import pyopencl.array as cla

import oclclust as oc
from oclclust.passes import cmeans as cmeans_pass
from oclclust.passes import cmeans_mma
from oclclust.runtime import codegen
from oclclust.runtime.partition import DevicePartition
from oclgrind_driver import PRECISIONS, close, data, managers, mark, profile_for

C = 5
PROFILE = dict(work_group_size=8, groups_per_compute_unit=2, private_floats=256,
               local_memory_fraction=0.75)
# (rows per tile, centre staging, cchunk, local memberships, row in private,
# statistics in registers, (kb, kw, qs) or "row-major") -- cycled so every
# value occurs
LAYOUTS = [                     # the first four meet the statistics mode
    (8, "all", C, True, True, True, (4, 1, 3)),
    (2, "chunk", 2, False, False, False, (2, 3, 2)),
    (8, "none", C, True, False, False, "row-major"),
    (4, "all", C, False, True, True, "row-major"),
    (4, "chunk", 3, True, True, False, (4, 1, 3)),
    (2, "none", C, True, True, True, (2, 3, 2)),
    (8, "chunk", 2, False, True, True, "row-major"),
    (2, "all", C, True, False, True, (4, 1, 3)),
]
MODES = {"update": (True, False), "write_u": (False, True), "objective": (False, False)}


def reference(X, centers, m, w):
    """(memberships, statistics C x (D+1), objective) in float64, eq. 1/2."""
    X = X.astype(np.float64)
    d2 = ((X[:, None] - centers[None]) ** 2).sum(-1)
    zero = d2 == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        U = 1 / ((d2[:, :, None] / d2[:, None, :]) ** (1 / (m - 1))).sum(-1)
    U[zero.any(1)] = zero[zero.any(1)] / zero[zero.any(1)].sum(1, keepdims=True)
    Um = w[:, None] * U ** m
    stats = np.hstack([Um.T @ X, Um.sum(0)[:, None]])
    return U, stats, float((Um * d2).sum())


def specs(profile, dtype):
    """The layout cycle over every (mode, weighted, m == 2)."""
    d = data(dtype)[0].shape[1]
    first = next(cmeans_pass.candidate_specs(profile, dtype, d, C, True, False, False, True))
    combos = itertools.product(MODES.items(), (False, True), (True, False))
    for i, ((mode, (update, write_u)), weighted, m_two) in enumerate(combos):
        p, stage, cchunk, local_u, stage_point, acc_private, blocks = LAYOUTS[i % len(LAYOUTS)]
        row_major = blocks == "row-major"
        kb, kw, qs = cmeans_pass.row_major_blocks(C, d, first.wg) if row_major else blocks
        yield mode, dataclasses.replace(
            first, p=p, ps=cmeans_pass._odd(C if row_major else p), row_major=row_major,
            stage_centers=stage != "none", cchunk=cchunk,
            local_u=local_u, stage_point=stage_point, acc_private=acc_private and update,
            kb=kb, kw=kw, qs=qs, xs=cmeans_pass._odd(max(d + 1, kb * kw)), update=update,
            write_u=write_u, weighted=weighted, m_two=m_two)


def tiled_specs(profile, dtype):
    """Each spec of the cycle with its distances as register tiles of 2 x 2
    (distance_tile.cl.mako), 2 features a chunk, vector reads of 2 and scalar
    ones in turn (D=3, C=5: ragged chunks and centre tiles)."""
    d = data(dtype)[0].shape[1]
    for i, (mode, spec) in enumerate(specs(profile, dtype)):
        terms = profile.replace(lloyd_reg_rows=2, lloyd_reg_centroids=2,
                                lloyd_depth=2, lloyd_vector_width=2 - i % 2)
        fields = cmeans_pass.tile_fields(terms, d, C, spec.wg, spec.p)
        assert fields is not None, spec
        yield mode, dataclasses.replace(spec, **fields)


def exercise_cmeans_pass(device, log):
    count = 0
    for dtype, fp64 in PRECISIONS:
        profile = profile_for(device, fp64, **PROFILE)
        X, w = data(dtype)
        centers = X[[0, 9, 18, 27, 36]].astype(np.float64) + 0.25
        centers[1] = X[9]                   # row 9 coincides with centre 1
        rtol = 2e-4 if dtype == "float32" else 1e-10
        for mode, spec in itertools.chain(specs(profile, dtype), tiled_specs(profile, dtype)):
            m = 2.0 if spec.m_two else 1.6
            mark(f"cmeans fp64={fp64} {spec}")
            part = DevicePartition(profile, X, w if spec.weighted else None)
            cpass = cmeans_pass.CMeansPass(part, C, m, spec.update, spec.write_u, spec=spec)
            assert cpass.spec == spec
            ww = w.astype(np.float64) if spec.weighted else np.ones(len(X))
            U, stats, obj = reference(X, centers, m, ww)
            got_stats, got_obj, bad = cpass.run(centers)
            if bad:
                raise AssertionError(f"{spec}: {bad} non-finite distances reported")
            close(got_obj, obj, f"{spec}: objective", rtol)
            if spec.update:
                close(got_stats, stats, f"{spec}: statistics", rtol)
            if spec.write_u:
                got_u = cpass.u.get(part.queue).reshape(len(X), C)
                close(got_u, U, f"{spec}: memberships", rtol)
                if not np.array_equal(got_u[9], np.eye(C)[1]):
                    raise AssertionError(f"{spec}: row 9 at centre 1 has {got_u[9]}")
            count += 1
    log(f"cmeans pass: {count} variants")


def exercise_cmeans_mma(device, log):
    count = 0
    for dtype, fp64 in PRECISIONS:
        if dtype != "float32":
            continue
        profile = profile_for(device, fp64, **PROFILE)
        X, w = data(dtype)
        d = X.shape[1]
        centers = X[[0, 9, 18, 27, 36]].astype(np.float64) + 0.25
        centers[1] = X[9]                   # row 9 coincides with centre 1
        combos = itertools.product(MODES.items(), (False, True), (True, False))
        for i, ((mode, (update, write_u)), weighted, m_two) in enumerate(combos):
            first = list(cmeans_pass.mma_specs(profile, dtype, d, C, update, write_u,
                                               weighted, m_two, emulate=True))
            spec = first[i % 2 * (len(first) - 1)]   # local memberships, 8 warps; global, 4
            if update and i % 4 == 2:                # the portable statistics after the GEMM's
                spec = dataclasses.replace(spec, stats_mma=False)
            # the truncating sums every other variant, the precisions in turn
            # (every pair of the two)
            spec = dataclasses.replace(spec, truncate=i % 2 == 1,
                                       precision=cmeans_mma.PRECISIONS[i % 3])
            m = 2.0 if m_two else 1.6
            # memberships within membership_bound (relative), u^m m times that
            tol = max(2e-4, m * cmeans_mma.membership_bound(spec.precision, m))
            mark(f"cmeans_mma fp64={fp64} {spec}")
            part = DevicePartition(profile, X, w if weighted else None)
            cpass = cmeans_pass.CMeansPass(part, C, m, update, write_u, spec=spec)
            assert cpass.spec == spec
            U, stats, obj = reference(X, centers, m, w.astype(np.float64) if weighted
                                      else np.ones(len(X)))
            got_stats, got_obj, bad = cpass.run(centers)
            if bad:
                raise AssertionError(f"{spec}: {bad} non-finite distances reported")
            close(got_obj, obj, f"{spec}: objective", tol)
            if update:
                close(got_stats, stats, f"{spec}: statistics", tol)
            if write_u:
                close(cpass.u.get(part.queue).reshape(len(X), C), U, f"{spec}: memberships",
                      tol)
            count += 1
    log(f"cmeans mma pass (emulated): {count} variants")


def exercise_cmeans_fit(device, log):
    """FuzzyCMeans fits through the manager (resident and streamed: the same
    model), then predict_proba and score, in every precision."""
    fits = 0
    for dtype, fp64 in PRECISIONS:
        profile = profile_for(device, fp64)
        X, w = data(dtype, seed=1)
        for weights in (None, w):
            first = None
            for how, mgr in managers(profile, dtype):
                what = f"{dtype} fp64={fp64} weighted={weights is not None} {how}"
                mark(f"FuzzyCMeans {what}")
                codegen.forget_plans("cmeans")
                fc = oc.FuzzyCMeans(C, m=1.5, random_state=0, tol=0, max_iter=2, devices=mgr)
                fc.fit(X, sample_weight=weights)
                fits += 1
                first = first or fc
                close(fc.cluster_centers_, first.cluster_centers_, f"{what}: centres", 1e-5)
                close(fc.u_, first.u_, f"{what}: memberships", 1e-5)
                mark(f"FuzzyCMeans.predict_proba {what}")
                close(fc.predict_proba(X), fc.u_, f"{what}: predict_proba", 1e-5)
                mark(f"FuzzyCMeans.score {what}")
                close(-fc.score(X, sample_weight=weights), fc.objective_, f"{what}: score",
                      1e-5)
    log(f"cmeans fits: {fits}")


def exercise_cmeans_labels(device, log):
    count = 0
    for dtype, fp64 in PRECISIONS:
        profile = profile_for(device, fp64, work_group_size=8)
        X, _ = data(dtype)
        part = DevicePartition(profile, X)
        rng = np.random.RandomState(3)
        for c in (1, C):
            u = rng.randint(0, 3, (len(X), c)).astype(dtype)     # ties
            u[1, -1] = u[4, 0] = u[5, c // 2] = np.nan           # NaN first, last, between
            u[5, 0] = 9
            mark(f"cmeans_labels {dtype} fp64={fp64} c={c}")
            got = cmeans_pass.row_labels(profile, part.queue, cla.to_device(part.queue, u.ravel()),
                                         len(X), c)
            if not np.array_equal(got.get(part.queue), u.argmax(axis=1)):
                raise AssertionError(f"cmeans_labels {dtype} c={c}")
            count += 1
    log(f"cmeans labels: {count} variants")


EXERCISERS = {"cmeans_pass.cl.mako": [exercise_cmeans_pass, exercise_cmeans_fit],
              "cmeans_labels.cl.mako": [exercise_cmeans_labels, exercise_cmeans_fit],
              "cmeans_mma_pass.cl.mako": [exercise_cmeans_mma]}
