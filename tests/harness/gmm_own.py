"""The tensor-core diagonal M step's own sums (templates/gmm_mma/
gmm_mma_own.cl.mako) run alone on a queue and their float64 reference:
shared by tests/passes/test_gmm_mma.py and the oclgrind plugin."""
import numpy as np
import pyopencl.array as cla

from oclclust.passes import gmm_mma
from oclclust.runtime import codegen


def own_case(rng, n, d, k):
    """(X float32, log-densities k x n float32, lse n float32, own n int32)
    : rows about k centres, each row's own component its nearest centre's
    but -1 (no component) and k + 1 (another partition's) on a few rows,
    one non-finite row."""
    centres = rng.uniform(-5, 5, (k, d)) + 40.0
    own = rng.randint(0, k, n).astype(np.int32)
    X = (centres[own] + rng.normal(size=(n, d))).astype(np.float32)
    X[min(3, n - 1)] = np.nan
    logs = rng.normal(size=(k, n)).astype(np.float32)
    lse = np.log(np.exp(logs.astype(np.float64)).sum(axis=0)).astype(np.float32)
    own[::7] = -1
    own[5::11] = k + 1
    return X, logs, lse, own


def run_own(queue, spec, X, resp, lse, normalize, means32, own, k, rows):
    """The own kernel of *spec* over X (n x d float32) in chunks of *rows*:
    the slabs' own entries (chunks x k x mstep_size), the others zero."""
    n, d = X.shape
    chunks = max(1, -(-n // rows))
    size = gmm_mma.mstep_size(d)
    dev = [cla.to_device(queue, np.ascontiguousarray(a)) for a in (X, resp, lse, means32, own)]
    part = cla.zeros(queue, chunks * k * size, np.float64)
    kern = codegen.kernel(queue.context, spec, "gmm_own")
    kern(queue, (chunks * spec.groups_per_chunk(k) * spec.wg,), (spec.wg,), dev[0].data,
         np.int64(n), np.int64(d), dev[1].data, dev[2].data, np.int32(normalize),
         dev[3].data, dev[4].data, np.int32(k), np.int64(rows), part.data)
    return part.get(queue).reshape(chunks, k, size)


def own_reference(X, resp, lse, normalize, means32, own, k, rows, precision="float32",
                  absolute=False):
    """run_own's output in float64 from the same float32 inputs: each row's
    responsibility for its own component (normalised as the kernel does,
    then rounded to TF32 where *precision* is not float32), x - mu in
    float32, the products and sums in float64.  *absolute*: the sums of
    |r x''| instead of r x'' (the scale a sum's rounding is relative to)."""
    n, d = X.shape
    chunks = max(1, -(-n // rows))
    out = np.zeros((chunks, k, gmm_mma.mstep_size(d)))
    for i in range(n):
        j = int(own[i])
        if not 0 <= j < k:
            continue
        a = resp[j, i]
        w = np.float32(np.exp(np.float32(a - lse[i]))) if normalize else a
        if precision != "float32":
            w = np.uint32((np.float32(w).view(np.uint32) + np.uint32(0x1000))
                          & np.uint32(0xFFFFE000)).view(np.float32)
        v = (X[i] - means32[j, :d]).astype(np.float64)
        slab = out[i // rows, j]
        slab[1] += float(w)
        slab[2 + 2 * d:2 + 3 * d] += float(w) * (np.abs(v) if absolute else v)
        slab[2 + 3 * d:] += float(w) * v * v
    return out

