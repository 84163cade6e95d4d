<%doc>
GMM M-step partial statistics, CPU shape: a work-item per component, walking
the rows of its chunk.  Reads spec: d, wg, tile (points per tile: their
responsibilities are read once, their sums kept in real_t and then added
into acc_t), full (scatter matrices; else their diagonal).

CPU runtimes vectorise across the work-items of a group: here neighbouring
lanes are neighbouring components, so a row's values are one broadcast load
for all lanes and every fma of the scatter is a full vector fma (the GPU
shape, gmm_mstep.cl.mako, makes such runtimes gather from local memory).
Per component j, about its current mean (z = x - mu_j, float32 keeps its
digits): N_j, S1_j = sum r z, S2_j = sum r z z^T or its diagonal.  The full
scatter's lower triangle is summed BLK entries at a time (straight-line
code generated here, accumulators in registers), one pass over the tile's
rows per block: hundreds of accumulators per lane at once spill.
Group id = chunk * ceil(k / wg) + block of components; output slabs as
gmm_mstep.cl.mako's (one replica), in a fixed order.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%
    BLK = 16
    if full:
        entries = [(a * (a + 1) // 2 + b, a, b) for a in range(d) for b in range(a + 1)]
    else:
        entries = [(c, c, c) for c in range(d)]
    blocks = [entries[i:i + BLK] for i in range(0, len(entries), BLK)]
%>
#define D ${d}
#define WG ${wg}
#define P ${tile}
#define T ${len(entries)}
% if full:
#define SZ (1 + D + D * D)
% else:
#define SZ (1 + 2 * D)
% endif

inline void acc_private(acc_t *s, acc_t *comp, const acc_t v)
{
#if ACC_DOUBLE
    *s += v;
#else
    const float y = v - *comp;
    const float t = *s + y;
    *comp = (t - *s) - y;
    *s = t;
#endif
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gmm_mstep(__global const real_t *restrict x, const long n, const long stride,
               __global const real_t *restrict resp,     /* k x n */
               __global const real_t *restrict means,    /* k x D: the current means */
               const int k,
               const long rows_per_chunk,
               __global acc_t *restrict part)            /* slabs x k x SZ (x2 if Kahan) */
{
    const int blocks = (k + WG - 1) / WG;
    const long g = get_group_id(0), slabs = get_num_groups(0) / blocks;
    const long chunk = g / blocks;
    const int j = (g % blocks) * WG + get_local_id(0);
    if (j >= k)
        return;                         /* no barriers below */
    const long lo = chunk * rows_per_chunk, hi = min(n, lo + rows_per_chunk);
    real_t mu[D];
    for (int c = 0; c < D; ++c)
        mu[c] = means[j * D + c];
    acc_t n_acc = 0, n_comp = 0, s1[D], s1_comp[D], s2[T], s2_comp[T];
    for (int e = 0; e < D; ++e)
        s1[e] = s1_comp[e] = 0;
    for (int e = 0; e < T; ++e)
        s2[e] = s2_comp[e] = 0;
    for (long start = lo; start < hi; start += P) {
        const int np = (int)min((long)P, hi - start);
        real_t rt[P];
        {   /* N and S1; the tile's responsibilities kept for the blocks */
            real_t t_n = 0, t1[D];
            #pragma unroll
            for (int c = 0; c < D; ++c)
                t1[c] = 0;
            for (int p = 0; p < np; ++p) {
                const real_t r = resp[(long)j * n + start + p];
                rt[p] = r;
                t_n += r;
                #pragma unroll
                for (int c = 0; c < D; ++c)
                    t1[c] = fma(r, x[(start + p) * stride + c] - mu[c], t1[c]);
            }
            acc_private(&n_acc, &n_comp, t_n);
            #pragma unroll
            for (int c = 0; c < D; ++c)
                acc_private(&s1[c], &s1_comp[c], t1[c]);
        }
% for blk in blocks:
<%
    cols = sorted({a for _, a, _ in blk} | {b for _, _, b in blk})
    rows = sorted({a for _, a, _ in blk})
%>\
        {   /* S2 entries ${blk[0][0]}..${blk[-1][0]} */
% for e, a, b in blk:
            real_t t${e} = 0;
% endfor
            for (int p = 0; p < np; ++p) {
                __global const real_t *xi = x + (start + p) * stride;
% for c in cols:
                const real_t z${c} = xi[${c}] - mu[${c}];
% endfor
% for a in rows:
                const real_t w${a} = rt[p] * z${a};
% endfor
% for e, a, b in blk:
                t${e} = fma(w${a}, z${b}, t${e});
% endfor
            }
% for e, a, b in blk:
            acc_private(&s2[${e}], &s2_comp[${e}], t${e});
% endfor
        }
% endfor
    }

    __global acc_t *out = part + (chunk * k + j) * SZ;
% if not acc_double:
    __global acc_t *out_comp = part + ((slabs + chunk) * k + j) * SZ;
#define PUT(e, v, cv) do { out[e] = (v); out_comp[e] = (cv); } while (0)
% else:
#define PUT(e, v, cv) out[e] = (v)
% endif
    PUT(0, n_acc, n_comp);
    for (int c = 0; c < D; ++c)
        PUT(1 + c, s1[c], s1_comp[c]);
% if full:
    for (int a = 0; a < D; ++a)
        for (int b = 0; b <= a; ++b) {
            const int e = a * (a + 1) / 2 + b;
            PUT(1 + D + a * D + b, s2[e], s2_comp[e]);
            PUT(1 + D + b * D + a, s2[e], s2_comp[e]);
        }
% else:
    for (int c = 0; c < D; ++c)
        PUT(1 + D + c, s2[c], s2_comp[c]);
% endif
}
