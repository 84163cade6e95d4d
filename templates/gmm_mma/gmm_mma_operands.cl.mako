<%doc>
The tensor-core E kernels' operands made on the device from the k x RS
records (the host's mdl.records).  Diagonal (gmm_mma_estep.cl.mako; RS =
1 + 2d doubles: c_j, mu_j, u_j): gmm_mma.operands' arithmetic, in its
order, none contracted --
  s = (sum_j mu_j) / k                 (j in order: numpy's mean over rows)
  coefs_j = [P_j | (-2 mu'_j) P_j],    P = u u, mu' = mu - s
  consts_j = c_j - 1/2 sum_c (mu'_jc mu'_jc) P_jc
in double, rounded to float; the host's bits but for consts' sum, taken
here over c in order (numpy's is pairwise: the last bits of a double may
differ).  The host then sends the records alone, and its float32 copies
of them are not made each iteration (1.5 ms on the H200 host).
Full (gmm_mma_full_estep.cl.mako; RS = 1 + d + d (d + 1) / 2: c_j,
mu_j, U_j's upper triangle column by column), gmm_mma_full.operands' --
  factor_j = U_j (dp rows of ws words, zero past d and below the diagonal)
  offsets_j[e] = sum_{c <= e} (mu_jc - s_c) U_j[c][e]   (c in order)
  const_j = c_j
in double, rounded to float, a component's cw words (gmm_mma_operands.
full_layout: the E kernel's local layout, copied as it is); the host's
sums are numpy's: the last bits of an offset may differ.
Reads spec: d, dp (d padded to 8), full, ws, cw, items.
Kernels: gmm_mma_shift, a work-item a column (dp: s in double and float,
zero past d); gmm_mma_operands (diagonal), a work-item a component row of
kp (zero rows past k), after it; gmm_mma_scales, the one-product kernels'
re-check scales of the float coefficient rows (gmm_mma_bound.recheck_scales:
the largest |P_jc|, L_j's norm in double, a little over), after that;
gmm_mma_full_operands (full), WS + 8 work-items a component of kp (its
factor's columns, its tail's words), after the shift.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define DP ${dp}
% if full:
#define RS (1 + D + D * (D + 1) / 2)
#define WS ${ws}
#define CW ${cw}
% else:
#define RS (1 + 2 * D)
% endif

__kernel void gmm_mma_shift(__global const double *restrict records, const int k,
                            __global double *restrict shift64, __global float *restrict shift)
{
    const int c = get_global_id(0);
    if (c >= DP)
        return;
    double s = 0.0;
    if (c < D) {
        for (int j = 0; j < k; ++j)
            s += records[(long)j * RS + 1 + c];
        s = s / (double)k;
    }
    shift64[c] = s;
    shift[c] = (float)s;
}

% if full:
/* work-items a component (gmm_mma_operands.full_items): its factor's
   columns e < WS, and the tail's words e (offsets, constant, padding) */
#define FULL_ITEMS ${items}

__kernel void gmm_mma_full_operands(__global const double *restrict records, const int k,
                                    const int kp, __global const double *restrict shift64,
                                    __global float *restrict packed)   /* kp x CW */
{
    const int id = get_global_id(0);
    if (id >= kp * FULL_ITEMS)
        return;
    const int j = id / FULL_ITEMS, e = id % FULL_ITEMS;
    const int live = j < k && e < D;
    __global const double *r = records + (long)(j < k ? j : 0) * RS;
    /* column e of U_j: rows 0..e at 1 + D + e (e + 1) / 2 */
    __global const double *col = r + 1 + D + (live ? e * (e + 1) / 2 : 0);
    __global float *to = packed + (long)j * CW;
    double b = 0.0;
    if (e < WS)
        for (int c = 0; c < DP; ++c) {
            const double u = live && c <= e ? col[c] : 0.0;
            if (live && c <= e)
                b += (r[1 + c] - shift64[c]) * u;
            to[c * WS + e] = (float)u;
        }
    if (e < DP)
        to[DP * WS + e] = (float)b;
    else if (e == DP)
        to[DP * WS + DP] = j < k ? (float)r[0] : 0.0f;
    else if (e < CW - DP * WS)
        to[DP * WS + e] = 0.0f;
}
% else:
__kernel void gmm_mma_operands(__global const double *restrict records, const int k,
                               const int kp, __global const double *restrict shift64,
                               __global float *restrict coefs,     /* kp x 2 DP */
                               __global float *restrict consts)    /* kp */
{
    const int j = get_global_id(0);
    if (j >= kp)
        return;
    __global const double *r = records + (long)j * RS;
    __global float *row = coefs + (long)j * 2 * DP;
    double sum = 0.0;
    for (int c = 0; c < DP; ++c) {
        float p32 = 0.0f, t32 = 0.0f;
        if (j < k && c < D) {
            const double u = r[1 + D + c], mu = r[1 + c] - shift64[c];
            const double p = u * u;
            p32 = (float)p;
            t32 = (float)((-2.0 * mu) * p);
            sum += (mu * mu) * p;
        }
        row[c] = p32;
        row[DP + c] = t32;
    }
    consts[j] = j < k ? (float)(r[0] - 0.5 * sum) : 0.0f;
}

__kernel void gmm_mma_scales(__global const float *restrict coefs, const int kp,
                             __global float2 *restrict scales)   /* kp */
{
    const int j = get_global_id(0);
    if (j >= kp)
        return;
    __global const float *row = coefs + (long)j * 2 * DP;
    float pmax = 0.0f;
    double sq = 0.0;
    for (int c = 0; c < D; ++c) {
        const double l = row[DP + c];
        pmax = fmax(pmax, fabs(row[c]));
        sq += l * l;
    }
    scales[j] = (float2)(pmax, (float)(sqrt(sq) * (1.0 + 0x1p-20)));
}
% endif
