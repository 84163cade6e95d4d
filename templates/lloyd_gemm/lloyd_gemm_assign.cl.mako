<%doc>
Register-tiled (GEMM-style) distance + argmin: labels, exact distances,
inertia and change counts; the sums come from lloyd_accumulate_sums.cl.mako.
Reads spec: d, dp (d padded to kc), kp (k padded to tn), tm, tn (points and
centroids of a work-group tile), rm, rn (a work-item's register tile),
kc (depth of a local-memory chunk), vw (width of the local-memory reads),
as distance_tile.cl.mako (the shared register tile, FORM "dot") reads them;
prefetch (0: none; 1: the next chunk read into registers while this one is
multiplied; 2: that, and two copies of the local chunks, so the next chunk is
stored while others still read this one: one barrier per chunk, not two),
weighted; derived by LloydSpec: copies (of the local chunks), aliased (the
rows' partial winners kept in the chunks' local memory).

A work-group owns row tiles of TM points; for each it walks every centroid
tile, TM x TN dot products at a time in registers (X and C chunks of KC
dimensions staged in local memory), scoring ||c||^2 - 2 x.c (||x||^2 is the
same for a row's candidates).  The NX work-items that share a row then reduce
their (score, index) pairs, ties to the lowest index, and the winner's exact
(x - c)^2 distance is recomputed so inertia suffers no cancellation.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="tile" file="/distance_tile/distance_tile.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
<%def name="store_chunk(buf)">
            for (int u = 0; u < XL; ++u) {
                const int e = lid + u * WG;
                if (e < TM * KC)
                    lx[${buf} * (KC * TMP) + (e % KC) * TMP + e / KC] = px[u];
            }
            for (int u = 0; u < CL; ++u) {
                const int e = lid + u * WG;
                if (e < TN * KC)
                    lc[${buf} * (KC * TN) + e] = pc[u];
            }
</%def>
<%def name="load_chunk(jt, kc)">
        for (int u = 0; u < XL; ++u) {
            const int e = lid + u * WG;
            if (e < TM * KC)
                px[u] = X_AT(e, ${kc});
        }
        for (int u = 0; u < CL; ++u) {
            const int e = lid + u * WG;
            if (e < TN * KC)
                pc[u] = C_AT(e, ${jt}, ${kc});
        }
</%def>
#define D ${d}
${tile.defines()}
#define DP ${dp}
#define KP ${kp}
#define KSTEPS (DP / KC)
#define STEPS (KP / TN * KSTEPS)
#define XL ((TM * KC + WG - 1) / WG)   /* prefetched values per work-item */
#define CL ((TN * KC + WG - 1) / WG)
/* element e of the X chunk at depth kc (zero outside the data) and of the C chunk */
#define X_AT(e, kc) ((base + (e) / KC < n && (kc) + (e) % KC < D) ? \
                     x[(base + (e) / KC) * stride + (kc) + (e) % KC] : (real_t)0)
#define C_AT(e, jt, kc) centers_t[(long)((kc) + (e) / TN) * KP + (jt) + (e) % TN]
% if weighted:
#define WEIGHT(i) w[i]
% else:
#define WEIGHT(i) ((real_t)1)
% endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void assign_gemm(
    __global const real_t *restrict x, const long n, const long stride,
    __global const real_t *restrict w,
    __global const real_t *restrict centers_t,    /* DP x KP, zero padding */
    __global const real_t *restrict centers,      /* K x D, for the exact distance */
    __global const real_t *restrict center_norms, /* KP, +inf on padding */
    __global int *restrict labels,                /* in: previous, out: new */
    __global real_t *restrict min_dist,           /* exact distance to own centre */
    __global acc_t *restrict part_inertia,        /* groups */
    __global int *restrict part_flags,            /* groups x 2: changed, non-finite */
    const long tiles_per_group)
{
    const int lid = get_local_id(0);
    const int tx = lid % NX, ty = lid / NX;
    const long g = get_group_id(0);
${tile.local_chunks(copies=copies)}\
% if aliased:
    /* the chunks' memory is free once a row tile's last chunk is read */
    __local real_t *row_best = lx;
    __local int *row_index = (__local int *)lc;
% else:
    __local real_t row_best[TM * NX];
    __local int row_index[TM * NX];
% endif
    __local acc_t scratch[WG];

    acc_t inertia = 0;
    int changed = 0, nonfinite = 0;
    const long first = g * tiles_per_group * TM;
    for (long t = 0; t < tiles_per_group; ++t) {
        const long base = first + t * TM;
        if (base >= n)
            break;                      /* uniform over the group */
% for r in range(rm):
        real_t best_${r} = INFINITY;
        int index_${r} = 0;
% endfor
${tile.accumulators()}\
% if prefetch:
        /* the next chunk is read from global memory into registers while
           this one is multiplied: the loads' latency hides behind the FMAs */
        real_t px[XL], pc[CL];
        ${load_chunk(0, 0)}
% endif
% if prefetch == 2:
        barrier(CLK_LOCAL_MEM_FENCE);   /* the last tile's row winners are read */
        ${store_chunk(0)}
        barrier(CLK_LOCAL_MEM_FENCE);
% endif
        for (int step = 0; step < STEPS; ++step) {
            const int jt = step / KSTEPS * TN, kc = step % KSTEPS * KC;
% if prefetch == 2:
            if (step + 1 < STEPS) {
                ${load_chunk("(step + 1) / KSTEPS * TN", "(step + 1) % KSTEPS * KC")}
            }
${tile.multiply("dot", "step & 1")}\
% else:
            barrier(CLK_LOCAL_MEM_FENCE);
% endif
% if prefetch == 1:
            ${store_chunk(0)}
            barrier(CLK_LOCAL_MEM_FENCE);
            if (step + 1 < STEPS) {
                ${load_chunk("(step + 1) / KSTEPS * TN", "(step + 1) % KSTEPS * KC")}
            }
% elif prefetch == 0:
            /* X chunk, transposed: lanes walk a row's dimensions (coalesced) */
${tile.stage_transposed("lx", "TMP", "TM", "X_AT(e, kc)")}\
            /* C chunk: centers_t rows are contiguous along the centroids */
${tile.stage_direct("lc", "TN", "C_AT(e, jt, kc)")}\
            barrier(CLK_LOCAL_MEM_FENCE);
% endif
% if prefetch != 2:
${tile.multiply("dot")}\
% endif
            if (kc + KC == DP) {
                /* a centroid tile done: candidates in increasing index, strict <
                   keeps the lowest on ties */
% for q in range(rn):
                {
                    const int j = jt + ${tile.col(q)};
                    const real_t norm = center_norms[j];
  % for r in range(rm):
                    const real_t s${r} = fma((real_t)-2, acc_${r}_${q}, norm);
                    if (s${r} < best_${r}) { best_${r} = s${r}; index_${r} = j; }
                    acc_${r}_${q} = 0;
  % endfor
                }
% endfor
            }
% if prefetch == 2:
            /* the other copy was last read before the previous barrier */
            if (step + 1 < STEPS) {
                ${store_chunk("((step + 1) & 1)")}
            }
            barrier(CLK_LOCAL_MEM_FENCE);
% endif
        }
        /* the NX partial winners of each row; lowest index on ties */
        barrier(CLK_LOCAL_MEM_FENCE);
% for r in range(rm):
        row_best[(${tile.row(r)}) * NX + tx] = best_${r};
        row_index[(${tile.row(r)}) * NX + tx] = index_${r};
% endfor
        barrier(CLK_LOCAL_MEM_FENCE);
${select.row_winners("NX")}\
    }
${select.assignment_partials()}\
}