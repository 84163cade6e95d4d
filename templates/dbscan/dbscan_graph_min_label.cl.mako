<%doc>
dbscan_min_label over the stored eps-graph (dbscan_neighbours' CSR rows):
for every row with want[i] set, the least of its own label (when >= 0) and
label[j] >= 0 over its neighbours j (-1 when none); the others keep theirs.
The same neighbours, hence the same labels, as the round without the graph,
at O(edges) a round instead of O(n^2 d).  Reads spec: nothing.
</%doc>
<%inherit file="/prelude.cl.mako"/>

__kernel void dbscan_graph_min_label(const int n, __global const long *restrict start,
                                     __global const int *restrict nbr,
                                     __global const int *restrict label,
                                     __global const char *restrict want,
                                     __global int *restrict out)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const int mine = label[i];
    if (!want[i]) {
        out[i] = mine;
        return;
    }
    int best = mine >= 0 ? mine : INT_MAX;
    for (long k = start[i]; k < start[i + 1]; ++k) {
        const int lj = label[nbr[k]];
        if (lj >= 0 && lj < best)
            best = lj;
    }
    out[i] = best == INT_MAX ? -1 : best;
}
