"""A full-covariance model and rows drawn from it, and the tensor-core full
E kernel's operands made on the device (templates/gmm_mma/
gmm_mma_operands.cl.mako, full) run alone on a queue: shared by tests/
passes/test_gmm_mma_full.py and the oclgrind plugin."""
import numpy as np
import pyopencl.array as cla

from oclclust.cluster.mixture import mdl
from oclclust.passes import gmm_mma_full
from oclclust.passes.gmm_mma_operands import full_layout


def full_case(rng, n, d, k, centre=5.0, spread=3.0):
    """(a full Model of k components about *centre*, n float32 rows drawn
    from it, component i % k for row i): correlated covariances, their
    scales 0.5-2 apart."""
    a = rng.normal(size=(k, d, d)) / np.sqrt(d)
    cov = (a @ np.swapaxes(a, 1, 2)) * rng.uniform(0.5, 2, (k, 1, 1)) + 0.3 * np.eye(d)
    w = rng.uniform(0.5, 1.5, k)
    m = mdl.Model(w / w.sum(), rng.uniform(-spread, spread, (k, d)) + centre, cov,
                  mdl.precision_cholesky(cov, True))
    own = np.arange(n) % k
    z = np.einsum("nde,ne->nd", np.linalg.cholesky(cov)[own], rng.normal(size=(n, d)))
    return m, (m.means[own] + z).astype(np.float32)


def run_full_operands(queue, records, d, dp, kp):
    """gmm_mma_full.enqueue_operands of the k full *records* on *queue*:
    (packed kp x cw, shift dp) as the host reads them, written over NaNs
    (every element is the kernels')."""
    k, cw = records.shape[0], full_layout(dp)[1]
    out = [cla.to_device(queue, np.full(size, np.nan, np.float32)) for size in (kp * cw, dp)]
    gmm_mma_full.enqueue_operands(queue, cla.to_device(queue, np.ascontiguousarray(records)),
                                  k, d, dp, kp, cla.empty(queue, dp, np.float64), out)
    packed, shift = (a.get(queue) for a in out)
    return packed.reshape(kp, cw), shift
