<%doc>
The full-covariance GMM E-step on NVIDIA tensor cores (compute capability
8 or more, float32 data, d <= gmm_mma_full.MAX_D): the outputs (and kernel
name) of gmm_estep.cl.mako -- lse, labels, responsibilities
(component-major), the work-groups' log-likelihood sums and bad-row
counts -- with each component's whitened rows as 3xTF32 mma.sync m16n8k8
products (mma_fragments.cl.mako: x.c = xb.cb + (xb.cs + xs.cb)).  A
"tied" mixture runs these passes too (its factors all equal).
Reads spec: d, dp (d padded to 8), tn (components of a local-memory
chunk), wg (wg / 32 warps, an m16 row tile each: wg / 2 rows a tile), ws
(a factor row's local stride: ws % 32 == 8, conflict-free B reads), cw
(a component's local words), emulate (the products and the lanes' sums in
plain OpenCL: tests on CPUs).

    log p_j(x) = c_j - 1/2 |z_j|^2,   z_j = x'^T U_j - b_j,   b_j = mu'_j^T U_j
x' = x - s and mu' = mu - s about one shift s (the components' mean of
means): z_j is (x - mu_j)^T U_j, gmm_estep.cl.mako's value, made as the
difference of two products of float32 operands the size of the data's
spread (scikit-learn's float32 path subtracts the same two, unshifted).
U_j (upper triangular: the precision's Cholesky factor), b_j and c_j come
as float32 operands made in double on the device from the records
(gmm_mma_full_operands, gmm_mma_operands.cl.mako).  Column e of z_j needs
only rows c <= e of U_j: an n8 column tile multiplies the k8 steps on and
above its diagonal block alone (NT (NT + 1) / 2 of NT^2 products).

A warp's rows stay in registers as split A fragments (x' big and small
TF32 parts, 8 registers a k8 step); a chunk of tn components' factors,
offsets and constants is staged in local memory, a component's factor as
dp rows of ws words.  For each component, each lane sums the squares of its
two columns of each n8 tile, for its two rows; the row's four lanes add
their sums, (tq 0 + tq 1) + (tq 2 + tq 3) in every lane (PTX: two
butterfly shuffles; emulated: through local memory).  Lane tq 0 then owns
row gq of the tile and lane tq 1 row gq + 8: each runs gmm_estep.cl.mako's
online log-sum-exp over the components in increasing order, stores the
log-densities and, once the row's sum is known, its point_result (lse,
label, log-likelihood term, the responsibilities normalised in place:
values it wrote itself).
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="mma" file="/common/mma_fragments.cl.mako"/>
<%namespace name="est" file="/gmm/gmm_estep.cl.mako"/>
<% steps = dp // 8 %>
#define D ${d}
#define DP ${dp}
#define TN ${tn}
#define WG ${wg}
#define TM (WG / 2)                     /* rows of a work-group tile: 16 a warp */
#define WS ${ws}                        /* a factor row's local stride */
#define CW ${cw}                        /* a component's local words: factor, offsets, constant */

${mma.products(emulate)}\
% if emulate:
/* v summed over the row's four lanes, (tq 0 + tq 1) + (tq 2 + tq 3), through
   local memory (every work-item of the group reaches it) */
inline float quad_sum(const float v, __local float *s, const int lane)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    s[lane] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int q = lane & ~3;
    return (s[q] + s[q + 1]) + (s[q + 2] + s[q + 3]);
}
#define QUAD_SUM(v) quad_sum(v, quads + warp * 32, lane)
% else:
inline float lane_xor(const float v, const int m)
{
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(m));
    return r;
}

/* v summed over the row's four lanes: two butterflies give every lane
   (tq 0 + tq 1) + (tq 2 + tq 3) (its adds commute: the same bits) */
