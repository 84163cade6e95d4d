"""Greedy k-means++ seeding on the device, as scikit-learn's ``kmeans_plusplus``.

Pairs with templates/kmeanspp_candidates.cl.mako and search_sorted.cl.mako.
The random draws are made on the host with the same RandomState calls as
scikit-learn, so a seed picks the same centres; the distances, their prefix
sums (pyopencl's scan) and the candidate search stay on the device.
"""
import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.scan import GenericScanKernel

from .codegen import Spec, c_type, kernel, quiet_build
from .reduce import acc_dtype


@dataclasses.dataclass(frozen=True)
class CandidateSpec(Spec):
    template = "kmeanspp_candidates.cl.mako"
    d: int = 1
    trials: int = 1
    wg: int = 1
    weighted: bool = False


@dataclasses.dataclass(frozen=True)
class SearchSpec(Spec):
    template = "search_sorted.cl.mako"


_SCANS = {}


def _weighted_prefix_sum(queue, acc, weighted, real_t):
    """pyopencl scan of (w *) dist into out, in the accumulation type."""
    key = (queue.context.int_ptr, np.dtype(acc).name, weighted, real_t)
    if key not in _SCANS:
        acc_c = c_type(acc)
        args = f"__global {acc_c} *dist, __global {acc_c} *out"
        if weighted:
            args += f", __global const {c_type(real_t)} *w"
        with quiet_build():   # the scan's kernels are built here (Intel's runtime logs)
            _SCANS[key] = GenericScanKernel(
                queue.context, acc, arguments=args,
                input_expr="w[i] * dist[i]" if weighted else "dist[i]",
                scan_expr="a+b", neutral="0", output_statement="out[i] = item;")
    return _SCANS[key]


def kmeans_plusplus(part, n_clusters, random_state, host_weights, n_local_trials=None):
    """Indices of *n_clusters* rows of the partition chosen by greedy k-means++."""
    q, n = part.queue, part.n
    trials = n_local_trials or 2 + int(np.log(n_clusters))
    acc = acc_dtype(part.acc_double)
    wg = 64
    groups, steps = part.groups(wg, wg * 16)
    rows = steps * wg * 16

    def spec_for(t):
        return CandidateSpec(dtype=part.dtype.name, acc_double=part.acc_double, d=part.d,
                             trials=t, wg=wg, weighted=part.weighted)
    search = kernel(q.context, SearchSpec(dtype=part.dtype.name, acc_double=part.acc_double),
                    "search_sorted")
    scan = _weighted_prefix_sum(q, acc, part.weighted, part.dtype)
    closest = cla.empty(q, n, acc)
    cl.enqueue_fill_buffer(q, closest.data, acc(np.inf), 0, closest.nbytes)
    cand_dist = cla.empty(q, trials * n, acc)
    cumsum = cla.empty(q, n, acc)
    part_pot = cla.empty(q, groups * trials, acc)
    cand = cla.empty(q, trials, np.int32)
    targets = cla.empty(q, trials, acc)

    def potentials(t, candidates):
        kern = kernel(q.context, spec_for(t), "candidate_potentials")
        kern(q, (groups * wg,), (wg,), part.x.data, np.int64(n), np.int64(part.stride),
             part.weights_arg(), candidates.data, closest.data, cand_dist.data,
             part_pot.data, np.int64(rows))
        return part_pot.get(q)[:groups * t].reshape(groups, t).sum(axis=0, dtype=np.float64)

    p = host_weights / host_weights.sum()
    first = random_state.choice(n, p=p)
    indices = [int(first)]
    cand[:1].set(np.array([first], np.int32), q)
    current_pot = potentials(1, cand)[0]
    cl.enqueue_copy(q, closest.data, cand_dist.data, byte_count=n * closest.dtype.itemsize)
    for _ in range(1, n_clusters):
        rand_vals = random_state.uniform(size=trials) * current_pot
        with quiet_build():  # the scan builds on its first call
            scan(closest, cumsum, *([part.weights] if part.weighted else []), queue=q)
        targets.set(rand_vals.astype(acc), q)
        search(q, (trials,), None, cumsum.data, np.int64(n), targets.data, np.int32(trials),
               cand.data)
        pots = potentials(trials, cand)
        best = int(np.argmin(pots))
        current_pot = pots[best]
        cl.enqueue_copy(q, closest.data, cand_dist.data, byte_count=n * closest.dtype.itemsize,
                        src_offset=best * n * closest.dtype.itemsize)
        indices.append(int(cand.get(q)[best]))
    return np.array(indices)
