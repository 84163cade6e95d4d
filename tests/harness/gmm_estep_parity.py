"""One E pass of a GMM kernel pair and the comparison of two of them: shared
by the tensor-core E kernels' tests (tests/passes/test_gmm_mma_emulated.py,
test_gmm_mma_full.py) against the portable kernel."""
import numpy as np
import pytest

from oclclust.passes import gmm as gmm_pass
from oclclust.runtime.partition import DevicePartition


def estep_outputs(profile, X, k, full, specs, records):
    """(lse, labels, responsibilities k x n, log-likelihood, bad rows) of
    one E pass of the (E, M) *specs* over rows *X* (chunks of 2)."""
    n = len(X)
    gp = gmm_pass.GmmPass(DevicePartition(profile, X), k, full, specs=specs, chunks=2)
    ll, bad = gp.estep(records)
    q = gp.part.queue
    return (gp.lse.get(q), gp.labels.get(q), gp.resp[:k * n].get(q).reshape(k, n), ll, bad)


def assert_estep_close(got, want, bad_row, atol):
    """*got* against *want* (estep_outputs): one bad row, *bad_row*, in
    both; elsewhere log-sum-exps within rtol 1e-5 (*atol*), responsibilities
    within *atol*, labels equal where the top two are 1e-3 apart, and the
    log-likelihood within 1e-5."""
    ok = np.isfinite(want[0])
    assert got[4] == want[4] == 1 and not ok[bad_row] and ok.sum() == len(ok) - 1
    np.testing.assert_allclose(got[0][ok], want[0][ok], rtol=1e-5, atol=atol)
    np.testing.assert_allclose(got[2][:, ok], want[2][:, ok], atol=atol)
    lp = np.log(np.maximum(want[2][:, ok].astype(np.float64), 1e-300))
    top = np.sort(lp, axis=0)[-2:]
    assert (got[1] == want[1])[ok][top[1] - top[0] > 1e-3].all()
    assert got[3] == pytest.approx(want[3], rel=1e-5)
