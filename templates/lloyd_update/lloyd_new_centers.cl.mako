<%doc>
The k-means centre update on the device (passes/lloyd_update.py): from the
Lloyd pass's reduced sums and weights, the new centres in float64 exactly as
cluster._base.centers_update computes them (sums / weights; a centre of no
weight keeps its place), each element's squared move for the shift, and the
next pass's inputs from the new centres -- rounded to the data's type in the
variant's layout, and their squared norms summed in float64 in dimension
order (as lloyd.center_norms sums them on the host), so nothing is uploaded.
With words (split-free sums), the sums and weights come as the exact folds'
words (runtime/exact_fold.cl.mako) and are rounded here as the host rounds
them (common/exact_words.cl.mako), written back for the summary and the
host's reads: no launch of exact_value.cl.mako between the fold and this.
Reads spec: d, k, kp, layout ("rows": K x D, the tiled variant; "columns":
D x KP, rowwise and gemm; "panels": KP / CB panels of D x CB, the blocked
variant; gemm and mma also want the K x D rows), cb (panel width), rows
(whether to write them), wg, packed (c-means' sums), words.
No contraction into FMAs (and built without -cl-mad-enable): every product
and sum rounds as numpy's.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="exact" file="/common/exact_words.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define K ${k}
#define KP ${kp}
#define WG ${wg}
% if words:
${exact.rounded()}
% endif

## centre j's update (the kernel's argument names): also lloyd_update_group.cl.mako's
<%def name="new_center()">\
% if words:
    const double w = exact_rounded(weight_words, K, j, weight_lsb[j]);
    weights[j] = w;
% elif packed:
    const double w = 0.0 + sums[(long)j * (D + 1) + D];
% else:
    const double w = weights[j];
% endif
    volatile double norm = 0;   /* in order: Intel's CPU compiler reorders a loop's sums */
    for (int c = 0; c < D; ++c) {
        const long e = (long)j * D + c;
        const double before = old[e];
% if words:
        const double sum = exact_rounded(sum_words, (long)K * D, e, sum_lsb[e]);
        sums[e] = sum;
        const double after = w > 0 ? sum / w : before;
% elif packed:
        const double after = w > 0 ? (0.0 + sums[(long)j * (D + 1) + c]) / w : before;
% else:
        const double after = w > 0 ? sums[e] / w : before;
% endif
        const double step = after - before;
        moved[e] = step * step;
        next[e] = after;
        const real_t r = (real_t)after;
        const double rr = r;
        norm += rr * rr;
% if layout == "rows":
        centers[e] = r;
% elif layout == "panels":
        centers[(long)(j / ${cb}) * ${cb} * D + c * ${cb} + j % ${cb}] = r;
% else:
        centers[(long)c * KP + j] = r;
% endif
% if rows:
        center_rows[e] = r;
% endif
    }
    norms[j] = (real_t)norm;
</%def>

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void new_centers(
% if words:
    __global double *restrict sums,           /* K x D: the words' values, written */
    __global double *restrict weights,        /* K: the same */
% else:
    __global const double *restrict sums,     /* K x D, reduced */
    __global const double *restrict weights,  /* K, reduced */
% endif
    __global const double *restrict old,      /* K x D centres of this pass */
    __global double *restrict next,           /* K x D: the new ones */
    __global double *restrict moved,          /* K x D: (next - old)^2 */
    __global real_t *restrict centers,        /* the next pass's layout */
    __global real_t *restrict center_rows,    /* K x D (gemm, mma) */
    __global real_t *restrict norms           /* KP; the padding stays +inf */
% if words:
    , __global const double *restrict sum_words,     /* 4 x K x D (exact_fold's out) */
    __global const int *restrict sum_lsb,            /* K x D */
    __global const double *restrict weight_words,    /* 4 x K */
    __global const int *restrict weight_lsb          /* K */
% endif
    )
{
    const int j = get_global_id(0);
    if (j >= K)
        return;
${new_center()}\
}
