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
weighted, k (every model of the launch has k centroids: a compile-time loop
the compiler unrolls, no per-model bounds read; 0: bounds from model_off),
word_atomics (staged statistics as 32-bit word pairs: kernels_cl/local_stats.cl).
Unweighted and staged, a centroid's weight is its point count (a 32-bit
local counter) times the one fixed-point weight of a point: the same integer
as the sum, one cheap atomic instead of a 64-bit one.

Sums are fixed point: each point adds round(w * (x - shift) * sx) and
round(w * sw) as 64-bit integers.  Integer addition is associative, so the
totals do not depend on the order of the atomic updates: every strategy (and
every KD-tree mapping, kdtree_stats.cl.mako) gives bit-identical statistics.
Ties go to the lowest centroid index (strict < in index order).
</%doc>
<%inherit file="/prelude.cl.mako"/>
#define D ${d}
#define WG ${wg}
% if weighted:
#define WEIGHT(i) w[i]
% else:
#define WEIGHT(i) ((real_t)1)
% endif
<%
    # with a uniform k, every model's block of local memory is padded to an
    # odd stride: in the distributed order consecutive work-items read and
    # add to consecutive models, which an even stride folds onto few banks
    odd = lambda v: v | 1
    ms, ss, ws = (odd(k * d), odd(k * d), odd(k)) if k and staged else \
        ((k * d, k * d, k) if k else (0, 0, 0))
%>
#define STAT_WORDS ${int(staged and word_atomics)}
<%include file="/local_stats.cl"/>
% if staged:
#define STAT_ADD(p, high_at, v) stat_add(p, high_at, v)
% else:
#define STAT_ADD(p, high_at, v) atom_add(p, v)
% endif
<% counted = staged and not weighted %>\
% if counted:
/* lw holds 32-bit point counts (the weights are count * fw) */
#define WEIGHT_ZERO(e) (((__local uint *)lw)[e] = 0)
#define WEIGHT_ADD(j, v) atomic_inc((__local uint *)lw + (j))
#define WEIGHT_GET(e) ((long)((__local uint *)lw)[e] * fw_one)
% else:
#define WEIGHT_ZERO(e) STAT_ZERO(lw, HW, e)
  % if staged:
#define WEIGHT_ADD(j, v) STAT_ADD(lw + (j), HW, v)
  % else:
#define WEIGHT_ADD(j, v) atom_add(counts + c_base + (j), v)
  % endif
#define WEIGHT_GET(e) STAT_GET(lw, HW, e)
% endif
% if k:
#define K ${k}
#define MS ${ms}
#define SS ${ss}
#define WS ${ws}
/* packed element e of the launch's centroids (or weights) in local memory */
#define LOCAL_C(e) (((e) / (K * D)) * MS + (e) % (K * D))
#define LOCAL_S(e) (((e) / (K * D)) * SS + (e) % (K * D))
#define LOCAL_W(e) (((e) / K) * WS + (e) % K)
% else:
#define LOCAL_C(e) (e)
#define LOCAL_S(e) (e)
#define LOCAL_W(e) (e)
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
    , __local real_t *lc, __local stat_t *ls, __local stat_t *lw
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
    /* where the high words start (word_atomics) */
    const int HS = ${"nm * SS" if k else "nc * D"}, HW = ${"nm * WS" if k else "nc"};
    const long fw_one = convert_long_rte(sw);   /* an unweighted point's weight */
    for (int e = lid; e < nc * D; e += WG) {
        lc[LOCAL_C(e)] = centers[c_base * D + e];
        STAT_ZERO(ls, HS, LOCAL_S(e));
    }
    for (int e = lid; e < nc; e += WG)
        WEIGHT_ZERO(LOCAL_W(e));
    barrier(CLK_LOCAL_MEM_FENCE);
% endif

% if distributed:
    const int first_visit = lid % nm;
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
            /* (lid + t) mod nm, without a division per point and model */
            const int m = m_lo + (first_visit + t < nm ? first_visit + t : first_visit + t - nm);
% else:
            const int m = m_lo + t;
% endif
            /* the model's centroids, sums and weights */
% if k:
            const int mr = m - m_lo, nj = K;
            const int cb = mr * MS, sb = mr * SS, wb = mr * WS;
% else:
            const int lo = model_off[m] - c_base, nj = model_off[m + 1] - c_base - lo;
            const int cb = lo * D, sb = lo * D, wb = lo;
% endif
% if staged:
            __local const real_t *mc = lc + cb;
            __local stat_t *msum = ls + sb;
% else:
            __global const real_t *mc = centers + c_base * D + cb;
            __global long *msum = sums + c_base * D + sb;
% endif
            real_t best = INFINITY;
            int bj = 0;
% if k:
            #pragma unroll
% endif
            for (int j = 0; j < nj; ++j) {
                real_t s = 0;
                for (int c = 0; c < D; ++c) {
                    const real_t diff = xp[c] - mc[j * D + c];
                    s = fma(diff, diff, s);
                }
                if (s < best) {
                    best = s;
                    bj = j;
                }
            }
            for (int c = 0; c < D; ++c)
                STAT_ADD(msum + bj * D + c, HS, fv[c]);
            WEIGHT_ADD(wb + bj, fw);
        }
    }
% if staged:
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < nc * D; e += WG) {
  % if strategy == "task":
        sums[c_base * D + e] = STAT_GET(ls, HS, LOCAL_S(e));        /* the group owns its model: no atomics */
  % else:
        const long v = STAT_GET(ls, HS, LOCAL_S(e));
        if (v != 0)                          /* other groups add to the same model */
            atom_add(sums + c_base * D + e, v);
  % endif
    }
    for (int e = lid; e < nc; e += WG) {
  % if strategy == "task":
        counts[c_base + e] = WEIGHT_GET(LOCAL_W(e));
  % else:
        const long v = WEIGHT_GET(LOCAL_W(e));
        if (v != 0)
            atom_add(counts + c_base + e, v);
  % endif
    }
% endif
}
