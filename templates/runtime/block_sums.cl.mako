<%doc>
Split-free sums of one value a row (k-means' distances, a mixture's
log-densities): the float64 sum of each fixed block of rows, in a fixed
order (a work-item's rows in turn, then a fixed tree of WG): the same bits
whichever device, chunk or rank holds the block (runtime/exact_sums.py).
Reads spec: weighted, weight_dtype (as weight_t: the weights' C type).
Input: n values (and weights); output: one double a block.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="words" file="/common/exact_words.cl.mako"/>
#define WG 256
${words.block_sum(weighted, weight_t)}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void block_sums(__global const real_t *restrict values, __global const ${weight_t} *restrict w,
                const long n, const long block_rows, __global double *restrict out)
{
    __local double tree[WG];
    const long lo = get_group_id(0) * block_rows;
    const double total = group_block_sum(values, w, lo, min(n, lo + block_rows), tree);
    if (get_local_id(0) == 0)
        out[get_group_id(0)] = total;
}
