<%doc>
Labels, distances and inertia of every model of the launch (the ensemble's
final pass, and the pass that finds the farthest points when a model has an
empty cluster).
Reads spec: d, wg, labels (write each model's labels), min_dist (write each
point's squared distance to its centroid), weighted, blocks (split-free
inertia: a work-group a fixed block of rows).

Work-item t walks rows t, t + T, ... (T work-items in all) and keeps its own
inertia per model in part_inertia[t * n_models + m]: no atomics, and the
host reduces the T partials in a fixed order (reduce_partials).  With
``blocks``, work-group g walks the rows of block g (block_rows rows from
g * block_rows), a work-item every WG-th row, and sums its work-items'
partials by a fixed tree into block_inertia[g * n_models + m]: the same
bits whichever chunk holds the block (runtime/exact_sums.py).  The
distance is the same fma sum, in the same order, as ensemble_stats and
kdtree_stats use, and ties go to the lowest index, so the labels are those
the statistics pass counted.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#define D ${d}
#define WG ${wg}
% if weighted:
#define WEIGHT(i) w[i]
% else:
#define WEIGHT(i) ((real_t)1)
% endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ensemble_assign(
    __global const real_t *restrict x, const long n, const long stride,
    __global const real_t *restrict w,
    __global const real_t *restrict centers,    /* C x D packed */
    __global const int *restrict model_off,     /* n_models + 1 */
    const int n_models,
    __global int *restrict labels,              /* n_models x n (if labels) */
    __global real_t *restrict min_dist,         /* n_models x n (if min_dist) */
    __global acc_t *restrict part_inertia       /* T x n_models (x2 if Kahan) */
% if blocks:
    , const long block_rows,
    __global double *restrict block_inertia     /* blocks x n_models */
% endif
    )
{
    const long t = get_global_id(0), T = get_global_size(0);
% if blocks:
    const int lid = get_local_id(0);
    const long first = get_group_id(0) * block_rows, end = min(n, first + block_rows);
% endif
    for (int m = 0; m < n_models; ++m) {
        part_inertia[t * n_models + m] = 0;
% if not acc_double:
        part_inertia[(T + t) * n_models + m] = 0;
% endif
    }
% if blocks:
    for (long i = first + lid; i < end; i += WG) {
% else:
    for (long i = t; i < n; i += T) {
% endif
        real_t xp[D];
        for (int c = 0; c < D; ++c)
            xp[c] = x[i * stride + c];
        for (int m = 0; m < n_models; ++m) {
            const int lo = model_off[m], hi = model_off[m + 1];
            real_t best = INFINITY;
            int bj = lo;
            for (int j = lo; j < hi; ++j) {
                real_t s = 0;
                for (int c = 0; c < D; ++c) {
                    const real_t diff = xp[c] - centers[j * D + c];
                    s = fma(diff, diff, s);
                }
                if (s < best) {
                    best = s;
                    bj = j;
                }
            }
% if labels:
            labels[m * n + i] = bj - lo;
% endif
% if min_dist:
            min_dist[m * n + i] = best;
% endif
            acc_add_global(part_inertia, t * n_models + m, T * n_models,
                           (acc_t)WEIGHT(i) * best);
        }
    }
% if blocks:
    __local double tree[WG];
    for (int m = 0; m < n_models; ++m) {
        tree[lid] = part_inertia[t * n_models + m];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int span = WG / 2; span > 0; span >>= 1) {
            if (lid < span)
                tree[lid] += tree[lid + span];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0)
            block_inertia[get_group_id(0) * n_models + m] = tree[0];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
% endif
}
