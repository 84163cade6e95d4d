<%doc>
The entries of chosen groups of consecutive entries of a vector, with their
labels, gathered in one place for one read (runtime/group_maxima.py): entry
j of the i-th chosen group at i * per_group + j; past n, -INFINITY and -1.
Reads spec: nothing of its own.
</%doc>
<%inherit file="/prelude.cl.mako"/>

__kernel void group_entries(__global const real_t *restrict values,
                            __global const int *restrict labels, const long n,
                            const long per_group, __global const int *restrict groups,
                            const long count, __global real_t *restrict got_values,
                            __global int *restrict got_labels)
{
    const long i = get_global_id(0);
    if (i >= count * per_group)
        return;
    const long row = groups[i / per_group] * per_group + i % per_group;
    got_values[i] = row < n ? values[row] : -INFINITY;
    got_labels[i] = row < n ? labels[row] : -1;
}
