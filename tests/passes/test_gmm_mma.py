"""The tensor-core diagonal GMM E and M steps (oclclust/passes/gmm_mma.py):
their GEMM forms' operands and statistics on every runtime (numpy,
float64); on NVIDIA GPUs with tensor cores the kernels against the
portable ones and a fit against scikit-learn's; elsewhere the same cases
check that the planner offers them nowhere else (the portable kernels run,
the same bits as before).
"""
import dataclasses
import warnings

import numpy as np
import pyopencl.array as cla
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture as SkGMM

import oclclust as oc
from gmm_own import own_case, own_reference, run_own
from gmm_parity import assert_gmm_parity
from gmm_stages import run_stages, stages_case, stages_reference
from oclclust.cluster.mixture import mdl
from oclclust.passes import gmm as gmm_pass
from oclclust.passes import gmm_specs
from oclclust.passes import gmm_mma
from oclclust.passes.lloyd_mma import tensor_cores
from oclclust.runtime import codegen, exact_fold, exact_sums
from oclclust.runtime.partition import DevicePartition


def model(rng, k, d, spread=3.0):
    cov = rng.uniform(0.5, 2, (k, d))
    w = rng.uniform(0.5, 1.5, k)
    return mdl.Model(w / w.sum(), rng.uniform(-spread, spread, (k, d)) + 5.0, cov,
                     mdl.precision_cholesky(cov, False))


def numpy_mstep(X, resp, means):
    """The M statistics [N, S1, S2] about *means* in float64 (n x d rows,
    n x k responsibilities): gmm_mstep.cl.mako's, directly."""
    X, r = np.asarray(X, np.float64), np.asarray(resp, np.float64)
    z = X[None] - np.asarray(means, np.float64)[:, None]          # k x n x d
    return np.concatenate([r.sum(0)[:, None], np.einsum("nk,knd->kd", r, z),
                           np.einsum("nk,knd->kd", r, z * z)], axis=1)


