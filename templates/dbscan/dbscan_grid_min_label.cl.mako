<%doc>
dbscan_min_label over the grid (passes/grid.py): for every row with want
set, the least label >= 0 among the rows within eps of it (or its own label
if less; -1 when none), the candidates those of the 3^g cells around its own
(grid_cells.cl.mako), compared as dbscan_counts compares them.  For the
sorted rows [first, last) of a slab (dbscan_grid_counts.cl.mako); ``label``
and ``want`` in the slab's row order, ``out`` in the answered rows' order.
Reads spec: d, metric, g.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="dist" file="/mst/mst_distance.cl.mako"/>
<%namespace name="grid" file="/grid/grid_cells.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
${grid.lower_bound()}

__kernel void dbscan_grid_min_label(__global const real_t *restrict x, const int n,
                                    const real_t radius, __global const long *restrict keys,
                                    __global const long *restrict shape,
                                    __global const int *restrict index,
                                    const int first, const int last,
                                    __global const int *restrict label,
                                    __global const char *restrict want,
                                    __global int *restrict out)
{
    const int p = first + (int)get_global_id(0);
    if (p >= last)
        return;
    const int mine = label[p];
    if (!want[p]) {
        out[p - first] = mine;
        return;
    }
    real_t own[D];
    for (int c = 0; c < D; ++c)
        own[c] = x[(size_t)p * D + c];
    int best = mine >= 0 ? mine : INT_MAX;
<%grid:for_candidates p="p" q="q">
                const int lq = label[q];
                if (lq < 0 || lq >= best)
                    continue;
                __global const real_t *other = x + (size_t)q * D;
${dist.pair_distance("own", "other", "dd")}\
                if (dd <= radius)
                    best = lq;
</%grid:for_candidates>
    out[p - first] = best == INT_MAX ? -1 : best;
}
