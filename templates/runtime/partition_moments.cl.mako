<%doc>
Column sums and sums of squares of a data partition, about a shift row (the
first point) so the variance keeps its digits; also tells non-finite data.
Reads spec: d, wg.
Output per work-group: d sums, d sums of squares (acc_t; Kahan pairs without fp64).
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
#define D ${d}
#define WG ${wg}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void partition_moments(__global const real_t *restrict x, const long n, const long stride,
                       __global const real_t *restrict shift,
                       __global acc_t *restrict part, const long rows_per_group)
{
    const int lid = get_local_id(0);
    const long g = get_group_id(0), groups = get_num_groups(0);
    const long lo = g * rows_per_group, hi = min(n, lo + rows_per_group);
    /* one work-item per column: each partial is summed in row order, in
       registers, and written once */
    for (int c = lid; c < D; c += WG) {
        acc_t s1 = 0, s2 = 0;
% if not acc_double:
        acc_t c1 = 0, c2 = 0;   /* Kahan compensations */
% endif
        for (long i = lo; i < hi; ++i) {
            const acc_t v = (acc_t)x[i * stride + c] - (acc_t)shift[c];
% if acc_double:
            s1 += v;
            s2 += v * v;
% else:
${select.kahan_add("s1", "c1", "v")}\
${select.kahan_add("s2", "c2", "v * v")}\
% endif
        }
        __global acc_t *out = part + g * 2 * D;
        out[c] = s1;
        out[D + c] = s2;
% if not acc_double:
        out[groups * 2 * D + c] = c1;
        out[groups * 2 * D + D + c] = c2;
% endif
    }
}
