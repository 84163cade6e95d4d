<%doc>
Boruvka's first candidates from the core distances' pass (passes/mst_known.py
seed): a work-item per row i reads its m nearest rows (dist, ids: n x m,
ascending, the row itself among them or not) and writes what a round knows
of it before any scan.  Reads spec: m, keep.

Each of the m is weighed max(core[i], core[j], dist) (comparisons only: the
same values as the host's float64 maximum rounded to real_t, rounding being
monotone); the keep least by (w, j) are kept ascending in W, J (n x keep;
(INFINITY, n): none; the row itself is none).  The bound (B, Bj) that every
row not kept comes after: a row not among the m is at least the m-th
distance away, so its weight too (Bj = -1: strictly below it is exact);
where m > keep, the first of the m left out, (w, j - 1), where that comes
first.  slot[i] = 0: mst_known.cl.mako's walk starts at the first kept.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="kept" file="/mst/mst_keep.cl.mako"/>
#define M ${m}
#define BEFORE(w, j, bw, bj) ((w) < (bw) || ((w) == (bw) && (j) < (bj)))
## the keep kept and, where m > keep, the first left out
<% listed = keep + 1 if m > keep else keep %>

__kernel void seed_rows(__global const real_t *restrict dist, __global const int *restrict ids,
                        __global const real_t *restrict core, const int n,
                        __global real_t *restrict W, __global int *restrict J,
                        __global real_t *restrict B, __global int *restrict Bj,
                        __global int *restrict slot)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
% for s in range(listed):
    real_t best${s} = INFINITY;
    int bj${s} = n;
% endfor
    const real_t core_i = core[i];
    for (int c = 0; c < M; ++c) {
        const int jid = ids[(long)i * M + c];
        if (jid == i)                   /* the row itself: (INFINITY, n), none */
            continue;
        real_t w = dist[(long)i * M + c];
        const real_t core_j = core[jid];
        if (w < core_i || w < core_j)    /* NaN stays NaN, as numpy's maximum */
            w = core_i > core_j ? core_i : core_j;
        if (BEFORE(w, jid, best${listed - 1}, bj${listed - 1})) {
${kept.insert(listed)}\
        }
    }
% for s in range(keep):
    W[(long)i * ${keep} + ${s}] = best${s};
    J[(long)i * ${keep} + ${s}] = bj${s};
% endfor
    real_t b = dist[(long)i * M + M - 1];
    int bj = -1;
% if m > keep:
    if (BEFORE(best${keep}, bj${keep} - 1, b, bj)) {
        b = best${keep};
        bj = bj${keep} - 1;
    }
% endif
    B[i] = b;
    Bj[i] = bj;
    slot[i] = 0;
}
