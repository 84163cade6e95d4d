<%doc>
Single linkage as scipy's mst_single_linkage computes it: Prim's algorithm on
the condensed distance matrix, one merge per iteration and no host round
trip (the tree's newest node lives on the device).
Reads spec: wg (work-group size, a power of two); buffers, buffer_elems
(the matrix across buffers: condensed.cl.mako).
  prim_step:  one launch a merge over many work-groups: each reduces the
              last launch's minima to the new node y, then every unmerged i
              lowers best[i] to d(y, i) and each work-group writes its
              (value, index) minimum of best.
  prim_all:   the same iterations in one work-group and one launch (CPUs).
Ties go to the lowest index: scipy's loop keeps the first strict minimum.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
<%namespace name="cm" file="/linkage/condensed.cl.mako"/>
#define WG ${wg}
${cm.accessor(True)}

inline long condensed_index(const long n, const long i, const long j)
{
    const long a = min(i, j), b = max(i, j);
    return n * a - a * (a + 1) / 2 + (b - a - 1);
}

${select.work_group_argmin()}\

/* best[i] = min(best[i], d(x, i)) over unmerged items first, first + stride,
   ...; the work-group minimum of best ends in v[0], idx[0].  x itself counts
   as merged; where mark is set, its own item records that. */
inline void prim_scan_items(${cm.params(True)}, const int n, const int x,
                            const int mark, __global uchar *restrict merged,
                            __global real_t *restrict best, const int first,
                            const int stride, __local real_t *v, __local int *idx)
{
    const int lid = get_local_id(0);
    real_t mv = INFINITY;
    int mi = n;
    for (int i = first; i < n; i += stride) {
        if (i == x) {
            if (mark)
                merged[i] = 1;
            continue;
        }
        if (merged[i])
            continue;
        real_t b = best[i];
        const real_t d = DIST(condensed_index(n, x, i));
        if (d < b) {
            b = d;
            best[i] = b;
        }
        /* rows ascend: the first strict minimum (an unmerged i at +inf, only
           where the distances overflowed, still beats "none": y stays < n) */
        ${select.lower("b", "i", "mv", "mi")}
    }
    v[lid] = mv;
    idx[lid] = mi;
    argmin_local(v, idx, lid);
}

/* Many work-groups, one launch a merge: every work-group reduces the last
   launch's partial minima to the same new node y (the nearest to the tree),
   group 0 records the edge, and all scan from y, writing the next partials
   to the other buffer.  Launch 0 reads a seeded (0, node 0); launch n-1
   records the last edge. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void prim_step(${cm.params(True)}, const int n, const int groups,
               __global const real_t *restrict in_v, __global const int *restrict in_i,
               __global real_t *restrict out_v, __global int *restrict out_i,
               __global int *restrict state, __global uchar *restrict merged,
               __global real_t *restrict best, __global int *restrict edges,
               __global real_t *restrict heights)
{
    __local real_t v[WG];
    __local int idx[WG];
    const int lid = get_local_id(0);
    reduce_partials(groups, in_v, in_i, v, idx);
    const int y = min(idx[0], n - 1);       /* none unmerged: only past the last edge */
    const real_t h = v[0];
    barrier(CLK_LOCAL_MEM_FENCE);           /* v, idx are reused by the scan */
    if (get_group_id(0) == 0 && lid == 0) { /* state: [previous node, edges made] */
        const int k = state[1];
        if (k >= 0) {
            edges[2 * k] = state[0];
            edges[2 * k + 1] = y;
            heights[k] = h;
        }
        state[0] = y;
        state[1] = k + 1;
    }
    prim_scan_items(DIST_ARGS, n, y, 1, merged, best, get_global_id(0), get_global_size(0), v, idx);
    if (lid == 0) {
        out_v[get_group_id(0)] = v[0];
        out_i[get_group_id(0)] = idx[0];
    }
}

/* one work-group, one launch, every merge (CPUs: no launch per merge);
   state: [x, edges made] */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void prim_all(${cm.params(True)}, const int n, __global int *restrict state,
              __global uchar *restrict merged, __global real_t *restrict best,
              __global int *restrict edges, __global real_t *restrict heights)
{
    __local real_t v[WG];
    __local int idx[WG];
    const int lid = get_local_id(0);
    for (int k = 0; k < n - 1; ++k) {
        /* item 0's new x and merged flag, seen by all */
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        const int x = state[0];
        prim_scan_items(DIST_ARGS, n, x, 0, merged, best, lid, WG, v, idx);
        barrier(CLK_GLOBAL_MEM_FENCE);      /* every item has read state[0] */
        if (lid == 0) {
            const int y = min(idx[0], n - 1);   /* always an unmerged one: see above */
            edges[2 * k] = x;
            edges[2 * k + 1] = y;
            heights[k] = v[0];
            merged[y] = 1;
            state[0] = y;
        }
    }
}
