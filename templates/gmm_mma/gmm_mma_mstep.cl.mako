<%doc>
The diagonal GMM M-step statistics on NVIDIA tensor cores (compute
capability 8 or more, float32 data, d <= 128, fp64): per component j the
raw sums N_j = sum_i r_ij, Sx_j = sum_i r_ij x'_i and Sxx_j = sum_i r_ij x'_i^2
(x' = x - shift, elementwise squares), as the GEMM R^T [x' | x'^2] in
inline-PTX mma.sync m16n8k8 TF32 products, 3xTF32 (as
gmm_mma_estep.cl.mako).  gmm_mma.central_stats makes them the statistics
about the means of gmm_mstep.cl.mako on the host, in float64; gmm_mma.py
offers this kernel only where NVIDIA's runtime reports tensor cores, and
gmm_mstep.cl.mako / gmm_mstep_rowwise.cl.mako serve everywhere else.
Reads spec: d, dp (d padded to 8), wg, g (column groups of a half: x' or
x'^2), ntw (n8 column tiles a warp owns), mb (m16 component tiles a
work-group: cb = 16 mb components), stage (rows a local-memory stage),
emulate (the products in plain OpenCL: tests on CPUs).

A work-group owns one chunk of rows (slab) and one block of cb components
(group id = chunk * blocks + block; k, the number of components, is a
kernel argument).  Each stage copies stage rows of x' (row stride
dp + pad = 8 mod 32 floats) and the block's stage responsibilities (stride
stage + 4) to local memory, both zero outside the data: the fragment reads
of a warp touch 32 distinct banks.  Warp w owns component tile w / (2 g)
and the ntw column tiles of group w % (2 g): the first g groups the x'
columns, the others x'^2 (squared as read).  Products accumulate in float
over a stage and are added into double registers after it, so precision
does not depend on n; N_j is the warps of group 0's sums of their A
values, in the same stages.  Output: slab x k x SZ doubles (SZ = 1 + 2 d:
[N, Sx (d), Sxx (d)]), every entry of every slab written, no atomics, for
reduce_partials.
</%doc>
<%inherit file="prelude.cl.mako"/>
<%namespace name="mma" file="mma_fragments.cl.mako"/>
<%
    steps = dp // 8
    xs = dp + (8 - dp) % 32
    rs = stage + 4
    cb = 16 * mb
%>
#define D ${d}
#define DP ${dp}
#define STEPS ${steps}
#define WG ${wg}
#define CB ${cb}
#define S ${stage}
#define XS ${xs}                        /* x' row stride in local memory */
#define RS ${rs}                        /* responsibility row stride */
#define G ${g}
#define NTW ${ntw}
#define SZ (1 + 2 * D)

