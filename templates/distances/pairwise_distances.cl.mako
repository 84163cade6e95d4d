<%doc>
Euclidean distances of every row to every centre (the n x k transform output).
Reads spec: d.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#define D ${d}

__kernel void pairwise_euclidean(__global const real_t *restrict x, const long n,
                                 const long stride, __global const real_t *restrict centers,
                                 const int k, __global real_t *restrict out)
{
    const long i = get_global_id(0);
    const int j = get_global_id(1);
    if (i >= n || j >= k)
        return;
    real_t s = 0;
    for (int c = 0; c < D; ++c) {
        const real_t diff = x[i * stride + c] - centers[j * D + c];
        s = fma(diff, diff, s);
    }
    out[i * k + j] = sqrt(s);
}
