<%doc>
The generic algorithm (scipy's fast_linkage) for centroid and median on the
rows: clusters i, j compare by |c_i - c_j|^2 over their centroids
(centroid) or their merge midpoints (median), a sequential sum of squared
differences with no fused multiply-add, so the host's check of a bound
(passes/linkage_rows.py: _distance) rounds the same on every device (no
square root here, whose single-precision rounding OpenCL leaves open; the
host takes the heights' roots).
Reads spec: d, wg.
  nearest_above_init: one work-group a row x < n-1, the nearest y > x
              (ties to the lower index: scipy's find_min_dist)
  rows_scan:  every active i != y at once: where update is set, the lower
              bounds of i < y that d(i, y) beats (lowered, listed for the
              host's heap: the merge of removed into y, whose item marks it
              merged away); each work-group's (distance, index) minimum over
              i > y (scipy's find_min_dist of y).  The list's count is
              changed[c]; the launch zeroes changed[1 - c] for the next merge.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
/* the host's check rounds as this: no fused multiply-adds */
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define WG ${wg}
${select.work_group_argmin()}

inline real_t centroid_sqdistance(__global const real_t *restrict centroids, const long a,
                                const long b)
{
    real_t s = 0;
    for (int k = 0; k < D; ++k) {
        const real_t diff = centroids[a * D + k] - centroids[b * D + k];
        s += diff * diff;
    }
    return s;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void nearest_above_init(__global const real_t *restrict centroids, const int n,
                        const int first, __global int *restrict neighbor,
                        __global real_t *restrict min_dist)
{
    __local real_t v[WG];
    __local int idx[WG];
    const int lid = get_local_id(0);
    const int x = first + get_group_id(0);
    real_t best = INFINITY;
    int best_i = 0x7fffffff;
    for (int i = x + 1 + lid; i < n; i += WG) {
        const real_t dist = centroid_sqdistance(centroids, x, i);
        if (dist < best) {            /* i ascends: the first of equals stays */
            best = dist;
            best_i = i;
        }
    }
    v[lid] = best;
    idx[lid] = best_i;
    argmin_local(v, idx, lid);
    if (lid == 0 && x < n - 1) {
        neighbor[x] = idx[0] < n ? idx[0] : -1;       /* -1: none closer than inf */
        min_dist[x] = v[0];
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rows_scan(__global const real_t *restrict centroids,
               __global int *restrict sizes,       /* 0: merged away */
               const int n, const int y, const int update, const int removed,
               const int c,
               __global real_t *restrict min_dist, __global int *restrict changed,
               __global int *restrict changed_i, __global real_t *restrict changed_v,
               __global real_t *restrict part_v, __global int *restrict part_i)
{
    __local real_t v[WG];
    __local int idx[WG];
    const int lid = get_local_id(0);
    real_t best = INFINITY;
    int best_i = 0x7fffffff;
    if (update && get_global_id(0) == 0)
        changed[1 - c] = 0;
    for (int i = (update ? 0 : y + 1) + get_global_id(0); i < n; i += get_global_size(0)) {
        if (i == removed) {           /* only item i touches sizes[i] */
            sizes[i] = 0;
            continue;
        }
        if (sizes[i] == 0 || i == y)
            continue;
        const real_t dist = centroid_sqdistance(centroids, y, i);
        if (i < y) {                  /* only item i touches min_dist[i] */
            if (dist < min_dist[i]) {
                min_dist[i] = dist;
                const int slot = atomic_inc(changed + c);
                changed_i[slot] = i;
                changed_v[slot] = dist;
            }
        } else if (dist < best) {     /* i ascends: the first of equals stays */
            best = dist;
            best_i = i;
        }
    }
    v[lid] = best;
    idx[lid] = best_i;
    argmin_local(v, idx, lid);
    if (lid == 0) {
        part_v[get_group_id(0)] = v[0];
        part_i[get_group_id(0)] = idx[0];
    }
}
