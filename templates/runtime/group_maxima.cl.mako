<%doc>
The largest value of each group of consecutive entries of a vector: which
groups can hold its largest values (runtime/group_maxima.py).  A maximum is
exact, so any order of the comparisons gives the same one.  A group of no
entry (none past n) gives -INFINITY.
Reads spec: wg.
Output per work-group: one real_t.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#define WG ${wg}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void group_maxima(__global const real_t *restrict values, const long n,
                  const long per_group, __global real_t *restrict most)
{
    __local real_t best[WG];
    const int t = get_local_id(0);
    const long g = get_group_id(0);
    const long lo = g * per_group, hi = min(n, lo + per_group);
    real_t b = -INFINITY;
    for (long i = lo + t; i < hi; i += WG)
        b = fmax(b, values[i]);
    best[t] = b;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (t < s)
            best[t] = fmax(best[t], best[t + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0)
        most[g] = best[0];
}
