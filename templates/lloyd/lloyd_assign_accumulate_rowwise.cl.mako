<%doc>
The fused Lloyd pass, row-wise variant for CPU-like devices: each work-item
walks its own contiguous rows (item_rows: whole blocks of block_rows rows)
and owns their blocks' slabs of partial sums (as lloyd_assign_accumulate's
groups), so there is no sharing, no barrier and no atomics; the distances
to vw centroids at a time are one vector operation (centroids stored transposed, KP x D -> D x KP).
Same arguments and results as lloyd_assign_accumulate.cl.mako.
Reads spec: d, k, kp (multiple of vw * ctile), vw, ctile (vectors of
centroids per pass over a row), ppi (rows scored together), update, weighted.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
#define D ${d}
#define K ${k}
#define KP ${kp}
#define VW ${vw}
#define CT ${ctile}
#define PPI ${ppi}
typedef ${real_t}${vw} realv;
typedef ${"int" if real_t == "float" else "long"}${vw} idxv;   /* select() wants equal widths */
#define LANES ((idxv)(${", ".join(str(i) for i in range(vw))}))
% if weighted:
#define WEIGHT(i) w[i]
% else:
#define WEIGHT(i) ((real_t)1)
% endif

__kernel void assign_and_accumulate(
    __global const real_t *restrict x, const long n, const long stride,
    __global const real_t *restrict w,
    __global const real_t *restrict centers,      /* D x KP, transposed */
    __global const real_t *restrict center_norms, /* KP, +inf on padding */
    __global int *restrict labels,
    __global real_t *restrict min_dist,
    __global acc_t *restrict part_sums,           /* slabs x K x D (x2 if Kahan) */
    __global acc_t *restrict part_weights,        /* slabs x K (x2 if Kahan) */
    __global acc_t *restrict part_inertia,        /* items */
    __global int *restrict part_flags,            /* items x 2: changed, non-finite */
    const long item_rows, const long block_rows)
{
    const long g = get_global_id(0), items = get_global_size(0);
    const long lo = g * item_rows, hi = min(n, lo + item_rows);
% if update:
    /* this item's slabs zeroed (one at least); Kahan sums (not split-free)
       have a slab an item: their compensations after the items' slabs */
    const long slab0 = lo / block_rows;
    const long slabs = max(1L, (hi - lo + block_rows - 1) / block_rows);
    for (long e = 0; e < slabs * K * D; ++e)
        part_sums[slab0 * K * D + e] = 0;
    for (long e = 0; e < slabs * K; ++e)
        part_weights[slab0 * K + e] = 0;
  % if not acc_double:
    for (long e = 0; e < K * D; ++e)
        part_sums[(items + g) * K * D + e] = 0;
    for (long e = 0; e < K; ++e)
        part_weights[(items + g) * K + e] = 0;
  % endif
% endif
    acc_t inertia = 0;
    int changed = 0, nonfinite = 0;
    for (long i0 = lo; i0 < hi; i0 += PPI) {
        __global const real_t *row[PPI];
        realv best[PPI];
        idxv best_j[PPI];
        for (int p = 0; p < PPI; ++p) {
            row[p] = x + min(i0 + p, hi - 1) * stride;  /* edge: rescore a valid row */
            best[p] = (realv)(INFINITY);
            best_j[p] = (idxv)(0);
        }
        for (int j0 = 0; j0 < KP; j0 += VW * CT) {
            realv dot[PPI][CT];
            #pragma unroll
            for (int p = 0; p < PPI; ++p)
                #pragma unroll
                for (int q = 0; q < CT; ++q)
                    dot[p][q] = (realv)(0);
            for (int c = 0; c < D; ++c) {
                realv cv[CT];
                #pragma unroll
                for (int q = 0; q < CT; ++q)
                    cv[q] = vload${vw}(0, centers + c * KP + j0 + q * VW);
                #pragma unroll
                for (int p = 0; p < PPI; ++p) {
                    const realv xv = (realv)(row[p][c]);
                    #pragma unroll
                    for (int q = 0; q < CT; ++q)
                        dot[p][q] = fma(xv, cv[q], dot[p][q]);
                }
            }
            for (int q = 0; q < CT; ++q) {
                const realv norm = vload${vw}(0, center_norms + j0 + q * VW);
                const idxv j = LANES + (idxv)(j0 + q * VW);
                for (int p = 0; p < PPI; ++p) {
                    /* ||c||^2 - 2 x.c ranks centroids like ||x - c||^2 */
                    const realv score = fma((realv)(-2), dot[p][q], norm);
                    const idxv better = score < best[p];
                    best[p] = select(best[p], score, better);
                    best_j[p] = select(best_j[p], j, better);
                }
            }
        }
        for (int p = 0; p < PPI; ++p) {
            const long i = i0 + p;
            if (i >= hi)
                break;
            /* lowest index among the lanes' minima, as a sequential argmin */
            real_t b[VW];
            ${"int" if real_t == "float" else "long"} bj[VW];
            vstore${vw}(best[p], 0, b);
            vstore${vw}(best_j[p], 0, bj);
            int j = bj[0];
            real_t s = b[0];
            for (int l = 1; l < VW; ++l)
                ${select.lower("b[l]", "bj[l]", "s", "j")}
${select.exact_distance("row[p][c]", "centers[c * KP + j]")}\
${select.record_winner("i", "j")}\
% if update:
            /* the row's block's slab */
            __global acc_t *const sums = part_sums + i / block_rows * K * D;
            __global acc_t *const wsum = part_weights + i / block_rows * K;
% endif
% if update:
            for (int c = 0; c < D; ++c)
                acc_add_global(sums, (long)j * D + c, items * K * D,
                               (acc_t)WEIGHT(i) * row[p][c]);
            acc_add_global(wsum, j, items * K, (acc_t)WEIGHT(i));
% endif
        }
    }
    part_inertia[g] = inertia;
    part_flags[2 * g] = changed;
    part_flags[2 * g + 1] = nonfinite;
}
