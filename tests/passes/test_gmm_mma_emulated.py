"""The tensor-core diagonal GMM E and M kernels of oclclust/passes/gmm_mma.py
with their products emulated in plain OpenCL (the PTX fragment layout
through local memory), on every runtime: every line but the PTX against
the portable kernels (test_gmm_mma.py: the planned kernels, their operands,
the emulated M kernel against numpy).
"""
import dataclasses

import numpy as np
import pytest

from oclclust.cluster.mixture import mdl
from oclclust.passes import gmm as gmm_pass
from oclclust.passes import gmm_mma, gmm_mma_bound
from oclclust.passes.lloyd_mma import tensor_cores
from oclclust.runtime.partition import DevicePartition
from gmm_estep_parity import assert_estep_close, estep_outputs
from test_gmm_mma import model, portable_specs


# the emulated products run slowly (two barriers a product) and PoCL's build
# of their unrolled fragments grows faster than their count (the E kernel of
# d 37, k 33: 240 products, 56 s on 2 cores; at d 13 in the same layout, 96
# products, 7 s): small shapes, the E kernel in each layout the planner gives
# a larger d (estep_layout), the M kernel at a d of its own
def estep_layout(profile, d, k, layout_d, emulate=True, **fields):
    """The emulated E spec the planner gives at *layout_d* dimensions (work-group,
    row tiles a warp, chunk of components, copies, splits) for *d* dimensions
    with *fields* (precision, ...): the first whose local memory fits the
    device (*emulate* False: the planned one, on tensor cores)."""
    dp = -(-d // 8) * 8
    for spec in gmm_mma.estep_specs(profile, np.float32, layout_d, k, emulate=emulate):
        spec = dataclasses.replace(spec, d=d, dp=dp, kp=-(-k // spec.tn) * spec.tn, **fields)
        if spec.local_bytes() <= profile.local_memory_budget:
            return spec
    pytest.fail(f"no E layout of {layout_d} dimensions fits {profile}'s local memory")


def emulated_case(n, d, k, spread=3.0, var=1.0):
    """(model, rows with a NaN row 5, the same rows without it); the means
    uniform in a cube of side 2 *spread*, the variances *var* times
    0.5-2 (the rows' own: unit)."""
    rng = np.random.RandomState(n + d)
    m = model(rng, k, d, spread)
    if var != 1.0:
        cov = m.covariances * var
        m = mdl.Model(m.weights, m.means, cov, mdl.precision_cholesky(cov, False))
    X = (m.means[np.arange(n) % k] + rng.normal(size=(n, d))).astype(np.float32)
    clean = X.copy()   # the M statistics' rows: a NaN row would make every one NaN
    X[5] = np.nan
    return rng, m, X, clean


@pytest.mark.parametrize("n, d, k, layout_d", [
    (203, 5, 21, 5),      # d <= 32's: two m16 tiles a warp, two chunks double-buffered
    (300, 13, 33, 37),    # d 33-64's: the rows split each chunk of 32, one copy
    (300, 13, 33, 100),   # d > 64's: one m16 tile a warp
])
def test_emulated_estep_matches_the_portable_one(profile, n, d, k, layout_d):
    """The tensor-core E kernel with its products emulated in plain OpenCL
    (the PTX fragment layout through local memory), on every runtime, in
    each of the planner's layouts: every line but the PTX against the
    portable kernel -- log-sum-exps (NaN row included), labels,
    responsibilities and log-likelihood; several work-group tiles, the last
    partial."""
    if not profile.fp64:
        pytest.skip("the M kernel's partial sums are double")
    rng, m, X, _ = emulated_case(n, d, k)
    pe, pm = portable_specs(profile, d, k)
    ee = estep_layout(profile, d, k, layout_d)
    assert ee.emulate and -(-n // ee.tm) > 1 and n % ee.tm
    records = mdl.records(m, False)
    got, want = (estep_outputs(profile, X, k, False, (spec, pm), records) for spec in (ee, pe))
    assert_estep_close(got, want, 5, atol=1e-3)


# the planner's two chunk styles: two copies of 16 components (d <= 32's),
# one copy of 32, the rows split each chunk (d > 64's)
@pytest.mark.parametrize("n, d, k, layout_d", [(203, 5, 21, 5), (300, 13, 33, 100)])
@pytest.mark.parametrize("emulate", [False, True], ids=["planned", "emulated"])
def test_packed_chunks_change_no_bit(profile, emulate, n, d, k, layout_d):
    """The "bf16" E kernel whose chunks' coefficients are rounded to bfloat16
    pairs as they are staged (MmaEStepSpec.packed_chunks) against the one
    whose warps round them as they read them: the same products, so the
    same log-sum-exps (NaN row included), labels, stored values and
    log-likelihood, bit for bit.  Emulated on every runtime; planned on
    tensor cores."""
    if not profile.fp64:
        pytest.skip("the E kernel's operands are made in double")
    if not emulate and not tensor_cores(profile):
        pytest.skip("no tensor cores: the one-product kernels are planned only there")
    _, m, X, _ = emulated_case(n, d, k)
    _, pm = portable_specs(profile, d, k)
    base = estep_layout(profile, d, k, layout_d, emulate, precision="bf16", lane_recheck=True)
    out = []
    for packed in (False, True):
        spec = dataclasses.replace(base, packed_chunks=packed)
        assert spec.packed == packed
        gp = gmm_pass.GmmPass(DevicePartition(profile, X), k, False, specs=(spec, pm), chunks=2)
        ll, bad = gp.estep(mdl.records(m, False), store_resp=False)   # (values stored)
        q = gp.part.queue
        out.append((gp.lse.get(q), gp.labels.get(q), gp.resp[:k * n].get(q), ll, bad))
    for unpacked, packed in zip(*out):
        np.testing.assert_array_equal(packed, unpacked)


# one column group of one n8 tile; two groups of three tiles (the last
# tile past dp), two component blocks, the second one component
@pytest.mark.parametrize("n, d, k", [(203, 5, 13), (300, 37, 33)])
def test_emulated_mstep_matches_the_portable_one(profile, n, d, k):
    """The tensor-core M kernel with its products emulated in plain OpenCL,
    on every runtime: its statistics against the portable kernel's from the
    same responsibilities."""
    if not profile.fp64:
        pytest.skip("the M kernel's partial sums are double")
    rng, m, _, clean = emulated_case(n, d, k)
    pe, pm = portable_specs(profile, d, k)
    me = next(gmm_mma.mstep_specs(profile, np.float32, d, emulate=True))
    assert me.emulate
    resp = rng.dirichlet(np.ones(k), n).astype(np.float32)
    out = {}
    for name, spec in (("emulated", me), ("portable", pm)):
        gm = gmm_pass.GmmPass(DevicePartition(profile, clean), k, False, specs=(pe, spec),
                              chunks=2)
        gm.set_resp(resp)
        out[name] = gm.mstep(m.means + 0.25)
    got, want = out["emulated"], out["portable"]
    assert np.isfinite(want).all()
    scale = np.abs(want).max(axis=0, keepdims=True) + 1.0
    np.testing.assert_allclose(got / scale, want / scale, rtol=0, atol=2e-6)


# near: a row's values past its lanes' two may matter (each row's values
# read back); apart: the lanes' two alone made again; tight: precisions
# of 1e6 (a random_from_data start: reg_covar), one-product values off by
# thousands of nats.  lanes: the lanes' two made by the row's four lanes
# (MmaEStepSpec.lane_recheck), else by one work-item a row
@pytest.mark.parametrize("lanes", [False, True], ids=["owner", "lanes"])
@pytest.mark.parametrize("spread, var", [(3.0, 1.0), (40.0, 1.0), (3.0, 1e-6)],
                         ids=["near", "apart", "tight"])
@pytest.mark.parametrize("precision", ["tf32", "bf16"])
@pytest.mark.parametrize("emulate", [False, True], ids=["planned", "emulated"])
def test_one_product_kernels_recheck_to_float32(profile, emulate, precision, spread, var,
                                                lanes):
    """The E kernel at "tf32" and "bf16" (one product of operands rounded to
    that format, then the re-check) against float64 and its 3xTF32 self
    ("float32") on the same operands: every stored log-density within
    gmm_mma_bound.estep_bound of float64's; those within 17 + ln k of a row's
    largest (the re-check's T: all that may matter to its sum) to float32's
    rounding, and so each row's log-likelihood and label float32's (labels
    where the top two are apart); some value left a one-product value (not
    the same computation).  Emulated on every runtime; planned on tensor
    cores."""
    if not profile.fp64:
        pytest.skip("the E kernel's operands are made in double")
    if not emulate and not tensor_cores(profile):
        pytest.skip("no tensor cores: the one-product kernels are planned only there")
    n, d, k = (4099, 24, 100) if not emulate else (203, 5, 21)
    _, m, X, _ = emulated_case(n, d, k, spread, var)
    pe, pm = portable_specs(profile, d, k)
    base = (estep_layout(profile, d, k, d) if emulate else
            next(gmm_mma.estep_specs(profile, np.float32, d, k)))
    got = {}
    for prec in ("float32", precision):
        spec = dataclasses.replace(base, precision=prec, lane_recheck=lanes)
        gp = gmm_pass.GmmPass(DevicePartition(profile, X), k, False, specs=(spec, pm), chunks=2)
        gp.estep(mdl.records(m, False), store_resp=False)   # (the values stay: re-check)
        q = gp.part.queue
        got[prec] = (gp.lse.get(q).astype(np.float64), gp.labels.get(q))
    values = gp.resp[:k * n].get(q).reshape(k, n).T.astype(np.float64)
    coefs, consts, shift = (a.get(q) for a in gp.operands)
    dp = base.dp
    rows, coefs = X - shift[:d], coefs.reshape(-1, 2 * dp)[:k]
    x = rows.astype(np.float64)
    want = consts[:k] - 0.5 * ((x * x) @ coefs[:, :d].T.astype(np.float64) +
                               x @ coefs[:, dp:dp + d].T.astype(np.float64))
    ok = np.isfinite(want).all(axis=1)   # (row 5 is NaN)
    bound = gmm_mma_bound.estep_bound(rows, coefs, dp, precision)
    size = bound / gmm_mma_bound.bound_factor(dp, precision)
    # a float32 dot product of 2d terms, then the constant
    float32 = 2 * d * 2.0 ** -24 * size + 2.0 ** -22 * np.abs(want)
    diff = np.abs(values - want)[ok]
    assert np.all(diff <= bound[ok] + float32[ok])
    near = (want >= want.max(axis=1, keepdims=True) - 17 - np.log(k))[ok]
    assert np.all(diff[near] <= float32[ok][near])
    assert np.any(diff[~near] > float32[ok][~near])   # a one-product value left
    lse, labels = got[precision]
    lse32, labels32 = got["float32"]
    tol = (gmm_mma_bound.estep_bound(rows, coefs, dp, "float32") + float32).max(axis=1)
    assert np.all(np.abs(lse[ok] - lse32[ok]) <= 2 * tol[ok])
    top = np.sort(want[ok], axis=1)[:, -2:]
    apart = top[:, 1] - top[:, 0] > 2 * tol[ok]
    np.testing.assert_array_equal(labels[ok][apart], labels32[ok][apart])
