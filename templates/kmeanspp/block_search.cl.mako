<%doc>
The split-free draw of greedy k-means++ and k-means|| (cluster/inits.py):
each target has been located on the host in a fixed block of rows (by the
blocks' potentials as integers on one grid: passes/kmeanspp.py); here the
row of the block where the running sum of the rows' (w x) distances, added
in row order from the block's first row, first exceeds the target (its
residual within the block).  A block is the same rows whoever holds it, so
the same target picks the same row on every split.  Where rounding leaves
the running sum short of the target, the block's last row of positive
potential (a row of zero potential is never drawn).
Reads spec: weighted (real_t: the weights' type; the distances are double).
</%doc>
<%inherit file="/prelude.cl.mako"/>

__kernel void block_search(__global const double *restrict closest,
                           __global const real_t *restrict w,
                           const long n, const long block_rows,
                           __global const long *restrict blocks,    /* per target */
                           __global const double *restrict targets,
                           const int count, __global int *restrict out)
{
    const int t = get_global_id(0);
    if (t >= count)
        return;
    const long first = blocks[t] * block_rows, end = min(n, first + block_rows);
    const double target = targets[t];
    double run = 0;
    long found = -1, last = first;
    for (long i = first; i < end; ++i) {
% if weighted:
        const double v = (double)w[i] * closest[i];
% else:
        const double v = closest[i];
% endif
        if (v > 0)
            last = i;
        run += v;
        if (run > target) {
            found = i;
            break;
        }
    }
    out[t] = (int)(found < 0 ? last : found);
}
