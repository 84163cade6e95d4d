<%doc>
Rows per label: counts[labels[i]] += 1 for i < n (integer atomics: exact, in
any order).  Reads spec: nothing of its own.
</%doc>
<%inherit file="/prelude.cl.mako"/>

__kernel void count_labels(__global const int *restrict labels, const long n,
                           volatile __global int *counts)
{
    const long i = get_global_id(0);
    if (i < n)
        atomic_inc(&counts[labels[i]]);
}
