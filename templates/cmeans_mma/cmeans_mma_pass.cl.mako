<%doc>
The fused fuzzy c-means pass (cmeans_pass.cl.mako, whose kernel this is:
same arguments, outputs and phases 2-4) with its distances on NVIDIA tensor
cores (compute capability 8 or more, float32, d <= 128): the "distances"
block of the portable kernel replaced by mma.sync m16n8k8 TF32 products,
3xTF32 as lloyd_mma_assign.cl.mako's and gmm_mma_estep.cl.mako's (x.c =
xb.cb + xb.cs + xs.cb, each float split into big and small TF32 parts;
mma_fragments.cl.mako).  cmeans_mma.py offers it only where NVIDIA's
runtime reports tensor cores (or, with ``emulate``, the products in plain
OpenCL: CPU runtimes and oclgrind run every other line).

Reads spec: the portable kernel's fields (tiled, stage_centers, stage_point
and row_major off), dp (d padded to 8), kp (c padded to 8), emulate,
truncate (emulate's products as the tensor cores' truncating accumulation:
mma_fragments.cl.mako), precision ("float32": 3xTF32, "tf32" or "bf16"), recheck
(the re-check's ratio: below, cmeans_mma.recheck_ratio), stats_mma (the
statistics too: below).
P = 16 RT rows a tile (RT m16 row tiles, dividing the WG / 32 warps); warp
w owns row tile w % RT and every (WG / 32 / RT)-th n8 tile of centres from
w / RT, the same number of steps for every warp (steps past the last tile
redo it and store nothing: no MMA under a branch).

