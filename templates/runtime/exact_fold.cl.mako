<%doc>
Split-free sums, step two: fold per-block partials exactly.  Each partial
(a float64 sum of one fixed block of rows, runtime/exact_sums.py) is cut at
the element's grid (2^lsb) into three integer words of 40 bits and the words
are added as integers: the total does not depend on which blocks a device,
chunk or rank holds, nor on their order.  A non-finite partial is added
apart, as a float ("special").
Reads spec: nothing beyond the prelude (acc_double: the partials are double).
Input: blocks x size partials, lsb (size exponents); output: 4 x size
doubles: the words w0, w1 in [0, 2^40), w2 signed (exact integers), special.
</%doc>
<%inherit file="/prelude.cl.mako"/>

__kernel void exact_fold(__global const double *restrict part, const long blocks,
                         const long size, __global const int *restrict lsb,
                         __global double *restrict out)
{
    const long e = get_global_id(0);
    if (e >= size)
        return;
    const int shift = -lsb[e];
    long w0 = 0, w1 = 0, w2 = 0;
    double special = 0;
    for (long b = 0; b < blocks; ++b) {
        const double v = part[b * size + e];
        if (!isfinite(v)) {
            special += v;
            continue;
        }
        /* |v| on the grid, cut at 2^80 and 2^40: every step but the last
           rint is exact (the remainders keep v's own bits) */
        const double s = ldexp(fabs(v), shift);
        const double h2 = floor(s * 0x1p-80);
        const double r = s - h2 * 0x1p80;
        const double h1 = floor(r * 0x1p-40);
        const double h0 = rint(r - h1 * 0x1p40);
        const long sign = v < 0 ? -1 : 1;
        w0 += sign * (long)h0;
        w1 += sign * (long)h1;
        w2 += sign * (long)h2;
    }
    /* carries: the two lower words into [0, 2^40) (floor division by 2^40) */
    const long mask = (1L << 40) - 1;
    long low = w0 & mask;
    w1 += (w0 - low) / (1L << 40);
    w0 = low;
    low = w1 & mask;
    w2 += (w1 - low) / (1L << 40);
    w1 = low;
    out[e] = (double)w0;
    out[size + e] = (double)w1;
    out[2 * size + e] = (double)w2;
    out[3 * size + e] = special;
}
