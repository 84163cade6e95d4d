"""The full covariances' M statistics in symmetric register blocks
(MStepUpperSpec, gmm_mstep_upper.cl.mako) on the runtime under test:
N, S1 and S2 against numpy from the device's own responsibilities, in every
block width, with replicas, idle work-items, ragged d and stages; S2 exactly
symmetric; the planner's choice."""
import dataclasses

import numpy as np
import pytest

from oclclust.cluster.mixture import mdl
from oclclust.passes import gmm as gmm_pass
from oclclust.passes import gmm_specs
from oclclust.runtime.partition import DevicePartition


def model(X, k):
    rng = np.random.RandomState(1)
    d = X.shape[1]
    a = rng.normal(size=(k, d, d)) * 0.3 + np.eye(d)
    cov = a @ np.swapaxes(a, 1, 2)
    w = rng.uniform(0.5, 1.5, k)
    means = X[rng.choice(len(X), k, replace=False)].astype(np.float64) + 0.3
    return mdl.Model(w / w.sum(), means, cov, mdl.precision_cholesky(cov, True))


def upper(dtype, d, tb, replicas, wg, tile):
    return gmm_specs.MStepUpperSpec(dtype=np.dtype(dtype).name, acc_double=True, d=d, wg=wg,
                                    tb=tb, nb=-(-d // tb), replicas=replicas, tile=tile)


def statistics(profile, X, m, mspec):
    """(the M statistics of *mspec* from the E step's responsibilities, those)."""
    k, n, d = len(m.weights), len(X), X.shape[1]
    espec = next(gmm_specs._estep_specs(profile, X.dtype, d, True, k))
    part = DevicePartition(profile, X)
    gp = gmm_pass.GmmPass(part, k, True, specs=(espec, mspec))
    gp.estep(mdl.records(m, True), store_resp=True)
    resp = gp.resp[:k * n].get(part.queue).reshape(k, n).T.astype(np.float64)
    return gp.mstep(m.means), resp


# (d, tb, replicas, wg, tile): ragged blocks (d not a multiple of tb), idle
# work-items past the replicas, a stage longer and shorter than the rows a
# staging item sees (staging items fewer than the work-items: more than
# the stage's rows), every vector width
SHAPES = [(3, 2, 2, 8, 16), (8, 4, 3, 9, 7), (24, 4, 6, 128, 64), (26, 4, 1, 32, 32),
          (5, 8, 4, 4, 5), (3, 2, 5, 32, 4), (24, 4, 6, 128, 96)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "d%d-tb%d-r%d-wg%d-p%d" % s)
@pytest.mark.covering(1)
def test_upper_statistics_equal_numpy(profile, shape, dtype):
    if not profile.fp64:
        pytest.skip("the kernel sums in double")
    d, tb, replicas, wg, tile = shape
    k, n = 5, 1500
    rng = np.random.RandomState(d)
    X = (rng.uniform(-5, 5, (k, d))[np.arange(n) % k] + rng.normal(size=(n, d))).astype(dtype)
    m = model(X, k)
    got, resp = statistics(profile, X, m, upper(dtype, d, tb, replicas, wg, tile))
    z = X.astype(np.float64)[:, None, :] - m.means[None]
    s2 = got[:, 1 + d:].reshape(k, d, d)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got[:, 0], resp.sum(0), rtol=rtol)
    np.testing.assert_allclose(got[:, 1:1 + d], np.einsum("nk,nkd->kd", resp, z), rtol=rtol,
                               atol=rtol * n)
    np.testing.assert_allclose(s2, np.einsum("nk,nkd,nke->kde", resp, z, z), rtol=rtol,
                               atol=rtol * n)
    np.testing.assert_array_equal(s2, np.swapaxes(s2, 1, 2))


@pytest.mark.one_runtime
@pytest.mark.parametrize("d, fp64, first", [(24, True, (4, 6, 6, 128)), (3, True, (2, 2, 42, 128)),
                                            (88, True, (4, 22, 1, 256)), (89, True, None),
                                            (24, False, None)])
def test_upper_planned_where_asked(profile, d, fp64, first):
    """The planner offers the symmetric blocks first on a GPU that asks
    (gmm_mstep_upper) with fp64, while the upper blocks fit one
    work-group; else the tiled kernel; never on a CPU."""
    gpu = dataclasses.replace(profile, type="gpu", fp64=fp64, max_work_group_size=256,
                              local_mem_size=1 << 20).replace(gmm_mstep_upper=1)
    spec = next(gmm_specs._mstep_specs(gpu, np.float32, d, True))
    if first is None:
        assert isinstance(spec, gmm_specs.MStepSpec) and spec.variant == "tiled"
    else:
        assert isinstance(spec, gmm_specs.MStepUpperSpec)
        assert (spec.tb, spec.nb, spec.replicas, spec.wg) == first
    asks_not = gpu.replace(gmm_mstep_upper=0)
    assert isinstance(next(gmm_specs._mstep_specs(asks_not, np.float32, d, True)),
                      gmm_specs.MStepSpec)
    cpu = dataclasses.replace(gpu, type="cpu")
    assert not any(isinstance(s, gmm_specs.MStepUpperSpec)
                   for s in gmm_specs._mstep_specs(cpu, np.float32, d, True))
