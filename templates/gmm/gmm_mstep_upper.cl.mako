<%doc>
The full-covariance GMM M statistics in symmetric register blocks (GPUs
whose profile asks: gmm_mstep_upper): gmm_mstep.cl.mako's statistics about
the current mean (z = x - mu_j),
  N_j = sum r_ij,  S1_j = sum r_ij z_i,  S2_j = sum r_ij z_i z_i^T,
with S2's tb x tb blocks on and above the diagonal alone (nb (nb + 1) / 2
of nb^2), each a work-item's register block fed by two tb-vector local
reads a row (2 reads for tb^2 fmas, where gmm_mstep.cl.mako reads 2 tb
scalars for them).  A block's mirror below the diagonal is written with
its values, so S2 is exactly symmetric.  N and S1 are summed as the rows
are staged (each staging work-item owns one vector column: its means in
registers), so the product loop holds nothing else.
Reads spec: d, wg, tb (2, 4 or 8: the vector type's width), nb
(ceil(d / tb)), replicas (work-items sharing a block, each taking every
replicas-th row of a stage), tile (rows a stage), stagers (rows staged at
once), pool (the local memory in tb-vectors: MStepUpperSpec.pool_vectors).

A work-group owns component j and one chunk of rows (group id = chunk * k +
j, k a kernel argument), as gmm_mstep.cl.mako; its work-items are
replicas x blocks (the rest stage rows only).  Every read of a stage is
issued before its stores.  Sums: float over a stage, then added into
double registers (fp64 only: the planner offers this kernel where
acc_double), so precision does not depend on n.  The replicas' blocks,
and the staging work-items' N and S1, are added in the work-group in a
fixed order (replica 0, 1, ...; staging row 0, 1, ...) before the write,
in the local memory the stages no longer need (less local memory a
work-group: more of them a multiprocessor).

Output: chunk x k x SZ doubles, SZ = 1 + D + D*D: [N, S1 (D), S2 (D x D
row-major)], every entry written, no atomics, for reduce_partials.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%
    nblk = nb * (nb + 1) // 2
    lanes = ["s%x" % q for q in range(tb)]
    vec = "%s%d" % (real_t, tb)
    s_iters = -(-tile // stagers)       # rows a staging item stages a stage
%>
% if not acc_double:
#error "gmm_mstep_upper sums in double (the planner offers it with fp64 alone)"
% endif
#define D ${d}
#define WG ${wg}
#define TB ${tb}
#define NB ${nb}
#define NBLK ${nblk}
#define REPS ${replicas}
#define P ${tile}
#define SZ (1 + D + D * D)
#define SROWS ${stagers}                 /* rows staged at once: an item a vector column */
typedef ${vec} vec_t;

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gmm_mstep(__global const real_t *restrict x, const long n, const long stride,
               __global const real_t *restrict resp,     /* k x n */
               __global const real_t *restrict means,    /* k x D: the current means */
               const int k,
               const long rows_per_chunk,
               __global acc_t *restrict part)            /* chunks x k x SZ */
{
    const int lid = get_local_id(0);
    const long g = get_group_id(0);
    const int j = g % k;
    const long chunk = g / k;
    const long lo = chunk * rows_per_chunk, hi = min(n, lo + rows_per_chunk);
    __local vec_t pool[${pool}];
    __local vec_t *zt = pool;                    /* z = x - mu_j: a row's NB vectors */
    __local vec_t *wzt = pool + P * NB;          /* r_ij z */
    __local acc_t *red = (__local acc_t *)pool;  /* after the stages: a replica's blocks, */
    __local acc_t *sred = red + NBLK * TB * TB;  /* the staging items' N and S1 */

    /* staging: item (sr, sv) stages vector column sv of rows sr, sr + SROWS, ... */
    const int sv = lid % NB, sr = lid / NB;
    const int stager = sr < SROWS;
    vec_t mu;
% for q, lane in enumerate(lanes):
    mu.${lane} = sv * TB + ${q} < D ? means[j * D + sv * TB + ${q}] : 0;
% endfor
    acc_t n_acc = 0;
% for lane in lanes:
    acc_t s1_${lane} = 0;
% endfor

    /* product block blk = (ba, bb), ba <= bb, the upper triangle in row
       order, of replica rep */
    const int rep = lid / NBLK, blk = lid % NBLK;
    int ba = 0, rest = blk;
    while (rest >= NB - ba) {
        rest -= NB - ba;
        ++ba;
    }
    const int bb = ba + rest;
    __local const vec_t *wrow = wzt + ba, *zrow = zt + bb;
% for q in range(tb):
  % for u in range(tb):
    acc_t s2_${q}_${u} = 0;
  % endfor
% endfor

    for (long start = lo; start < hi; start += P) {
        barrier(CLK_LOCAL_MEM_FENCE);            /* the last stage's readers are done */
        if (stager) {
            /* every row's reads first, then the stores: the stage's reads in
               flight together, not one row's after another's */
% for u in range(s_iters):
            vec_t x_${u} = (vec_t)(0);
            real_t r_${u} = 0;
            {
                const long i = start + sr + ${u * stagers};
                if (${"sr + %d < P && " % (u * stagers) if (u + 1) * stagers > tile else ""}i < hi) {
                    __global const real_t *row = x + i * stride + sv * TB;
  % for q, lane in enumerate(lanes):
                    x_${u}.${lane} = sv * TB + ${q} < D ? row[${q}] : 0;
  % endfor
                    r_${u} = resp[(long)j * n + i];
                }
            }
% endfor
            real_t t_n = 0;
            vec_t t1 = (vec_t)(0);
% for u in range(s_iters):
            {
                const int p = sr + ${u * stagers};
                const vec_t z = x_${u} - mu, wz = r_${u} * z;
                ${"if (p < P) {" if (u + 1) * stagers > tile else "{"}
                    zt[p * NB + sv] = z;
                    wzt[p * NB + sv] = wz;
                }
                t_n += r_${u};
                t1 += wz;
            }
% endfor
            n_acc += t_n;
% for lane in lanes:
            s1_${lane} += t1.${lane};
% endfor
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (rep < REPS) {
% for q in range(tb):
  % for u in range(tb):
            real_t t2_${q}_${u} = 0;
  % endfor
% endfor
            for (int p = rep; p < P; p += REPS) {
                const vec_t wa = wrow[p * NB], zb = zrow[p * NB];
% for q, lq in enumerate(lanes):
  % for u, lu in enumerate(lanes):
                t2_${q}_${u} = fma(wa.${lq}, zb.${lu}, t2_${q}_${u});
  % endfor
% endfor
            }
% for q in range(tb):
  % for u in range(tb):
            s2_${q}_${u} += t2_${q}_${u};
  % endfor
% endfor
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);                /* the stages' memory is the sums' now */

    /* the replicas' blocks added into replica 0's, in replica order */
    __local acc_t *mine = red + blk * TB * TB;
    for (int r = 1; r < REPS; ++r) {
        if (rep == r) {
% for q in range(tb):
  % for u in range(tb):
            mine[${q * tb + u}] = s2_${q}_${u};
  % endfor
% endfor
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (rep == 0) {
% for q in range(tb):
  % for u in range(tb):
            s2_${q}_${u} += mine[${q * tb + u}];
  % endfor
% endfor
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    /* the staging items' N and S1, added in staging-row order */
    if (stager) {
        __local acc_t *v = sred + (sr * NB + sv) * (TB + 1);
        v[0] = n_acc;
% for q, lane in enumerate(lanes):
        v[${q + 1}] = s1_${lane};
% endfor
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    __global acc_t *out = part + (chunk * k + j) * SZ;
    if (lid < NB) {                              /* vector column lid's N and S1 */
        acc_t tn = 0, t1[TB];
        for (int q = 0; q < TB; ++q)
            t1[q] = 0;
        for (int s = 0; s < SROWS; ++s) {
            __local const acc_t *w = sred + (s * NB + lid) * (TB + 1);
            tn += w[0];
            for (int q = 0; q < TB; ++q)
                t1[q] += w[q + 1];
        }
        if (lid == 0)
            out[0] = tn;
        for (int q = 0; q < TB; ++q)
            if (lid * TB + q < D)
                out[1 + lid * TB + q] = t1[q];
    }
    if (rep == 0) {
        const int a0 = ba * TB, b0 = bb * TB;
% for q in range(tb):
  % for u in range(tb):
        if (${"ba < bb && " if q > u else ""}a0 + ${q} < D && b0 + ${u} < D) {
            out[1 + D + (a0 + ${q}) * D + b0 + ${u}] = s2_${q}_${u};
            out[1 + D + (b0 + ${u}) * D + a0 + ${q}] = s2_${q}_${u};
        }
  % endfor
% endfor
    }
}
