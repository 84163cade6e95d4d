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
and row_major off), dp (d padded to 8), kp (c padded to 8), emulate.
P = 16 RT rows a tile (RT m16 row tiles, dividing the WG / 32 warps); warp
w owns row tile w % RT and every (WG / 32 / RT)-th n8 tile of centres from
w / RT, the same number of steps for every warp (steps past the last tile
redo it and store nothing: no MMA under a branch).

The ``centers`` argument holds the operands cmeans_mma.operands makes:
c' = c - s (kp x dp, zero padded), ||c'||^2 (kp, float64 made float32) and
the shift s (dp, the centres' mean): the distance is ||x'||^2 + ||c'||^2 -
2 x'.c' with x' = x - s, the data's spread instead of its distance from the
origin, and the centres themselves (c x d, float32) follow them.  Where
the expansion is within its rounding error of 0 (a row at or near a
centre), the distance is the portable kernel's in-order sum of squared
differences instead: a row that coincides with a centre has distance
exactly 0, as cmeans_pass.cl.mako gives it (the estimator's convention).
</%doc>
<%inherit file="cmeans_pass.cl.mako"/>
<%namespace name="mma" file="mma_fragments.cl.mako"/>
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
/* a squared distance from its dot product; within the expansion's error
   of 0 (at most (d + 4) 2^-22 (||x'||^2 + ||c'||^2) for d <= 128), the
   portable pass's in-order sum of squared differences instead (NaN kept) */
#define STORE(row, j, dot) \
    if ((j) < C) { \
        float v_ = xn[row] + CN[j] - 2.0f * (dot); \
        if (v_ <= (xn[row] + CN[j]) * 0x1p-12f) \
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
${mma.products(emulate)}\
</%block>
<%block name="more_locals">\
    __local float xn[P];                        /* the tile's ||x'||^2 */
% if emulate:
    __local uint emulated[WG * 6];
% endif
</%block>
<%block name="distances">\
<% steps = dp // 8 %>\
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
            /* my A fragments: rows r0 (+8), dimensions 8 s + tq (+4) */
% for s in range(steps):
  % for e, (h, kk) in enumerate(((0, 0), (1, 0), (0, 4), (1, 4))):
            SPLIT(ab_${s}_${e}, al_${s}_${e}, A_AT(r0 + ${8 * h}, ${8 * s + kk} + tq));
  % endfor
% endfor
            for (int t = warp / RT; t < NTW * WPR; t += WPR) {
                const int jb = min(t, NT - 1) * 8;
                float big0 = 0, big1 = 0, big2 = 0, big3 = 0;
                float small0 = 0, small1 = 0, small2 = 0, small3 = 0;
% for s in range(steps):
                {   /* centre jb + gq's dimensions 8 s + tq (+4) */
                    __global const float *bq = CP + (jb + gq) * DP + ${8 * s} + tq;
                    SPLIT(bb0, bl0, bq[0]);
                    SPLIT(bb1, bl1, bq[4]);
                    MMA(big, ab_${s}_0, ab_${s}_1, ab_${s}_2, ab_${s}_3, bb0, bb1);
                    MMA(small, ab_${s}_0, ab_${s}_1, ab_${s}_2, ab_${s}_3, bl0, bl1);
                    MMA(small, al_${s}_0, al_${s}_1, al_${s}_2, al_${s}_3, bb0, bb1);
                }
% endfor
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
