<%doc>
The ensemble k-means statistics pass (compute_statistics of the paper): for
every point and every model of the launch, the nearest centroid of that
model, and the point's weighted coordinates and weight added to it.
Reads spec: strategy ("task": a model per work-group, each group reads all
the data; "data": one model per launch, the rows split over the groups;
"concatenated": every model of the launch per point, the rows split over the
groups), d, wg, staged (centroids and statistics in local memory, written
back once per group; else centroids read from and statistics added to global
memory), distributed (concatenated only: work-item i visits the models
starting at model i mod M, the paper's access order that spreads the local
atomic updates over the models instead of every work-item hitting one model),
weighted.

Sums are fixed point: each point adds round(w * (x - shift) * sx) and
round(w * sw) as 64-bit integers.  Integer addition is associative, so the
totals do not depend on the order of the atomic updates: every strategy (and
every KD-tree mapping, kdtree_stats.cl.mako) gives bit-identical statistics.
Ties go to the lowest centroid index (strict < in index order).
</%doc>
<%inherit file="prelude.cl.mako"/>
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#define D ${d}
#define WG ${wg}
% if weighted:
#define WEIGHT(i) w[i]
% else:
#define WEIGHT(i) ((real_t)1)
% endif
% if staged:
#define CENTER(j, c) lc[(j) * D + (c)]
#define SUM_AT(j, c) (ls + (j) * D + (c))
#define WSUM_AT(j) (lw + (j))
% else:
#define CENTER(j, c) centers[(c_base + (j)) * D + (c)]
#define SUM_AT(j, c) (sums + (c_base + (j)) * D + (c))
#define WSUM_AT(j) (counts + c_base + (j))
% endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ensemble_stats(
    __global const real_t *restrict x, const long n, const long stride,
    __global const real_t *restrict w,
    __global const real_t *restrict centers,    /* all models' centroids, packed, C x D */
    __global const int *restrict model_off,     /* model m owns [model_off[m], model_off[m+1]) */
    const int first_model, const int n_models,  /* the models of this launch */
    __global const acc_t *restrict shift,       /* D: fixed-point origin */
    const acc_t sx, const acc_t sw,             /* fixed-point scales of sums, weights */
    __global long *restrict sums,               /* C x D, zeroed by the host */
    __global long *restrict counts,             /* C, zeroed by the host */
    const long tiles_per_group
% if staged:
    , __local real_t *lc, __local long *ls, __local long *lw
% endif
    )
{
    const int lid = get_local_id(0);
    const long g = get_group_id(0);
% if strategy == "task":
    /* a model per work-group, all the rows */
    const int m_lo = first_model + (int)g, nm = 1;
    const long row_lo = 0, row_hi = n;
% else:
    /* a contiguous slab of rows per work-group */
    const int m_lo = first_model, nm = ${"1" if strategy == "data" else "n_models"};
    const long row_lo = g * tiles_per_group * WG;
    const long row_hi = min(n, row_lo + tiles_per_group * WG);
% endif
    const int c_base = model_off[m_lo];
% if staged:
    const int nc = model_off[m_lo + nm] - c_base;
    for (int e = lid; e < nc * D; e += WG) {
        lc[e] = centers[c_base * D + e];
        ls[e] = 0;
    }
    for (int e = lid; e < nc; e += WG)
        lw[e] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
% endif

    for (long i = row_lo + lid; i < row_hi; i += WG) {
        real_t xp[D];
        long fv[D];
        for (int c = 0; c < D; ++c) {
            xp[c] = x[i * stride + c];
            fv[c] = convert_long_rte((acc_t)WEIGHT(i) * ((acc_t)xp[c] - shift[c]) * sx);
        }
        const long fw = convert_long_rte((acc_t)WEIGHT(i) * sw);
        for (int t = 0; t < nm; ++t) {
% if distributed:
            const int m = m_lo + (lid + t) % nm;
% else:
            const int m = m_lo + t;
% endif
            const int lo = model_off[m] - c_base, hi = model_off[m + 1] - c_base;
            real_t best = INFINITY;
            int bj = lo;
            for (int j = lo; j < hi; ++j) {
                real_t s = 0;
                for (int c = 0; c < D; ++c) {
                    const real_t diff = xp[c] - CENTER(j, c);
                    s = fma(diff, diff, s);
                }
                if (s < best) {
                    best = s;
                    bj = j;
                }
            }
            for (int c = 0; c < D; ++c)
                atom_add(SUM_AT(bj, c), fv[c]);
            atom_add(WSUM_AT(bj), fw);
        }
    }
% if staged:
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < nc * D; e += WG) {
  % if strategy == "task":
        sums[c_base * D + e] = ls[e];        /* the group owns its model: no atomics */
  % else:
        if (ls[e] != 0)                      /* other groups add to the same model */
            atom_add(sums + c_base * D + e, ls[e]);
  % endif
    }
    for (int e = lid; e < nc; e += WG) {
  % if strategy == "task":
        counts[c_base + e] = lw[e];
  % else:
        if (lw[e] != 0)
            atom_add(counts + c_base + e, lw[e]);
  % endif
    }
% endif
}
