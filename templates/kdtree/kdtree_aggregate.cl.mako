<%doc>
The replicated KD-tree mapping's second kernel: sum every work-item's
private statistics (kdtree_stats.cl.mako, mapping "replicated") into the
launch's centroids.  Integer sums: the order does not matter.
Reads spec: d.
Work-item e owns entry e of the replica layout (nc x D sums, then nc
weights); reads over the replicas are coalesced across work-items.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#define D ${d}

__kernel void kdtree_aggregate(__global const long *restrict replicas, const long n_replicas,
                               const int c_base, const int nc,
                               __global long *restrict sums, __global long *restrict counts)
{
    const long e = get_global_id(0), size = (long)nc * (D + 1);
    if (e >= size)
        return;
    long total = 0;
    for (long r = 0; r < n_replicas; ++r)
        total += replicas[r * size + e];
    if (e < (long)nc * D)
        sums[(long)c_base * D + e] = total;
    else
        counts[c_base + (e - (long)nc * D)] = total;
}
