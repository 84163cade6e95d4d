"""The tensor-core M kernel's stage flags (gmm_mma_stages.cl.mako): a case,
numpy's flags and the kernel's, for tests/passes/test_gmm_mma.py and the
oclgrind plugin (oclgrind_ex_gmm.py)."""
import numpy as np
import pyopencl.array as cla

from oclclust.passes import gmm_mma


def stages_case(rng, n, k, normalize, hits):
    """(responsibilities k x n float32, lse n, own n int32): each row's own
    component, the rest zero (stored) or 1000 below its row's lse
    (log-densities, normalize), two rows of NaN lse, and *hits* entries
    that may not be zero (log-densities 50 or 119 below the lse) or are
    zero after the exp (121 below)."""
    own = rng.randint(0, k, n).astype(np.int32)
    lse = rng.uniform(-50, 50, n).astype(np.float32)
    lse[[7 % n, (n * 6) // 7]] = np.nan
    far = lse[:, None] - 1000 if normalize else np.zeros((n, 1))
    resp = np.broadcast_to(far, (n, k)).copy()
    resp[np.arange(n), own] = lse if normalize else 1
    hit = rng.choice(n * k, hits, replace=False)
    resp.flat[hit] = (lse[hit // k] - rng.choice([50, 119, 121], hits) if normalize
                      else rng.choice([1e-30, 0.5], hits))
    return np.ascontiguousarray(resp.T, np.float32), lse, own


def stages_reference(resp, lse, own, normalize, rows, spec):
    """numpy's flags (chunks x blocks x words uint32) of the chunks of
    *rows* rows: a stage's bit where a row of it has a responsibility, not
    its own component's, whose exp may not be zero (the kernel's rule)."""
    k, n = resp.shape
    with np.errstate(invalid="ignore"):
        may = ~((resp - lse) < np.float32(-120)) if normalize else resp != 0
    may = np.where(np.isnan(lse) if normalize else False, resp != 0, may)
    may[own, np.arange(n)] = False
    want = np.zeros((-(-n // rows), -(-k // spec.cb), spec.words(rows)), np.uint32)
    for j, i in zip(*np.nonzero(may)):
        chunk, r = divmod(i, rows)
        stage = r // spec.stage
        want[chunk, j // spec.cb, stage // 32] |= np.uint32(1 << (stage % 32))
    return want


def run_stages(queue, spec, resp, lse, own, normalize, rows):
    """The kernel's flags for the same arguments, shaped as numpy's."""
    k, n = resp.shape
    chunks = -(-n // rows)
    out = cla.empty(queue, chunks * -(-k // spec.cb) * spec.words(rows), np.uint32)
    gmm_mma.enqueue_stages(queue, spec, cla.to_device(queue, resp), cla.to_device(queue, lse),
                           normalize, cla.to_device(queue, own), n, k, rows, chunks, out)
    return out.get(queue).reshape(chunks, -(-k // spec.cb), -1)
