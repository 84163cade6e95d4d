<%doc>
Per-cluster weighted sums from the labels (after lloyd_gemm_assign.cl.mako).
Reads spec: d, k, slice (clusters a work-group owns), acc_wg (work-items),
rows_per_item, weighted; and slice_bits, scan_steps (AccumulateSpec's
template_args).

Work-group g owns the clusters [slice * (g % slices), +slice) and the rows of
segment g / slices; its sums live in local memory, one work-item per
(cluster, dimension) cell.  It walks its segment a chunk of acc_wg x
rows_per_item rows at a time, each work-item reading rows_per_item
consecutive labels: one prefix sum over the work-items' member counts (not
one per acc_wg rows: every label is read by each of the slices' groups, and
the scans' barriers were the kernel's cost) gives each its first place in a
member list in row order, so members are added in row order.  No atomics:
the sums do not depend on scheduling or on rows_per_item (bit for bit), and
segment partials are reduced in fixed order.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
#define D ${d}
#define K ${k}
#define S ${slice}
#define WG ${acc_wg}
#define R ${rows_per_item}
#define CHUNK (WG * R)          /* rows a work-group takes at a time */
#define LIST (2 * WG)           /* member list entries (more members: passes) */
#define SCAN_STEPS ${scan_steps}
#define SLICE_BITS ${slice_bits}  /* a member is (row in chunk) << SLICE_BITS | cluster */
#define CELLS (S * (D + 1))     /* D sums and the weight of each cluster */
#define UNROLL 8                /* members whose values are loaded at once */
#define VEC ${4 if rows_per_item % 4 == 0 else 1}  /* labels per load */
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
${select.kahan_add("sum[e]", "comp[e]", "v")}\
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
    /* [0, 2 WG): the member list; the scan's two buffers are [WG, 2 WG) and
       [2 WG, 3 WG), the last one holding the result (read while the list is
       written) */
    __local int ints[3 * WG];
    __local int *list = ints;
    for (int e = lid; e < CELLS; e += WG) {
        sum[e] = 0;
% if not acc_double:
        comp[e] = 0;
% endif
    }
    const long row0 = seg * rows_per_segment;
    const long row1 = min(n, row0 + rows_per_segment);
    /* chunks start at a multiple of VEC (labels are read VEC at a time);
       rows before row0 are the previous segment's: not taken */
    for (long base = row0 - row0 % VEC; base < row1; base += CHUNK) {
        const long first = base + (long)lid * R;
        int mine[R];            /* each of my rows' cluster in the slice, or -1 */
        int count = 0;
#if VEC == 4
        if (first + R <= n) {   /* aligned: base and R are multiples of 4 */
            #pragma unroll
            for (int v = 0; v < R / 4; ++v) {
                const int4 l = ((__global const int4 *)labels)[first / 4 + v];
                mine[4 * v] = l.s0 - j0;
                mine[4 * v + 1] = l.s1 - j0;
                mine[4 * v + 2] = l.s2 - j0;
                mine[4 * v + 3] = l.s3 - j0;
            }
        } else
#endif
        {
            #pragma unroll
            for (int r = 0; r < R; ++r)
                mine[r] = first + r < n ? labels[first + r] - j0 : -1;
        }
        #pragma unroll
        for (int r = 0; r < R; ++r) {
            const long i = first + r;
            const int j = mine[r];
            const int is_mine = i >= row0 && i < row1 && j >= 0 && j < owned;
            mine[r] = is_mine ? j : -1;
            count += is_mine;
        }
        /* inclusive prefix sum of the counts (Hillis-Steele, two buffers: one
           barrier a step), ending in [2 WG, 3 WG) */
        __local int *scan = ints + (SCAN_STEPS % 2 ? WG : 2 * WG);
        __local int *next = ints + (SCAN_STEPS % 2 ? 2 * WG : WG);
        scan[lid] = count;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int off = 1; off < WG; off <<= 1) {
            next[lid] = scan[lid] + (lid >= off ? scan[lid - off] : 0);
            barrier(CLK_LOCAL_MEM_FENCE);
            __local int *done = scan;
            scan = next;
            next = done;
        }
        const int members = scan[WG - 1];
        const int my_first = scan[lid] - count;   /* my first member's place */
        if (members == 0)       /* no pass below: the next chunk's scan must wait */
            barrier(CLK_LOCAL_MEM_FENCE);
        /* members beyond LIST: in passes of LIST, each item writing those of its
           members whose places fall in the pass */
        for (int m_pass = 0; m_pass < members; m_pass += LIST) {
            if (count && my_first < m_pass + LIST && my_first + count > m_pass) {
                int at = my_first - m_pass;
                #pragma unroll
                for (int r = 0; r < R; ++r) {
                    if (mine[r] >= 0) {
                        if (at >= 0 && at < LIST)
                            list[at] = (lid * R + r) << SLICE_BITS | mine[r];
                        ++at;
                    }
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            const int listed = min(LIST, members - m_pass);
            /* UNROLL members' values are loaded before any is added: their loads
               overlap (one by one, each paid its full latency: the sums took
               several times as long on a GPU); the adds to a cell stay in member (row) order */
            for (int m0 = 0; m0 < listed; m0 += UNROLL) {
                const int batch = min(UNROLL, listed - m0);
                for (int c = lid; c <= D; c += WG) {
                    acc_t v[UNROLL];
                    #pragma unroll
                    for (int u = 0; u < UNROLL; ++u) {   /* past the members: the last again */
                        const long r = base + (list[m0 + min(u, batch - 1)] >> SLICE_BITS);
                        v[u] = c < D ? (acc_t)WEIGHT(r) * x[r * stride + c] : (acc_t)WEIGHT(r);
                    }
                    #pragma unroll
                    for (int u = 0; u < UNROLL; ++u)
                        if (u < batch)
                            cell_add(sum, comp,
                                     (list[m0 + u] & ((1 << SLICE_BITS) - 1)) * (D + 1) + c,
                                     v[u]);
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);   /* before the list or the scan is reused */
        }
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
