"""oclgrind plugin: every GaussianMixture kernel variant on tiny inputs.

Run by tests/harness/oclgrind_driver.py (--only gmm).  The E-step variants
(full / diag covariance, responsibilities stored or not, component records
staged in local memory in several chunks, in one, or read from global
memory, one or two points per work-item; diag also as register tiles of
distance_tile.cl.mako) and the M-step shapes (the GPU's small register
blocks with replicas, its symmetric blocks for full covariances
(gmm_mstep_upper), the CPU's large blocks, the CPU's work-item per
component; tiles smaller than a chunk of rows) run for every precision of
PRECISIONS (float64 sums, float64 data, Kahan-compensated float sums) and
are checked against numpy; then whole fits through the device manager,
resident and streamed in chunks (same model); the initialisations' one-hot
responsibilities (gmm_onehot.cl.mako, from labels and from k rows, a
work-group past the last row) against the host's one-hot matrix (and each
row's own component it writes), and fits
from every init_params, resident and streamed; the tensor-core kernels'
operands made on the device, and the full E kernel with its products
emulated (the diagonal ones are NVIDIA_ONLY: test_gmm_mma_emulated.py).
"""
import dataclasses
import warnings

import numpy as np
import pyopencl.array as cla

import oclclust as oc
from oclclust.passes import gmm as gmm_pass
from oclclust.passes import gmm_specs
from oclclust.runtime import codegen
from oclclust.cluster.mixture import mdl
from oclclust.runtime.partition import DevicePartition
from gmm_mma_full_case import run_full_operands
from gmm_operands import run_operands
from gmm_own import own_case, own_reference, run_own
from gmm_stages import run_stages, stages_case, stages_reference
from oclclust.passes import gmm_mma, gmm_mma_bound, gmm_mma_full, gmm_mma_operands
from oclgrind_driver import PRECISIONS, close, data, managers, mark, profile_for

K = 5


def model(X, full):
    rng = np.random.RandomState(1)
    d = X.shape[1]
    a = rng.normal(size=(K, d, d)) * 0.3 + np.eye(d)
    cov = a @ np.swapaxes(a, 1, 2)
    if not full:
        cov = np.diagonal(cov, axis1=1, axis2=2).copy()
    w = rng.uniform(0.5, 1.5, K)
    return mdl.Model(w / w.sum(), X[[0, 9, 18, 27, 36]].astype(np.float64) + 0.3, cov,
                     mdl.precision_cholesky(cov, full))


def reference(X, m, full):
    """(log p_k(x) + log w_k, lse, resp) in float64."""
    z = X.astype(np.float64)[:, None, :] - m.means[None]
    if full:
        y = np.einsum("nkd,kde->nke", z, m.prec_chol)
        log_det = np.log(np.diagonal(m.prec_chol, axis1=1, axis2=2)).sum(1)
    else:
        y = z * m.prec_chol[None]
        log_det = np.log(m.prec_chol).sum(1)
    d = X.shape[1]
    lp = np.log(m.weights) - 0.5 * d * np.log(2 * np.pi) + log_det - 0.5 * (y ** 2).sum(-1)
    top = lp.max(1, keepdims=True)
    lse = (top + np.log(np.exp(lp - top).sum(1, keepdims=True)))[:, 0]
    return lp, lse, np.exp(lp - lse[:, None])


def estep_variants(base):
    """(label, spec): chunks of 2 of the 5 records (ragged last), all staged
    at once, read from global memory, two points per work-item."""
    def make(**kw):
        return gmm_specs.EStepSpec(**dict(base, **kw))
    yield "chunked ppi=2", make(wg=4, ppi=2, cchunk=2, stage_params=True)
    yield "staged at once", make(wg=4, ppi=1, cchunk=8, stage_params=True)
    yield "global", make(wg=8, ppi=1, cchunk=1 << 20, stage_params=False)
    if not base["full"]:    # register tiles (distance_tile.cl.mako), ragged k and d
        yield "tiled 4x4", make(wg=4, stage_params=False, tiled=True, tm=4, tn=4, rm=2,
                                rn=2, kc=2, vw=2)
        yield "tiled 8x2, 2 rows an item", make(wg=4, stage_params=False, tiled=True, tm=8,
                                                tn=2, rm=2, rn=2, kc=2, vw=1)


