<%doc>
GMM M-step partial statistics from the responsibilities of the E-step.
Reads spec: d, wg, tb (register block edge), nb (blocks per side:
ceil(d / tb)), reps (replicas: work-items sharing one block, each taking
every reps-th point of a tile), tile (points staged in local memory at a
time), full (scatter matrices; else their diagonal).

A work-group owns one component j and one chunk of rows (group id = chunk *
k + j, k a kernel argument: the k groups of a chunk run together and share its rows in
cache).  Per component j, about its current mean mu_j (z = x - mu_j, so
float32 keeps its digits):
  N_j = sum r_ij,  S1_j = sum r_ij z_i,  S2_j = sum r_ij z_i z_i^T
(full: D x D; diag: its diagonal).  Each work-item keeps a tb x tb block of
S2 in registers (a register tile: 2 tb local reads feed tb^2 fmas per
point), sums a tile in real_t and adds the tile's sums into acc_t (double,
or a Kahan pair without fp64), so precision does not depend on n.

Output: slab (chunk * reps + replica) x k x SZ, SZ = 1 + D + D*D (full) or
1 + 2D: [N, S1 (D), S2 (D x D row-major, or D)]; every entry of every slab
is written, in a fixed order (no atomics), for reduce_partials.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
#define D ${d}
#define WG ${wg}
#define TB ${tb}
#define NB ${nb}
#define REPS ${reps}
#define P ${tile}
#define DP (NB * TB)
% if full:
#define NBLK (NB * NB)
#define SZ (1 + D + D * D)
% else:
#define NBLK NB
#define SZ (1 + 2 * D)
% endif

inline void acc_private(acc_t *s, acc_t *comp, const acc_t v)
{
#if ACC_DOUBLE
    *s += v;
#else
${select.kahan_add("*s", "*comp", "v")}\
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
    const int lid = get_local_id(0);
    const long g = get_group_id(0), slabs = get_num_groups(0) / k * REPS;
    const int j = g % k;
    const long chunk = g / k;
    const long lo = chunk * rows_per_chunk, hi = min(n, lo + rows_per_chunk);
    const int rep = lid / NBLK, blk = lid % NBLK;
% if full:
    const int a0 = (blk / NB) * TB, b0 = (blk % NB) * TB;
% else:
    const int a0 = blk * TB;
% endif
    __local real_t zt[P * DP];     /* z = x - mu_j */
    __local real_t wzt[P * DP];    /* r_ij z */
    __local real_t wt[P];          /* r_ij */

    acc_t n_acc = 0, n_comp = 0;
    acc_t s1[TB], s1_comp[TB];
% if full:
    acc_t s2[TB][TB], s2_comp[TB][TB];
% else:
    acc_t s2[TB], s2_comp[TB];
% endif
    for (int q = 0; q < TB; ++q) {
        s1[q] = s1_comp[q] = 0;
% if full:
        for (int u = 0; u < TB; ++u)
            s2[q][u] = s2_comp[q][u] = 0;
% else:
        s2[q] = s2_comp[q] = 0;
% endif
    }
    for (long start = lo; start < hi; start += P) {
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = lid; e < P * DP; e += WG) {
            const int p = e / DP, c = e % DP;
            const long i = start + p;
            const int ok = i < hi && c < D;
            const real_t z = ok ? x[i * stride + c] - means[j * D + c] : 0;
            const real_t r = ok ? resp[(long)j * n + i] : 0;
            zt[e] = z;
            wzt[e] = r * z;
        }
        for (int p = lid; p < P; p += WG)
            wt[p] = start + p < hi ? resp[(long)j * n + start + p] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);

        real_t t_n = 0, t1[TB];
% if full:
        real_t t2[TB][TB];
% else:
        real_t t2[TB];
% endif
        for (int q = 0; q < TB; ++q) {
            t1[q] = 0;
% if full:
            for (int u = 0; u < TB; ++u)
                t2[q][u] = 0;
% else:
            t2[q] = 0;
% endif
        }
        for (int p = rep; p < P; p += REPS) {
            real_t wa[TB];
            for (int q = 0; q < TB; ++q)
                wa[q] = wzt[p * DP + a0 + q];
% if full:
            real_t zb[TB];
            for (int u = 0; u < TB; ++u)
                zb[u] = zt[p * DP + b0 + u];
            for (int q = 0; q < TB; ++q)
                for (int u = 0; u < TB; ++u)
                    t2[q][u] = fma(wa[q], zb[u], t2[q][u]);
% else:
            for (int q = 0; q < TB; ++q)
                t2[q] = fma(wa[q], zt[p * DP + a0 + q], t2[q]);
% endif
            for (int q = 0; q < TB; ++q)
                t1[q] += wa[q];
            t_n += wt[p];
        }
        acc_private(&n_acc, &n_comp, t_n);
        for (int q = 0; q < TB; ++q) {
            acc_private(&s1[q], &s1_comp[q], t1[q]);
% if full:
            for (int u = 0; u < TB; ++u)
                acc_private(&s2[q][u], &s2_comp[q][u], t2[q][u]);
% else:
            acc_private(&s2[q], &s2_comp[q], t2[q]);
% endif
        }
    }

    const long slab = chunk * REPS + rep;
    __global acc_t *out = part + (slab * k + j) * SZ;
% if not acc_double:
    __global acc_t *out_comp = part + ((slabs + slab) * k + j) * SZ;
#define PUT(e, v, cv) do { out[e] = (v); out_comp[e] = (cv); } while (0)
% else:
#define PUT(e, v, cv) out[e] = (v)
% endif
    if (blk == 0)
        PUT(0, n_acc, n_comp);
% if full:
    if (b0 == 0)
% endif
        for (int q = 0; q < TB; ++q)
            if (a0 + q < D)
                PUT(1 + a0 + q, s1[q], s1_comp[q]);
    for (int q = 0; q < TB; ++q) {
% if full:
        for (int u = 0; u < TB; ++u)
            if (a0 + q < D && b0 + u < D)
                PUT(1 + D + (a0 + q) * D + b0 + u, s2[q][u], s2_comp[q][u]);
% else:
        if (a0 + q < D)
            PUT(1 + D + a0 + q, s2[q], s2_comp[q]);
% endif
    }
}
