<%doc>
Squared Euclidean distances of sparse rows (CSR) to m dense centres (the n x m
matrix of transform and of k-means++'s candidates): |x|^2 + |c|^2 - 2 x.c
from the row's nonzeros, in acc_t, never below 0.  One work-item per
(row, centre).
Reads spec: nothing beyond the prelude's.
</%doc>
<%inherit file="/prelude.cl.mako"/>

__kernel void lloyd_csr_distances(
    __global const long *restrict indptr, __global const int *restrict indices,
    __global const real_t *restrict values, const long n,
    __global const acc_t *restrict row_norms,      /* n: |x|^2 */
    __global const real_t *restrict centers,       /* m x d, dense */
    __global const acc_t *restrict center_norms,   /* m: |c|^2 */
    const int m, const long d, __global acc_t *restrict out)
{
    const long i = get_global_id(0);
    const int j = get_global_id(1);
    if (i >= n || j >= m)
        return;
    acc_t dot = 0;
    for (long e = indptr[i]; e < indptr[i + 1]; ++e)
        dot += (acc_t)values[e] * (acc_t)centers[j * d + indices[e]];
    out[i * m + j] = max(row_norms[i] + center_norms[j] - 2 * dot, (acc_t)0);
}
