<%doc>
One round of DBSCAN's cluster search without the eps-graph: for every row
with want[i] set, the least label[j] over the rows j within eps of it with
label[j] >= 0 (label -1: not a source), or its own label[i] if that is less
(-1 stays -1 when no source is near).  With the core rows as sources, rounds
of it (and pointer jumping on the host) label the connected components of
the core rows by their least index; with the clusters' numbers on the core
rows, one round gives each border row scikit-learn's cluster (the lowest
numbered one that reaches it: that cluster is expanded first).  Distances
compared as dbscan_counts compares them.  Reads spec: d, metric, wg.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="dist" file="/mst/mst_distance.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define WG ${wg}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void dbscan_min_label(__global const real_t *restrict x, const int n, const real_t radius,
                      __global const int *restrict label, __global const char *restrict want,
                      __global int *restrict out)
{
    __local real_t tile[WG * D];
    __local int tile_label[WG];
    const int i = get_global_id(0), lid = get_local_id(0);
    const int row = i < n ? i : n - 1;
    real_t own[D];
    for (int c = 0; c < D; ++c)
        own[c] = x[(size_t)row * D + c];
    const int mine = label[row];
    int best = mine >= 0 ? mine : INT_MAX;
    const char active = i < n && want[row];
    for (int base = 0; base < n; base += WG) {
        const int j0 = base + lid;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int c = 0; c < D; ++c)
            tile[lid * D + c] = j0 < n ? x[(size_t)j0 * D + c] : 0;
        tile_label[lid] = j0 < n ? label[j0] : -1;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!active)
            continue;           /* no barrier follows in this iteration */
        const int top = min(WG, n - base);
        for (int t = 0; t < top; ++t) {
            const int lj = tile_label[t];
            if (lj < 0 || lj >= best)
                continue;
            __local const real_t *other = tile + t * D;
${dist.pair_distance("own", "other", "dd")}\
            if (dd <= radius)
                best = lj;
        }
    }
    if (i < n)
        out[i] = active ? (best == INT_MAX ? -1 : best) : mine;
}
