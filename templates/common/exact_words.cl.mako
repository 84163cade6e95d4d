<%doc>
Split-free sums' words rounded to float64: a def library with no kernel of
its own, imported through
    <%namespace name="words" file="/common/exact_words.cl.mako"/>
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
