"""The tensor-core full-covariance GMM E kernel (oclclust/passes/
gmm_mma_full.py): its operands (host and device), the kernel -- emulated in
plain OpenCL on every runtime, planned on tensor cores -- against the
portable full kernel, and full and tied fits against scikit-learn's with
it planned (where there are tensor cores; elsewhere the planner offers it
nowhere and the portable kernels run).
"""
import dataclasses
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture as SkGMM

import oclclust as oc
from gmm_estep_parity import assert_estep_close, estep_outputs
from gmm_mma_full_case import full_case, run_full_operands
from gmm_parity import assert_gmm_parity
from oclclust.cluster.mixture import mdl
from oclclust.passes import gmm_mma_full, gmm_specs
from oclclust.passes.gmm_mma_operands import full_layout
from oclclust.passes.lloyd_mma import tensor_cores
from oclclust.runtime import codegen


@pytest.mark.one_runtime       # host code alone
@pytest.mark.parametrize("d, k", [(5, 13), (24, 100), (64, 7)])
def test_operands_give_the_log_densities(d, k):
    """c_j - 1/2 |(x - s)^T U_j - b_j|^2 is log w_j + log N(x | mu_j,
    Sigma_j): the records' per-point form, in float64, the data far from
    the origin."""
    rng = np.random.RandomState(d)
    m, X = full_case(rng, 50, d, k)
    rec = mdl.records(m, True)
    dp, kp = gmm_mma_full.padded(d), -(-k // 8) * 8
    packed, shift = gmm_mma_full.operands(rec, d, dp, kp)
    factors, offsets, consts = gmm_mma_full.parts(packed, dp)
    assert factors.shape == (kp, dp, dp) and offsets.shape == (kp, dp) and shift.shape == (dp,)
    assert not packed[k:].any() and not factors[:, d:].any() and not factors[:, :, d:].any()
    assert not np.tril(factors[:, :d, :d], -1).any()
    assert np.count_nonzero(packed[:k]) == k * (d * (d + 1) // 2 + d + 1)   # (all else zero)
    xs = np.zeros((len(X), dp))
    xs[:, :d] = X - shift[:d].astype(np.float64)
    z = np.einsum("nc,jce->jne", xs, factors[:k].astype(np.float64)) - offsets[:k, None]
    gemm = consts[:k, None].astype(np.float64) - 0.5 * (z * z).sum(-1)
    white = np.einsum("jnc,jce->jne", X[None] - m.means[:, None], m.prec_chol)
    direct = rec[:, :1] - 0.5 * (white * white).sum(-1)
    np.testing.assert_allclose(gemm, direct, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("d, k", [(5, 13), (24, 100), (64, 9)])
def test_operands_on_the_device_are_the_hosts(queue, profile, d, k):
    """enqueue_operands (made on the device from the double records) gives
    operands' factors, constants, padding and shift bit for bit, its
    offsets to float32's rounding (a double sum in order, numpy's einsum),
    zero past k and d; a zero weight's -inf constant too."""
    if not profile.fp64:
        pytest.skip("the records are double")
    rng = np.random.RandomState(d + k)
    m, _ = full_case(rng, 1, d, k)
    m = mdl.Model(np.where(np.arange(k) == 1, 0.0, m.weights), m.means, m.covariances,
                  m.prec_chol)
    rec = mdl.records(m, True)
    dp, kp = gmm_mma_full.padded(d), -(-k // 8) * 8 + 8
    got, got_shift = run_full_operands(queue, rec, d, dp, kp)
    want, want_shift = gmm_mma_full.operands(rec, d, dp, kp)
    np.testing.assert_array_equal(got_shift, want_shift)
    offsets = gmm_mma_full.parts(got, dp)[1], gmm_mma_full.parts(want, dp)[1]
    scale = np.abs(offsets[1]).max() + 1.0
    np.testing.assert_allclose(offsets[0] / scale, offsets[1] / scale, rtol=0, atol=2e-7)
    offsets[0][...] = offsets[1]   # (in place: the rest bit for bit)
    np.testing.assert_array_equal(got, want)
    assert gmm_mma_full.parts(got, dp)[2][1] == -np.inf


def planned_spec(profile, d, k, emulate):
    """The first E spec gmm_mma_full plans for *d*, *k* (*emulate*: its
    products in plain OpenCL) whose local memory fits the device."""
    for spec in gmm_mma_full.estep_specs(profile, np.float32, d, k, emulate=emulate):
        if spec.local_bytes() <= profile.local_memory_budget:
            return spec
    pytest.fail(f"no full E layout of {d} dimensions fits {profile}'s local memory")


def portable_specs(profile, d, k):
    """The full (E, M) specs the planners give without the tensor-core kernel."""
    off = profile.replace(gmm_mma_full=0)
    return (next(gmm_specs._estep_specs(off, np.float32, d, True, k)),
            next(gmm_specs._mstep_specs(off, np.float32, d, True)))


# emulated, the products cost two barriers each and PoCL's build grows with
# their count (d 13: three k8 blocks, 9 products a component): small shapes
@pytest.mark.parametrize("n, d, k", [(203, 5, 11), (150, 13, 19)])
@pytest.mark.parametrize("mt", [1, 2])
@pytest.mark.parametrize("emulate", [False, True], ids=["planned", "emulated"])
def test_estep_matches_the_portable_one(profile, emulate, mt, n, d, k):
    """The tensor-core full E kernel, one or two row tiles a warp, against
    the portable one: log-sum-exps (a NaN row included), labels,
    responsibilities and the log-likelihood; several work-group tiles (the
    last partial) and chunks (the last partial).  Emulated on every runtime
    (every line but the PTX); planned on tensor cores."""
    if not profile.fp64:
        pytest.skip("the E kernel's operands are made in double")
    if not emulate and not tensor_cores(profile):
        pytest.skip("no tensor cores: the kernel is planned only there")
    spec = dataclasses.replace(planned_spec(profile, d, k, emulate), mt=mt)
    assert spec.emulate == emulate
    assert_estep_matches_the_portable_one(profile, spec, n, d, k)


@pytest.mark.parametrize("n, d", [(300, 40), (200, 64)])
def test_planned_estep_past_32_dimensions(profile, n, d):
    """The planned kernel's layout past 32 dimensions (one row tile a warp,
    fewer components a chunk) against the portable kernel, on tensor cores
    (emulated, its products would be most of a CPU runtime's build); two
    chunks and a partial third (one component a chunk where local memory
    holds no more: the H200's at d=64)."""
    if not profile.fp64 or not tensor_cores(profile):
        pytest.skip("no tensor cores: the kernel is planned only there")
    k = 2 * planned_spec(profile, d, 1, False).tn + 1
    spec = planned_spec(profile, d, k, False)
    assert spec.mt == 1
    assert_estep_matches_the_portable_one(profile, spec, n, d, k)


def assert_estep_matches_the_portable_one(profile, spec, n, d, k):
    """*spec*'s E pass against the portable full kernel's on n rows of a
    d-dimensional model of k components, row 5 NaN: several work-group
    tiles, the last partial, and chunks, the last partial (where a chunk
    holds more than one component)."""
    assert -(-n // spec.rows) > 1 and n % spec.rows
    assert -(-k // spec.tn) > 1 and (spec.tn == 1 or k % spec.tn)
    rng = np.random.RandomState(n + d)
    m, X = full_case(rng, n, d, k)
    X[5] = np.nan
    pe, pm = portable_specs(profile, d, k)
    records = mdl.records(m, True)
    got, want = (estep_outputs(profile, X, k, True, (s, pm), records) for s in (spec, pe))
    np.testing.assert_array_equal(got[0][5], want[0][5])   # (a NaN row: as the portable)
    assert_estep_close(got, want, 5, atol=1e-4)


@pytest.mark.parametrize("covariance", ["full", "tied"])
def test_fit_matches_sklearn(profile, covariance):
    """Full and tied fits with the tensor-core full E step planned (where
    there are tensor cores) from the same start as scikit-learn's, at the
    GMM float32 tolerances."""
    rng = np.random.RandomState(len(covariance))
    k, n, d = 3, 300, 6
    X = rng.uniform(-4, 4, (k, d))[np.arange(n) % k] + rng.normal(size=(n, d))
    start = dict(weights_init=np.full(k, 1.0 / k), means_init=X[:k] + 0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sk = SkGMM(k, covariance_type=covariance, tol=0, max_iter=8, **start).fit(X)
        codegen.forget_plans("gmm")
        ours = oc.GaussianMixture(k, covariance_type=covariance, tol=0, max_iter=8,
                                  devices=oc.DeviceManager([profile.replace(
                                      gmm_mma_full=1, gmm_mma_full_min_d=0)]),
                                  **start).fit(X.astype(np.float32))
    used = [plan[0] for key, plan in codegen.plans("gmm").items()
            if key[2] == "gmm_estep" and key[1] is not None and key[1].d == d]
    assert len(used) == 1
    assert isinstance(used[0], gmm_mma_full.MmaFullEStepSpec) == (
        tensor_cores(profile) and profile.fp64)
    assert_gmm_parity(ours, sk, X, np.float32)


def test_planner_offers_it_only_where_asked(profile):
    """gmm_mma_full 0 plans the portable full kernel; 1 the tensor-core one
    where the device has tensor cores and fp64 (emulated specs aside), from
    gmm_mma_full_min_d dimensions on, never for diagonal covariances,
    float64 data or d past MAX_D."""
    on = profile.replace(gmm_mma_full=1, gmm_mma_full_min_d=25)
    for d in (24, 25):
        first = next(gmm_specs._estep_specs(on, np.float32, d, True, 100))
        assert isinstance(first, gmm_mma_full.MmaFullEStepSpec) == (
            d >= 25 and tensor_cores(profile) and profile.fp64)
    for args in ((np.float32, 24, False), (np.float64, 24, True),
                 (np.float32, gmm_mma_full.MAX_D + 1, True)):
        spec = next(gmm_specs._estep_specs(on.replace(gmm_mma=0), *args[:2], args[2], 100))
        assert not isinstance(spec, gmm_mma_full.MmaFullEStepSpec)
    off = next(gmm_specs._estep_specs(profile.replace(gmm_mma_full=0), np.float32, 24, True, 100))
    assert not isinstance(off, gmm_mma_full.MmaFullEStepSpec)


@pytest.mark.one_runtime       # host code alone
@pytest.mark.parametrize("dp", range(8, gmm_mma_full.MAX_D + 8, 8))
def test_record_layout(dp):
    """A component's record: factor rows of ws >= dp words, ws % 32 == 8
    (conflict-free B reads), then offsets and constant, cw a multiple of 4
    (float4 copies), its tail within gmm_mma_full_operands' WS + 8 items."""
    ws, cw = full_layout(dp)
    assert ws >= dp and ws % 32 == 8 and cw % 4 == 0
    assert dp + 1 <= cw - dp * ws <= ws + 8
