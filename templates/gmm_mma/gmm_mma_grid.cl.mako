<%doc>
The tensor-core diagonal M step's exact-fold grid made on the device
(exact_sums.lsb_for_bounds of GmmPass's bounds, the same bits): for
component j the columns [N other, N own, other sums about the shift (d),
their squares (d)] take *head*'s exponents, alike for every component
(the host's: d + 2 values), and the own sums about the means
  sum r x''   : lsb(scale * a),   sum r x''^2 : lsb(scale * (a * a)),
  a = absmax_c + |mu_jc|,
with lsb(b) = frexp's exponent of b (of 1.0 where b is not finite and
positive), ilogb(b) + 1, - HEADROOM: the host's float64 operations, uncontracted.  The
k x (2 + 4d) grid then never leaves the device where the words do not
(one device, or totalled on one: GmmPass); the host reads it back only
to add words itself (exact_fold.Fold.words).
Reads spec: d, headroom (exact_sums.HEADROOM).
Input: means (k x d doubles), absmax (d doubles), scale, head (2 + 2d
ints); output: lsb (k x (2 + 4d) ints), a work-item an element.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define SZ (2 + 4 * D)

/* frexp's exponent (ilogb + 1, subnormal bounds too), less the headroom */
inline int lsb_of(const double bound)
{
    return ilogb(isfinite(bound) && bound > 0 ? bound : 1.0) + 1 - ${headroom};
}

__kernel void gmm_mma_grid(__global const double *restrict means, const int k,
                           __global const double *restrict absmax, const double scale,
                           __global const int *restrict head, __global int *restrict lsb)
{
    const long e = get_global_id(0);
    if (e >= (long)k * SZ)
        return;
    const long j = e / SZ;
    const int c = (int)(e - j * SZ);
    if (c < 2 + 2 * D) {
        lsb[e] = head[c];
        return;
    }
    const int f = (c - 2) % D;
    const double a = absmax[f] + fabs(means[j * D + f]);
    lsb[e] = lsb_of(c < 2 + 3 * D ? scale * a : scale * (a * a));
}
