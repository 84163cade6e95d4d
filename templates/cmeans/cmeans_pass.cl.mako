<%doc>
The fused fuzzy c-means pass (Bezdek's iteration in the O(N*D*C) form of
eq. 3): for a tile of P rows, the squared distances of every row to every
centre, once; s_i once per row; the memberships u_ij once per (row, centre);
then, with ``update``, the partial numerators sum_i w_i u_ij^m x_i and
denominators sum_i w_i u_ij^m of eq. 2 (no n x c matrix anywhere), or, with
``write_u``, the memberships written out as n x C rows.  Every mode returns
the objective J_m = sum_i w_i sum_j u_ij^m d_ij^2 of the pass's centres.
Work-group g takes rows g * block_rows onwards, tiles_per_group tiles of
them at most: persistent groups (block_rows = tiles_per_group * P), or one
fixed block of rows each (runtime/exact_sums.py's split-free sums: a
group's partials are its block's, whatever device or chunk holds it).

Reads spec: d, c, wg, p (rows per tile; wg / p work-items share a row, each
scoring every (wg/p)-th centre), xs, ps (odd strides of the tile's rows and
of its memberships, centre-major unless row_major, in local memory: no bank
conflicts), stage_centers (centres in local memory, cchunk at a time;
cchunk == c: staged once), cchunk, local_u (tile memberships in local
memory, else in a per-group global scratch slab), stage_point (a row in
private memory while it is scored), kb, kw (the statistics of a centre, d
sums and the denominator, in kb blocks of kw columns: a work-item owns
"slots" (centre, block), consecutive work-items consecutive centres), qs
(slots per work-item), acc_private (each work-item keeps its qs * kw
statistics in registers across tiles, else in the group's global slab),
update, write_u, weighted, m_two (m == 2: no pow), row_major (CPUs, a row
per work-item: tile memberships row-major, ps = odd(c), and work-item lid
owns the centres lid + t * wg of every column block, so the statistics
loop reads memberships of consecutive centres and one column for all:
vector loads where the compiler vectorises across work-items), tiled (the
distances of a tile's P rows to all centres as register tiles of
distance_tile.cl.mako, FORM sqdiff: tm = P rows by tn centres per step, rm x
rn per work-item, kc features per local chunk, vw-wide local reads; the
centres are staged chunk by chunk there, so stage_centers and stage_point
are off).

Numerics.  Distances are sums of squared differences (no ||x||^2 - 2x.c +
||c||^2 cancellation), so a row that coincides with a centre has distance
exactly 0; tiled or not, each is the fused in-order sum over the features
(the tile's zero padding adds exact zeros), so both give the same bits.  Memberships are computed from ratios to the row's smallest
distance dmin: u_ij = (dmin/d_ij)^(1/(m-1)) / s_i with s_i = sum_k
(dmin/d_ik)^(1/(m-1)), equal to eq. 3 but every term in [0, 1] and s_i in
[1, C] (no overflow of d^(-2/(m-1)) for m near 1, no division by zero).
When dmin == 0 the row coincides with one or more centres: those get
membership 1/(their number), the others 0.  The row's objective term is
then sum_j u_ij^m d_ij = dmin * s_i^(1-m) (0 when it coincides).
Statistics: per tile a P-term sum in real_t (fixed order), added to
acc_t accumulators (double, or Kahan-compensated float without fp64); every
statistic has one owner work-item, so there are no atomics and the sums do
not depend on scheduling.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
<%namespace name="tile" file="/distance_tile/distance_tile.cl.mako"/>
#define D ${d}
#define C ${c}
#define DA (D + 1)                  /* a row and a constant 1 (the denominator) */
#define S (C * DA)                  /* statistics of a group */
#define WG ${wg}
#define P ${p}
#define G (WG / P)                  /* work-items per row */
#define XS ${xs}                    /* >= KB * KW */
#define PS ${ps}
#define CCH ${cchunk}
#define KB ${kb}
#define KW ${kw}
#define SLOTS (C * KB)
#define QS ${qs}                    /* slots per work-item */
#define QA (QS * KW)                /* accumulators per work-item */
% if row_major:
#define DT(row, j) dt[(row) * PS + (j)]
#define DT_SIZE (P * PS)
#define JT ((C + WG - 1) / WG)
#define SLOT_J(q) (lid + ((q) % JT) * WG)
#define SLOT_K0(q) (((q) / JT) * KW)
#define SLOT_OK(q) (SLOT_J(q) < C)
% else:
#define DT(row, j) dt[(j) * PS + (row)]
#define DT_SIZE (C * PS)
#define SLOT_J(q) ((lid + (q) * WG) % C)
#define SLOT_K0(q) (((lid + (q) * WG) / C) * KW)
#define SLOT_OK(q) (lid + (q) * WG < SLOTS)
% endif
% if tiled:
${tile.defines(c_pad=True, with_wg=False)}\
#define DP ((D + KC - 1) / KC * KC)
/* element e of the depth-kc chunk of the tile's rows / of centres jt.. (zero
   outside the data) */
#define XT_AT(e, kc) ((kc) + (e) % KC < D ? xt[(e) / KC * XS + (kc) + (e) % KC] : (real_t)0)
#define C_AT(e, jt, kc) ((jt) + (e) / KC < C && (kc) + (e) % KC < D ? \
                         centers[((jt) + (e) / KC) * D + (kc) + (e) % KC] : (real_t)0)
% endif
% if weighted:
#define WEIGHT(i) w[i]
% else:
#define WEIGHT(i) ((real_t)1)
% endif
% if stage_centers:
#define CENTER(jj, k) lc[(jj) * D + (k)]
% else:
#define CENTER(jj, k) centers[(jc + (jj)) * D + (k)]
% endif
% if stage_point:
#define POINT(k) xp[k]
% else:
#define POINT(k) xt[r * XS + (k)]
% endif
% if local_u:
#define U_FENCE CLK_LOCAL_MEM_FENCE
% else:
#define U_FENCE (CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
% endif
% if m_two:
#define RATIO_POW(v) (v)                    /* (dmin/d)^(1/(m-1)), m = 2 */
#define U_POW(v) ((v) * (v))                /* u^m */
#define S_POW(v) ((real_t)1 / (v))          /* s^(1-m) */
% else:
#define RATIO_POW(v) pow(v, expo)
#define U_POW(v) pow(v, m)
#define S_POW(v) pow(v, (real_t)1 - m)
% endif

<%block name="more_defines"></%block>\
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void cmeans_pass(
    __global const real_t *restrict x, const long n, const long stride,
    __global const real_t *restrict w,
    __global const real_t *restrict centers,    /* C x D */
    const real_t m, const real_t expo,          /* fuzzifier m > 1, 1 / (m - 1) */
    __global real_t *restrict u,                /* n x C memberships (write_u) */
    __global acc_t *restrict part_stats,        /* groups x S (x2 if Kahan) (update) */
    __global acc_t *restrict part_obj,          /* groups */
    __global int *restrict part_flags,          /* groups: non-finite distances */
    __global real_t *restrict scratch,          /* groups x C x PS (not local_u) */
    const long tiles_per_group,
    const long block_rows)                      /* rows of a group (>= its tiles' rows) */
{
    const int lid = get_local_id(0);
% if p == wg:
    const int r = lid, gi = 0;                  /* a row per work-item (a constant share:
                                                   CPU compilers vectorise across rows) */
% else:
    const int r = lid % P, gi = lid / P;        /* my row in the tile, my share of it */
% endif
    const long g = get_group_id(0), groups = get_num_groups(0);
% if tiled:
    const int tx = lid % NX, ty = lid / NX;     /* my register tile's place */
${tile.local_chunks()}\
% endif
    __local real_t xt[P * XS];                  /* the tile's rows, column D = 1 */
    __local real_t wt[P];                       /* their weights (0 past the end) */
    __local real_t part_min[WG], part_sum[WG];  /* each work-item's share of a row */
    __local acc_t scratch_acc[WG];
% if local_u:
    __local real_t dt[DT_SIZE];
% else:
    __global real_t *dt = scratch + g * DT_SIZE;
% endif
% if stage_centers:
    __local real_t lc[CCH * D];
% endif
<%block name="more_locals"></%block>\
<%block name="stats_init">\
% if update:
  % if acc_private:
    acc_t acc[QA];
    #pragma unroll
    for (int a = 0; a < QA; ++a)
        acc[a] = 0;
    % if not acc_double:
    acc_t comp[QA];
    #pragma unroll
    for (int a = 0; a < QA; ++a)
        comp[a] = 0;
    % endif
  % else:
    /* the group's slab; each entry has one owner work-item throughout */
    __global acc_t *slab = part_stats + g * S;
    for (int q = 0; q < QS; ++q) {
        if (!SLOT_OK(q))
            continue;
        const int j = SLOT_J(q), k0 = SLOT_K0(q);
        for (int kk = 0; kk < KW && k0 + kk < DA; ++kk) {
            slab[j * DA + k0 + kk] = 0;
    % if not acc_double:
            slab[groups * S + j * DA + k0 + kk] = 0;
    % endif
        }
    }
  % endif
% endif
</%block>\
% if stage_centers and cchunk >= c:
    for (int e = lid; e < C * D; e += WG)      /* all centres, once */
        lc[e] = centers[e];
% endif
% if xs > d + 1:
    /* padding columns of the tile rows (read by the last column block) */
    for (int e = lid; e < P * (XS - DA); e += WG)
        xt[(e / (XS - DA)) * XS + DA + e % (XS - DA)] = 0;
% endif
    acc_t obj = 0;
    int bad = 0;
    /* the group's rows first..end-1: block_rows = tiles_per_group * P for
       persistent groups, one fixed block of the split-free sums each else */
    const long first = g * block_rows, end = min(n, first + block_rows);
    /* the group's tiles that hold rows: a loop bound, not a break before the
       barrier below (PoCL's work-group compiler asserts on such a break when
       the group has one or two work-items) */
    const long tiles = min(tiles_per_group, (end - first + P - 1) / P);
    for (long t = 0; t < tiles; ++t) {
        const long base = first + t * P;
        barrier(U_FENCE);                       /* the last tile's readers are done */
        /* the tile's rows, coalesced; past the group's end, its last row again
           (weight 0) */
        for (int e = lid; e < P * D; e += WG) {
            const int rr = e / D, k = e - rr * D;
            xt[rr * XS + k] = x[min(base + rr, end - 1) * stride + k];
        }
        if (lid < P) {
            xt[lid * XS + D] = 1;
            wt[lid] = base + lid < end ? WEIGHT(base + lid) : 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);

<%block name="distances">\
% if tiled:
        /* 1. squared distances of the tile's rows to all centres, TN centres
           a step, then my row's minimum over my centres */
        for (int jt = 0; jt < C; jt += TN) {
${tile.accumulators("            ")}\
            for (int kc = 0; kc < DP; kc += KC) {
                barrier(CLK_LOCAL_MEM_FENCE);   /* the last chunk's readers are done */
${tile.stage_transposed("lx", "TMP", "TM", "XT_AT(e, kc)")}\
${tile.stage_transposed("lc", "TNP", "TN", "C_AT(e, jt, kc)")}\
                barrier(CLK_LOCAL_MEM_FENCE);
${tile.multiply("sqdiff")}\
            }
  % for r in range(rm):
    % for q in range(rn):
            if (jt + ${tile.col(q)} < C) {
                DT(${tile.row(r)}, jt + ${tile.col(q)}) = acc_${r}_${q};
                bad |= !isfinite(acc_${r}_${q});
            }
    % endfor
  % endfor
        }
        barrier(U_FENCE);
        real_t dmin = INFINITY;
        for (int j = gi; j < C; j += G)
            dmin = fmin(dmin, DT(r, j));
% else:
        /* 1. squared distances of my row to my centres, and their minimum */
  % if stage_point:
        real_t xp[D];
        for (int k = 0; k < D; ++k)
            xp[k] = xt[r * XS + k];
  % endif
        real_t dmin = INFINITY;
        for (int jc = 0; jc < C; jc += CCH) {
  % if stage_centers and cchunk < c:
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int e = lid; e < CCH * D && jc * D + e < C * D; e += WG)
                lc[e] = centers[jc * D + e];
            barrier(CLK_LOCAL_MEM_FENCE);
  % endif
            /* my centres j = gi (mod G) of this chunk: the same owner for
             * every centre in all phases, however the chunks fall */
            const int jn = min(CCH, C - jc);
            for (int jj = (gi - jc % G + G) % G; jj < jn; jj += G) {
                real_t d2 = 0;
                for (int k = 0; k < D; ++k) {
                    const real_t diff = POINT(k) - CENTER(jj, k);
                    d2 = fma(diff, diff, d2);
                }
                DT(r, jc + jj) = d2;
                bad |= !isfinite(d2);
                dmin = fmin(dmin, d2);
            }
        }
% endif
</%block>\
        part_min[lid] = dmin;
        barrier(CLK_LOCAL_MEM_FENCE);
        real_t low = part_min[r];
        for (int h = 1; h < G; ++h)
            low = fmin(low, part_min[h * P + r]);

        /* 2. (dmin/d)^(1/(m-1)) of my centres and their sum: s_i, once per row */
        real_t psum = 0;
        for (int j = gi; j < C; j += G) {
            const real_t d2 = DT(r, j);
            const real_t v = low > 0 ? RATIO_POW(low / d2) : (d2 == 0 ? 1 : 0);
            DT(r, j) = v;
            psum += v;
        }
        part_sum[lid] = psum;
        barrier(CLK_LOCAL_MEM_FENCE);
        real_t s = part_sum[r];
        for (int h = 1; h < G; ++h)
            s += part_sum[h * P + r];

        /* 3. memberships u = v / s (u^m, weighted, for the statistics) */
        const real_t wr = wt[r], rs = 1 / s;
        for (int j = gi; j < C; j += G) {
            const real_t uij = DT(r, j) * rs;
% if update:
            DT(r, j) = wr * U_POW(uij);
% elif write_u:
            DT(r, j) = uij;
% endif
        }
        if (gi == 0 && base + r < end && low > 0)
            obj += (acc_t)(wr * low * S_POW(s));
% if write_u:
        barrier(U_FENCE);
        /* the tile's memberships to u, coalesced (rows are consecutive) */
        for (int e = lid; e < P * C; e += WG) {
            const int rr = e / C, j = e - rr * C;
            if (base + rr < end)
                u[(base + rr) * C + j] = DT(rr, j);
        }
% endif
<%block name="statistics">\
% if update:
        barrier(U_FENCE);
        /* 4. slot (centre j, columns k0..k0+KW): the tile's sums of u^m x_k,
         * in row order, added to the owner's accumulators */
        #pragma unroll
        for (int q = 0; q < QS; ++q) {
            if (SLOT_OK(q)) {
                const int j = SLOT_J(q), k0 = SLOT_K0(q);
                real_t sum[KW];
                #pragma unroll
                for (int kk = 0; kk < KW; ++kk)
                    sum[kk] = 0;
                for (int rr = 0; rr < P; ++rr) {
                    const real_t um = DT(rr, j);
                    #pragma unroll
                    for (int kk = 0; kk < KW; ++kk)
                        sum[kk] = fma(um, xt[rr * XS + k0 + kk], sum[kk]);
                }
                #pragma unroll
                for (int kk = 0; kk < KW; ++kk) {
                    if (k0 + kk >= DA)
                        break;
  % if not acc_private:
                    acc_add_global(slab, (long)j * DA + k0 + kk, groups * S, (acc_t)sum[kk]);
  % elif acc_double:
                    acc[q * KW + kk] += (acc_t)sum[kk];
  % else:
                    const int a = q * KW + kk;
${select.kahan_add("acc[a]", "comp[a]", "sum[kk]")}\
  % endif
                }
            }
        }
% endif
</%block>\
    }
<%block name="stats_out">\
% if update and acc_private:
    #pragma unroll
    for (int q = 0; q < QS; ++q) {
        if (SLOT_OK(q)) {
            const int j = SLOT_J(q), k0 = SLOT_K0(q);
            for (int kk = 0; kk < KW && k0 + kk < DA; ++kk) {
                part_stats[g * S + j * DA + k0 + kk] = acc[q * KW + kk];
  % if not acc_double:
                part_stats[(groups + g) * S + j * DA + k0 + kk] = comp[q * KW + kk];
  % endif
            }
        }
    }
% endif
</%block>\
    obj = group_sum(obj, scratch_acc);
    const int total_bad = (int)group_sum((acc_t)bad, scratch_acc);
    if (lid == 0) {
        part_obj[g] = obj;
        part_flags[g] = total_bad;
    }
}
