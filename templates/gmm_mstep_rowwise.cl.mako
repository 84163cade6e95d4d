<%doc>
GMM M-step partial statistics for diagonal covariances, CPU shape: a
work-item per component, walking the rows of its chunk.  Reads spec: d, wg,
tile (points summed in real_t before they are added into acc_t), full
(always false: the full scatter's hundreds of accumulators per lane ran
slower than gmm_mstep.cl.mako's CPU shape).

CPU runtimes vectorise across the work-items of a group: here neighbouring
lanes are neighbouring components, so a row's values are one broadcast load
for all lanes and every fma of the scatter is a full vector fma (the GPU
shape, gmm_mstep.cl.mako, makes such runtimes gather from local memory).
Per component j, about its current mean (z = x - mu_j, float32 keeps its
digits): N_j, S1_j = sum r z and the diagonal of S2_j = sum r z z^T.  Group id = chunk * ceil(k / wg) + component
block; output slabs as gmm_mstep.cl.mako's (one replica), in a fixed order.
</%doc>
<%inherit file="prelude.cl.mako"/>
#define D ${d}
#define WG ${wg}
#define P ${tile}
#define SZ (1 + 2 * D)

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
    acc_t n_acc = 0, n_comp = 0, s1[D], s1_comp[D], s2[D], s2_comp[D];
    for (int e = 0; e < D; ++e)
        s1[e] = s1_comp[e] = s2[e] = s2_comp[e] = 0;
    for (long start = lo; start < hi; start += P) {
        const long stop = min(hi, start + P);
        real_t t_n = 0, t1[D], t2[D];
        #pragma unroll
        for (int c = 0; c < D; ++c)
            t1[c] = t2[c] = 0;
        for (long i = start; i < stop; ++i) {
            const real_t r = resp[(long)j * n + i];
            t_n += r;
            #pragma unroll
            for (int c = 0; c < D; ++c) {
                const real_t z = x[i * stride + c] - mu[c];
                const real_t wz = r * z;
                t1[c] += wz;
                t2[c] = fma(wz, z, t2[c]);
            }
        }
        acc_private(&n_acc, &n_comp, t_n);
        #pragma unroll
        for (int c = 0; c < D; ++c) {
            acc_private(&s1[c], &s1_comp[c], t1[c]);
            acc_private(&s2[c], &s2_comp[c], t2[c]);
        }
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
    for (int c = 0; c < D; ++c)
        PUT(1 + D + c, s2[c], s2_comp[c]);
}
