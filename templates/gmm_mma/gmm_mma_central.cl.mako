<%doc>
The tensor-core diagonal M step's sums made central on the device: for
component j and feature c, from the exact totals' values (k x SZ doubles,
SZ = 2 + 4 d: N other, N own, other sum r x', sum r x'^2 about the shift
s, own sum r x'', sum r x''^2 about the float32 means m32)
  N  = N other + N own
  S1 = (Sx - N_o mu') + (S1o - N_w dm)
  S2 = ((Sxx - (2 mu') Sx) + (N_o mu') mu') + ((S2o - (2 dm) S1o) + (N_w dm) dm)
with mu' = mu - s and dm = mu - m32 in double: gmm_mma.central_stats'
operations in its order, none contracted, so the host's bits.  A fit on
one device (or totalled on one, GmmPass.total_mstats) then reads k x
(1 + 2d) statistics, not k x SZ raw sums it would make central itself.
Reads spec: d, dp (the shift's length and the float32 means' row stride).
Input: raw (k x SZ), means (k x d doubles), shift (dp floats), means32
(k x dp floats); output: k x (1 + 2d) doubles, a work-item an (j, c).
</%doc>
<%inherit file="/prelude.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define DP ${dp}
#define SZ (2 + 4 * D)

__kernel void gmm_mma_central(__global const double *restrict raw, const int k,
                              __global const double *restrict means,
                              __global const float *restrict shift,
                              __global const float *restrict means32,
                              __global double *restrict out)
{
    const long e = get_global_id(0);
    if (e >= (long)k * D)
        return;
    const long j = e / D;
    const int c = (int)(e - j * D);
    __global const double *r = raw + j * SZ;
    const double n_other = r[0], n_own = r[1];
    const double sx = r[2 + c], sxx = r[2 + D + c];
    const double s1o = r[2 + 2 * D + c], s2o = r[2 + 3 * D + c];
    const double mean = means[j * D + c];
    const double mu = mean - (double)shift[c];
    const double dm = mean - (double)means32[j * DP + c];
    __global double *o = out + j * (1 + 2 * D);
    if (c == 0)
        o[0] = n_other + n_own;
    o[1 + c] = (sx - n_other * mu) + (s1o - n_own * dm);
    o[1 + D + c] = ((sxx - (2.0 * mu) * sx) + (n_other * mu) * mu)
                   + ((s2o - (2.0 * dm) * s1o) + (n_own * dm) * dm);
}
