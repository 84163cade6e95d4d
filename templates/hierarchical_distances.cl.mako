<%doc>
The condensed pairwise distance matrix of the observations, as scipy's pdist
lays it out: entry (i, j), i < j, at n*i - i*(i+1)/2 + (j - i - 1).
Reads spec: d, metric (euclidean, sqeuclidean, cityblock, chebyshev, cosine).
One work-item per pair on a 2-D grid; pairs on or below the diagonal return
at once (a tile of them costs only its scheduling).  Sums run over the
features in order, as pdist's loops do, so integer-valued data gives the
same exact distances (ties stay ties).  A non-finite distance (cosine of a
zero vector) raises a flag: scipy refuses such a matrix.
</%doc>
<%inherit file="prelude.cl.mako"/>
#define D ${d}

__kernel void condensed_distances(__global const real_t *restrict x, const long n,
                                  __global real_t *restrict out,
                                  __global int *restrict not_finite)
{
    const long i = get_global_id(1);
    const long j = get_global_id(0);
    if (i >= n || j >= n || j <= i)
        return;
    __global const real_t *u = x + i * D;
    __global const real_t *v = x + j * D;
% if metric == "cosine":
    real_t uv = 0, uu = 0, vv = 0;
    for (int c = 0; c < D; ++c) {
        uv += u[c] * v[c];
        uu += u[c] * u[c];
        vv += v[c] * v[c];
    }
    real_t dist = 1 - uv / (sqrt(uu) * sqrt(vv));
    /* pdist clips rounding to [0, 2]; a zero vector's NaN stays NaN */
    dist = dist < 0 ? 0 : (dist > 2 ? 2 : dist);
% elif metric == "chebyshev":
    real_t dist = 0;
    for (int c = 0; c < D; ++c)
        dist = fmax(dist, fabs(u[c] - v[c]));
% elif metric == "cityblock":
    real_t dist = 0;
    for (int c = 0; c < D; ++c)
        dist += fabs(u[c] - v[c]);
% else:
    real_t dist = 0;
    for (int c = 0; c < D; ++c) {
        const real_t diff = u[c] - v[c];
        dist += diff * diff;
    }
%   if metric == "euclidean":
    dist = sqrt(dist);
%   endif
% endif
    if (!isfinite(dist))
        atomic_or(not_finite, 1);
    out[n * i - i * (i + 1) / 2 + (j - i - 1)] = dist;
}
