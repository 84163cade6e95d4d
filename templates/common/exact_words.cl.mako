<%doc>
Split-free sums on the device (runtime/exact_sums.py): a def library with no
kernel of its own, imported through
    <%namespace name="words" file="/common/exact_words.cl.mako"/>
  block_sum: the function group_block_sum(values, w, lo, hi, tree), the
      float64 sum of rows [lo, hi) of one value a row by the whole
      work-group of WG items, in a fixed order (an item's rows in turn, then
      a fixed tree of WG in *tree*, WG doubles of local memory): the same
      bits whichever device, chunk or rank holds the block; in item 0
      (block_sums.cl.mako a block a group, lloyd_update_group.cl.mako
      every block in turn).  Reads weighted, weight_t.
  fold: the functions fold_words(part, b0, b1, size, e, lsb, out), element
      e's partials of blocks [b0, b1) of *part* (blocks x size) cut at its
      grid 2^lsb into three integer words of 40 bits, added as integers and
      stored with store_words (carried: the two lower words in [0, 2^40)):
      the words do not depend on which blocks a device, chunk or rank holds,
      nor on their order; a non-finite partial added apart ("special")
      (exact_fold.cl.mako, lloyd_update_group.cl.mako).
  rounded: the function exact_rounded(words, size, e, lsb), element e of
      exact_fold's output (4 x size doubles: three integer words and the
      non-finite partials' sum) on its grid 2^lsb, as the host's
      ExactWords.value() rounds it (runtime/exact_sums.py): the words from
      the top down, each scaled to its grid (exact) and added in float64, a
      non-finite sum winning.  exact_value.cl.mako rounds a fold's words
      with it, lloyd_new_centers.cl.mako the sums and weights it divides.
The caller's source must not contract or reorder (FP_CONTRACT OFF, no
fast-math): the same words give the same bits here and on the host.
</%doc>
<%def name="rounded()">\
inline double exact_rounded(__global const double *restrict words, const long size,
                            const long e, const int lsb)
{
    double total = 0.0;
    for (int i = 2; i >= 0; --i)
        total += ldexp(words[i * size + e], lsb + 40 * i);
    const double special = words[3 * size + e];
    return special != 0 ? special : total;
}
</%def>
<%def name="block_sum(weighted, weight_t)">\
double group_block_sum(__global const real_t *restrict values,
                       __global const ${weight_t} *restrict w, const long lo, const long hi,
                       __local double *restrict tree)
{
    const int lid = get_local_id(0);
    double s = 0;
    for (long i = lo + lid; i < hi; i += WG)
% if weighted:
        s += (double)w[i] * (double)values[i];
% else:
        s += (double)values[i];
% endif
    tree[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int span = WG / 2; span > 0; span >>= 1) {
        if (lid < span)
            tree[lid] += tree[lid + span];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const double total = tree[0];
    barrier(CLK_LOCAL_MEM_FENCE);   /* the tree is free again */
    return total;
}
</%def>
<%def name="fold()">\
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

/* element e's partials of blocks [b0, b1) folded into words at out + e */
void fold_words(__global const double *restrict part, const long b0, const long b1,
                const long size, const long e, const int lsb, __global double *restrict out)
{
    /* the grid's scale 2^-lsb as two powers of two (each a double even
       where 2^-lsb is not): two exact products, cheaper than ldexp */
    const int shift = -lsb, part1 = shift / 2;
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
    store_words((long)w0, (long)w1, (long)w2, special, size, out + e);
}
</%def>
