<%doc>
DBSCAN's neighbourhoods, counted: for every row the summed weight of the
rows within eps of it (itself included), as scikit-learn's radius query
finds them: d(i, j) <= eps, euclidean compared squared (sum of squares <=
eps^2, the kd-tree's reduced distance), the others as they are.  Distances
from the rows on the fly (mst_distance.cl.mako, pdist's arithmetic), the
other rows through local memory a work-group's tile at a time; never stored.
Reads spec: d, metric (the compared distance: sqeuclidean for euclidean),
wg, weighted.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="dist" file="/mst/mst_distance.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define WG ${wg}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void dbscan_counts(__global const real_t *restrict x, const int n, const real_t radius,
                   __global const real_t *restrict w, __global real_t *restrict counts,
                   __global int *restrict sizes)
{
    __local real_t tile[WG * D];
    __local real_t tile_w[WG];
    const int i = get_global_id(0), lid = get_local_id(0);
    const int row = i < n ? i : n - 1;   /* items past n stage tiles, write nothing */
    real_t own[D];
    for (int c = 0; c < D; ++c)
        own[c] = x[(size_t)row * D + c];
    real_t total = 0;
    int size = 0;
    for (int base = 0; base < n; base += WG) {
        const int j0 = base + lid;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int c = 0; c < D; ++c)
            tile[lid * D + c] = j0 < n ? x[(size_t)j0 * D + c] : 0;
% if weighted:
        tile_w[lid] = j0 < n ? w[j0] : 0;
% else:
        tile_w[lid] = 1;
% endif
        barrier(CLK_LOCAL_MEM_FENCE);
        const int top = min(WG, n - base);
        for (int t = 0; t < top; ++t) {
            __local const real_t *other = tile + t * D;
${dist.pair_distance("own", "other", "dd")}\
            if (dd <= radius) {
                total += tile_w[t];
                ++size;
            }
        }
    }
    if (i < n) {
        counts[i] = total;
        sizes[i] = size;
    }
}
