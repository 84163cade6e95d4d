<%doc>
The largest |x| of each column over a group's rows: the bound the exact
sums' grids are made from (runtime/exact_sums.py).  A maximum is exact, so
any split of the rows gives the same one.  NaN rows give NaN.
Reads spec: d, wg.
Output per work-group: d doubles.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#define D ${d}
#define WG ${wg}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void column_absmax(__global const real_t *restrict x, const long n, const long stride,
                   __global double *restrict part, const long rows_per_group)
{
    const long g = get_group_id(0);
    const long lo = g * rows_per_group, hi = min(n, lo + rows_per_group);
    for (int c = get_local_id(0); c < D; c += WG) {
        double most = 0;
        for (long i = lo; i < hi; ++i) {
            const double v = fabs((double)x[i * stride + c]);
            most = (v > most || isnan(v)) ? v : most;
        }
        part[g * D + c] = most;
    }
}
