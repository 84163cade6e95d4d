<%doc>
Single linkage as scipy's mst_single_linkage computes it: Prim's algorithm on
the condensed distance matrix, one merge per iteration, two launches each and
no host round trip (the current node x lives on the device).
Reads spec: wg (work-group size, a power of two).
  prim_scan:  every unmerged i lowers best[i] to d(x, i); each work-group
              writes the (value, index) minimum of best over its rows.
  prim_pick:  one work-group reduces those minima, records the edge
              (x, y, distance) of merge k, marks y merged and makes it x.
  prim_all:   the same iterations in one work-group and one launch (CPUs).
Device state: [x, k].
Ties go to the lowest index: scipy's loop keeps the first strict minimum.
</%doc>
<%inherit file="prelude.cl.mako"/>
#define WG ${wg}

inline long condensed_index(const long n, const long i, const long j)
{
    const long a = min(i, j), b = max(i, j);
    return n * a - a * (a + 1) / 2 + (b - a - 1);
}

/* (value, index) minimum of a work-group; ties to the lower index */
inline void argmin_local(__local real_t *v, __local int *idx, const int lid)
{
    for (int s = WG / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < s) {
            const real_t a = v[lid], b = v[lid + s];
            const int ia = idx[lid], ib = idx[lid + s];
            if (b < a || (b == a && ib < ia)) {
                v[lid] = b;
                idx[lid] = ib;
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* best[i] = min(best[i], d(x, i)) over unmerged items first, first + stride,
   ...; the work-group minimum of best ends in v[0], idx[0] */
inline void prim_scan_items(__global const real_t *restrict dist, const int n, const int x,
                            __global const uchar *restrict merged,
                            __global real_t *restrict best, const int first,
                            const int stride, __local real_t *v, __local int *idx)
{
    const int lid = get_local_id(0);
    real_t mv = INFINITY;
    int mi = n;
    for (int i = first; i < n; i += stride) {
        if (merged[i])
            continue;
        real_t b = best[i];
        const real_t d = dist[condensed_index(n, x, i)];
        if (d < b) {
            b = d;
            best[i] = b;
        }
        if (b < mv) {            /* rows ascend: the first strict minimum */
            mv = b;
            mi = i;
        }
    }
    v[lid] = mv;
    idx[lid] = mi;
    argmin_local(v, idx, lid);
}

/* one item: edge k = (x, y) at height h; y joins the tree and is the next x */
inline void prim_record(const int y, const real_t h, __global int *restrict state,
                        __global uchar *restrict merged, __global int *restrict edges,
                        __global real_t *restrict heights)
{
    const int k = state[1];
    edges[2 * k] = state[0];
    edges[2 * k + 1] = y;
    heights[k] = h;
    merged[y] = 1;
    state[0] = y;
    state[1] = k + 1;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void prim_scan(__global const real_t *restrict dist, const int n,
               __global const int *restrict state, __global const uchar *restrict merged,
               __global real_t *restrict best, __global real_t *restrict part_v,
               __global int *restrict part_i)
{
    __local real_t v[WG];
    __local int idx[WG];
    prim_scan_items(dist, n, state[0], merged, best, get_global_id(0), get_global_size(0),
                    v, idx);
    if (get_local_id(0) == 0) {
        part_v[get_group_id(0)] = v[0];
        part_i[get_group_id(0)] = idx[0];
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void prim_pick(const int groups, __global const real_t *restrict part_v,
               __global const int *restrict part_i, __global int *restrict state,
               __global uchar *restrict merged, __global int *restrict edges,
               __global real_t *restrict heights)
{
    __local real_t v[WG];
    __local int idx[WG];
    const int lid = get_local_id(0);
    real_t mv = INFINITY;
    int mi = 0x7fffffff;
    for (int g = lid; g < groups; g += WG) {
        const real_t a = part_v[g];
        const int ia = part_i[g];
        if (a < mv || (a == mv && ia < mi)) {
            mv = a;
            mi = ia;
        }
    }
    v[lid] = mv;
    idx[lid] = mi;
    argmin_local(v, idx, lid);
    if (lid == 0)
        prim_record(idx[0], v[0], state, merged, edges, heights);
}

/* one work-group, one launch, every merge (CPUs: no launch per merge) */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void prim_all(__global const real_t *restrict dist, const int n, __global int *restrict state,
              __global uchar *restrict merged, __global real_t *restrict best,
              __global int *restrict edges, __global real_t *restrict heights)
{
    __local real_t v[WG];
    __local int idx[WG];
    const int lid = get_local_id(0);
    for (int k = 0; k < n - 1; ++k) {
        /* item 0's new x and merged flag, seen by all */
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        prim_scan_items(dist, n, state[0], merged, best, lid, WG, v, idx);
        barrier(CLK_GLOBAL_MEM_FENCE);      /* every item has read state[0] */
        if (lid == 0)
            prim_record(idx[0], v[0], state, merged, edges, heights);
    }
}
