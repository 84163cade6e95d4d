<%doc>
The own half of the tensor-core diagonal M step (gmm_mma_mstep.cl.mako
sums the other half): per component j, over the rows it owns (o_i = j, the
E step's label),
  N_j = sum r_ij,  sum r_ij x''_i,  sum r_ij x''_i^2   (x'' = x - mu_j),
mu_j the current mean in float32 (gmm_mma.means_of).  A row has one own
component, so these are n x d products, not a GEMM: plain OpenCL on every
device, float32 differences x'' (as the GEMM kernel's shifted rows) and
their products with the responsibility and the sums in double.
Reads spec: d, dp (d padded to 8; the means' row stride), wg (work-items),
batch (rows a work-item marks a scan step), groups (of wg / groups
work-items, at least d: a column each), cb (components a work-group, at
most 65536), precision (not "float32": the responsibilities rounded to
TF32 first, as the GEMM kernel's).

A work-group owns one chunk of rows (slab) and one block of cb components
(group id = chunk * blocks + block, as the GEMM kernel's).  It scans the
chunk wg * batch rows a step: each work-item reads its batch rows' owners
(all in flight at once) and marks those the block owns (bits of local mask
words, their components beside them), then every work-item walks the
marked rows in row order, U a round (their reads in flight together): the
walk is the same for every work-item (the same words, read from local
memory), so it takes no list and no prefix sums, and a block owns few
rows: a step of many keeps the scan's barriers and its dependent reads
few.  Work-item c adds row i's column c into the block's local sums of its
own component (work-item 0 its N).  Where d is small the work-items form
several groups, each with sums of its own, which take the rounds in turn;
the groups' sums are added in group order at the end: each sum in an order
fixed by the rows alone, whatever the device.  The responsibility is
normalised as the GEMM kernel's (the same expression: a row's two halves
are one value).
Output: slab x k x SZ doubles (SZ = 2 + 4 d), the own entries (N own,
own sum r x'', own sum r x''^2) of every slab and component, no atomics on
global memory, for reduce_partials.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%
    words = wg * batch // 32
    U = 8
%>
#define D ${d}
#define DP ${dp}
#define WG ${wg}
#define CB ${cb}
#define P ${groups}
#define COLS (WG / P)                        /* work-items a group: columns */
#define WORDS ${words}
#define BATCH (WG * ${batch})                /* rows a scan step */
#define SZ (2 + 4 * D)
% if precision != "float32":
<%include file="/tf32_split.cl"/>
% endif

/* row r's responsibility for its component j (a normalised value, or a
   log-density normalised by its row's lse where normalize) */
inline float own_resp(__global const float *restrict resp, __global const float *restrict lse,
                      const int normalize, const long n, const int j, const long r)
{
    const float a = resp[(long)j * n + r];
    const float l = normalize ? lse[r] : NAN;
    const float v = isnan(l) ? a : exp(a - l);
% if precision != "float32":
    return as_float(tf32_bits(v));
% else:
    return v;
% endif
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gmm_own(__global const float *restrict x, const long n, const long stride,
             __global const float *restrict resp,     /* k x n */
             __global const float *restrict lse,      /* n (normalize) */
             const int normalize,
             __global const float *restrict means,    /* k x DP, zero past D */
             __global const int *restrict own,        /* n: each row's own component */
             const int k,
             const long rows_per_chunk,
             __global double *restrict part)          /* slabs x k x SZ */
{
    const int lid = get_local_id(0);
    const int blocks = (k + CB - 1) / CB;
    const long g = get_group_id(0);
    const int j0 = (int)(g % blocks) * CB;       /* the block's first component */
    const int jn = min(CB, k - j0);
    const long chunk = g / blocks;
    const long lo = chunk * rows_per_chunk, hi = min(n, lo + rows_per_chunk);
    /* each group's sums: s1[group][component][column], s2 alike, nn[group][component] */
    __local double s1[P * CB * DP], s2[P * CB * DP], nn[P * CB];
    __local uint hits[WORDS];
    __local ushort comp[BATCH];                  /* a marked row's component - j0 */
    for (int e = lid; e < P * CB * DP; e += WG)
        s1[e] = s2[e] = 0;
    for (int e = lid; e < P * CB; e += WG)
        nn[e] = 0;
    const int grp = lid / COLS, col = lid % COLS;
    const int c = min(col, D - 1);               /* this work-item's column (past D: unused) */
    __local double *g1 = s1 + grp * CB * DP, *g2 = s2 + grp * CB * DP, *gn = nn + grp * CB;
    for (long start = lo; start < hi; start += BATCH) {
        barrier(CLK_LOCAL_MEM_FENCE);            /* the last step's walkers are done */
        for (int v = lid; v < WORDS; v += WG)
            hits[v] = 0;
        /* work-item lid's rows: lid + t WG (consecutive work-items, consecutive rows) */
% for t in range(batch):
        const int o_${t} = start + lid + ${t * wg} < hi ? own[start + lid + ${t * wg}] - j0 : -1;
% endfor
        barrier(CLK_LOCAL_MEM_FENCE);
% for t in range(batch):
        if (o_${t} >= 0 && o_${t} < jn) {
            atomic_or(hits + ${t * wg // 32} + lid / 32, 1u << (lid % 32));
            comp[lid + ${t * wg}] = (ushort)o_${t};
        }
% endfor
        barrier(CLK_LOCAL_MEM_FENCE);
        /* the marked rows in row order, U a round (round q: group q % P's) */
        int v = 0;
        uint w = hits[0];
        for (int q = 0; ; ++q) {
% for u in range(U):
            while (w == 0u && ++v < WORDS)
                w = hits[v];
            const int b_${u} = v < WORDS ? v * 32 + 31 - (int)clz(w & (0u - w)) : -1;
            w &= w - 1u;
% endfor
            if (b_0 < 0)
                break;
            if (q % P != grp)
                continue;
% for u in range(U):
            const long r_${u} = b_${u} >= 0 ? start + b_${u} : -1;
            const int j_${u} = b_${u} >= 0 ? j0 + comp[b_${u}] : j0;
            const float wt_${u} = r_${u} >= 0 ? own_resp(resp, lse, normalize, n, j_${u}, r_${u}) : 0.0f;
            const float v_${u} = r_${u} >= 0 ? x[r_${u} * stride + c] - means[(long)j_${u} * DP + c] : 0.0f;
% endfor
% for u in range(U):
            if (r_${u} >= 0) {
                const int jj = j_${u} - j0;
                if (col < D) {
                    const double wv = (double)wt_${u} * (double)v_${u};
                    g1[jj * DP + col] += wv;
                    g2[jj * DP + col] += wv * (double)v_${u};
                }
                if (col == 0)
                    gn[jj] += wt_${u};
            }
% endfor
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* the groups' sums added in group order */
    for (int e = lid; e < jn * (1 + 2 * D); e += WG) {
        const int jj = e / (1 + 2 * D), q = e % (1 + 2 * D);
        __global double *out = part + (chunk * k + j0 + jj) * SZ;
        __local const double *from = q == 0 ? nn + jj : q <= D ? s1 + jj * DP + q - 1
                                                              : s2 + jj * DP + q - 1 - D;
        const int step = q == 0 ? CB : CB * DP;
        double total = from[0];
        for (int h = 1; h < P; ++h)
            total += from[h * step];
        out[q == 0 ? 1 : 2 + 2 * D + q - 1] = total;
    }
}