The ``centers`` argument holds the operands cmeans_mma.operands makes:
c' = c - s (kp x dp, zero padded), ||c'||^2 (kp, float64 made float32) and
the shift s (dp, the centres' mean): the distance is v = ||x'||^2 +
||c'||^2 - 2 x'.c' with x' = x - s, the data's spread instead of its
distance from the origin, and the centres themselves (c x d, float32)
follow them.

The expansion's error is absolute, |v~ - v| <= beta (||x'||^2 +
||c'||^2) (cmeans_mma.recheck_ratio derives beta from the operands'
rounding and the tensor cores' truncating accumulation), so it is large
against v where a row is near a centre compared with their distances from
s -- exactly the pairs that carry a row's memberships.  Where v <= recheck
(||x'||^2 + ||c'||^2), recheck = beta / 2^-13, the distance is the
portable kernel's in-order sum of squared differences instead (its bits:
a row that coincides with a centre has distance exactly 0, as
cmeans_pass.cl.mako gives it, the estimator's convention); every other
distance is within 2^-13 + 2^-19 of v relatively.  (Re-checking only near
0, below 2^-12 (||x'||^2 + ||c'||^2), left rows 0.3 from their starting
centres at d=64 with distances off by 1e-4, biased one way by the
truncation: the statistics of 3001 x 64, c=300, 7e-5 off on an H200.)
Each k8 step's big product starts from zero and is added to the running
sum in float32 (round to nearest), so the tensor cores' truncation is
relative to a step's products, not to the whole running dot product.

``precision`` "tf32" (the estimator's fast mode): one TF32 product a step
(x' and c' rounded to TF32, float32 accumulation) instead of three; beta
is then about 2^-10 and recheck about 2^-2 (cmeans_mma.recheck_ratio), a
distance not re-checked within 2^-8 of v relatively.  "bf16": one BF16
product a step (m16n8k8 bf16: x' and c' rounded to bfloat16, to nearest
even, two to a register; float32 accumulation); beta about 2^-7, recheck
about 2^-2 again, a distance not re-checked within 2^-5 of v.  The
statistics' GEMM (below) stays 3xTF32 in every precision.

With ``stats_mma`` (update), phase 4 -- a tile's sums of w u^m [x | 1],
c x (d + 1) -- is one more GEMM on the tensor cores, 3xTF32 likewise: the
tile's weighted u^m (centre-major in local memory) times its rows with
their constant column; (m16 centres, n8 columns) tiles dealt to the warps
in turn, each lane owning 4 statistics of each of its SP tiles, added in
tile order to acc_t accumulators in registers (double, or Kahan pairs of
floats) -- one owner a statistic, written to the group's partial sums as
the portable kernel's.
</%doc>
<%inherit file="/cmeans/cmeans_pass.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
<%namespace name="mma" file="/common/mma_fragments.cl.mako"/>
<%block name="more_defines">\
#define DP ${dp}
#define KP ${kp}
#define WARPS (WG / 32)
#define RT (P / 16)                 /* m16 row tiles of a tile */
#define WPR (WARPS / RT)            /* warps of a row tile */
#define NT (KP / 8)                 /* n8 tiles of centres */
#define NTW ((NT + WPR - 1) / WPR)  /* steps of every warp */
#define CP centers                  /* c' (KP x DP) */
#define CN (centers + KP * DP)      /* ||c'||^2 (KP) */
#define SHIFT (centers + KP * DP + KP)
#define CRAW (centers + KP * DP + KP + DP)   /* the centres as the portable pass reads them */
/* x'[row][k] of the tile (zero past d) */
#define A_AT(row, k) ((k) < D ? xt[(row) * XS + (k)] - SHIFT[k] : 0.0f)
/* a squared distance from its dot product; where the expansion's error
   bound is not below 2^-13 of it (v <= RECHECK (||x'||^2 + ||c'||^2): the
   doc above), the portable pass's in-order sum of squared differences
   instead (NaN kept) */
#define RECHECK ${recheck}
#define STORE(row, j, dot) \
    if ((j) < C) { \
        float v_ = xn[row] + CN[j] - 2.0f * (dot); \
        if (v_ <= (xn[row] + CN[j]) * RECHECK) \
            v_ = exact_sqdiff(xt + (row) * XS, CRAW + (j) * D); \
        DT(row, j) = v_; \
        bad |= !isfinite(v_); \
    }

/* cmeans_pass.cl.mako's per-row distance, the same bits */
inline float exact_sqdiff(__local const float *x, __global const float *c)
{
    float d2 = 0;
    for (int k = 0; k < D; ++k) {
        const float diff = x[k] - c[k];
        d2 = fma(diff, diff, d2);
    }
    return d2;
}
% if stats_mma:
#define MS ((C + 15) / 16)          /* m16 tiles of centres */
#define NS ((DA + 7) / 8)           /* n8 tiles of the columns [x | 1] */
#define SP ((MS * NS + WARPS - 1) / WARPS)   /* (MS, NS) tiles of a warp */
#define U_AT(j, rr) ((j) < C ? DT(rr, j) : 0.0f)
#define X_AT(rr, k) ((k) < DA ? xt[(rr) * XS + (k)] : 0.0f)
% endif
${mma.products(emulate, truncate, precision == "bf16")}\
</%block>
<%block name="more_locals">\
    __local float xn[P];                        /* the tile's ||x'||^2 */
% if emulate:
    __local uint emulated[WG * 6];
% endif
</%block>
<%block name="distances">\
<% steps, fast, bf16 = dp // 8, precision != "float32", precision == "bf16" %>\
        /* 1. the tile's squared distances on tensor cores, then my row's
           minimum over my centres */
        if (lid < P) {
            float s2 = 0;
            for (int k = 0; k < D; ++k) {
                const float v = xt[lid * XS + k] - SHIFT[k];
                s2 = fma(v, v, s2);
            }
            xn[lid] = s2;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        {
            const int lane = lid % 32, warp = lid / 32;
            const int gq = lane / 4, tq = lane % 4;   /* the fragments' row group, thread */
            const int r0 = (warp % RT) * 16 + gq;     /* my rows r0, r0 + 8 */
            /* my A fragments: rows r0 (+8), dimensions 8 s + tq (+4); bf16:
               dimensions 8 s + 2 tq, 8 s + 2 tq + 1 packed */
% for s in range(steps):
  % if bf16:
            const uint ab_${s}_0 = bf16_pack(A_AT(r0, ${8 * s} + 2 * tq),
                                             A_AT(r0, ${8 * s + 1} + 2 * tq));
            const uint ab_${s}_1 = bf16_pack(A_AT(r0 + 8, ${8 * s} + 2 * tq),
                                             A_AT(r0 + 8, ${8 * s + 1} + 2 * tq));
  % endif
  % for e, (h, kk) in enumerate(((0, 0), (1, 0), (0, 4), (1, 4)) if not bf16 else ()):
    % if fast:
            const uint ab_${s}_${e} = tf32(A_AT(r0 + ${8 * h}, ${8 * s + kk} + tq));
    % else:
            SPLIT(ab_${s}_${e}, al_${s}_${e}, A_AT(r0 + ${8 * h}, ${8 * s + kk} + tq));
    % endif
  % endfor
% endfor
            for (int t = warp / RT; t < NTW * WPR; t += WPR) {
                const int jb = min(t, NT - 1) * 8;
                float big0 = 0, big1 = 0, big2 = 0, big3 = 0;
% if not fast:
                float small0 = 0, small1 = 0, small2 = 0, small3 = 0;
% endif
% for s in range(steps):
                {   /* centre jb + gq's dimensions 8 s + tq (+4); the big
                       product from zero, added in float32 (rounded to
                       nearest): the tensor cores truncate to the step's
                       largest magnitude, not the running sum's */
                    __global const float *bq = CP + (jb + gq) * DP + ${8 * s} + tq;
                    float step0 = 0, step1 = 0, step2 = 0, step3 = 0;
  % if bf16:
                    /* centre jb + gq's dimensions 8 s + 2 tq (+1) */
                    const uint bb0 = bf16_pack(bq[tq], bq[tq + 1]);
                    MMA_BF16(step, ab_${s}_0, ab_${s}_1, bb0);
  % elif fast:
                    const uint bb0 = tf32(bq[0]), bb1 = tf32(bq[4]);
                    MMA(step, ab_${s}_0, ab_${s}_1, ab_${s}_2, ab_${s}_3, bb0, bb1);
  % else:
                    SPLIT(bb0, bl0, bq[0]);
                    SPLIT(bb1, bl1, bq[4]);
                    MMA(step, ab_${s}_0, ab_${s}_1, ab_${s}_2, ab_${s}_3, bb0, bb1);
                    MMA(small, ab_${s}_0, ab_${s}_1, ab_${s}_2, ab_${s}_3, bl0, bl1);
                    MMA(small, al_${s}_0, al_${s}_1, al_${s}_2, al_${s}_3, bb0, bb1);
  % endif
                    big0 += step0;
                    big1 += step1;
                    big2 += step2;
                    big3 += step3;
                }
% endfor
% if fast:
                const float small0 = 0, small1 = 0, small2 = 0, small3 = 0;
% endif
                if (t < NT) {   /* rows r0, r0 + 8; centres jb + 2 tq (+1) */
                    const int j0 = jb + 2 * tq;
                    STORE(r0, j0, big0 + small0);
                    STORE(r0, j0 + 1, big1 + small1);
                    STORE(r0 + 8, j0, big2 + small2);
                    STORE(r0 + 8, j0 + 1, big3 + small3);
                }
            }
        }
        barrier(U_FENCE);
        real_t dmin = INFINITY;
        for (int j = gi; j < C; j += G)
            dmin = fmin(dmin, DT(r, j));
</%block>
<%block name="stats_init">\
% if stats_mma:
    acc_t sacc[SP * 4];
    #pragma unroll
    for (int a = 0; a < SP * 4; ++a)
        sacc[a] = 0;
  % if not acc_double:
    acc_t scomp[SP * 4];
    #pragma unroll
    for (int a = 0; a < SP * 4; ++a)
        scomp[a] = 0;
  % endif
% else:
${parent.stats_init()}\
% endif
</%block>
<%block name="statistics">\
% if stats_mma:
        barrier(U_FENCE);
        /* 4. the tile's w u^m [x | 1] sums on tensor cores: my tiles
           warp + q WARPS of (m16 centres, n8 columns) */
        {
            const int lane = lid % 32, warp = lid / 32;
            const int gq = lane / 4, tq = lane % 4;
            #pragma unroll
            for (int q = 0; q < SP; ++q) {
                /* past the last tile: the last again, not added (no MMA under a branch) */
                const int pair = min(warp + q * WARPS, MS * NS - 1);
                const int jb = (pair / NS) * 16, kb = (pair % NS) * 8;
                float big0 = 0, big1 = 0, big2 = 0, big3 = 0;
                float small0 = 0, small1 = 0, small2 = 0, small3 = 0;
                for (int rb = 0; rb < P; rb += 8) {
                    SPLIT(ab0, al0, U_AT(jb + gq, rb + tq));
                    SPLIT(ab1, al1, U_AT(jb + gq + 8, rb + tq));
                    SPLIT(ab2, al2, U_AT(jb + gq, rb + tq + 4));
                    SPLIT(ab3, al3, U_AT(jb + gq + 8, rb + tq + 4));
                    SPLIT(bb0, bl0, X_AT(rb + tq, kb + gq));
                    SPLIT(bb1, bl1, X_AT(rb + tq + 4, kb + gq));
                    MMA(big, ab0, ab1, ab2, ab3, bb0, bb1);
                    MMA(small, ab0, ab1, ab2, ab3, bl0, bl1);
                    MMA(small, al0, al1, al2, al3, bb0, bb1);
                }
                if (warp + q * WARPS < MS * NS) {
  % for e in range(4):
    % if acc_double:
                    sacc[q * 4 + ${e}] += (acc_t)(big${e} + small${e});
    % else:
                    {
                        const float sum = big${e} + small${e};
${select.kahan_add("sacc[q * 4 + %d]" % e, "scomp[q * 4 + %d]" % e, "sum")}\
                    }
    % endif
  % endfor
                }
            }
        }
% else:
${parent.statistics()}\
% endif
</%block>
<%block name="stats_out">\
% if stats_mma:
    {   /* my statistics: centres jb + gq (+8), columns kb + 2 tq (+1) */
        const int lane = lid % 32, warp = lid / 32;
        const int gq = lane / 4, tq = lane % 4;
        for (int q = 0; q < SP; ++q) {
            const int pair = warp + q * WARPS;
            if (pair >= MS * NS)
                break;
            for (int e = 0; e < 4; ++e) {
                const int j = (pair / NS) * 16 + gq + (e >> 1) * 8;
                const int k = (pair % NS) * 8 + 2 * tq + (e & 1);
                if (j < C && k < DA) {
                    part_stats[g * S + j * DA + k] = sacc[q * 4 + e];
  % if not acc_double:
                    part_stats[(groups + g) * S + j * DA + k] = scomp[q * 4 + e];
  % endif
                }
            }
        }
    }
% else:
${parent.stats_out()}\
% endif
</%block>