inline float quad_sum(const float v)
{
    const float a = v + lane_xor(v, 1);
    return a + lane_xor(a, 2);
}
#define QUAD_SUM(v) quad_sum(v)
% endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gmm_estep(__global const float *restrict x, const long n, const long stride,
               __global const float *restrict factors,  /* KP x DP x DP: U_j[c][e] */
               __global const float *restrict offsets,  /* KP x DP: b_j */
               __global const float *restrict consts,   /* KP: c_j */
               __global const float *restrict shift,    /* DP */
               const int k,
               __global float *restrict lse,            /* n */
               __global int *restrict labels,           /* n */
               const int store_resp,                    /* 0, 1 (normalised) */
               __global float *restrict resp,           /* k x n (store_resp) */
               __global acc_t *restrict part_ll,        /* groups (x2 if Kahan) */
               __global int *restrict part_bad,         /* groups */
               const long tiles_per_group)
{
    const int lid = get_local_id(0);
    const int lane = lid % 32, warp = lid / 32;
    const int gq = lane / 4, tq = lane % 4;      /* the fragments' row group, thread */
% if emulate:
    __local uint emulated[WG * 6];
    __local float quads[WG];
% endif
    const long g = get_group_id(0), groups = get_num_groups(0);
    __local float lw[TN * CW];
    __local acc_t scratch[WG];
${est.tallies()}\
    const int chunks = (k + TN - 1) / TN;
    const long first = g * tiles_per_group * TM;
    for (long t = 0; t < tiles_per_group; ++t) {
        const long base = first + t * TM;
        if (base >= n)
            break;                      /* uniform over the group */
        /* the row this lane owns (tq 0: gq, tq 1: gq + 8; tq 2, 3: none) */
        const long i = tq < 2 ? base + warp * 16 + gq + 8 * tq : n;
        /* this lane's x' of rows gq and gq + 8, dimensions tq and tq + 4 of
           each k8 step, split into TF32 parts; zero outside the data */
        const long i0 = base + warp * 16 + gq, i1 = i0 + 8;
        __global const float *r0 = x + (i0 < n ? i0 : 0) * stride;
        __global const float *r1 = x + (i1 < n ? i1 : 0) * stride;
% for s in range(steps):
  % for e, (h, kk) in enumerate(((0, 0), (1, 0), (0, 4), (1, 4))):
<% c = "%d + tq" % (8 * s + kk) %>\
        SPLIT(ab_${s}_${e}, as_${s}_${e}, (i${h} < n && ${c} < D ? r${h}[${c}] - shift[${c}] : 0.0f));
  % endfor
% endfor
        real_t run_max[1] = {-INFINITY}, run_sum[1] = {0};
        int best[1] = {0}, saw_nan[1] = {0};
        for (int chunk = 0; chunk < chunks; ++chunk) {
            barrier(CLK_LOCAL_MEM_FENCE);   /* the last chunk's readers are done */
            for (int e = lid; e < TN * DP * DP; e += WG) {
                const int jj = e / (DP * DP), r = e % (DP * DP);
                lw[jj * CW + r / DP * WS + r % DP] = factors[(long)chunk * TN * DP * DP + e];
            }
            for (int e = lid; e < TN * (DP + 1); e += WG) {
                const int jj = e / (DP + 1), r = e % (DP + 1);
                const long j = (long)chunk * TN + jj;
                lw[jj * CW + DP * WS + r] = r < DP ? offsets[j * DP + r] : consts[j];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            const int jn = min(TN, k - chunk * TN);
            for (int jj = 0; jj < jn; ++jj) {    /* uniform over the group */
                __local const float *w = lw + jj * CW;
                float sq0 = 0.0f, sq1 = 0.0f;    /* rows gq, gq + 8: this lane's columns */
% for nt in range(steps):
                {   /* columns 8 nt + gq (B) / 8 nt + 2 tq, + 1 (accumulators) */
                    float big0 = 0, big1 = 0, big2 = 0, big3 = 0;
                    float fix0 = 0, fix1 = 0, fix2 = 0, fix3 = 0;
  % for s in range(nt + 1):
                    {
                        SPLIT(wb0, ws0, w[(${8 * s} + tq) * WS + ${8 * nt} + gq]);
                        SPLIT(wb1, ws1, w[(${8 * s + 4} + tq) * WS + ${8 * nt} + gq]);
                        MMA(big, ab_${s}_0, ab_${s}_1, ab_${s}_2, ab_${s}_3, wb0, wb1);
                        MMA(fix, ab_${s}_0, ab_${s}_1, ab_${s}_2, ab_${s}_3, ws0, ws1);
                        MMA(fix, as_${s}_0, as_${s}_1, as_${s}_2, as_${s}_3, wb0, wb1);
                    }
  % endfor
                    const float o0 = w[DP * WS + ${8 * nt} + 2 * tq];
                    const float o1 = w[DP * WS + ${8 * nt} + 2 * tq + 1];
                    const float z0 = (big0 + fix0) - o0, z1 = (big1 + fix1) - o1;
                    const float z2 = (big2 + fix2) - o0, z3 = (big3 + fix3) - o1;
                    sq0 = fma(z0, z0, sq0);
                    sq0 = fma(z1, z1, sq0);
                    sq1 = fma(z2, z2, sq1);
                    sq1 = fma(z3, z3, sq1);
                }
% endfor
                sq0 = QUAD_SUM(sq0);
                sq1 = QUAD_SUM(sq1);
                const int j = chunk * TN + jj;
                const real_t logp = fma(-0.5f, tq == 1 ? sq1 : sq0, w[DP * WS + DP]);
${est.lse_update("j", "0")}\
            }
        }
        for (int u = 0; u < 1; ++u) {    /* (point_result's bad row: continue) */
            if (i >= n)
                continue;
${est.point_result("0")}\
        }
    }
${est.group_result()}\
}
