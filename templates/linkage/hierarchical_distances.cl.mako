<%doc>
The condensed pairwise distance matrix of the observations, as scipy's pdist
lays it out: entry (i, j), i < j, at n*i - i*(i+1)/2 + (j - i - 1).
Reads spec: d, metric (euclidean, sqeuclidean, cityblock, chebyshev, cosine),
buffers, buffer_elems (the matrix across buffers: condensed.cl.mako), tiled; with tiled also dp (d padded to kc) and the register tile's fields
that distance_tile.cl.mako reads (tm == tn, rm, rn, kc, vw).

tiled: a work-group per square tile of TM rows i by TN rows j, only the
B(B+1)/2 tiles on or above the diagonal (B tiles a side) launched; each
stages KC features of both row sets in local memory and accumulates its
rm x rn pairs in registers (distance_tile.cl.mako: FORM sqdiff_nofma for
(sq)euclidean, cityblock, chebyshev).  The register tile walks the features
in order and the zero padding adds exact zeros, so every pair's sum is
pdist's loop's.  Cosine (two-lane dot products, below) and the fallback
for devices the tiles do not fit: one work-item per pair on a 2-D grid;
pairs on or below the diagonal return at once.

Sums run over the features in order, as pdist's loops do, so integer-valued
data gives the same exact distances (ties stay ties).  A non-finite
distance (cosine of a zero vector) raises a flag: scipy refuses such a
matrix.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="tile" file="/distance_tile/distance_tile.cl.mako"/>
<%namespace name="cm" file="/linkage/condensed.cl.mako"/>
/* pdist rounds every product and sum: no fused multiply-adds */
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
${cm.accessor(False)}
% if tiled:
${tile.defines(c_pad=True)}\
#define DP ${dp}
/* element e of a chunk of rows row0.. at depth kc: zero outside the data */
#define X_AT(row0, e, kc) (((row0) + (e) / KC < n && (kc) + (e) % KC < D) ? \
                           x[((row0) + (e) / KC) * D + (kc) + (e) % KC] : (real_t)0)
/* tiles before tile row b of the upper triangle (row b holds B - b tiles) */
#define BEFORE(b) ((b) * B - (b) * ((b) - 1) / 2)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void condensed_distances(__global const real_t *restrict x, const long n,
                         ${cm.params(False)},
                         __global int *restrict not_finite)
{
    const int lid = get_local_id(0);
    const int tx = lid % NX, ty = lid / NX;
    const long B = (n + TM - 1) / TM, g = get_group_id(0);
    /* the tile (bi, bj), bi <= bj, of group g: the root of BEFORE(b) = g,
       then exact integer steps over its rounding */
    const float b2 = 2 * B + 1;
    long bi = (long)((b2 - sqrt(b2 * b2 - 8.0f * g)) / 2);
    bi = clamp(bi, 0L, B - 1);
    while (bi > 0 && BEFORE(bi) > g)
        --bi;
    while (bi + 1 < B && BEFORE(bi + 1) <= g)
        ++bi;
    const long i0 = bi * TM, j0 = (bi + g - BEFORE(bi)) * TN;
${tile.local_chunks()}\
${tile.accumulators("    ")}\
    for (int kc = 0; kc < DP; kc += KC) {
        barrier(CLK_LOCAL_MEM_FENCE);          /* the last chunk's readers are done */
${tile.stage_transposed("lx", "TMP", "TM", "X_AT(i0, e, kc)")}\
${tile.stage_transposed("lc", "TNP", "TN", "X_AT(j0, e, kc)")}\
        barrier(CLK_LOCAL_MEM_FENCE);
<%  form = {"cityblock": "cityblock", "chebyshev": "chebyshev"}.get(metric, "sqdiff_nofma") %>\
${tile.multiply(form)}\
    }
    int bad = 0;
% for r in range(rm):
    {
        const long i = i0 + ${tile.row(r)};
  % for q in range(rn):
        {
            const long j = j0 + ${tile.col(q)};
            if (i < j && j < n) {
    % if metric == "euclidean":
                const real_t dist = sqrt(acc_${r}_${q});
    % else:
                const real_t dist = acc_${r}_${q};
    % endif
                bad |= !isfinite(dist);
                DIST(n * i - i * (i + 1) / 2 + (j - i - 1)) = dist;
            }
        }
  % endfor
    }
% endfor
    if (bad)
        atomic_or(not_finite, 1);
}
% else:

__kernel void condensed_distances(__global const real_t *restrict x, const long n,
                                  ${cm.params(False)},
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
    DIST(n * i - i * (i + 1) / 2 + (j - i - 1)) = dist;
}
% endif
