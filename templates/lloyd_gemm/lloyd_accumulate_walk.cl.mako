<%doc>
Per-cluster weighted sums from the labels, for few cells: the outputs (and
kernel name) of lloyd_accumulate_sums.cl.mako, bit for bit.
Reads spec: d, k, slice (clusters a work-group owns), acc_wg (work-items),
rows_per_item (rows a chunk stages, per work-item), weighted.

Each work-item holds CPI (cluster, dimension) cells of its work-group's
slice in registers; the work-group stages a chunk of its segment's rows
(labels, values, weights) in local memory, coalesced, and every work-item
walks the chunk's rows in row order, adding a row to each of its cells
whose cluster is the row's.  Each cell adds its members in row order with
the list kernel's operations (a select keeps or drops each row's sum), so
the partials are its bits.  There is no member list, no prefix sum and no
chain of additions in local memory, which the list kernel waits on where a
segment's members make one cell's long chain (a small fit: few clusters,
hundreds of rows a segment).  Planned where the cells are at most
WALK_CELLS_PER_ITEM a work-item and a chunk fits the staging budget
(lloyd_gemm.sums_plan).
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
#define D ${d}
#define K ${k}
#define S ${slice}
#define WG ${acc_wg}
#define CHUNK ${acc_wg * rows_per_item}   /* rows staged at a time */
#define CELLS (S * (D + 1))     /* D sums and the weight of each cluster */
#define CPI ((CELLS + WG - 1) / WG)   /* cells a work-item holds */
#define UNROLL 8                /* rows whose labels and values are loaded at once */
% if weighted:
#define WEIGHT(r) ws[r]
% else:
#define WEIGHT(r) ((real_t)1)
% endif

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
    __local real_t xs[CHUNK * D];
    __local int ls[CHUNK];
% if weighted:
    __local real_t ws[CHUNK];
% endif
    int cj[CPI], cc[CPI];       /* my cells' cluster in the slice (-1: none) and column */
    acc_t sum[CPI];
% if not acc_double:
    acc_t comp[CPI];
% endif
    #pragma unroll
    for (int i = 0; i < CPI; ++i) {
        const int e = lid + i * WG;
        cj[i] = e < owned * (D + 1) ? e / (D + 1) : -1;
        cc[i] = e % (D + 1);
        sum[i] = 0;
% if not acc_double:
        comp[i] = 0;
% endif
    }
    const long row0 = seg * rows_per_segment;
    const long row1 = min(n, row0 + rows_per_segment);
    for (long base = row0; base < row1; base += CHUNK) {
        const int rows = (int)min((long)CHUNK, row1 - base);
        barrier(CLK_LOCAL_MEM_FENCE);   /* the previous chunk's walk is done */
        #pragma unroll 4
        for (int r = lid; r < rows; r += WG) {
            ls[r] = labels[base + r] - j0;
% if weighted:
            ws[r] = w[base + r];
% endif
        }
        #pragma unroll 4
        for (int e = lid; e < rows * D; e += WG)
            xs[e] = x[(base + e / D) * stride + e % D];
        barrier(CLK_LOCAL_MEM_FENCE);
        /* UNROLL rows' labels and values loaded before any is added (one by
           one, each row waited for its loads: 100+ cycles a row on an H200);
           past the chunk: its last row again, labelled K (no cell's); each
           cell's additions stay in row order, kept or not by a select (the
           same sum as a branch) */
        for (int r0 = 0; r0 < rows; r0 += UNROLL) {
            int j[UNROLL];
            acc_t v[UNROLL][CPI];
            #pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int r = min(r0 + u, rows - 1);
                j[u] = r0 + u < rows ? ls[r] : K;
                #pragma unroll
                for (int i = 0; i < CPI; ++i) {
                    const real_t xv = xs[r * D + min(cc[i], D - 1)];
                    v[u][i] = cc[i] < D ? (acc_t)WEIGHT(r) * xv : (acc_t)WEIGHT(r);
                }
            }
            #pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                #pragma unroll
                for (int i = 0; i < CPI; ++i) {
                    const int mine = j[u] == cj[i];
% if acc_double:
                    const acc_t added = sum[i] + v[u][i];
                    sum[i] = mine ? added : sum[i];
% else:
                    acc_t s = sum[i], c = comp[i];
${select.kahan_add("s", "c", "v[u][i]")}\
                    sum[i] = mine ? s : sum[i];
                    comp[i] = mine ? c : comp[i];
% endif
                }
            }
        }
    }
    #pragma unroll
    for (int i = 0; i < CPI; ++i) {
        if (cj[i] < 0)
            continue;
        const int c = cc[i];
        const long at = c < D ? ((long)seg * K + j0 + cj[i]) * D + c : (long)seg * K + j0 + cj[i];
        __global acc_t *out = c < D ? part_sums : part_weights;
        out[at] = sum[i];
% if not acc_double:
        out[at + (long)segments * (c < D ? K * D : K)] = comp[i];
% endif
    }
}
