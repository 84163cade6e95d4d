"""The tensor-core diagonal E kernel's operands (oclclust/passes/
gmm_mma_operands.py): the GEMM form's log-densities, and the device's
operands against the host's."""
import numpy as np
import pytest

from gmm_operands import diag_model, run_operands
from oclclust.cluster.mixture import mdl
from oclclust.passes import gmm_mma_bound, gmm_mma_operands
from oclclust.runtime.partition import DevicePartition


@pytest.mark.one_runtime       # host code alone
@pytest.mark.parametrize("d, k", [(5, 13), (24, 100), (128, 40)])
def test_operands_give_the_log_densities(d, k):
    """const_j - 1/2 [x'^2 | x'] . [P_j | -2 mu'_j P_j] is log w_j + log
    N(x | mu_j, diag): the records' per-point form, in float64 (the data far
    from the origin: the shift keeps the expansion's digits)."""
    rng = np.random.RandomState(d)
    m = diag_model(rng, k, d)
    X = rng.normal(size=(50, d)) * 2 + 5.0
    rec = mdl.records(m, False)
    dp, kp = -(-d // 8) * 8, -(-k // 16) * 16
    coefs, consts, shift = gmm_mma_operands.operands(rec, d, dp, kp)
    assert coefs.shape == (kp, 2 * dp) and consts.shape == (kp,) and shift.shape == (dp,)
    assert not coefs[k:].any() and not coefs[:, d:dp].any() and not coefs[:, dp + d:].any()
    xs = np.zeros((len(X), dp))
    xs[:, :d] = X - shift[:d].astype(np.float64)
    gemm = consts[:k].astype(np.float64) - 0.5 * (
        np.concatenate([xs * xs, xs], axis=1) @ coefs[:k].astype(np.float64).T)
    prec = m.prec_chol ** 2
    direct = rec[:, 0] - 0.5 * (((X[:, None, :] - m.means[None]) ** 2) * prec[None]).sum(-1)
    np.testing.assert_allclose(gemm, direct, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("d, k", [(5, 13), (24, 100), (128, 1024)])
def test_operands_on_the_device_are_the_hosts(profile, d, k):
    """enqueue_operands (the E kernel's operands made on the device from the
    double records) gives operands' coefs and shift bit for bit and its
    consts to float32's rounding (its sum over the features is in order,
    numpy's pairwise), zero past k and d; a zero weight's -inf const too;
    the re-check scales recheck_scales' (the norms to an ulp), each row's
    at least estep_bound's sizes of it (Cauchy-Schwarz)."""
    if not profile.fp64:
        pytest.skip("the records are double")
    rng = np.random.RandomState(d + k)
    m = diag_model(rng, k, d)
    m = mdl.Model(np.where(np.arange(k) == 1, 0.0, m.weights), m.means * 4, m.covariances,
                  m.prec_chol)
    rec = mdl.records(m, False)
    dp, kp = -(-d // 8) * 8, -(-k // 16) * 16 + 16
    got = run_operands(DevicePartition(profile, np.zeros((1, d), np.float32)).queue, rec, d,
                       dp, kp)
    want = gmm_mma_operands.operands(rec, d, dp, kp)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[2], want[2])
    assert got[1][1] == want[1][1] == -np.inf
    np.testing.assert_array_max_ulp(np.delete(got[1], 1), np.delete(want[1], 1), maxulp=1)
    scales = gmm_mma_bound.recheck_scales(want[0], d, dp)   # (zero rows past k)
    np.testing.assert_array_equal(got[3][:, 0], scales[:, 0])
    np.testing.assert_array_max_ulp(got[3][:, 1], scales[:, 1], maxulp=1)
    # each at least what it bounds: estep_bound's sizes of rows x'
    rows = rng.normal(scale=4.0, size=(50, d)).astype(np.float32)
    size = (gmm_mma_bound.estep_bound(rows, got[0], dp, "tf32")
            / gmm_mma_bound.bound_factor(dp, "tf32"))
    xx = np.square(rows.astype(np.float64)).sum(axis=1, keepdims=True)
    assert np.all(size <= xx * got[3][:, 0] + np.sqrt(xx) * got[3][:, 1])
