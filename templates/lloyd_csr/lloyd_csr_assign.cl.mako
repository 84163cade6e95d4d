<%doc>
The Lloyd assignment of sparse rows (CSR: indptr, indices, data) to dense
centres: each work-item scores one row against every centre, CT centres at a
time, from the row's nonzeros only: score = |c|^2 - 2 x.c in acc_t, the
first of equal scores wins (numpy's argmin); the row's squared distance to
its centre is |x|^2 + |c|^2 - 2 x.c, never below 0.
Reads spec: ct (centres scored per walk over a row's nonzeros).
</%doc>
<%inherit file="/prelude.cl.mako"/>
#define CT ${ct}

__kernel void lloyd_csr_assign(
    __global const long *restrict indptr, __global const int *restrict indices,
    __global const real_t *restrict values, const long n,
    __global const acc_t *restrict row_norms,      /* n: |x|^2 */
    __global const real_t *restrict centers,       /* k x d, dense */
    __global const acc_t *restrict center_norms,   /* k: |c|^2 */
    const int k, const long d,
    __global int *restrict labels, __global acc_t *restrict min_dist)
{
    const long i = get_global_id(0);
    if (i >= n)
        return;
    const long lo = indptr[i], hi = indptr[i + 1];
    acc_t best = INFINITY, best_dot = 0;
    int best_j = 0;
    for (int j0 = 0; j0 < k; j0 += CT) {
        acc_t dot[CT];
        for (int q = 0; q < CT; ++q)
            dot[q] = 0;
        for (long e = lo; e < hi; ++e) {
            const acc_t v = values[e];
            const long col = indices[e];
            for (int q = 0; q < CT; ++q)
                if (j0 + q < k)
                    dot[q] += v * (acc_t)centers[(j0 + q) * d + col];
        }
        for (int q = 0; q < CT && j0 + q < k; ++q) {
            const acc_t score = center_norms[j0 + q] - 2 * dot[q];
            if (score < best) {
                best = score;
                best_j = j0 + q;
                best_dot = dot[q];
            }
        }
    }
    labels[i] = best_j;
    min_dist[i] = max(row_norms[i] + center_norms[best_j] - 2 * best_dot, (acc_t)0);
}
