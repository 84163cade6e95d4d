"""The tensor-core diagonal E kernel's operands made on the device
(templates/gmm_mma/gmm_mma_operands.cl.mako) run alone on a queue, and a
diagonal model to make them of: shared by tests/passes/
test_gmm_mma_operands.py and the oclgrind plugin."""
import numpy as np
import pyopencl.array as cla

from oclclust.cluster.mixture import mdl
from oclclust.passes import gmm_mma_operands


def diag_model(rng, k, d, centre=5.0, spread=3.0):
    """A diagonal Model of k components about *centre* (mdl's layout)."""
    cov = rng.uniform(0.5, 2, (k, d))
    w = rng.uniform(0.5, 1.5, k)
    return mdl.Model(w / w.sum(), rng.uniform(-spread, spread, (k, d)) + centre, cov,
                     mdl.precision_cholesky(cov, False))


def run_operands(queue, records, d, dp, kp):
    """enqueue_operands of the k x (1 + 2d) diagonal *records* on *queue*,
    the re-check scales too: (coefs kp x 2dp, consts kp, shift dp, scales
    kp x 2) as the host reads them, written over NaNs (every element is the
    kernels')."""
    k = records.shape[0]
    out = [cla.to_device(queue, np.full(size, np.nan, np.float32))
           for size in (kp * 2 * dp, kp, dp, kp * 2)]
    gmm_mma_operands.enqueue_operands(queue, cla.to_device(queue, np.ascontiguousarray(records)),
                                      k, d, dp, kp, cla.empty(queue, dp, np.float64), out[:3],
                                      out[3])
    coefs, consts, shift, scales = (a.get(queue) for a in out)
    return coefs.reshape(kp, 2 * dp), consts, shift, scales.reshape(kp, 2)
