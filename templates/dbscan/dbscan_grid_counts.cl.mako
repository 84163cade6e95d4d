<%doc>
dbscan_counts over the grid (passes/grid.py): for every row the summed
weight of the rows within eps of it (itself included), or the first partial
sum to reach ``enough`` (a row's core test needs no more; +inf where a
weight is negative, so no sum stops early), the candidates only
those of the 3^g cells around its own (grid_cells.cl.mako), compared as
dbscan_counts compares them, so the same neighbours.  The rows are a slab
of the sorted grid (all of it on one device): the kernel answers for sorted
rows [first, last), one work-item each, the others (its halo: the cells
within eps of the slab) only their candidates.  ``w`` in the slab's row
order, ``counts`` in the answered rows' order (counts[p - first]).
Reads spec: d, metric (the compared distance), g, weighted.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="dist" file="/mst/mst_distance.cl.mako"/>
<%namespace name="grid" file="/grid/grid_cells.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
${grid.lower_bound()}

__kernel void dbscan_grid_counts(__global const real_t *restrict x, const int n,
                                 const real_t radius, __global const long *restrict keys,
                                 __global const long *restrict shape,
                                 __global const int *restrict index,
                                 const int first, const int last,
                                 __global const real_t *restrict w, const real_t enough,
                                 __global real_t *restrict counts)
{
    const int p = first + (int)get_global_id(0);
    if (p >= last)
        return;
    real_t own[D];
    for (int c = 0; c < D; ++c)
        own[c] = x[(size_t)p * D + c];
    real_t total = 0;
<%grid:for_candidates p="p" q="q" until="total >= enough">
                __global const real_t *other = x + (size_t)q * D;
${dist.pair_distance("own", "other", "dd")}\
                if (dd <= radius)
% if weighted:
                    total += w[q];
% else:
                    total += 1;
% endif
</%grid:for_candidates>
    counts[p - first] = total;
}
