<%doc>
Fuzzy c-means labels on the device: each row's largest membership in u
(n x c, row-major, as cmeans_pass writes it with write_u), the first of
equals -- numpy's argmax, NaN counting as the largest -- so labels_ comes
back as n integers without the n x c memberships.  Reads spec: wg.
A work-item per row.
</%doc>
<%inherit file="/prelude.cl.mako"/>

__kernel __attribute__((reqd_work_group_size(${wg}, 1, 1)))
void cmeans_labels(__global const real_t *restrict u, const long n, const int c,
                   __global int *restrict labels)
{
    const long i = get_global_id(0);
    if (i >= n)
        return;
    __global const real_t *row = u + i * c;
    real_t best = row[0];
    int label = 0;
    for (int j = 1; j < c && !isnan(best); ++j) {
        const real_t v = row[j];
        if (v > best || isnan(v)) {
            best = v;
            label = j;
        }
    }
    labels[i] = label;
}