def mstep_variants(base, d, full):
    nb_gpu = -(-d // 2)
    yield gmm_specs.MStepSpec(wg=3 * (nb_gpu * nb_gpu if full else nb_gpu), tb=2, nb=nb_gpu,
                        reps=3, tile=4, **base)                 # GPU shape, replicas
    yield gmm_specs.MStepSpec(wg=1, tb=d, nb=1, reps=1, tile=8, **base)   # CPU shape
    # CPU: a work-item per component (ragged last block of components)
    yield gmm_specs.MStepSpec(variant="rowwise", wg=2, tile=4, **base)
    if full and base["acc_double"]:   # symmetric blocks (GPUs), idle items, ragged d
        nb = -(-d // 2)
        yield gmm_specs.MStepUpperSpec(wg=nb * (nb + 1) + 2, tb=2, nb=nb, replicas=2, tile=4,
                                       **{key: v for key, v in base.items() if key != "full"})


def exercise_kernels(device, log):
    count = 0
    for dtype, fp64 in PRECISIONS:
        profile = profile_for(device, fp64, work_group_size=4, groups_per_compute_unit=2)
        X, _ = data(dtype)
        rtol = 1e-4 if dtype == "float32" else 1e-10
        for full in (True, False):
            m = model(X, full)
            lp, lse, resp = reference(X, m, full)
            z = X.astype(np.float64)[:, None, :] - m.means[None]
            base = dict(dtype=dtype, acc_double=fp64, d=X.shape[1], full=full)
            msteps = list(mstep_variants(base, X.shape[1], full))
            esteps = list(estep_variants(base))
            # every E variant with an M variant in turn, the M variants left
            # over with the first E variant
            pairs = [(label, estep, msteps[v % len(msteps)])
                     for v, (label, estep) in enumerate(esteps)]
            pairs += [esteps[0] + (mstep,) for mstep in msteps[len(esteps):]]
            for label, estep, mstep in pairs:
                for store in (True, False):
                    what = f"gmm {dtype} fp64={fp64} full={full} {label} store={store} {mstep}"
                    mark(what)
                    part = DevicePartition(profile, X)
                    # rows in chunks of 13: several ragged tiles each
                    gp = gmm_pass.GmmPass(part, K, full, specs=(estep, mstep), chunks=3)
                    ll, bad = gp.estep(mdl.records(m, full), store_resp=store)
                    close(gp.lse.get(part.queue), lse, f"{what}: lse", rtol)
                    close(ll, lse.sum(), f"{what}: log-likelihood", rtol)
                    if bad or not np.array_equal(gp.labels.get(part.queue), lp.argmax(1)):
                        raise AssertionError(f"{what}: labels or bad={bad}")
                    if not store:
                        continue
                    got = gp.resp[:K * len(X)].get(part.queue).reshape(K, -1).T
                    close(got, resp, f"{what}: resp", rtol)
                    stats = gp.mstep(m.means)
                    close(stats[:, 0], resp.sum(0), f"{what}: N", rtol)
                    close(stats[:, 1:4], np.einsum("nk,nkd->kd", resp, z), f"{what}: S1", rtol)
                    s2 = (np.einsum("nk,nkd,nke->kde", resp, z, z).reshape(K, -1) if full
                          else np.einsum("nk,nkd->kd", resp, z * z))
                    close(stats[:, 4:], s2, f"{what}: S2", rtol)
                    count += 1
    log(f"gmm kernels: {count} variants")


def exercise_fits(device, log):
    """Whole fits, predict_proba and score, resident and streamed: same model."""
    fits = 0
    for dtype, fp64 in PRECISIONS:
        profile = profile_for(device, fp64)
        X, _ = data(dtype, seed=5)
        for cov in ("full", "diag"):
            m = model(X, cov == "full")
            prec = mdl.precisions_of(m.prec_chol, cov == "full")
            params = dict(covariance_type=cov, max_iter=2, tol=0, weights_init=m.weights,
                          means_init=m.means, precisions_init=prec)
            first = None
            for how, mgr in managers(profile, dtype):
                what = f"GaussianMixture {dtype} fp64={fp64} {cov} {how}"
                mark(what)
                codegen.forget_plans("gmm")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    gm = oc.GaussianMixture(K, devices=mgr, **params).fit(X)
                proba = gm.predict_proba(X)
                fits += 1
                if first is None:
                    first = gm, proba
                    continue
                close(gm.means_, first[0].means_, f"{what}: means", 1e-5)
                close(gm.lower_bound_, first[0].lower_bound_, f"{what}: lower bound", 1e-5)
                close(proba, first[1], f"{what}: predict_proba", 1e-5)
    log(f"gmm fits: {fits}")


def onehot_reference(n, k, labels):
    """The host's one-hot responsibilities (n x k) the device's must equal."""
    out = np.zeros((n, k))
    mine = (labels >= 0) & (labels < k)
    out[np.flatnonzero(mine), labels[mine]] = 1
    return out


def exercise_onehot(device, log):
    count = 0
    for dtype, fp64 in PRECISIONS:
        profile = profile_for(device, fp64, work_group_size=8)
        X, _ = data(dtype)
        n = len(X)
        part = DevicePartition(profile, X)
        q = part.queue
        gp = gmm_pass.GmmPass(part, K, False)
        labels = (np.arange(n) % (K + 1) - (np.arange(n) % 7 == 3)).astype(np.int32)  # -1, K: none
        mark(f"gmm_onehot {dtype} fp64={fp64}")
        gp.onehot(K, cla.to_device(q, labels))
        got = gp.resp[:K * n].get(q).reshape(K, n).T
        if not np.array_equal(got, onehot_reference(n, K, labels)):
            raise AssertionError(f"gmm_onehot {dtype}: {got}")
        if not np.array_equal(gp.own.get(q), labels):   # each row's own component: its label
            raise AssertionError(f"gmm_onehot {dtype}: own components")
        count += 1
    log(f"gmm one-hot: {count} variants")


def exercise_init_fits(device, log):
    """Every init_params, resident and streamed in chunks: the same model."""
    fits = 0
    profile = profile_for(device, True)
    X, _ = data("float64", seed=6)
    for init in ("kmeans", "k-means++", "random", "random_from_data"):
        first = None
        for how, mgr in managers(profile, "float64"):
            mark(f"GaussianMixture init {init} {how}")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                gm = oc.GaussianMixture(3, covariance_type="diag", max_iter=1, tol=0,
                                        init_params=init, random_state=0, devices=mgr).fit(X)
            fits += 1
            if first is None:
                first = gm
                continue
            close(gm.means_, first.means_, f"init {init} {how}: means", 1e-10)
    log(f"gmm init fits: {fits}")


def exercise_own(device, log):
    """The tensor-core M step's own sums (gmm_mma_own.cl.mako: plain
    OpenCL) alone: ragged blocks of components, chunks of rows smaller than
    a batch and across batches, stored and log-density responsibilities,
    float32 and TF32-rounded, against numpy."""
    count = 0
    q = device.queue()
    for n, d, k, rows, precision in ((70, 3, 5, 32, "float32"), (200, 40, 3, 150, "tf32")):
        rng = np.random.RandomState(n)
        X, logs, lse, own = own_case(rng, n, d, k)
        spec = gmm_mma.own_spec(d, k, precision)
        spec = dataclasses.replace(spec, cb=2)   # ragged blocks
        means32 = gmm_mma.means_of(rng.uniform(-5, 5, (k, d)) + 40.0, spec.dp)
        resp = np.exp(logs - lse).astype(np.float32)
        for normalize, r in ((0, resp), (1, logs)):
            what = f"gmm_own {spec} normalize={normalize}"
            mark(what)
            got = run_own(q, spec, X, r, lse, normalize, means32, own, k, rows)
            want = own_reference(X, r, lse, normalize, means32, own, k, rows, precision)
            ok = np.isfinite(want)
            close(got[ok], want[ok], what, 1e-5)
            if not np.array_equal(np.isfinite(got), ok):
                raise AssertionError(f"{what}: non-finite entries differ")
            count += 1
    log(f"gmm own sums: {count} variants")


def exercise_stages(device, log):
    """The tensor-core M kernel's stage flags (gmm_mma_stages.cl.mako:
    plain OpenCL) against numpy's: stages of 8 rows, ragged chunks, blocks
    and words, stored and log-density responsibilities."""
    q = device.queue()
    spec = gmm_mma.MmaStagesSpec(dtype="float32", wg=32, stage=8, cb=2)
    for normalize in (0, 1):
        resp, lse, own = stages_case(np.random.RandomState(6), 700, 5, normalize, 12)
        mark(f"gmm_stages {spec} normalize={normalize}")
        if not np.array_equal(run_stages(q, spec, resp, lse, own, normalize, 300),
                              stages_reference(resp, lse, own, normalize, 300, spec)):
            raise AssertionError(f"gmm_stages normalize={normalize}: not numpy's flags")
    log("gmm stages: 2 variants")


def exercise_central(device, log):
    """The tensor-core M step's totals made central on the device
    (gmm_mma_central.cl.mako) against central_stats, bit for bit: a d
    short of its padding, means far from their shift."""
    q = device.queue()
    k, d, dp = 5, 11, 16
    rng = np.random.RandomState(3)
    raw = rng.normal(size=(k, gmm_mma.mstep_size(d))) * 1e3
    means = rng.normal(size=(k, d)) * 7 + 40.0
    shift, m32 = gmm_mma.shift_of(means, dp), gmm_mma.means_of(means, dp)
    out = cla.empty(q, k * (1 + 2 * d), np.float64)
    mark(f"gmm_mma_central k={k} d={d}")
    gmm_mma.enqueue_central(q, cla.to_device(q, raw), k, d, dp, cla.to_device(q, means),
                            cla.to_device(q, shift), cla.to_device(q, m32), out)
    if not np.array_equal(out.get().reshape(k, -1), gmm_mma.central_stats(raw, means, shift, m32)):
        raise AssertionError("gmm_mma_central: not central_stats' bits")
    log("gmm central: 1 variant")


def exercise_operands(device, log):
    """The tensor-core E kernel's operands made on the device
    (gmm_mma_operands.cl.mako) against the host's operands: coefs and shift bit
    for bit, consts within a float ulp, the re-check scales (Pmax bit for bit,
    the norms within an ulp); a d short of its padding, rows past k."""
    q = device.queue()
    k, d, dp, kp = 5, 11, 16, 16
    rng = np.random.RandomState(5)
    var = rng.uniform(0.5, 2, (k, d))
    m = mdl.Model(np.full(k, 1 / k), rng.normal(size=(k, d)) * 7 + 40.0, var,
                  mdl.precision_cholesky(var, False))
    rec = mdl.records(m, False)
    mark(f"gmm_mma_operands k={k} d={d}")
    got, want = run_operands(q, rec, d, dp, kp), gmm_mma_operands.operands(rec, d, dp, kp)
    scales = gmm_mma_bound.recheck_scales(want[0], d, dp)
    if not (np.array_equal(got[0], want[0]) and np.array_equal(got[2], want[2])
            and np.all(np.abs(got[1] - want[1]) <= np.spacing(np.abs(want[1])))
            and np.array_equal(got[3][:, 0], scales[:, 0])
            and np.all(np.abs(got[3][:, 1] - scales[:, 1]) <= np.spacing(scales[:, 1]))):
        raise AssertionError("gmm_mma_operands: not operands' values")
    log("gmm operands: 1 variant")


def exercise_full_operands(device, log):
    """The tensor-core full E kernel's operands made on the device against
    the host's: factors, consts, padding and shift bit for bit, the offsets
    within two float ulps (their double sums in another order); a d short
    of its padding, components past k."""
    q = device.queue()
    X, _ = data("float32")
    m = model(X, True)
    d = X.shape[1]
    dp, kp = gmm_mma_full.padded(d), 8
    rec = mdl.records(m, True)
    mark(f"gmm_mma_full_operands k={K} d={d}")
    (got, got_shift), (want, want_shift) = (run_full_operands(q, rec, d, dp, kp),
                                            gmm_mma_full.operands(rec, d, dp, kp))
    offsets = gmm_mma_full.parts(got, dp)[1], gmm_mma_full.parts(want, dp)[1]
    close_offsets = np.all(np.abs(offsets[0] - offsets[1])
                           <= 2 * np.spacing(np.abs(offsets[1]) + 1))
    offsets[0][...] = offsets[1]   # (in place: the rest bit for bit)
    if not (close_offsets and np.array_equal(got, want) and np.array_equal(got_shift, want_shift)):
        raise AssertionError("gmm_mma_full_operands: not operands' values")
    log("gmm full operands: 1 variant")


def exercise_full_estep(device, log):
    """The tensor-core full E kernel with its products emulated (one warp a
    work-group, ragged row tiles and chunks of 2 components), responsibilities
    stored (one row tile a warp) and not (two), against numpy in float64."""
    profile = profile_for(device, True)
    X, _ = data("float32")
    m = model(X, True)
    lp, lse, resp = reference(X, m, True)
    d = X.shape[1]
    specs = [gmm_mma_full.MmaFullEStepSpec(d=d, dp=gmm_mma_full.padded(d), kp=6, wg=32, mt=mt,
                                           tn=2, emulate=True) for mt in (1, 2)]
    mstep = next(mstep_variants(dict(dtype="float32", acc_double=True, d=d, full=True), d, True))
    for spec, store in zip(specs, (True, False)):
        what = f"gmm_mma_full_estep mt={spec.mt} store={store}"
        mark(what)
        part = DevicePartition(profile, X)
        gp = gmm_pass.GmmPass(part, K, True, specs=(spec, mstep), chunks=3)
        ll, bad = gp.estep(mdl.records(m, True), store_resp=store)
        close(gp.lse.get(part.queue), lse, f"{what}: lse", 1e-4)
        close(ll, lse.sum(), f"{what}: log-likelihood", 1e-4)
        if bad or not np.array_equal(gp.labels.get(part.queue), lp.argmax(1)):
            raise AssertionError(f"{what}: labels or bad={bad}")
        if store:
            got = gp.resp[:K * len(X)].get(part.queue).reshape(K, -1).T
            close(got, resp, f"{what}: resp", 1e-4)
    log("gmm full tensor-core E kernel (emulated): 2 variants")


def exercise_grid(device, log):
    """The tensor-core M statistics' exact-fold grid on the device
    (gmm_mma_grid.cl.mako) against lsb_for_bounds, bit for bit: a zero
    mean and a zero column (subnormal and zero bounds)."""
    from oclclust.runtime.exact_sums import lsb_for_bounds
    q = device.queue()
    k, d, scale = 3, 5, 64.0
    rng = np.random.RandomState(4)
    means = rng.normal(size=(k, d)) * 1e-160
    means[1] = rng.normal(size=d) * 40
    means[0, 0] = 0.0
    absmax = np.abs(rng.normal(size=d))
    absmax[0] = 0.0
    head = np.arange(2 + 2 * d, dtype=np.int32) - 7
    lsb = cla.empty(q, k * gmm_mma.mstep_size(d), np.int32)
    mark(f"gmm_mma_grid k={k} d={d}")
    gmm_mma.enqueue_grid(q, cla.to_device(q, means), k, d, cla.to_device(q, absmax), scale,
                         cla.to_device(q, head), lsb)
    about = absmax + np.abs(means)
    want = np.concatenate([np.broadcast_to(head, (k, head.size)), lsb_for_bounds(scale * about),
                           lsb_for_bounds(scale * (about * about))], axis=1)
    if not np.array_equal(lsb.get().reshape(k, -1), want):
        raise AssertionError("gmm_mma_grid: not lsb_for_bounds' bits")
    log("gmm grid: 1 variant")


EXERCISERS = {
    "gmm_mma_central.cl.mako": [exercise_central],
    "gmm_mma_grid.cl.mako": [exercise_grid],
    "gmm_mma_operands.cl.mako": [exercise_operands, exercise_full_operands],
    "gmm_mma_full_estep.cl.mako": [exercise_full_estep],
    "gmm_mma_own.cl.mako": [exercise_own],
    "gmm_mma_stages.cl.mako": [exercise_stages],
    "gmm_onehot.cl.mako": [exercise_onehot, exercise_init_fits],
    "gmm_estep.cl.mako": [exercise_kernels, exercise_fits],
    "gmm_mstep.cl.mako": [exercise_kernels, exercise_fits],
    "gmm_mstep_rowwise.cl.mako": [exercise_kernels],
}
