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
<%namespace name="words" file="/common/exact_words.cl.mako"/>

${words.fold()}
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
    fold_words(part, p * per, min(blocks, p * per + per), size, e, lsb[e],
               out + p * 4 * size);
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