${mma.products(emulate)}\

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gmm_mstep(__global const float *restrict x, const long n, const long stride,
               __global const float *restrict resp,     /* k x n */
               __global const float *restrict shift,    /* DP */
               const int k,
               const long rows_per_chunk,
               __global double *restrict part)          /* slabs x k x SZ */
{
    const int lid = get_local_id(0);
    const int lane = lid % 32, warp = lid / 32;
    const int gq = lane / 4, tq = lane % 4;      /* the fragments' row group, thread */
% if emulate:
    __local uint emulated[WG * 6];
% endif
    const int blocks = (k + CB - 1) / CB;
    const long g = get_group_id(0);
    const int j0 = (int)(g % blocks) * CB;       /* the block's first component */
    const long chunk = g / blocks;
    const long lo = chunk * rows_per_chunk, hi = min(n, lo + rows_per_chunk);
    const int mtile = warp / (2 * G), cg = warp % (2 * G);
    const int sq = cg / G, t0 = (cg % G) * NTW;   /* x' (0) or x'^2 (1); first tile */
    __local float xl[S * XS];
    __local float rl[CB * RS];
    __local double nl[CB * 4];
% for t in range(ntw):
    double sum_${t}_0 = 0, sum_${t}_1 = 0, sum_${t}_2 = 0, sum_${t}_3 = 0;
% endfor
    double n_lo = 0, n_hi = 0;                   /* components gq, gq + 8 */
    for (long start = lo; start < hi; start += S) {
        barrier(CLK_LOCAL_MEM_FENCE);            /* the last stage's readers are done */
        for (int e = lid; e < S * DP; e += WG) {
            const int r = e / DP, c = e % DP;
            const long i = start + r;
            xl[r * XS + c] = i < hi && c < D ? x[i * stride + c] - shift[c] : 0.0f;
        }
        for (int e = lid; e < CB * S; e += WG) {
            const int jj = e / S, r = e % S;
            const long i = start + r;
            rl[jj * RS + r] = i < hi && j0 + jj < k ? resp[(long)(j0 + jj) * n + i] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
% for t in range(ntw):
        float acc_${t}_0 = 0, acc_${t}_1 = 0, acc_${t}_2 = 0, acc_${t}_3 = 0;
% endfor
        float part_lo = 0, part_hi = 0;
% for s in range(stage // 8):
        {   /* k8 step ${s}: rows ${8 * s}.. of the stage */
            __local const float *ra = rl + (mtile * 16 + gq) * RS + ${8 * s} + tq;
            const float a0 = ra[0], a1 = ra[8 * RS], a2 = ra[4], a3 = ra[8 * RS + 4];
            part_lo += a0 + a2;
            part_hi += a1 + a3;
            SPLIT(ab0, as0, a0);
            SPLIT(ab1, as1, a1);
            SPLIT(ab2, as2, a2);
            SPLIT(ab3, as3, a3);
  % for t in range(ntw):
            {   /* a tile past STEPS (ragged groups) reads column DP - 1: unwritten */
                const int c = min((t0 + ${t}) * 8 + gq, DP - 1);
                float v0 = xl[(${8 * s} + tq) * XS + c], v1 = xl[(${8 * s + 4} + tq) * XS + c];
                if (sq) {
                    v0 *= v0;
                    v1 *= v1;
                }
                SPLIT(bb0, bs0, v0);
                SPLIT(bb1, bs1, v1);
                MMA(acc_${t}_, ab0, ab1, ab2, ab3, bb0, bb1);
                MMA(acc_${t}_, ab0, ab1, ab2, ab3, bs0, bs1);
                MMA(acc_${t}_, as0, as1, as2, as3, bb0, bb1);
            }
  % endfor
        }
% endfor
% for t in range(ntw):
        sum_${t}_0 += acc_${t}_0;
        sum_${t}_1 += acc_${t}_1;
        sum_${t}_2 += acc_${t}_2;
        sum_${t}_3 += acc_${t}_3;
% endfor
        n_lo += part_lo;
        n_hi += part_hi;
    }
    const long slab = chunk;
    /* N: group 0's lanes, the 4 of each component added in a fixed order */
    if (cg == 0) {
        nl[(mtile * 16 + gq) * 4 + tq] = n_lo;
        nl[(mtile * 16 + gq + 8) * 4 + tq] = n_hi;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int jj = lid; jj < CB; jj += WG)
        if (j0 + jj < k)
            part[(slab * k + j0 + jj) * SZ] = ((nl[jj * 4] + nl[jj * 4 + 1]) + nl[jj * 4 + 2])
                                              + nl[jj * 4 + 3];
% for t in range(ntw):
    if (t0 + ${t} < STEPS) {
  % for q in range(4):
        {
            const int j = j0 + mtile * 16 + gq + ${8 * (q // 2)};
            const int c = (t0 + ${t}) * 8 + 2 * tq + ${q % 2};
            if (j < k && c < D)
                part[(slab * k + j) * SZ + 1 + sq * D + c] = sum_${t}_${q};
        }
  % endfor
    }
% endfor
}
