<%doc>
Single linkage as scipy's mst_single_linkage computes it, Prim's algorithm
from node 0, with the distances computed from the rows (mst_distance.cl.mako)
instead of read from a matrix: the tie order of scipy's Z where the tree's
weights tie.  Reads spec: d, metric, wg (a power of two), core (weights
max(core[x], core[i], d(x, i)), as scikit-learn's HDBSCAN builds its tree).
  prim_step: one launch a step over many work-groups: each reduces the last
             launch's minima to the new node y, then every unmerged i lowers
             best[i] to d(y, i) and each work-group writes its (value, index)
             minimum of best.
  prim_all:  the same steps in one work-group and one launch (CPUs).
Ties go to the lowest index (scipy's loop keeps the first strict minimum);
best[i] falls only where strictly greater, as in scipy's loop.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
<%namespace name="dist" file="/mst/mst_distance.cl.mako"/>
/* pdist rounds every product and sum: no fused multiply-adds */
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define WG ${wg}
% if core:
#define CORE_ARG , __global const real_t *restrict core
#define CORE_PASS , core
% else:
#define CORE_ARG
#define CORE_PASS
% endif

${select.work_group_argmin()}\

/* best[i] = min(best[i], d(node, i)) over unmerged rows first, first +
   stride, ...; the work-group minimum of best ends in v[0], idx[0].  node
   itself counts as merged; where mark is set, its own item records that. */
/* merged and best are not restrict: prim_all's scan (mark 0) only reads
   merged, which item 0 writes between scans; a restrict pointer the
   inlined scan never writes may be read through a non-coherent cache
   (NVIDIA's), missing that write even after the barrier */
inline void prim_scan_rows(__global const real_t *restrict x, const int n, const int node,
                           const int mark, __global uchar *merged,
                           __global real_t *best, const int first,
                           const int stride, __local real_t *v, __local int *idx CORE_ARG)
{
    const int lid = get_local_id(0);
    __global const real_t *u = x + (long)node * D;
    real_t mv = INFINITY;
    int mi = n;
    for (int i = first; i < n; i += stride) {
        if (i == node) {
            if (mark)
                merged[i] = 1;
            continue;
        }
        if (merged[i])
            continue;
        real_t b = best[i];
        __global const real_t *r = x + (long)i * D;
${dist.pair_distance("u", "r", "w")}\
% if core:
        if (w < core[node] || w < core[i])    /* NaN stays NaN (fmax would drop it) */
            w = core[node] > core[i] ? core[node] : core[i];
% endif
        if (w < b) {
            b = w;
            best[i] = b;
        }
        /* rows ascend: the first strict minimum (an unmerged i at +inf still
           beats "none": y stays < n) */
        ${select.lower("b", "i", "mv", "mi")}
    }
    v[lid] = mv;
    idx[lid] = mi;
    argmin_local(v, idx, lid);
}

/* Many work-groups, one launch a step: every work-group reduces the last
   launch's partial minima to the same new node y, group 0 records the edge
   (state: [previous node, edges made]), and all scan from y into the other
   partials buffer.  Launch 0 reads a seeded (0, node 0); launch n-1 records
   the last edge. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void prim_step(__global const real_t *restrict x, const int n, const int groups,
               __global const real_t *restrict in_v, __global const int *restrict in_i,
               __global real_t *restrict out_v, __global int *restrict out_i,
               __global int *restrict state, __global uchar *restrict merged,
               __global real_t *restrict best, __global int *restrict edges,
               __global real_t *restrict heights CORE_ARG)
{
    __local real_t v[WG];
    __local int idx[WG];
    const int lid = get_local_id(0);
    reduce_partials(groups, in_v, in_i, v, idx);
    const int y = min(idx[0], n - 1);       /* none unmerged: only past the last edge */
    const real_t h = v[0];
    barrier(CLK_LOCAL_MEM_FENCE);           /* v, idx are reused by the scan */
    if (get_group_id(0) == 0 && lid == 0) {
        const int k = state[1];
        if (k >= 0) {
            edges[2 * k] = state[0];
            edges[2 * k + 1] = y;
            heights[k] = h;
        }
        state[0] = y;
        state[1] = k + 1;
    }
    prim_scan_rows(x, n, y, 1, merged, best, get_global_id(0), get_global_size(0), v, idx
                   CORE_PASS);
    if (lid == 0) {
        out_v[get_group_id(0)] = v[0];
        out_i[get_group_id(0)] = idx[0];
    }
}

/* one work-group, one launch, every step (CPUs: no launch per step);
   state: [node, unused] */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void prim_all(__global const real_t *restrict x, const int n, __global int *state,
              __global uchar *merged, __global real_t *best,
              __global int *restrict edges, __global real_t *restrict heights CORE_ARG)
{
    __local real_t v[WG];
    __local int idx[WG];
    const int lid = get_local_id(0);
    for (int k = 0; k < n - 1; ++k) {
        /* item 0's new node and merged flag, seen by all */
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        const int node = state[0];
        prim_scan_rows(x, n, node, 0, merged, best, lid, WG, v, idx CORE_PASS);
        barrier(CLK_GLOBAL_MEM_FENCE);      /* every item has read state[0] */
        if (lid == 0) {
            const int y = min(idx[0], n - 1);
            edges[2 * k] = node;
            edges[2 * k + 1] = y;
            heights[k] = v[0];
            merged[y] = 1;
            state[0] = y;
        }
    }
}
