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
Two stages where the elements are too few to fill the device: parts of the
blocks folded apart (exact_fold, a part per work-item row), then their
words added (exact_fold_parts).  Each kernel folds one statistic or two in
one launch (a k-means pass's sums and weights: size_b elements after the
first's size, each with its own partials, grid and output; size_b 0: one).
</%doc>
<%inherit file="/prelude.cl.mako"/>

/* carries: the two lower words into [0, 2^40) (floor division by 2^40);
   then the words as doubles (whole numbers under 2^53) */
void store_words(long w0, long w1, long w2, const double special, const long size,
                 __global double *restrict out)
{
    const long mask = (1L << 40) - 1;
    long low = w0 & mask;
    w1 += (w0 - low) / (1L << 40);
    w0 = low;
    low = w1 & mask;
    w2 += (w1 - low) / (1L << 40);
    w1 = low;
    out[0] = (double)w0;
    out[size] = (double)w1;
    out[2 * size] = (double)w2;
    out[3 * size] = special;
}

/* work-item (e, p): element e's partials of blocks p*per .. (p+1)*per - 1,
   into part p of *out* (parts x 4 x size; with one part, the words); the
   elements from size on are the second statistic's (the _b arguments) */
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void exact_fold(__global const double *part, const long blocks, long size,
                __global const int *lsb, __global double *out,
                __global const double *part_b, const long size_b,
                __global const int *lsb_b, __global double *out_b)
{
    long e = get_global_id(0);
    const long p = get_global_id(1), parts = get_global_size(1);
    if (e >= size) {
        e -= size;
        if (e >= size_b)
            return;
        part = part_b, size = size_b, lsb = lsb_b, out = out_b;
    }
    const long per = (blocks + parts - 1) / parts;
    const long b0 = p * per, b1 = min(blocks, b0 + per);
    /* the grid's scale 2^-lsb as two powers of two (each a double even
       where 2^-lsb is not): two exact products, cheaper than ldexp */
    const int shift = -lsb[e], part1 = shift / 2;
    const double scale1 = ldexp(1.0, part1), scale2 = ldexp(1.0, shift - part1);
    /* whole numbers under 2^40 added in double: exact for up to 2^13 of
       them (Fold.enqueue keeps a part's blocks to that) */
    double w0 = 0, w1 = 0, w2 = 0, special = 0;
    for (long b = b0; b < b1; ++b) {
        const double raw = part[b * size + e];
        const int finite = isfinite(raw);
        special += finite ? 0.0 : raw;
        /* v on the grid, cut toward zero at 2^80 and 2^40: every step but
           the last rint is exact (each remainder keeps v's own bits and
           sign), so the three signed words add to v's grid value */
        const double s = (finite ? raw : 0.0) * scale1 * scale2;
        const double h2 = (double)(long)(s * 0x1p-80);   /* toward zero, as trunc */
        const double r = s - h2 * 0x1p80;
        const double h1 = (double)(long)(r * 0x1p-40);
        const double low = r - h1 * 0x1p40;
        w0 += (double)(long)(low + copysign(0.5, low));   /* to nearest, half away */
        w1 += h1;
        w2 += h2;
    }
    store_words((long)w0, (long)w1, (long)w2, special, size, out + p * 4 * size + e);
}

/* the parts' words added (integers: in any order the same), carried again;
   the non-finite sums of the parts added (infinities and NaNs: order-free);
   the elements from size on the second statistic's */
__kernel void exact_fold_parts(__global const double *partial, const long parts, long size,
                               __global double *out, __global const double *partial_b,
                               const long size_b, __global double *out_b)
{
    long e = get_global_id(0);
    if (e >= size) {
        e -= size;
        if (e >= size_b)
            return;
        partial = partial_b, size = size_b, out = out_b;
    }
    long w0 = 0, w1 = 0, w2 = 0;
    double special = 0;
    for (long p = 0; p < parts; ++p) {
        __global const double *words = partial + p * 4 * size + e;
        w0 += (long)words[0];
        w1 += (long)words[size];
        w2 += (long)words[2 * size];
        special += words[3 * size];
    }
    store_words(w0, w1, w2, special, size, out + e);
}
