<%doc>
One round of ward's reciprocal-nearest-neighbour merging on the rows: each
queried cluster's nearest active cluster by the ward value
v(i, j) = |c_i - c_j|^2 * (n_i n_j) / (n_i + n_j) (the merge height is
sqrt(2 v)), computed from the centroids and sizes, never stored.
Reads spec: d, wg, tb (clusters a tile, staged in local memory).

The active clusters come compacted in the host's spatial order (c[p] is
cluster ids[p]: a k-d tree's leaf order of the rows, a merged cluster at its
higher-indexed part's place), in tiles of tb with their bounding boxes
(box_lo, box_hi) and least size (box_n).  A work-item per queried place
q[t] (ascending: neighbouring clusters share a work-group); the group walks
the tiles outward from its first query's tile.  A work-item skips a tile
whose lower bound (the box's squared gap times n_i m / (n_i + m), m the
tile's least size: the size factor grows with the other size; rounded
operations are monotone, a margin of 8 ulps covers the factor's rounding)
exceeds its best so far; a tile is staged where any work-item needs it.

Candidates compare by (v, ids[j]) (ties to the lower cluster index), the
sum of squared differences in feature order with no fused multiply-add,
the size factor (n_i n_j exact in the value type for the sizes here) then
divided: v(i, j) = v(j, i) bit for bit.  hint[t] (a place, -1: none) is
taken first, so the walk starts from a good bound.  Out, by query t: out_v
its least v, out_j its place, out_tie 1 where another cluster has exactly
that v (the host then runs scipy's chain instead: reciprocal pairs merged
at once give scipy's tree only where nearest neighbours are strict).
</%doc>
<%inherit file="/prelude.cl.mako"/>
/* the host's merge heights round as this: no fused multiply-adds */
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define WG ${wg}
#define TB ${tb}
#define EPS ${"DBL_EPSILON" if real_t == "double" else "FLT_EPSILON"}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ward_round(__global const real_t *restrict c, __global const real_t *restrict sizes,
                __global const int *restrict ids, const int m,
                __global const int *restrict q, __global const int *restrict hint,
                const int m_q,
                __global const real_t *restrict box_lo, __global const real_t *restrict box_hi,
                __global const real_t *restrict box_n,
                __global real_t *restrict out_v, __global int *restrict out_j,
                __global int *restrict out_tie)
{
    const int t = get_global_id(0);
    const int lid = get_local_id(0);
    const int live = t < m_q;
    const int i = live ? q[t] : 0;
    const real_t ni = sizes[i];
    real_t u[D];
    for (int k = 0; k < D; ++k)
        u[k] = c[(long)i * D + k];
    real_t best = INFINITY;
    int bj = -1, bid = 0x7fffffff, tie = 0;
    const int h = live ? hint[t] : -1;
    if (h >= 0) {
        real_t s = 0;
        for (int k = 0; k < D; ++k) {
            const real_t diff = u[k] - c[(long)h * D + k];
            s += diff * diff;
        }
        const real_t nj = sizes[h];
        best = s * (ni * nj) / (ni + nj);
        bj = h;
        bid = ids[h];
    }
    __local real_t lc[TB * D];
    __local real_t ln[TB];
    __local int lid_[TB];
    __local int need;
    const int tiles = (m + TB - 1) / TB;
    const int t0 = q[min((int)get_group_id(0) * WG, m_q - 1)] / TB;
    const int near = min(t0, tiles - 1 - t0);
    for (int s = 0; s < tiles; ++s) {
        const int tile = s <= 2 * near ? ((s & 1) ? t0 - (s + 1) / 2 : t0 + s / 2)
                                       : (t0 > near ? t0 - (s - near) : t0 + (s - near));
        barrier(CLK_LOCAL_MEM_FENCE);      /* the last tile's readers are done */
        if (lid == 0)
            need = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        int mine = live;
        if (mine) {
            __global const real_t *lo = box_lo + (long)tile * D;
            __global const real_t *hi = box_hi + (long)tile * D;
            real_t lb = 0;
            for (int k = 0; k < D; ++k) {
                real_t g = lo[k] - u[k];
                const real_t g2 = u[k] - hi[k];
                g = g2 > g ? g2 : g;
                g = g > 0 ? g : 0;
                lb += g * g;
            }
            const real_t mn = box_n[tile];
            lb = lb * (ni * mn) / (ni + mn);
            mine = !(lb * (1 - 8 * EPS) > best);
        }
        if (mine)
            need = 1;
        barrier(CLK_LOCAL_MEM_FENCE);
        /* every iteration meets the same barriers: a tile no one needs
           stages and scans no rows */
        const int j0 = tile * TB;
        const int cnt = need ? min(TB, m - j0) : 0;
        for (int e = lid; e < cnt * D; e += WG)
            lc[e] = c[(long)j0 * D + e];
        for (int e = lid; e < cnt; e += WG) {
            ln[e] = sizes[j0 + e];
            lid_[e] = ids[j0 + e];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int jj = 0; mine && jj < cnt; ++jj) {
            const int j = j0 + jj;
            if (j == i || j == h)
                continue;
            real_t s2 = 0;
            for (int k = 0; k < D; ++k) {
                const real_t diff = u[k] - lc[jj * D + k];
                s2 += diff * diff;
            }
            const real_t nj = ln[jj];
            const real_t v = s2 * (ni * nj) / (ni + nj);
            const int jid = lid_[jj];
            if (v < best) {
                best = v;
                bj = j;
                bid = jid;
                tie = 0;
            } else if (v == best) {
                tie = 1;
                if (jid < bid) {
                    bj = j;
                    bid = jid;
                }
            }
        }
    }
    if (live) {
        out_v[t] = best;
        out_j[t] = bj;
        out_tie[t] = tie;
    }
}
