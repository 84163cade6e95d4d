<%doc>
One step of ward's nearest-neighbour chain on the rows: the ward distance of
cluster x to every other active cluster, sqrt(2 n_x n_i / (n_x + n_i)) |c_x - c_i|
from the centroids and sizes (size 0: merged away), each work-group's
(distance, index) minimum (ties to the lower index: scipy's scan), and the
distance to cluster prev (the chain's previous link, -1: none) alone.
Reads spec: d, wg.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
#define D ${d}
#define WG ${wg}
${select.work_group_argmin()}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ward_nearest(__global const real_t *restrict centroids,   /* n x D */
                  __global const real_t *restrict sizes,       /* n, 0: merged away */
                  const int n, const int x, const int prev,
                  __global real_t *restrict part_v, __global int *restrict part_i,
                  __global real_t *restrict prev_dist)
{
    __local real_t v[WG];
    __local int idx[WG];
    const int lid = get_local_id(0);
    const real_t nx = sizes[x];
    real_t best = INFINITY;
    int best_i = 0x7fffffff;
    for (int i = get_global_id(0); i < n; i += get_global_size(0)) {
        const real_t ni = sizes[i];
        if (ni == 0 || i == x)
            continue;
        real_t s = 0;
        for (int k = 0; k < D; ++k) {
            const real_t diff = centroids[(long)x * D + k] - centroids[(long)i * D + k];
            s += diff * diff;
        }
        const real_t dist = sqrt(2 * nx * ni / (nx + ni) * s);
        if (i == prev)
            prev_dist[0] = dist;
        if (dist < best) {            /* i ascends: the first of equals stays */
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
