<%doc>
The fused Lloyd pass, register-blocked variant for CPU runtimes: each
work-item walks its own contiguous rows in blocks of RB rows and scores them
against panels of CV vectors of VW centroids (RB x CV vector accumulators,
named registers unrolled here, so no runtime's scalar replacement of arrays
decides whether they stay in registers).  The centroids are packed panel by
panel (panel p holds centroids p*CB .. p*CB+CB-1 as D rows of CB contiguous
values, CB = CV * VW), so a dimension's CV vectors are one contiguous run and
a panel is one contiguous D x CB block: x.c of RB rows x CB centroids costs
D x (RB broadcasts + CV vector loads) for RB x CV vector FMAs.  Each row keeps
its running argmin as VW lanes (lowest index on ties, as a sequential argmin),
reduced once a row is scored, in halves of the lanes, branch-free; the
winner's exact distance is taken from the K x D rows (center_rows) VW
dimensions a vector, and its sums go to the work-item's own slab 8 doubles
a vector, rows in order (no sharing, no barrier, no atomics; a slab per
block of its rows, as the rowwise variant's), as the rowwise variant does: at d = 32 that per-row epilogue, scalar, cost a fifth of the
distances.  The rowwise variant's arguments with center_rows after centers;
its results (min_dist to rounding: the vector sum's order).
Rows go in chunks of NB blocks: a panel is scored against every block of
the chunk before the next panel (it stays in the L1 cache: k x d centroids
often do not), the blocks' running argmins waiting in private memory.
Reads spec: d, k, kp (multiple of vw * cv), vw (a power of two), rb (rows a block), nb
(blocks a chunk), cv (vectors of centroids a panel), unroll (dimensions a
step of the dot loop), update, weighted.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
<%
    cb = cv * vw
    itype = "int" if real_t == "float" else "long"
    widths = []
    w = vw
    while w > 1:
        w //= 2
        widths.append(w)
%>\
#define D ${d}
#define K ${k}
#define KP ${kp}
#define VW ${vw}
#define CB ${cb}
#define RB ${rb}
#define NB ${nb}
#define RC (RB * NB)
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
    __global const real_t *restrict centers,      /* KP / CB panels of D x CB */
    __global const real_t *restrict center_rows,  /* K x D */
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
    for (long c0 = lo; c0 < hi; c0 += RC) {
        /* a chunk of NB blocks of RB rows: each panel is scored against all
           its blocks while it sits in the L1 cache; the rows' running argmins
           (VW lanes each) wait in private memory between panels */
        realv best[RC];
        idxv best_j[RC];
        for (int e = 0; e < RC; ++e) {
            best[e] = (realv)(INFINITY);
            best_j[e] = (idxv)(0);
        }
        const int blocks = (int)min((long)NB, (hi - c0 + RB - 1) / RB);
        for (int j0 = 0; j0 < KP; j0 += CB) {
            __global const real_t *const panel = centers + (long)j0 * D;
            for (int b = 0; b < blocks; ++b) {
                const long i0 = c0 + b * RB;
                /* edge: a missing row rescores the last valid one (not recorded) */
% for r in range(rb):
                __global const real_t *const x${r} = x + min(i0 + ${r}, hi - 1) * stride;
% endfor
% for r in range(rb):
  % for v in range(cv):
                realv dot${r}_${v} = (realv)(0);
  % endfor
% endfor
                #pragma unroll ${unroll}
                for (int c = 0; c < D; ++c) {
% for v in range(cv):
                    const realv c${v} = vload${vw}(${v}, panel + c * CB);
% endfor
% for r in range(rb):
                    const realv x${r}c = (realv)(x${r}[c]);
  % for v in range(cv):
                    dot${r}_${v} = fma(x${r}c, c${v}, dot${r}_${v});
  % endfor
% endfor
                }
% for r in range(rb):
                {
                    realv best_r = best[b * RB + ${r}];
                    idxv best_jr = best_j[b * RB + ${r}];
  % for v in range(cv):
                    {   /* ||c||^2 - 2 x.c ranks centroids like ||x - c||^2 */
                        const realv score = fma((realv)(-2), dot${r}_${v},
                                                vload${vw}(0, center_norms + j0 + ${v * vw}));
                        const idxv better = score < best_r;
                        best_r = select(best_r, score, better);
                        best_jr = select(best_jr, LANES + (idxv)(j0 + ${v * vw}), better);
                    }
  % endfor
                    best[b * RB + ${r}] = best_r;
                    best_j[b * RB + ${r}] = best_jr;
                }
% endfor
            }
        }
        for (int e = 0; e < RC; ++e) {
            const long i = c0 + e;
            if (i >= hi)
                break;
            __global const real_t *const row = x + i * stride;
            /* lowest index among the lanes' minima, as a sequential argmin:
               halves of the lanes in turn, branch-free (the lanes' minima are
               never NaN, so the lowest (value, index) pair is the same) */
            const realv v${vw} = best[e];
            const idxv j${vw} = best_j[e];
% for w in widths:
  % if w > 1:
            const ${itype}${w} take${w} = (v${2 * w}.hi < v${2 * w}.lo) |
                ((v${2 * w}.hi == v${2 * w}.lo) & (j${2 * w}.hi < j${2 * w}.lo));
            const ${real_t}${w} v${w} = select(v${2 * w}.lo, v${2 * w}.hi, take${w});
            const ${itype}${w} j${w} = select(j${2 * w}.lo, j${2 * w}.hi, take${w});
  % else:
            const int j = (int)((v2.hi < v2.lo || (v2.hi == v2.lo && j2.hi < j2.lo))
                                ? j2.hi : j2.lo);
  % endif
% endfor
            /* the exact (x - c)^2 distance of the winner (no cancellation in
               the inertia): VW dimensions a vector, their lanes summed in halves */
            __global const real_t *const crow = center_rows + (long)j * D;
            real_t exact = 0;
% if d >= vw:
            {
                realv e${vw} = (realv)(0);
                for (int q = 0; q < D / VW; ++q) {
                    const realv diff = vload${vw}(q, row) - vload${vw}(q, crow);
                    e${vw} = fma(diff, diff, e${vw});
                }
  % for w in widths:
    % if w > 1:
                const ${real_t}${w} e${w} = e${2 * w}.lo + e${2 * w}.hi;
    % else:
                exact = e2.lo + e2.hi;
    % endif
  % endfor
            }
% endif
% if d % vw:
            for (int c = D / VW * VW; c < D; ++c) {
                const real_t diff = row[c] - crow[c];
                exact = fma(diff, diff, exact);
            }
% endif
${select.record_winner("i", "j")}\
% if update:
            /* the row's block's slab */
            __global acc_t *const sums = part_sums + i / block_rows * K * D;
            __global acc_t *const wsum = part_weights + i / block_rows * K;
% endif
% if update and acc_double:
            {   /* the row into its centroid's sums, 8 dimensions a vector */
                __global acc_t *const s = sums + (long)j * D;
                const acc_t wi = (acc_t)WEIGHT(i);
  % if d >= 8:
                for (int q = 0; q < D / 8; ++q)
                    vstore8(vload8(q, s) + wi * convert_double8(vload8(q, row)), q, s);
  % endif
  % if d % 8:
                for (int c = D / 8 * 8; c < D; ++c)
                    s[c] += wi * row[c];
  % endif
                wsum[j] += wi;
            }
% elif update:
            for (int c = 0; c < D; ++c)
                acc_add_global(sums, (long)j * D + c, items * K * D,
                               (acc_t)WEIGHT(i) * row[c]);
            acc_add_global(wsum, j, items * K, (acc_t)WEIGHT(i));
% endif
        }
    }
    part_inertia[g] = inertia;
    part_flags[2 * g] = changed;
    part_flags[2 * g + 1] = nonfinite;
}
