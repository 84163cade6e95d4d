<%doc>
Split-free sums of one value a row (k-means' distances, a mixture's
log-densities): the float64 sum of each fixed block of rows, in a fixed
order (a work-item's rows in turn, then a fixed tree of WG): the same bits
whichever device, chunk or rank holds the block (runtime/exact_sums.py).
Reads spec: weighted, weight_dtype (as weight_t: the weights' C type).
Input: n values (and weights); output: one double a block.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#define WG 256

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void block_sums(__global const real_t *restrict values, __global const ${weight_t} *restrict w,
                const long n, const long block_rows, __global double *restrict out)
{
    __local double tree[WG];
    const int lid = get_local_id(0);
    const long lo = get_group_id(0) * block_rows, hi = min(n, lo + block_rows);
    double s = 0;
    for (long i = lo + lid; i < hi; i += WG)
% if weighted:
        s += (double)w[i] * (double)values[i];
% else:
        s += (double)values[i];
% endif
    tree[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int span = WG / 2; span > 0; span >>= 1) {
        if (lid < span)
            tree[lid] += tree[lid + span];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        out[get_group_id(0)] = tree[0];
}
