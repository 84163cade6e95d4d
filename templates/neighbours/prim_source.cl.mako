<%doc>
The edge scikit-learn's Prim records for each node it adds: (source, new),
source the first node in Prim's order whose mutual-reachability distance
to the new node is the height it was added at (its loop lowers a node's
best distance only where strictly smaller, so the first such node keeps
it).  The engine's Prim (templates/mst/mst_prim.cl.mako) records the node
added the step before instead; the clusters at every height are the same,
but where heights tie the tree condenses by the edges as scikit-learn
orders them.  Distances from mst_distance.cl.mako, as Prim computed them.
Reads spec: d, metric, wg.
  prim_source: one work-item per position p >= 1 of seq (Prim's order from
               node 0): src[p - 1] = the first seq[q], q < p, with
               max(core[seq[q]], core[seq[p]], d) == height[p - 1].
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="dist" file="/mst/mst_distance.cl.mako"/>
/* pdist rounds every product and sum, as Prim's kernel did: no fused
   multiply-adds, so the heights compare equal */
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}

__kernel void prim_source(__global const real_t *restrict x, const int n,
                          __global const real_t *restrict core,
                          __global const int *restrict seq,
                          __global const real_t *restrict height,
                          __global int *restrict src)
{
    const int p = get_global_id(0) + 1;
    if (p >= n)
        return;
    const int y = seq[p];
    const real_t h = height[p - 1];
    __global const real_t *own = x + (size_t)y * D;
    int found = seq[p - 1];          /* (never kept: some node gives h) */
    for (int q = 0; q < p; ++q) {
        const int t = seq[q];
        __global const real_t *other = x + (size_t)t * D;
${dist.pair_distance("other", "own", "dd")}\
        const real_t mr = fmax(fmax(core[t], core[y]), dd);
        if (mr == h) {
            found = t;
            break;
        }
    }
    src[p - 1] = found;
}
