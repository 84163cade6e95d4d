<%doc>
Per-cluster weighted sums from the labels (after lloyd_gemm_assign.cl.mako).
Reads spec: d, k, slice (clusters a work-group owns), acc_wg (work-items),
weighted.

Work-group g owns the clusters [slice * (g % slices), +slice) and the rows of
segment g / slices; its sums live in local memory, one work-item per
(cluster, dimension) cell, and each chunk of rows is compacted (a prefix sum
over "is mine") so members are added in row order.  No atomics: the sums do
not depend on scheduling, and segment partials are reduced in fixed order.
</%doc>
<%inherit file="prelude.cl.mako"/>
#define D ${d}
#define K ${k}
#define S ${slice}
#define WG ${acc_wg}
#define CELLS (S * (D + 1))     /* D sums and the weight of each cluster */
#define UNROLL 8                /* members whose values are loaded at once */
% if weighted:
#define WEIGHT(i) w[i]
% else:
#define WEIGHT(i) ((real_t)1)
% endif

inline void cell_add(__local acc_t *sum, __local acc_t *comp, const int e, const acc_t v)
{
#if ACC_DOUBLE
    sum[e] += v;
#else
    /* Kahan: long runs of float additions keep ~float64 accuracy */
    const float y = v - comp[e];
    const float t = sum[e] + y;
    comp[e] = (t - sum[e]) - y;
    sum[e] = t;
#endif
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void accumulate_sums(
    __global const real_t *restrict x, const long n, const long stride,
    __global const real_t *restrict w,
    __global const int *restrict labels,
    __global acc_t *restrict part_sums,       /* segments x K x D (x2 if Kahan) */
    __global acc_t *restrict part_weights,    /* segments x K (x2 if Kahan) */
    const long rows_per_segment, const int slices)
{
    const int lid = get_local_id(0);
    const int g = get_group_id(0), segments = get_num_groups(0) / slices;
    const int j0 = (g % slices) * S, seg = g / slices;
    const int owned = min(S, K - j0);
    __local acc_t sum[CELLS];
% if acc_double:
    __local acc_t *comp = 0;
% else:
    __local acc_t comp[CELLS];
% endif
    __local int scan[WG];
    __local int member_row[WG];
    __local int member_cluster[WG];
    for (int e = lid; e < CELLS; e += WG) {
        sum[e] = 0;
% if not acc_double:
        comp[e] = 0;
% endif
    }
    const long row0 = seg * rows_per_segment;
    const long row1 = min(n, row0 + rows_per_segment);
    for (long base = row0; base < row1; base += WG) {
        const long i = base + lid;
        const int j = i < row1 ? labels[i] - j0 : -1;
        const int mine = j >= 0 && j < owned;
        /* inclusive prefix sum of "mine": a member's place in row order */
        scan[lid] = mine;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int off = 1; off < WG; off <<= 1) {
            const int before = lid >= off ? scan[lid - off] : 0;
            barrier(CLK_LOCAL_MEM_FENCE);
            scan[lid] += before;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (mine) {
            member_row[scan[lid] - 1] = lid;
            member_cluster[scan[lid] - 1] = j;
        }
        const int members = scan[WG - 1];
        barrier(CLK_LOCAL_MEM_FENCE);
        /* UNROLL members' values are loaded before any is added: their loads
           overlap (one by one, each paid its full latency: H100, 1M x 32,
           k=256, 1.4 -> 0.5 ms); the adds to a cell stay in member (row) order */
        for (int m0 = 0; m0 < members; m0 += UNROLL) {
            const int count = min(UNROLL, members - m0);
            for (int c = lid; c <= D; c += WG) {
                acc_t v[UNROLL];
                #pragma unroll
                for (int u = 0; u < UNROLL; ++u) {   /* past the members: the last again */
                    const long r = base + member_row[m0 + min(u, count - 1)];
                    v[u] = c < D ? (acc_t)WEIGHT(r) * x[r * stride + c] : (acc_t)WEIGHT(r);
                }
                #pragma unroll
                for (int u = 0; u < UNROLL; ++u)
                    if (u < count)
                        cell_add(sum, comp, member_cluster[m0 + u] * (D + 1) + c, v[u]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);   /* before the next chunk's scan */
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < owned * (D + 1); e += WG) {
        const int jl = e / (D + 1), c = e % (D + 1);
        const long at = c < D ? ((long)seg * K + j0 + jl) * D + c : (long)seg * K + j0 + jl;
        __global acc_t *out = c < D ? part_sums : part_weights;
        out[at] = sum[e];
% if not acc_double:
        out[at + (long)segments * (c < D ? K * D : K)] = comp[e];
% endif
    }
}
