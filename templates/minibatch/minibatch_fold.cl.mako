<%doc>
A mini-batch's per-cluster sums continued from running totals, one row
after another in a fixed order (passes/minibatch.py): cell (c, j) of sums
adds rows[m][j] * w[m] for m = members[start[c]] .. members[start[c+1]-1]
in that order, in float64, with no fused multiply-add -- the additions
numpy's bincount makes over the same rows in the same order
(cluster/kmeans/minibatch_sums.fold), so a batch folded here equals the host's fold
bit for bit.  One work-item a cell; the cells of a cluster read a row's
consecutive values.  Reads spec: d.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF

__kernel void minibatch_fold(__global const real_t *restrict rows,
                             __global const int *restrict members,
                             __global const int *restrict start,
                             __global const double *restrict w, const int k,
                             __global double *restrict sums)
{
    const int cell = get_global_id(0);
    if (cell >= k * ${d})
        return;
    const int c = cell / ${d}, j = cell - c * ${d};
    volatile double acc = 0.0 + sums[cell];   /* +0 + t: bincount's first term */
    for (int m = start[c]; m < start[c + 1]; ++m) {
        const int r = members[m];
        const double term = (double)rows[(size_t)r * ${d} + j] * w[r];
        acc = acc + term;
    }
    sums[cell] = acc;
}
