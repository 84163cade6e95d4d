<%doc>
The fused Lloyd pass: distance + argmin + partial sums in one read of the data.
Reads spec: d, k, kp (centroids padded to a multiple of cchunk), wg, ppi
(points per work-item), ctile (centroids scored per pass over a point),
stage_centers (centroids staged in local memory, cchunk at a time), cchunk,
stage_point (point copied to private memory), update (accumulate partial
sums), weighted.

Each work-group owns a contiguous range of group_rows rows, whole blocks of
block_rows rows, and the blocks' slabs of partial sums in global memory
(slab i / block_rows of row i: split-free sums, runtime/exact_sums.py, have
block_rows fixed by the fit; else block_rows = group_rows, a slab a group);
a slab is written in point order by one work-item per dimension, so the sums
do not depend on scheduling (no atomics), nor on which group holds a block.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
#define D ${d}
#define K ${k}
#define KP ${kp}
#define WG ${wg}
#define PPI ${ppi}
#define CT ${ctile}
#define CCH ${cchunk}
#define TILE (WG * PPI)
% if stage_centers:
#define CENTER(j, c) lc[((j) - jc) * D + (c)]
#define NORM(j) lcn[(j) - jc]
% else:
#define CENTER(j, c) centers[(j) * D + (c)]
#define NORM(j) center_norms[j]
% endif
% if stage_point:
#define POINT(p, c) xp[p][c]
% else:
#define POINT(p, c) x[pt[p] * stride + (c)]
% endif
% if weighted:
#define WEIGHT(i) w[i]
% else:
#define WEIGHT(i) ((real_t)1)
% endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void assign_and_accumulate(
    __global const real_t *restrict x, const long n, const long stride,
    __global const real_t *restrict w,
    __global const real_t *restrict centers,      /* KP x D, padded rows */
    __global const real_t *restrict center_norms, /* KP, +inf on padding */
    __global int *restrict labels,                /* in: previous, out: new */
    __global real_t *restrict min_dist,           /* exact distance to own centre */
    __global acc_t *restrict part_sums,           /* slabs x K x D (x2 if Kahan) */
    __global acc_t *restrict part_weights,        /* slabs x K (x2 if Kahan) */
    __global acc_t *restrict part_inertia,        /* groups */
    __global int *restrict part_flags,            /* groups x 2: changed, non-finite */
    const long group_rows, const long block_rows)
{
    const int lid = get_local_id(0);
    const long g = get_group_id(0), groups = get_num_groups(0);
    const long first = g * group_rows, end = min(n, first + group_rows);
    __local acc_t scratch[WG];
% if stage_centers:
    __local real_t lc[CCH * D];
    __local real_t lcn[CCH];
% endif
% if update:
    __local int tile_label[TILE];
    /* this group's slabs zeroed (one at least); Kahan sums (not split-free)
       have a slab a group: their compensations after the groups' slabs */
    const long slab0 = first / block_rows;
    const long slabs = max(1L, (end - first + block_rows - 1) / block_rows);
    for (long e = lid; e < slabs * K * D; e += WG)
        part_sums[slab0 * K * D + e] = 0;
    for (long e = lid; e < slabs * K; e += WG)
        part_weights[slab0 * K + e] = 0;
  % if not acc_double:
    for (long e = lid; e < K * D; e += WG)
        part_sums[(groups + g) * K * D + e] = 0;
    for (long e = lid; e < K; e += WG)
        part_weights[(groups + g) * K + e] = 0;
  % endif
% endif
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);

    acc_t inertia = 0;
    int changed = 0, nonfinite = 0;
    for (long t = 0; first + t * TILE < end; ++t) {   /* uniform over the group */
        const long base = first + t * TILE;
        long pt[PPI];
        real_t best[PPI];
        int best_j[PPI];
% if stage_point:
        real_t xp[PPI][D];
% endif
        for (int p = 0; p < PPI; ++p) {
            const long i = base + p * WG + lid;
            pt[p] = i < end ? i : end - 1;  /* edge: score a valid point, drop it below */
            best[p] = INFINITY;
            best_j[p] = 0;
% if stage_point:
            for (int c = 0; c < D; ++c)
                xp[p][c] = x[pt[p] * stride + c];
% endif
        }
        for (int jc = 0; jc < KP; jc += CCH) {
% if stage_centers:
          /* the next chunk of centroids into local memory (once if all fit) */
          if (KP > CCH || t == 0) {
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int e = lid; e < CCH * D; e += WG)
                lc[e] = centers[jc * D + e];
            for (int e = lid; e < CCH; e += WG)
                lcn[e] = center_norms[jc + e];
            barrier(CLK_LOCAL_MEM_FENCE);
          }
% endif
          for (int j0 = jc; j0 < jc + CCH; j0 += CT) {
            real_t dot[PPI][CT];
            for (int p = 0; p < PPI; ++p)
                for (int q = 0; q < CT; ++q)
                    dot[p][q] = 0;
            for (int c = 0; c < D; ++c)
                #pragma unroll
                for (int p = 0; p < PPI; ++p) {
                    const real_t xv = POINT(p, c);
                    #pragma unroll
                    for (int q = 0; q < CT; ++q)
                        dot[p][q] = fma(xv, CENTER(j0 + q, c), dot[p][q]);
                }
            for (int p = 0; p < PPI; ++p)
                for (int q = 0; q < CT; ++q) {
                    /* ||c||^2 - 2 x.c ranks centroids like ||x - c||^2 */
                    const real_t score = fma((real_t)-2, dot[p][q], NORM(j0 + q));
                    if (score < best[p]) {
                        best[p] = score;
                        best_j[p] = j0 + q;
                    }
                }
          }
        }
        for (int p = 0; p < PPI; ++p) {
            const long i = base + p * WG + lid;
${select.exact_distance("POINT(p, c)", "centers[best_j[p] * D + c]")}\
            if (i < end) {
${select.record_winner("i", "best_j[p]")}\
            }
% if update:
            tile_label[p * WG + lid] = i < end ? best_j[p] : -1;
% endif
        }
% if update:
        barrier(CLK_LOCAL_MEM_FENCE);
        /* one work-item per dimension (and one for the weights), points in order */
        for (int c = lid; c <= D; c += WG)
            for (int r = 0; r < TILE; ++r) {
                const int j = tile_label[r];
                if (j < 0)
                    continue;
                const long i = base + r, slab = i / block_rows;
                if (c < D)
                    acc_add_global(part_sums + slab * K * D, (long)j * D + c, groups * K * D,
                                   (acc_t)WEIGHT(i) * x[i * stride + c]);
                else
                    acc_add_global(part_weights + slab * K, j, groups * K, (acc_t)WEIGHT(i));
            }
        barrier(CLK_LOCAL_MEM_FENCE);
% endif
    }
    inertia = group_sum(inertia, scratch);
    const int total_changed = (int)group_sum((acc_t)changed, scratch);
    const int total_nonfinite = (int)group_sum((acc_t)nonfinite, scratch);
    if (lid == 0) {
        part_inertia[g] = inertia;
        part_flags[2 * g] = total_changed;
        part_flags[2 * g + 1] = total_nonfinite;
    }
}
