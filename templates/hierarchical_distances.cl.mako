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
/* pdist rounds every product and sum: no fused multiply-adds */
#pragma OPENCL FP_CONTRACT OFF
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
    /* pdist's dot products run two lanes (even, odd features), then the
       odd feature out: the same order gives the same rounding */
    real_t uv0 = 0, uv1 = 0, uu0 = 0, uu1 = 0, vv0 = 0, vv1 = 0;
    for (int c = 0; c + 1 < D; c += 2) {
        uv0 += u[c] * v[c];
        uv1 += u[c + 1] * v[c + 1];
        uu0 += u[c] * u[c];
        uu1 += u[c + 1] * u[c + 1];
        vv0 += v[c] * v[c];
        vv1 += v[c + 1] * v[c + 1];
    }
    real_t uv = uv0 + uv1, uu = uu0 + uu1, vv = vv0 + vv1;
%   if d % 2:
    uv += u[D - 1] * v[D - 1];
    uu += u[D - 1] * u[D - 1];
    vv += v[D - 1] * v[D - 1];
%   endif
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
