<%doc>
The full-covariance GMM E-step on NVIDIA tensor cores (compute capability
8 or more, float32 data, d <= gmm_mma_full.MAX_D): the outputs (and kernel
name) of gmm_estep.cl.mako -- lse, labels, responsibilities
(component-major), the work-groups' log-likelihood sums and bad-row
counts -- with each component's whitened rows as 3xTF32 mma.sync m16n8k8
products (mma_fragments.cl.mako: x.c = xb.cb + (xb.cs + xs.cb)).  A
"tied" mixture runs these passes too (its factors all equal).
Reads spec: d, dp (d padded to 8), tn (components of a local-memory
chunk), wg (wg / 32 warps), mt (m16 row tiles a warp), ws (a factor row's
stride: ws % 32 == 8, conflict-free B reads), cw (a component's words),
emulate (the products and the lanes' sums in plain OpenCL: tests on CPUs).

    log p_j(x) = c_j - 1/2 |z_j|^2,   z_j = x'^T U_j - b_j,   b_j = mu'_j^T U_j
x' = x - s and mu' = mu - s about one shift s (the components' mean of
means): z_j is (x - mu_j)^T U_j, gmm_estep.cl.mako's value, made as the
difference of two products of float32 operands the size of the data's
spread (scikit-learn's float32 path subtracts the same two, unshifted).
U_j (upper triangular: the precision's Cholesky factor), b_j and c_j come
as float32 operands made in double on the device from the records
(gmm_mma_full_operands, gmm_mma_operands.cl.mako), cw words a component
in this kernel's local layout: a chunk is staged by float4 copies.  Column e of z_j needs
only rows c <= e of U_j: an n8 column tile multiplies the k8 steps on and
above its diagonal block alone (NT (NT + 1) / 2 of NT^2 products).

A warp's rows stay in registers as split A fragments (x' big and small
TF32 parts, 8 registers a k8 step and row tile); a chunk of tn components'
records is staged in local memory, each factor element split once a warp
for its mt tiles.  For each component, each lane sums the squares of its
two columns of each n8 tile, for its two rows of each tile; the row's four
lanes add their sums, (tq 0 + tq 1) + (tq 2 + tq 3) in every lane (PTX:
two butterfly shuffles; emulated: through local memory).  Lane tq then
owns one row of the quad's 2 mt rows (tq 0: gq, tq 1: gq + 8 of tile 0;
tq 2, 3: those of tile 1; with one tile, tq 2 and 3 none): each runs gmm_estep.cl.mako's
online log-sum-exp (with selects: two components' chains of products,
sums and shuffles interleave) over the components in increasing order, stores the
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
#define TM (WG / 32 * ${16 * mt})       /* rows of a work-group tile */
#define WS ${ws}                        /* a factor row's stride */
#define CW ${cw}                        /* a component's words: factor, offsets, constant */

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
               __global const float4 *restrict records,  /* KP x CW floats */
               __global const float *restrict shift,     /* DP */
               const int k,
               __global float *restrict lse,             /* n */
               __global int *restrict labels,            /* n */
               const int store_resp,                     /* 0, 1 (normalised) */
               __global float *restrict resp,            /* k x n (store_resp) */
               __global acc_t *restrict part_ll,         /* groups (x2 if Kahan) */
               __global int *restrict part_bad,          /* groups */
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
    __local float4 lw4[TN * CW / 4];
    __local const float *lw = (__local const float *)lw4;
    __local acc_t scratch[WG];
${est.tallies()}\
    const int chunks = (k + TN - 1) / TN;
    const long first = g * tiles_per_group * TM;
    for (long t = 0; t < tiles_per_group; ++t) {
        const long base = first + t * TM;
        if (base >= n)
            break;                      /* uniform over the group */
        const long rows = base + warp * ${16 * mt};
% if mt == 2:
        const long i = rows + 8 * tq + gq;           /* the row this lane owns */
% else:
        const long i = tq < 2 ? rows + 8 * tq + gq : n;   /* (tq 2, 3: none) */
% endif
        /* this lane's x' of rows gq and gq + 8 of each tile, dimensions tq
           and tq + 4 of each k8 step, split into TF32 parts; zero outside */
% for mi in range(mt):
  % for h in range(2):
        const long i${mi}${h} = rows + ${16 * mi + 8 * h} + gq;
        __global const float *r${mi}${h} = x + (i${mi}${h} < n ? i${mi}${h} : 0) * stride;
  % endfor
  % for s in range(steps):
    % for e, (h, kk) in enumerate(((0, 0), (1, 0), (0, 4), (1, 4))):
<% c = "%d + tq" % (8 * s + kk) %>\
        SPLIT(ab_${mi}_${s}_${e}, as_${mi}_${s}_${e},
              (i${mi}${h} < n && ${c} < D ? r${mi}${h}[${c}] - shift[${c}] : 0.0f));
    % endfor
  % endfor
% endfor
        real_t run_max[1] = {-INFINITY}, run_sum[1] = {0};
        int best[1] = {0}, saw_nan[1] = {0};
        for (int chunk = 0; chunk < chunks; ++chunk) {
            barrier(CLK_LOCAL_MEM_FENCE);   /* the last chunk's readers are done */
            for (int e = lid; e < TN * CW / 4; e += WG)
                lw4[e] = records[(long)chunk * (TN * CW / 4) + e];
            barrier(CLK_LOCAL_MEM_FENCE);
            const int jn = min(TN, k - chunk * TN);
            #pragma unroll 2
            for (int jj = 0; jj < jn; ++jj) {    /* uniform over the group */
                __local const float *w = lw + jj * CW;
% for mi in range(mt):
                float sq_${mi}_0 = 0.0f, sq_${mi}_1 = 0.0f;   /* rows gq, gq + 8: my columns */
% endfor
% for nt in range(steps):
                {   /* columns 8 nt + gq (B) / 8 nt + 2 tq, + 1 (accumulators) */
  % for mi in range(mt):
                    float big_${mi}_0 = 0, big_${mi}_1 = 0, big_${mi}_2 = 0, big_${mi}_3 = 0;
                    float fix_${mi}_0 = 0, fix_${mi}_1 = 0, fix_${mi}_2 = 0, fix_${mi}_3 = 0;
  % endfor
  % for s in range(nt + 1):
                    {
                        SPLIT(wb0, ws0, w[(${8 * s} + tq) * WS + ${8 * nt} + gq]);
                        SPLIT(wb1, ws1, w[(${8 * s + 4} + tq) * WS + ${8 * nt} + gq]);
    % for mi in range(mt):
<% a = lambda p: ", ".join("%s_%d_%d_%d" % (p, mi, s, e) for e in range(4)) %>\
                        MMA(big_${mi}_, ${a("ab")}, wb0, wb1);
                        MMA(fix_${mi}_, ${a("ab")}, ws0, ws1);
                        MMA(fix_${mi}_, ${a("as")}, wb0, wb1);
    % endfor
                    }
  % endfor
                    const float o0 = w[DP * WS + ${8 * nt} + 2 * tq];
                    const float o1 = w[DP * WS + ${8 * nt} + 2 * tq + 1];
  % for mi in range(mt):
                    {
                        const float z0 = (big_${mi}_0 + fix_${mi}_0) - o0;
                        const float z1 = (big_${mi}_1 + fix_${mi}_1) - o1;
                        const float z2 = (big_${mi}_2 + fix_${mi}_2) - o0;
                        const float z3 = (big_${mi}_3 + fix_${mi}_3) - o1;
                        sq_${mi}_0 = fma(z0, z0, sq_${mi}_0);
                        sq_${mi}_0 = fma(z1, z1, sq_${mi}_0);
                        sq_${mi}_1 = fma(z2, z2, sq_${mi}_1);
                        sq_${mi}_1 = fma(z3, z3, sq_${mi}_1);
                    }
  % endfor
                }
% endfor
% for mi in range(mt):
                sq_${mi}_0 = QUAD_SUM(sq_${mi}_0);
                sq_${mi}_1 = QUAD_SUM(sq_${mi}_1);
% endfor
                const int j = chunk * TN + jj;
% if mt == 2:
                const float sq = tq == 0 ? sq_0_0 : tq == 1 ? sq_0_1 : tq == 2 ? sq_1_0 : sq_1_1;
% else:
                const float sq = tq == 1 ? sq_0_1 : sq_0_0;
% endif
                const real_t logp = fma(-0.5f, sq, w[DP * WS + DP]);
                /* gmm_estep.cl.mako's lse_update made with selects, the same
                   values: straight-line, two components' chains interleave */
                saw_nan[0] |= isnan(logp);
                if (store_resp && i < n)
                    resp[(long)j * n + i] = logp;
                const int up = logp > run_max[0];
                const real_t grown = exp(up ? run_max[0] - logp : logp - run_max[0]);
                run_sum[0] = up ? fma(run_sum[0], grown, (real_t)1)
                                : logp > -INFINITY ? run_sum[0] + grown : run_sum[0];
                best[0] = up ? j : best[0];
                run_max[0] = up ? logp : run_max[0];
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
