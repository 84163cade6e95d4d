<%doc>
DBSCAN's eps-graph, stored where it fits the memory budget (CSR): row i's
neighbours (the rows j within eps, itself included, ascending j) written
at nbr[start[i]] on, start the exclusive sum of dbscan_counts' sizes.  The
same tiles and comparisons as dbscan_counts, so the same neighbours.
Reads spec: d, metric, wg.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="dist" file="/mst/mst_distance.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define WG ${wg}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void dbscan_neighbours(__global const real_t *restrict x, const int n, const real_t radius,
                       __global const long *restrict start, __global int *restrict nbr)
{
    __local real_t tile[WG * D];
    const int i = get_global_id(0), lid = get_local_id(0);
    const int row = i < n ? i : n - 1;   /* items past n stage tiles, write nothing */
    real_t own[D];
    for (int c = 0; c < D; ++c)
        own[c] = x[(size_t)row * D + c];
    long at = start[row];
    for (int base = 0; base < n; base += WG) {
        const int j0 = base + lid;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int c = 0; c < D; ++c)
            tile[lid * D + c] = j0 < n ? x[(size_t)j0 * D + c] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (i >= n)
            continue;           /* no barrier follows in this iteration */
        const int top = min(WG, n - base);
        for (int t = 0; t < top; ++t) {
            __local const real_t *other = tile + t * D;
${dist.pair_distance("own", "other", "dd")}\
            if (dd <= radius)
                nbr[at++] = base + t;
        }
    }
}
