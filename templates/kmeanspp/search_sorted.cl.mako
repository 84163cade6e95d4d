<%doc>
numpy.searchsorted(a, v, side="left") for a few values, clipped to n - 1.
Reads spec: acc_double (type of a and v).
</%doc>
<%inherit file="/prelude.cl.mako"/>

__kernel void search_sorted(__global const acc_t *restrict a, const long n,
                            __global const acc_t *restrict v, const int count,
                            __global int *restrict out)
{
    const int t = get_global_id(0);
    if (t >= count)
        return;
    long lo = 0, hi = n;
    while (lo < hi) {
        const long mid = lo + (hi - lo) / 2;
        if (a[mid] < v[t])
            lo = mid + 1;
        else
            hi = mid;
    }
    out[t] = (int)min(lo, n - 1);
}
