<%doc>
Lance-Williams linkages on the condensed distance matrix, as scipy runs them.
Reads spec: method (complete, average, weighted, ward, centroid, median), wg
(work-group size, a power of two), buffers, buffer_elems (the matrix across
buffers: condensed.cl.mako).

Nearest-neighbour chain (scipy's nn_chain: complete, average, weighted, ward),
all control on the device (the host only enqueues steps and now and then
reads a done flag):
  nn_step:    one launch a chain step over many work-groups: the last
              step's row minimum, scipy's preference for the previous chain
              element, push y or merge x and y (record the Z row), then the
              merged row's Lance-Williams update and the new top's row scan
  nn_chain_all: every step in one work-group and one launch (CPUs), from
              nn_scan_items (update + scan) and nn_decide (push or merge)
Generic algorithm (scipy's fast_linkage: centroid, median; the host keeps
scipy's heap of lower bounds):
  row_init:   every row's nearest higher-indexed neighbour (one item a row)
  row_scan / row_pick: one row's nearest higher-indexed active neighbour
  merge_update: the merged row, clusters' new sizes, and every lower bound
              the new distances beat (listed for the host's heap)
Formulas follow scipy's _hierarchy_distance_update.pxi operation by
operation; contraction into fma is off so ties in the data stay ties.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
<%namespace name="cm" file="/linkage/condensed.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF
#define WG ${wg}
/* nn-chain state slots */
#define LEN 0
#define MERGES 1
#define MA 2
#define MB 3
#define NA 4
#define NB 5
#define MERGING 6
#define FIRST 7
#define DONE 8
${cm.accessor(False)}

inline long condensed_index(const long n, const long i, const long j)
{
    const long a = min(i, j), b = max(i, j);
    return n * a - a * (a + 1) / 2 + (b - a - 1);
}

inline real_t new_distance(const real_t d_xi, const real_t d_yi, const real_t d_xy,
                           const int size_x, const int size_y, const int size_i)
{
% if method == "complete":
    return d_xi > d_yi ? d_xi : d_yi;
% elif method == "average":
    return (size_x * d_xi + size_y * d_yi) / (size_x + size_y);
% elif method == "weighted":
    return (real_t)0.5 * (d_xi + d_yi);
% elif method == "centroid":
    return sqrt((((size_x * d_xi * d_xi) + (size_y * d_yi * d_yi)) -
                 ((real_t)((long)size_x * size_y) * d_xy * d_xy) / (size_x + size_y)) /
                (size_x + size_y));
% elif method == "median":
    return sqrt((real_t)0.5 * (d_xi * d_xi + d_yi * d_yi) - (real_t)0.25 * d_xy * d_xy);
% elif method == "ward":
    const real_t t = (real_t)1.0 / (size_x + size_y + size_i);
    return sqrt((size_i + size_x) * t * d_xi * d_xi + (size_i + size_y) * t * d_yi * d_yi -
                size_i * t * d_xy * d_xy);
% endif
}

${select.work_group_argmin()}\

/* each work-group's minimum of d(x, i) over active i in [lo, n), i != x */
inline void row_partial(${cm.params(False)}, const int n, const int x,
                        const int lo, __global const int *restrict size,
                        __global real_t *restrict part_v, __global int *restrict part_i,
                        __local real_t *v, __local int *idx)
{
    const int lid = get_local_id(0);
    real_t mv = INFINITY;
    int mi = 0x7fffffff;
    for (int i = lo + get_global_id(0); i < n; i += get_global_size(0)) {
        if (size[i] == 0 || i == x)
            continue;
        const real_t d = DIST(condensed_index(n, x, i));
        if (d < mv) {            /* rows ascend: the first strict minimum */
            mv = d;
            mi = i;
        }
    }
    v[lid] = mv;
    idx[lid] = mi;
    argmin_local(v, idx, lid);
    if (lid == 0) {
        part_v[get_group_id(0)] = v[0];
        part_i[get_group_id(0)] = idx[0];
    }
}

/* ------------------------------------------------ nearest-neighbour chain */

/* (value, index) candidate into a running minimum; ties to the lower index.
   A NaN (a Lance-Williams update of negative distances: scipy's ward of
   [0, 0, -1]) ranks as +inf, so a row of NaNs still names an active
   cluster and the chain's index stays in range; the merge that follows
   takes scipy's NaN height from d(x, prev). */
#define OFFER(d, i) do { const real_t d_ = isnan(d) ? INFINITY : (d); const int i_ = (i); \
        ${select.lower("d_", "i_", "mv", "mi")} } while (0)

/* The pending merge's update and the scan of row x = chain top over items
   first, first + stride, ...; the work-group minimum ends in v[0], idx[0]. */
inline void nn_scan_items(${cm.params(False)}, const int n,
                          __global const int *restrict state,
                          __global const int *restrict chain,
                          __global const int *restrict size,
                          __global const real_t *restrict merge_dist, const int first,
                          const int stride, __local real_t *v, __local int *idx)
{
    /* no return before the barriers (PoCL miscompiles one) */
    const int done = state[DONE], merging = state[MERGING];
    const int x = done ? 0 : chain[state[LEN] - 1];
    const int a = state[MA], b = state[MB], na = state[NA], nb = state[NB];
    const real_t d_ab = merging ? merge_dist[0] : 0;
    const int lid = get_local_id(0);
    real_t mv = INFINITY;
    int mi = 0x7fffffff;
    for (int i = done ? n : first; i < n; i += stride) {
        const int ni = size[i];
        if (ni == 0)
            continue;
        if (merging && i != b) {
            /* item i alone writes d(i, b); d(x, i) for i != b is not written
               here, and d(x, b) is offered by item x, which makes it */
            const long ib = condensed_index(n, i, b);
            const real_t d = new_distance(DIST(condensed_index(n, i, a)), DIST(ib), d_ab,
                                          na, nb, ni);
            DIST(ib) = d;
            if (x == b)
                OFFER(d, i);
            else if (i == x)
                OFFER(d, b);
            else
                OFFER(DIST(condensed_index(n, x, i)), i);
        } else if (i != x && !merging) {
            OFFER(DIST(condensed_index(n, x, i)), i);
        }
    }
    v[lid] = mv;
    idx[lid] = mi;
    argmin_local(v, idx, lid);
}

/* One item: the chain step for row minimum (current_min, y) of the chain top. */
inline void nn_decide(real_t current_min, int y, const int n,
                      ${cm.params(False)}, __global int *restrict state,
                      __global int *restrict chain, __global int *restrict size,
                      __global real_t *restrict merge_dist, __global int *restrict pairs,
                      __global real_t *restrict heights)
{
    int len = state[LEN];
    const int x = chain[len - 1];
    y = min(y, n - 1);      /* no candidate (cannot happen while two are active) */
    if (len > 1) {
        /* scipy starts from the previous chain element and takes only a
           strictly smaller distance: no cycles among equal distances */
        const int prev = chain[len - 2];
        const real_t d_prev = DIST(condensed_index(n, x, prev));
        if (!(current_min < d_prev)) {
            y = prev;
            current_min = d_prev;
        }
        if (y == prev) {
            const int a = min(x, y), b = max(x, y), k = state[MERGES];
            const int na = size[a], nb = size[b];
            pairs[2 * k] = a;
            pairs[2 * k + 1] = b;
            heights[k] = current_min;
            size[a] = 0;
            size[b] = na + nb;
            state[MA] = a;
            state[MB] = b;
            state[NA] = na;
            state[NB] = nb;
            merge_dist[0] = current_min;
            state[MERGES] = k + 1;
            len -= 2;
            if (k + 1 == n - 1) {
                state[DONE] = 1;
                state[MERGING] = 0;
                state[LEN] = len;
                return;
            }
            state[MERGING] = 1;
            if (len == 0) {     /* a new chain from the lowest active cluster */
                int p = state[FIRST];
                while (p < n - 1 && size[p] == 0)
                    ++p;
                state[FIRST] = p;
                chain[0] = p;
                len = 1;
            }
            state[LEN] = len;
            return;
        }
    }
    chain[len] = y;
    state[LEN] = len + 1;
    state[MERGING] = 0;
}

/* nn_step's state (two copies: a launch reads one and writes the other) */
#define S_LEN 0
#define S_BASE 1
#define S_MERGES 2
#define S_FIRST 3
#define S_DONE 4
#define S_SKIP 5
#define S_PEND 6
#define S_PA 7
#define S_PB 8
#define S_PNA 9
#define S_PNB 10

/* Many work-groups, one launch a chain step.  Every work-group reduces the
   last launch's partial minima and makes the same decision (push, or merge
   a < b); group 0 alone records it.  Then all update row b if they merged
   and scan the new chain top, writing partials to the other buffer.
   Nothing one work-group writes is read by another in the same launch:
   - the chain lives at chain[base ..]; a push writes one slot above the
     top, a fresh chain starts two slots above the old base;
   - the merge's new sizes are written in the next launch by the items that
     own those clusters, and read until then through SIZE_OF's override;
   - the Lance-Williams update writes d(i, b), which the decision (d(a, b))
     never reads. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void nn_step(${cm.params(False)}, const int n, const int groups,
             __global const real_t *restrict in_v, __global const int *restrict in_i,
             __global real_t *restrict out_v, __global int *restrict out_i,
             __global const int *restrict st_in, __global int *restrict st_out,
             __global int *restrict chain, __global int *restrict size,
             __global int *restrict pairs, __global real_t *restrict heights)
{
    __local real_t v[WG];
    __local int idx[WG];
    const int lid = get_local_id(0);
    const int lead = get_group_id(0) == 0 && lid == 0;
    int len = st_in[S_LEN], base = st_in[S_BASE], k = st_in[S_MERGES];
    int first = st_in[S_FIRST], done = st_in[S_DONE];
    const int skip = st_in[S_SKIP], pend = st_in[S_PEND], pa = st_in[S_PA], pb = st_in[S_PB];
    const int pnab = st_in[S_PNA] + st_in[S_PNB];
#define SIZE_OF(j) ((pend && (j) == pa) ? 0 : (pend && (j) == pb) ? pnab : size[j])
    reduce_partials(groups, in_v, in_i, v, idx);
    real_t current_min = v[0];
    int y = min(idx[0], n - 1);     /* no candidate (cannot happen while two are active) */
    barrier(CLK_LOCAL_MEM_FENCE);           /* v, idx are reused by the scan */

    int merging = 0, a = 0, b = 0, na = 0, nb = 0, top = 0;
    if (skip && !done)
        top = chain[base + len - 1];
    if (!done && !skip) {
        const int x = chain[base + len - 1];
        if (len > 1) {
            /* scipy starts from the previous chain element and takes only a
               strictly smaller distance: no cycles among equal distances */
            const int prev = chain[base + len - 2];
            const real_t d_prev = DIST(condensed_index(n, x, prev));
            if (!(current_min < d_prev)) {
                y = prev;
                current_min = d_prev;
            }
            merging = y == prev;
        }
        if (merging) {
            a = min(x, y);
            b = max(x, y);
            na = SIZE_OF(a);
            nb = SIZE_OF(b);
            if (lead) {
                pairs[2 * k] = a;
                pairs[2 * k + 1] = b;
                heights[k] = current_min;
            }
            ++k;
            len -= 2;
            if (k == n - 1) {
                done = 1;
                merging = 0;
            } else if (len == 0) {   /* a new chain from the lowest active cluster */
                int p = first;
                while (p < n - 1 && (p == a || (p != b && SIZE_OF(p) == 0)))
                    ++p;
                first = p;
                base += 2;
                if (lead)
                    chain[base] = p;
                len = 1;
                top = p;
            } else {
                top = chain[base + len - 1];     /* below the merged pair */
            }
        } else {
            if (lead)
                chain[base + len] = y;
            ++len;
            top = y;
        }
    }
    if (lead) {
        st_out[S_LEN] = len;
        st_out[S_BASE] = base;
        st_out[S_MERGES] = k;
        st_out[S_FIRST] = first;
        st_out[S_DONE] = done;
        st_out[S_SKIP] = 0;
        st_out[S_PEND] = merging;
        st_out[S_PA] = a;
        st_out[S_PB] = b;
        st_out[S_PNA] = na;
        st_out[S_PNB] = nb;
    }

    /* the merged row's update and the scan of the new chain top */
    const int x = top;
    const real_t d_ab = current_min;
    real_t mv = INFINITY;
    int mi = 0x7fffffff;
    for (int i = done ? n : get_global_id(0); i < n; i += get_global_size(0)) {
        if (pend) {         /* the last launch's merge: its owners record the sizes */
            if (i == pa)
                size[i] = 0;
            else if (i == pb)
                size[i] = pnab;
        }
        const int ni = (merging && i == a) ? 0 : SIZE_OF(i);
        if (ni == 0)
            continue;
        if (merging && i != b) {
            const long ib = condensed_index(n, i, b);
            const real_t d = new_distance(DIST(condensed_index(n, i, a)), DIST(ib), d_ab,
                                          na, nb, ni);
            DIST(ib) = d;
            if (x == b)
                OFFER(d, i);
            else if (i == x)
                OFFER(d, b);
            else
                OFFER(DIST(condensed_index(n, x, i)), i);
        } else if (i != x && !merging) {
            OFFER(DIST(condensed_index(n, x, i)), i);
        }
    }
#undef SIZE_OF
    v[lid] = mv;
    idx[lid] = mi;
    argmin_local(v, idx, lid);
    if (lid == 0) {
        out_v[get_group_id(0)] = v[0];
        out_i[get_group_id(0)] = idx[0];
    }
}

/* one work-group runs the whole chain in one launch: no launch per step
   (CPUs, where a launch costs more than a small row's scan) */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void nn_chain_all(${cm.params(False)}, const int n, __global int *restrict state,
                  __global int *restrict chain, __global int *restrict size,
                  __global real_t *restrict merge_dist, __global int *restrict pairs,
                  __global real_t *restrict heights)
{
    __local real_t v[WG];
    __local int idx[WG];
    const int lid = get_local_id(0);
    for (int k = 0; k < 8 * n; ++k) {          /* a merge takes < 3 steps on average */
        /* item 0's chain state and every item's row writes, seen by all */
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        if (state[DONE])
            break;
        nn_scan_items(DIST_ARGS, n, state, chain, size, merge_dist, lid, WG, v, idx);
        barrier(CLK_GLOBAL_MEM_FENCE);
        if (lid == 0)
            nn_decide(v[0], idx[0], n, DIST_ARGS, state, chain, size, merge_dist, pairs, heights);
    }
}

/* ------------------------------------------------------ generic algorithm */

__kernel void row_init(${cm.params(False)}, const int n,
                       __global int *restrict neighbor, __global real_t *restrict min_dist)
{
    const int x = get_global_id(0);
    if (x >= n - 1)
        return;
    real_t mv = INFINITY;
    int mi = -1;
    for (int i = x + 1; i < n; ++i) {
        const real_t d = DIST(condensed_index(n, x, i));
        if (d < mv) {
            mv = d;
            mi = i;
        }
    }
    neighbor[x] = mi;
    min_dist[x] = mv;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void row_scan(${cm.params(False)}, const int n, const int x,
              __global const int *restrict size, __global real_t *restrict part_v,
              __global int *restrict part_i)
{
    __local real_t v[WG];
    __local int idx[WG];
    row_partial(DIST_ARGS, n, x, x + 1, size, part_v, part_i, v, idx);
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void row_pick(const int groups, __global const real_t *restrict part_v,
              __global const int *restrict part_i, __global real_t *restrict out)
{
    __local real_t v[WG];
    __local int idx[WG];
    reduce_partials(groups, part_v, part_i, v, idx);
    if (get_local_id(0) == 0) {     /* (distance, index): one read for the host */
        out[0] = v[0];
        out[1] = (real_t)idx[0];
    }
}

__kernel void merge_update(${cm.params(False)}, const int n, const int a,
                           const int b, const int na, const int nb, const real_t d_ab,
                           __global int *restrict size, __global real_t *restrict min_dist,
                           __global int *restrict changed, __global int *restrict changed_i,
                           __global real_t *restrict changed_v)
{
    if (a < 0 || b >= n || a >= b)      /* the host passes a < b < n: nothing else is a merge */
        return;
    for (int z = get_global_id(0); z < n; z += get_global_size(0)) {
        /* only item z touches size[z]: the merged pair's sizes change here */
        if (z == a) {
            size[a] = 0;
            continue;
        }
        if (z == b) {
            size[b] = na + nb;
            continue;
        }
        const int nz = size[z];
        if (nz == 0)
            continue;
        const long zb = condensed_index(n, z, b);
        const real_t d = new_distance(DIST(condensed_index(n, z, a)), DIST(zb), d_ab,
                                      na, nb, nz);
        DIST(zb) = d;
        if (z < b && d < min_dist[z]) {
            min_dist[z] = d;
            const int slot = atomic_inc(changed);
            changed_i[slot] = z;
            changed_v[slot] = d;
        }
    }
}