def test_central_stats_from_raw_sums():
    """The M kernel's sums -- the rows a component does not own about the
    shift, those it owns about its float32 mean -- made gmm_mstep.cl.mako's
    [N, S1, S2] about the float64 means (numpy, float64)."""
    rng = np.random.RandomState(1)
    n, d, k = 200, 7, 5
    X = rng.normal(size=(n, d)) + 10.0
    r = rng.dirichlet(np.ones(k), n)
    own = rng.randint(0, k, n)
    means = rng.normal(size=(k, d)) + 10.0
    shift = gmm_mma.shift_of(means, 8)
    m32 = gmm_mma.means_of(means, 8)
    assert m32.dtype == np.float32 and m32.shape == (k, 8) and not m32[:, d:].any()
    mine = own[:, None] == np.arange(k)[None]
    ro, rt = np.where(mine, r, 0), np.where(mine, 0, r)
    xs = X - shift[:d].astype(np.float64)
    zo = X[None] - m32[:, None, :d].astype(np.float64)           # k x n x d
    raw = np.concatenate([rt.sum(0)[:, None], ro.sum(0)[:, None], rt.T @ xs, rt.T @ (xs * xs),
                          np.einsum("nk,knd->kd", ro, zo), np.einsum("nk,knd->kd", ro, zo * zo)],
                         axis=1)
    assert raw.shape == (k, gmm_mma.mstep_size(d))
    np.testing.assert_allclose(gmm_mma.central_stats(raw, means, shift, m32),
                               numpy_mstep(X, r, means), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("d, k", [(5, 13), (24, 100), (128, 33)])
def test_central_stats_on_the_device_are_the_hosts(profile, queue, d, k):
    """gmm_mma_central.cl.mako (every runtime: what a fit on one device, or
    totalled on one, reads) gives central_stats' bits: sums spanning
    magnitudes, means and their float32 shift and means."""
    if not profile.fp64:
        pytest.skip("the statistics are double")
    rng = np.random.RandomState(d + k)
    dp = -(-d // 8) * 8
    raw = rng.normal(size=(k, gmm_mma.mstep_size(d))) * 10.0 ** rng.randint(-3, 9, (k, 1))
    means = rng.normal(size=(k, d)) * 30 + 1e3 / 3
    shift, m32 = gmm_mma.shift_of(means, dp), gmm_mma.means_of(means, dp)
    q = queue
    out = cla.empty(q, k * (1 + 2 * d), np.float64)
    gmm_mma.enqueue_central(q, cla.to_device(q, raw), k, d, dp, cla.to_device(q, means),
                            cla.to_device(q, shift), cla.to_device(q, m32), out)
    np.testing.assert_array_equal(out.get().reshape(k, -1),
                                  gmm_mma.central_stats(raw, means, shift, m32))


@pytest.mark.parametrize("d, k, rows, scale", [(13, 21, 1.0, 1.0), (37, 40, 1e30, 1e150),
                                               (5, 3, 1e-30, 1e-160)])
def test_grid_on_the_device_is_the_hosts(profile, d, k, rows, scale):
    """The tensor-core M statistics' exact-fold grid made on the device
    (gmm_mma_grid.cl.mako: where the words stay there, the host never
    makes it) against exact_sums.lsb_for_bounds of the bounds, bit for
    bit: means spanning magnitudes, one zero, a column of zero rows, huge
    and tiny scales (bounds past float64's range, subnormal ones)."""
    if not profile.fp64:
        pytest.skip("the M kernel's partial sums are double")
    rng = np.random.RandomState(d + k)
    X = (rng.normal(size=(64, d)) * rows).astype(np.float32)
    X[:, 0] = 0.0
    specs = (portable_specs(profile, d, k)[0],
             next(gmm_mma.mstep_specs(profile, np.float32, d, emulate=True)))
    means = rng.normal(size=(k, d)) * 10.0 ** rng.randint(-5, 6, (k, d)) * scale
    means[0, 0] = 0.0
    gp = gmm_pass.GmmPass(DevicePartition(profile, X), k, False, specs=specs)
    gmm_pass.wait(gp._mstep_put(means))
    with np.errstate(over="ignore"):   # (bounds past float64's: the grid of 1.0)
        want = grid_reference(gp, means)
    fold = gp.folds[k]
    np.testing.assert_array_equal(fold.lsb_dev.get(gp.part.queue)[:want.size].reshape(k, -1),
                                  want)
    assert fold.lsb is None   # read back only where words are taken on the host


def grid_reference(gp, means):
    """The grid of a tensor-core M pass's statistics about *means*, in numpy."""
    k, d = means.shape
    absmax, wmax = exact_fold.magnitudes_of(gp.part)
    bound, lsb = gp.block_rows * wmax, exact_sums.lsb_for_bounds
    about = absmax + np.abs(means)
    spread = absmax + np.abs(gmm_mma.shift_of(means, gp.mspec.dp)[:d])
    want = np.concatenate([np.broadcast_to(lsb(np.full(2, bound)), (k, 2)),
                           np.broadcast_to(lsb(bound * spread), (k, d)),
                           np.broadcast_to(lsb(bound * (spread * spread)), (k, d)),
                           lsb(bound * about), lsb(bound * (about * about))], axis=1)
    return want


@pytest.mark.parametrize("kind", ["soft", "hard"])
def test_settled_mstep_is_the_hosts(profile, kind):
    """An M step settled on the device (one partition: its exact totals
    rounded and, from the tensor-core kernel, made central there) gives
    the bits of the words read and settled on the host, made central there."""
    if not profile.fp64:
        pytest.skip("the M kernel's partial sums are double")
    n, d, k = 203, 13, 21
    X, resp, means = mstep_case(kind, n, d, k)
    specs = (portable_specs(profile, d, k)[0],
             next(gmm_mma.mstep_specs(profile, np.float32, d, emulate=True)))
    gp = gmm_pass.GmmPass(DevicePartition(profile, X), k, False, specs=specs, chunks=2)
    assert gp.exact
    gp.set_resp(resp)
    settled, raw = gp.mstep_sums(means, settle=True)
    assert not raw
    np.testing.assert_array_equal(settled, gp.mstep(means))


def test_offered_only_with_tensor_cores(profile):
    """First where gmm_mma asks and the device has tensor cores; never for
    full covariances, float64 or d above MAX_D (the M kernel likewise)."""
    on = profile.replace(gmm_mma=1)
    first = next(gmm_specs._estep_specs(on, np.float32, 24, False, 100))
    assert isinstance(first, gmm_mma.MmaEStepSpec) == tensor_cores(profile)
    for args in ((np.float32, 24, True), (np.float64, 24, False),
                 (np.float32, gmm_mma.MAX_D + 1, False)):
        assert not isinstance(next(gmm_specs._estep_specs(on, *args, 100)),
                              gmm_mma.MmaEStepSpec)
    off = next(gmm_specs._estep_specs(profile.replace(gmm_mma=0), np.float32, 24, False, 100))
    assert not isinstance(off, gmm_mma.MmaEStepSpec)
    on = profile.replace(gmm_mma_mstep=1)
    first = next(gmm_specs._mstep_specs(on, np.float32, 24, False))
    assert isinstance(first, gmm_mma.MmaMStepSpec) == (tensor_cores(profile) and profile.fp64)
    for args in ((np.float32, 24, True), (np.float64, 24, False),
                 (np.float32, gmm_mma.MAX_D + 1, False)):
        assert not isinstance(next(gmm_specs._mstep_specs(on, *args)), gmm_mma.MmaMStepSpec)


def estep(profile, X, m, store):
    codegen.forget_plans("gmm")
    part = DevicePartition(profile, X)
    k = m.means.shape[0]
    gp = gmm_pass.GmmPass(part, k, False)
    ll, bad = gp.estep(mdl.records(m, False), store_resp=store)
    q = part.queue
    resp = gp.resp[:k * len(X)].get(q).reshape(k, -1) if store else None
    return gp.espec, gp.lse.get(q), gp.labels.get(q), resp, ll, bad


# several row tiles and chunks, ragged d (dp > 64: one m16 tile a warp) and k
SHAPES = [(203, 5, 13), (3001, 128, 300), (1000, 37, 33), (4099, 24, 100), (517, 64, 17)]


@pytest.mark.parametrize("n, d, k", SHAPES)
def test_estep_matches_the_per_point_kernel(profile, n, d, k):
    """lse, responsibilities and the log-likelihood within float32 rounding
    of the per-point kernel's, the labels equal off near ties, NaN rows
    counted alike; the mma kernel planned exactly where tensor cores are."""
    rng = np.random.RandomState(n)
    m = model(rng, k, d)
    X = (m.means[np.arange(n) % k] + rng.normal(size=(n, d))).astype(np.float32)
    X[7] = np.nan
    for store in (True, False):
        got = estep(profile.replace(gmm_mma=1), X, m, store)
        want = estep(profile.replace(gmm_mma=0, gmm_distance_tiles=0), X, m, store)
        assert isinstance(got[0], gmm_mma.MmaEStepSpec) == tensor_cores(profile)
        assert got[5] == want[5] == 1
        ok = np.isfinite(want[1])
        np.testing.assert_allclose(got[1][ok], want[1][ok], rtol=1e-5, atol=1e-3)
        # labels: equal wherever the best two log-densities are not within rounding
        lp = want[3] if want[3] is not None else None
        same = got[2] == want[2]
        if lp is not None:
            top = np.sort(np.log(np.maximum(lp[:, ok].astype(np.float64), 1e-300)), axis=0)[-2:]
            assert same[ok][top[1] - top[0] > 1e-3].all()
            np.testing.assert_allclose(got[3][:, ok], want[3][:, ok], atol=1e-3)
        else:
            assert same.mean() > 0.99
        assert got[4] == pytest.approx(want[4], rel=1e-5)


@pytest.mark.parametrize("n, d, k", SHAPES)
def test_mstep_matches_the_tiled_kernel(profile, n, d, k):
    """The M statistics from the same responsibilities (set from the host)
    about the same means: within float32 rounding of the
    portable kernel's sums (relative to their scale); the mma kernel planned
    exactly where tensor cores (and fp64) are."""
    rng = np.random.RandomState(n + 1)
    m = model(rng, k, d)
    X = (m.means[np.arange(n) % k] + rng.normal(size=(n, d))).astype(np.float32)
    resp = rng.dirichlet(np.ones(k), n).astype(np.float32)
    got, want = [], []
    for mma, out in ((1, got), (0, want)):
        codegen.forget_plans("gmm")
        prof = profile.replace(gmm_mma=mma, gmm_mma_mstep=mma, gmm_distance_tiles=0)
        gp = gmm_pass.GmmPass(DevicePartition(prof, X), k, False, chunks=3)
        gp.set_resp(resp)
        out.append(gp.mstep(m.means + 0.25))
        out.append(gp.mspec)
    assert isinstance(got[1], gmm_mma.MmaMStepSpec) == (tensor_cores(profile) and profile.fp64)
    scale = np.abs(want[0]).max(axis=0, keepdims=True) + 1.0
    np.testing.assert_allclose(got[0] / scale, want[0] / scale, rtol=0, atol=2e-6)


@pytest.mark.parametrize("d", [3, 40])
def test_fit_matches_sklearn(profile, d):
    """A diag fit with the tensor-core E step (where there are tensor cores)
    from the same start as scikit-learn's, at the GMM float32 tolerances."""
    rng = np.random.RandomState(d)
    k, n = 3, 300
    X = rng.uniform(-4, 4, (k, d))[np.arange(n) % k] + rng.normal(size=(n, d))
    start = dict(weights_init=np.full(k, 1.0 / k), means_init=X[:k] + 0.1,
                 precisions_init=np.ones((k, d)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sk = SkGMM(k, covariance_type="diag", tol=0, max_iter=8, **start).fit(X)
        ours = oc.GaussianMixture(k, covariance_type="diag", tol=0, max_iter=8,
                                  devices=oc.DeviceManager([profile.replace(
                                      gmm_mma=1, gmm_mma_mstep=1)]),
                                  **start).fit(X.astype(np.float32))
    used = {key[2]: plan[0] for key, plan in codegen.plans("gmm").items()
            if key[0].term("gmm_mma_mstep") and key[1] is not None and key[1].d == d}
    assert isinstance(used["gmm_estep"], gmm_mma.MmaEStepSpec) == tensor_cores(profile)
    assert isinstance(used["gmm_mstep"], gmm_mma.MmaMStepSpec) == (
        tensor_cores(profile) and profile.fp64)
    assert_gmm_parity(ours, sk, X, np.float32)


@pytest.mark.parametrize("lanes, packed, min_dk", [(0, 0, 0), (1, 0, 0), (1, 1, 96), (1, 1, 97)])
@pytest.mark.parametrize("precision", ["tf32", "bf16"])
def test_lane_recheck_term(profile, precision, lanes, packed, min_dk):
    """gmm_mma_lane_recheck plans the one-product E kernel whose re-check the
    rows' lanes make, gmm_mma_packed_chunks the one whose "bf16" chunks are
    staged as bfloat16 pairs (where there are tensor cores), and
    gmm_mma_one_product_min_dk past d K the 3xTF32 one instead; the fit's
    lower bound is float32's within the E step's bound."""
    rng = np.random.RandomState(lanes)
    k, d, n = 4, 24, 2000
    X = (rng.uniform(-4, 4, (k, d))[np.arange(n) % k] + rng.normal(size=(n, d))).astype(np.float32)
    fits = {}
    for prec in ("float32", precision):
        codegen.forget_plans("gmm")
        prof = profile.replace(gmm_mma=1, gmm_mma_mstep=1, gmm_mma_lane_recheck=lanes,
                               gmm_mma_packed_chunks=packed, gmm_mma_one_product_min_dk=min_dk)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fits[prec] = oc.GaussianMixture(k, covariance_type="diag", tol=0, max_iter=5,
                                            random_state=0, precision=prec,
                                            devices=oc.DeviceManager([prof])).fit(X)
    used = [plan[0] for key, plan in codegen.plans("gmm").items()
            if key[2] == "gmm_estep" and key[1] is not None and key[1].d == d]
    assert len(used) == 1
    assert isinstance(used[0], gmm_mma.MmaEStepSpec) == tensor_cores(profile)
    if tensor_cores(profile):
        planned = precision if d * k >= min_dk else "float32"
        assert used[0].lane_recheck == bool(lanes) and used[0].precision == planned
        assert used[0].packed == (bool(packed) and planned == "bf16")
    assert fits[precision].lower_bound_ == pytest.approx(fits["float32"].lower_bound_, rel=1e-5)


def portable_specs(profile, d, k):
    """The (E, M) specs the planners give without tensor cores."""
    off = profile.replace(gmm_mma=0, gmm_mma_mstep=0, gmm_distance_tiles=0)
    return (next(gmm_specs._estep_specs(off, np.float32, d, False, k)),
            next(gmm_specs._mstep_specs(off, np.float32, d, False)))


def f32(a):
    return np.asarray(a, np.float32).astype(np.float64)


def reference_mstep(X, resp, means, block=8):
    """numpy_mstep a few components at a time (k x n x d stays small)."""
    return np.concatenate([numpy_mstep(X, resp[:, j:j + block], means[j:j + block])
                           for j in range(0, len(means), block)])


def mstep_case(kind, n, d, k):
    """(X float32, responsibilities n x k float32, means float64): "soft"
    Dirichlet rows over components spread about 50; "hard" each row one-hot in its component, the components
    narrow (sd 1e-3) and far from the origin -- about one shift the scatter
    cancels 9 digits; "sparse" the same with a second component at 1/4 on
    every 47th row (most of the tensor-core M kernel's stages hold only
    their rows' own components, some one other); "rows" the
    one-hot start of k distinct rows (each component's scatter zero)
    about those rows.  The means are float32
    values (the portable kernel takes z = x - mu in float32: a mean's own
    rounding, 4e-6 at 50, is not what is tested here)."""
    rng = np.random.RandomState(n + d + k)
    centres = rng.uniform(-10, 10, (k, d)) + 50.0
    labels = np.arange(n) % k
    rng.shuffle(labels)
    if kind == "soft":
        X = (centres[labels] + rng.normal(size=(n, d))).astype(np.float32)
        resp = rng.dirichlet(np.full(k, 0.3), n).astype(np.float32)
        return X, resp, f32(centres + rng.normal(size=(k, d)))
    X = (centres[labels] + 1e-3 * rng.normal(size=(n, d))).astype(np.float32)
    if kind in ("hard", "sparse"):
        resp = np.zeros((n, k), np.float32)
        resp[np.arange(n), labels] = 1
        if kind == "sparse":
            extra = np.arange(3, n, 47)
            resp[extra, labels[extra]] = 0.75
            resp[extra, (labels[extra] + 1 + extra) % k] = 0.25
        return X, resp, f32(centres + 1e-4 * rng.normal(size=(k, d)))
    rows = rng.choice(n, k, replace=False)
    resp = np.zeros((n, k), np.float32)
    resp[rows, np.arange(k)] = 1
    return X, resp, X[rows].astype(np.float64)


def check_mstep(got, want):
    """N to float32 rounding; S1 and S2 within 1e-5 of each component's own
    scale (sqrt(N S2), S2): relative to the scatter, not to the raw sums."""
    d = (want.shape[1] - 1) // 2
    n, s1, s2 = want[:, :1], want[:, 1:1 + d], want[:, 1 + d:]
    np.testing.assert_allclose(got[:, :1], n, rtol=1e-6, atol=1e-6)
    assert np.all(np.abs(got[:, 1:1 + d] - s1) <= 1e-5 * np.sqrt(n * s2) + 1e-9)
    assert np.all(np.abs(got[:, 1 + d:] - s2) <= 1e-5 * s2 + 1e-9)


def tf32_round(a):
    """float32 values rounded to TF32 as cvt.rna does (nearest, ties away:
    tf32_split.cl's tf32_bits), as float64."""
    bits = np.asarray(a, np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)


@pytest.mark.parametrize("precision", ["float32", "tf32"])
@pytest.mark.parametrize("kind", ["soft", "hard", "rows"])
@pytest.mark.parametrize("n, d, k", SHAPES)
def test_mstep_matches_numpy(profile, kind, n, d, k, precision):
    """The M pass the planner gives where gmm_mma_mstep asks (tensor cores:
    the mma kernel, else the portable one) against float64 numpy on ragged
    shapes: responsibilities set from the host (one-hot on k rows too:
    the start scikit-learn's random_from_data makes); narrow components
    far from the origin included.  "tf32": the statistics of the responsibilities rounded to TF32 (elsewhere the
    same as float32's)."""
    X, resp, means = mstep_case(kind, n, d, k)
    codegen.forget_plans("gmm")
    prof = profile.replace(gmm_mma=1, gmm_mma_mstep=1)
    gp = gmm_pass.GmmPass(DevicePartition(prof, X), k, False, chunks=3, precision=precision)
    assert isinstance(gp.mspec, gmm_mma.MmaMStepSpec) == (tensor_cores(profile) and profile.fp64)
    if isinstance(gp.mspec, gmm_mma.MmaMStepSpec):
        assert gp.mspec.precision == precision
    check_mstep_of(gp, X, resp, means, precision)


def check_mstep_of(gp, X, resp, means, precision="float32"):
    """gp's M step against numpy's, its responsibilities set from the host
    in two blocks, the second at an offset; a fast *precision*'s kernel
    against the statistics of the responsibilities rounded to TF32 (its
    contract)."""
    n = len(X)
    gp.set_resp(resp[:n // 3])
    gp.set_resp(resp[n // 3:], n // 3)
    fast = isinstance(gp.mspec, gmm_mma.MmaMStepSpec) and gp.mspec.precision != "float32"
    check_mstep(gp.mstep(means), reference_mstep(X, tf32_round(resp) if fast else resp, means))


@pytest.mark.parametrize("kind, precision", [("hard", "float32"), ("rows", "float32"),
                                             ("soft", "tf32"), ("hard", "tf32")])
def test_emulated_mstep_matches_numpy(profile, kind, precision):
    """The tensor-core M kernel with its products emulated (every runtime):
    the cases the raw sums about one shift got wrong, against numpy; "tf32"
    against the statistics of its TF32-rounded responsibilities."""
    if not profile.fp64:
        pytest.skip("the M kernel's partial sums are double")
    n, d, k = 203, 13, 21
    X, resp, means = mstep_case(kind, n, d, k)
    specs = (portable_specs(profile, d, k)[0],
             next(gmm_mma.mstep_specs(profile, np.float32, d, emulate=True,
                                      precision=precision)))
    gp = gmm_pass.GmmPass(DevicePartition(profile, X), k, False, specs=specs, chunks=2)
    check_mstep_of(gp, X, resp, means, precision)


@pytest.mark.parametrize("normalize", [0, 1], ids=["stored", "log-densities"])
def test_stage_flags_match_numpy(profile, normalize):
    """gmm_mma_stages.cl.mako's flags against numpy's rule: a stage's bit
    set where one of its rows has a responsibility for a component of the
    block, not its own, that may not be zero (stored: not zero or NaN;
    log-densities: within 120 of the row's lse, or a NaN lse's row with a
    value not zero); ragged chunks, blocks and words."""
    n, k, rows = 5000, 37, 1500
    spec = gmm_mma.MmaStagesSpec(dtype="float32", stage=32, cb=16)
    resp, lse, own = stages_case(np.random.RandomState(5), n, k, normalize, 40)
    q = DevicePartition(profile, np.zeros((1, 1), np.float32)).queue
    want = stages_reference(resp, lse, own, normalize, rows, spec)
    assert want.any() and not want.all()
    np.testing.assert_array_equal(run_stages(q, spec, resp, lse, own, normalize, rows), want)


@pytest.mark.parametrize("precision", ["float32", "tf32"])
def test_mstep_skips_the_stages_without_products(profile, precision):
    """The tensor-core M kernel (on tensor cores where there are some, else
    emulated) skips a stage whose A values are all zero: the same
    statistics, bit for bit, as the kernel that reads every stage, on
    responsibilities whose stages are mostly their rows' own components
    and some not ("sparse"), each component's N every responsibility's."""
    if not profile.fp64:
        pytest.skip("the M kernel's partial sums are double")
    emulate = not tensor_cores(profile)
    n, d, k = (2100, 13, 21) if emulate else (3001, 128, 300)   # past 32 stages a chunk
    X, resp, means = mstep_case("sparse", n, d, k)
    spec = next(gmm_mma.mstep_specs(profile, np.float32, d, emulate=emulate, precision=precision))
    got = []
    for skip in (True, False):
        specs = (portable_specs(profile, d, k)[0], dataclasses.replace(spec, skip_stages=skip))
        gp = gmm_pass.GmmPass(DevicePartition(profile, X), k, False, specs=specs, chunks=2)
        gp.set_resp(resp[:n // 3])
        gp.set_resp(resp[n // 3:], n // 3)
        got.append(gp.mstep(means))
    np.testing.assert_array_equal(got[0], got[1])
    rounded = tf32_round(resp) if precision != "float32" else resp.astype(np.float64)
    np.testing.assert_allclose(got[0][:, 0], rounded.sum(axis=0), rtol=1e-6)


@pytest.mark.one_runtime       # host code alone
@pytest.mark.parametrize("d", [1, 5, 24, 37, 64, 128])
def test_own_kernel_fits_its_local_memory(d):
    """own_spec's blocks and scan steps fit OWN_LOCAL, which fits a GPU's
    budget (NVIDIA's 48 KB at the default local_memory_fraction 0.75): one
    spec is planned, so one that did not fit would fail the fit."""
    assert gmm_mma.OWN_LOCAL <= 0.75 * 48 * 1024
    for k in (1, 3, 16, 100, 1024):
        spec = gmm_mma.own_spec(d, k)
        assert spec.local_bytes() <= gmm_mma.OWN_LOCAL and spec.wg >= d
        assert spec.cb >= min(k, 8) and spec.batch == gmm_mma.OWN_BATCH


@pytest.mark.covering(2)
@pytest.mark.parametrize("batch", [2, gmm_mma.OWN_BATCH])
@pytest.mark.parametrize("precision", ["float32", "tf32"])
@pytest.mark.parametrize("n, d, k, rows", [(203, 5, 13, 64), (517, 37, 40, 128),
                                           (300, 128, 33, 100), (1000, 24, 100, 4096)])
def test_own_sums_match_numpy(profile, n, d, k, rows, precision, batch):
    """The M step's own sums (gmm_mma_own.cl.mako, plain OpenCL on every
    runtime): per chunk of rows and component, N, sum r x'' and sum r x''^2
    over the rows it owns, against float64 sums of the same float32 values;
    rows owned by no component or another partition's left out, a NaN row
    NaN in its component alone, blocks of components ragged, responsibilities
    stored and normalised from log-densities, rounded to TF32 for "tf32";
    chunks of one scan step and of several (batch 2: 1000 rows, 4 steps)."""
    if not profile.fp64:
        pytest.skip("the own sums are double")
    rng = np.random.RandomState(n + k)
    X, logs, lse, own = own_case(rng, n, d, k)
    spec = dataclasses.replace(gmm_mma.own_spec(d, k, precision), batch=batch)
    assert spec.wg >= d and (spec.cb < k or spec.cb // 2 < k)
    means32 = gmm_mma.means_of(rng.uniform(-5, 5, (k, d)) + 40.0, spec.dp)
    q = DevicePartition(profile, X).queue
    resp = np.exp(logs - lse).astype(np.float32)
    for normalize, r in ((0, resp), (1, logs)):
        got = run_own(q, spec, X, r, lse, normalize, means32, own, k, rows)
        want = own_reference(X, r, lse, normalize, means32, own, k, rows, precision)
        others = np.ones(got.shape[-1], bool)
        others[1], others[2 + 2 * d:] = False, False
        assert not got[..., others].any()
        # each responsibility's exp within a few float32 ulps of numpy's
        scale = own_reference(X, r, lse, normalize, means32, own, k, rows, precision, True)
        ok = np.isfinite(want)
        assert np.array_equal(np.isfinite(got), ok)
        assert np.all(np.abs(got - want)[ok] <= 2e-6 * scale[ok] + 1e-12)
        bad = np.isnan(got).any(axis=-1)
        assert bad.sum() == (0 <= own[3] < k)


def tensor_core_pass(profile, emulate, seed):
    """(GmmPass in chunks of rows, its diag Model) of the tensor-core E and M
    kernels where the device plans them (4099 x 24, K=100; else the
    portable ones), or *emulate*d on every runtime (203 x 13, K=21); the
    test skipped without fp64 (the M kernel's partial sums are double)."""
    if not profile.fp64:
        pytest.skip("the M kernel's partial sums are double")
    n, d, k = (4099, 24, 100) if not emulate else (203, 13, 21)
    rng = np.random.RandomState(k + seed)
    m = model(rng, k, d)
    X = (m.means[np.arange(n) % k] + rng.normal(size=(n, d))).astype(np.float32)
    specs = None
    if emulate:
        specs = (next(gmm_mma.estep_specs(profile, np.float32, d, k, emulate=True)),
                 next(gmm_mma.mstep_specs(profile, np.float32, d, emulate=True)))
    codegen.forget_plans("gmm")
    prof = profile.replace(gmm_mma=1, gmm_mma_mstep=1)
    return gmm_pass.GmmPass(DevicePartition(prof, X), k, False, specs=specs, chunks=2), m


@pytest.mark.parametrize("emulate", [False, True], ids=["planned", "emulated"])
def test_mstep_normalises_the_log_densities(profile, emulate):
    """An EM pass's responsibilities left as log-densities by the tensor-core
    E kernel and normalised by the M kernel as it reads them (for_mstep):
    the same statistics, bit for bit, as the E kernel's own normalisation
    (tensor cores planned where there are some; emulated on every runtime);
    a score's responsibilities are normalised on the device as before."""
    gp, m = tensor_core_pass(profile, emulate, 0)
    n, k = gp.part.n, gp.k
    fused = gp.mma and gp.mma_m
    assert fused == (emulate or (tensor_cores(profile) and profile.fp64))
    records, means = mdl.records(m, False), m.means + 0.25
    q = gp.part.queue
    gp.estep_sums(records)
    normalised = gp.resp[:k * n].get(q)
    plain = gp.mstep(means)
    gp.estep_sums(records, for_mstep=True)
    assert gp.resp_log == fused
    if fused:   # the log-densities stay: their exp over each row sums to 1
        logs = gp.resp[:k * n].get(q).reshape(k, n).astype(np.float64)
        np.testing.assert_allclose(np.exp(logs - gp.lse.get(q)).sum(axis=0), 1, rtol=1e-5)
    np.testing.assert_array_equal(gp.mstep(means), plain)
    gp.estep_sums(records)            # a score's: normalised on the device
    assert not gp.resp_log
    np.testing.assert_array_equal(gp.resp[:k * n].get(q), normalised)


@pytest.mark.parametrize("emulate", [False, True], ids=["planned", "emulated"])
def test_em_launch_is_the_two_steps_one_after_the_other(profile, emulate):
    """An EM pass launched at once (em_launch: the tensor-core M kernel's
    inputs made and sent on a queue of their own while the E kernel runs)
    gives the log-likelihood and statistics, bit for bit, of estep_sums
    then mstep_sums; twice, about other means, settled on the device and
    not."""
    gp, m = tensor_core_pass(profile, emulate, 1)
    assert gp.mma_m == (emulate or (tensor_cores(profile) and profile.fp64))
    records = mdl.records(m, False)
    for moved, settle in ((0.25, False), (-0.5, True)):
        means = m.means + moved
        ll, bad = gp.estep_sums(records, for_mstep=True)
        stats, raw = gp.mstep_sums(means)
        want = (exact_sums.settle(ll), bad,
                gmm_mma.central(exact_sums.settle(stats), means, raw))
        got_ll, got_bad, got_stats, got_raw = gp.em_collect(gp.em_launch(records, means, settle))
        got_stats = gmm_mma.central(exact_sums.settle(got_stats), means, got_raw)
        assert (float(exact_sums.settle(got_ll)), got_bad) == (float(want[0]), want[1])
        np.testing.assert_array_equal(got_stats, want[2])


@pytest.mark.parametrize("others", [(1,), (1, 0)], ids=["alike", "mixed"])
def test_one_m_kernel_for_every_device(profile, others, monkeypatch):
    """A fit's chunks run one kind of M kernel (their exact sums add only to
    their like): the tensor-core one where every device of the fit plans it,
    the portable one on all of them where one device does not (a GPU beside
    a CPU runtime) -- the profiles of the devices that hold rows, as
    GmmShards reads them (one shard a device)."""
    from oclclust.cluster.mixture import gmm_shards
    rng = np.random.RandomState(3)
    X = rng.normal(size=(500, 24)).astype(np.float32)
    means = X[:7].astype(np.float64)
    data = oc.DeviceManager([profile]).scatter(X)
    monkeypatch.setattr(gmm_shards, "holding_profiles", lambda data: [
        profile.replace(gmm_mma=1, gmm_mma_mstep=t) for t in others])
    codegen.forget_plans("gmm")
    shards = gmm_shards.GmmShards(data, 7, False)
    onehot = np.zeros((500, 7), np.float32)
    onehot[np.arange(7), np.arange(7)] = 1   # component j: row j alone
    shards.map(lambda chunk, gp: gp.set_resp(onehot[chunk.offset:chunk.offset + chunk.n]))
    stats = shards.resp_stats(means)
    kinds = {isinstance(shards.state(c).mspec, gmm_mma.MmaMStepSpec) for c in data.chunks}
    assert kinds == {len(others) == 1 and tensor_cores(profile) and profile.fp64}
    np.testing.assert_allclose(stats[:, 0], 1.0, rtol=1e-6)   # one row a component
