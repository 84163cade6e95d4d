<%doc>
One round of Boruvka's algorithm: every active row's nearest rows in another
component, distances computed from the rows (mst_distance.cl.mako), never
stored.  Reads spec: d, metric, wg (work-group size), tj (rows of a tile
staged in local memory; 0: read from global memory, where they do not
fit), tb (rows of a tile: tj, else wg), private_row (the work-item's own
row in registers), core (edge weights max(core[i], core[j], d(i, j)):
mutual reachability), k (each row's k nearest rows of other components are
written, ascending), bound (tiles skipped by their bounding box: every
metric but cosine), levels (the tiles' hierarchy, below), count (the work
of each active row written to counts[3 t ..]: nodes tested, tiles
scanned, distances computed; bench/mst_work.py's measure).

The rows come in the host's spatial order (x[p] is observation ids[p]: a
k-d tree's leaf order) and in tiles of at most tb rows (tile p: rows
tile_start[p] up to tile_start[p + 1]; tb consecutive rows, or with levels
the tree's leaves), each with its bounding box
(box_lo, box_hi) and its component (node_comp: the one component of all its
rows, -1 where they differ), with core their least core distance
(node_core); and a major component (node_major) with the box and least
core of the rows not of it (rest_lo, rest_hi, rest_core; empty boxes lo >
hi where there are none, whose bound is inf): what a row of that component
meets there (a node at a component's edge, mostly its own rows, is as far
as its other rows).  A work-item per active row i (positions, ascending:
neighbouring rows share a work-group); the work-group walks the tiles
outward from its first row's tile.  A work-item skips a tile of its own
component and one whose box or least core is farther than its threshold:
its k-th kept distance, or its cap (the host's bound on its component's
least edge) where lower.  The box's distance is a lower bound of every row's in it (the
same operations in the same order on gaps no larger than the rows'; rounded
operations are monotone; a margin of 8 ulps covers a sqrt rounded
otherwise).  A tile is staged where any work-item of the group needs it.

Candidates compare by (w, ids[j]) (ties to the lower observation), so the
scan order does not matter and with the host's per-component choice by
(w, min(i, j), max(i, j)) every edge has one place in a total order.  Out:
by active place t, out_w/out_j its k nearest kept (j an observation; n:
none) and out_b the least lower bound of the nodes it skipped for their
boxes or cores (inf: none): every row of another component not kept is
after the k-th kept by (w, j) or at least out_b away (perhaps exactly: the
host's bound is strict there).  That bound, not the cap, is what the row
keeps: a row far inside its component keeps how far the nearest other one
may be, and later rounds with larger caps pass it over.  A row with no finite
distance to another component (cosine's zero vector, an overflow) keeps
w = inf or j = n in its first slot: the host refuses it, as scipy refuses a
non-finite distance matrix.

levels > 0: the tiles are the leaves of a hierarchy of nodes (the host's
_up): a node of level l + 1 holds fan (an argument) consecutive nodes of
level l (the last ragged), the top level at most fan nodes, with the box of
its rows, their one component (-1: several) and, with core, their least
core distance.  The work-group walks the top level outward from its first
row's node, and a node's children outward from the one nearest that row's:
a node no work-item needs (its box farther than the threshold, its rows
all of the item's own component, or every core of them above the
threshold: a mutual-reachability weight is at least both cores) is skipped
whole, so a row's scan meets O(fan levels) boxes beyond the tiles it needs
instead of every tile's.  levels = 0: the tiles alone, every one tested
(the brute walk).  The same candidates are kept either way: only lower
bounds prune, strictly, so ties are met.
</%doc>
<%inherit file="/prelude.cl.mako"/>
## one candidate row: its values v, component vc, observation jid, core vcore
<%def name="candidate(v, vc, jid, vcore)">
            if (${vc} == ci)
                continue;
% if count:
            ++work_d;
% endif
${dist.pair_distance("u", v, "w")}\
  % if core:
            if (w < core_i || w < ${vcore})    /* NaN stays NaN (fmax would drop it) */
                w = core_i > ${vcore} ? core_i : ${vcore};
  % endif
            {
                const int jid = ${jid};
                if (BEFORE(w, jid, best${k - 1}, bj${k - 1})) {
${kept.insert(k)}\
                }
            }
</%def>
## whether the work-item needs node ${node} (all levels' nodes in one array):
## not all of its own component, its box and cores no farther than thr; a
## node skipped for its box or cores lowers skipped to its bound
<%def name="needs(node, mine)">\
            if (node_comp[${node}] != ci) {
                const real_t thr = best${k - 1} < cap_i ? best${k - 1} : cap_i;
                /* of the node's major component: only its other rows */
                const int rest = node_major[${node}] == ci;
% if bound:
                const real_t lb_box = box_bound(u, (rest ? rest_lo : box_lo) + (long)(${node}) * D,
                                                (rest ? rest_hi : box_hi) + (long)(${node}) * D)
                                      * (1 - 8 * EPS);
% endif
% if core:
                const real_t lb_core = rest ? rest_core[${node}] : node_core[${node}];
% endif
<% tests = (["lb_box > thr"] if bound else []) + (["lb_core > thr"] if core else []) %>\
                if (${" || ".join(tests) or "0"}) {
% if bound and core:
                    const real_t lb = lb_box > lb_core ? lb_box : lb_core;
% elif bound:
                    const real_t lb = lb_box;
% elif core:
                    const real_t lb = lb_core;
% else:
                    const real_t lb = INFINITY;
% endif
                    skipped = lb < skipped ? lb : skipped;
                } else {
                    ${mine} = 1;
                }
            }
</%def>
## the walk of level l's nodes (level 0: the tiles, scanned), inside node
## p${l + 1} of the level above (the top: every node), outward
<%def name="walk(l)">
    {
        const int a${l} = ${"0" if l == levels else f"p{l + 1} * fan"};
        const int b${l} = ${f"cnt{l}" if l == levels else f"min(a{l} + fan, cnt{l})"};
        const int c${l} = clamp(t0 / span${l}, a${l}, b${l} - 1);
        for (int s${l} = 0; s${l} < b${l} - a${l}; ++s${l}) {
            const int p${l} = outward(s${l}, a${l}, b${l}, c${l});
            barrier(CLK_LOCAL_MEM_FENCE);      /* the last node's readers are done */
            if (lid == 0)
                need = 0;
            barrier(CLK_LOCAL_MEM_FENCE);
            int mine${l} = 0;
            if (mine${l + 1}) {
${needs(f"off{l} + p{l}", f"mine{l}")}\
% if count:
                ++work_n;
% endif
            }
            if (mine${l})
                need = 1;
            barrier(CLK_LOCAL_MEM_FENCE);
% if l == 0:
${scan_tile()}\
% else:
            if (need)
${walk(l - 1)}\
% endif
        }
    }
</%def>
## the tile p0's rows, staged where any work-item needs them (need), compared
## by the work-items that do (mine0)
<%def name="scan_tile()">
            /* every iteration meets the same barriers: a tile no one needs
               stages and scans no rows */
            const int j0 = tile_start[p0];
            const int m = need ? tile_start[p0 + 1] - j0 : 0;
% if count:
            work_t += mine0 && m > 0;
% endif
% if tj:
            for (int e = lid; e < m * D; e += WG)
                lx[e] = x[(long)j0 * D + e];
            for (int e = lid; e < m; e += WG) {
                lcomp[e] = comp[j0 + e];
                lids[e] = ids[j0 + e];
  % if core:
                lcore[e] = core[j0 + e];
  % endif
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int jj = 0; mine0 && jj < m; ++jj) {
                __local const real_t *v_ = lx + jj * D;
${candidate("v_", "lcomp[jj]", "lids[jj]", "lcore[jj]")}\
            }
% else:
            for (int j = j0; mine0 && j < j0 + m; ++j) {
                __global const real_t *v_ = x + (long)j * D;
${candidate("v_", "comp[j]", "ids[j]", "core[j]")}\
            }
% endif
</%def>
<%namespace name="dist" file="/mst/mst_distance.cl.mako"/>
<%namespace name="kept" file="/mst/mst_keep.cl.mako"/>
/* pdist rounds every product and sum: no fused multiply-adds */
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define WG ${wg}
#define EPS ${"DBL_EPSILON" if real_t == "double" else "FLT_EPSILON"}
#define BEFORE(w, j, bw, bj) ((w) < (bw) || ((w) == (bw) && (j) < (bj)))
% if tj:
#define TJ ${tj}
% endif

/* step s of a walk of [a, b) outward from c: c, c+1, c-1, c+2, ... while
   both sides last, then the longer side's rest */
static int outward(const int s, const int a, const int b, const int c)
{
    const int near = min(c - a, b - 1 - c);
    if (s <= 2 * near)
        return (s & 1) ? c - (s + 1) / 2 : c + s / 2;
    return c - a > near ? c - (s - near) : c + (s - near);
}
% if bound:

/* a lower bound of the distance from u to every row in the box [lo, hi]:
   the same operations in the same order on gaps no larger than the rows' */
static real_t box_bound(${"" if private_row else "__global "}const real_t *u, __global const real_t *lo,
                        __global const real_t *hi)
{
    real_t lb = 0;
    for (int c = 0; c < D; ++c) {
        real_t g = lo[c] - u[c];
        const real_t g2 = u[c] - hi[c];
        g = g2 > g ? g2 : g;
        g = g > 0 ? g : 0;
  % if metric == "chebyshev":
        lb = lb > g ? lb : g;
  % elif metric == "cityblock":
        lb += g;
  % else:
        lb += g * g;
  % endif
    }
  % if metric == "euclidean":
    lb = sqrt(lb);
  % endif
    return lb;
}
% endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void nearest_other(__global const real_t *restrict x, __global const int *restrict ids,
                   const int n, __global const int *restrict active, const int m_active,
                   __global const real_t *restrict cap, __global const int *restrict comp,
% if core:
                   __global const real_t *restrict core,
                   __global const real_t *restrict node_core,
% endif
% if bound:
                   __global const real_t *restrict box_lo,
                   __global const real_t *restrict box_hi,
% endif
                   __global const int *restrict node_comp,
                   __global const int *restrict node_major,
% if core:
                   __global const real_t *restrict rest_core,
% endif
% if bound:
                   __global const real_t *restrict rest_lo,
                   __global const real_t *restrict rest_hi,
% endif
                   __global const int *restrict tile_start, const int tiles,
% if levels:
                   const int fan,
% endif
                   __global real_t *restrict out_w, __global int *restrict out_j,
                   __global real_t *restrict out_b
% if count:
                   , __global int *restrict counts
% endif
                   )
{
    const int t = get_global_id(0);
    const int lid = get_local_id(0);
    const int live = t < m_active;
    const int i = live ? active[t] : 0;
    const int ci = live ? comp[i] : -1;
    const real_t cap_i = live ? cap[t] : 0;
% if core:
    const real_t core_i = live ? core[i] : 0;
% endif
% if private_row:
    real_t u[D];
    for (int c = 0; c < D; ++c)
        u[c] = live ? x[(long)i * D + c] : 0;
% else:
    __global const real_t *u = x + (long)(live ? i : 0) * D;
% endif
    /* the k nearest so far, ascending by (w, observation); n: none yet */
% for s in range(k):
    real_t best${s} = INFINITY;
    int bj${s} = n;
% endfor
% if tj:
    __local real_t lx[TJ * D];
    __local int lcomp[TJ];
    __local int lids[TJ];
  % if core:
    __local real_t lcore[TJ];
  % endif
% endif
    __local int need;
    /* the least bound of the nodes skipped for their boxes or cores */
    real_t skipped = INFINITY;
% if count:
    int work_n = 0, work_t = 0, work_d = 0;
% endif
    /* each level's nodes (level 0: the tiles) and its first in node_* */
    const int cnt0 = tiles;
    const int off0 = 0, span0 = 1;        /* span: the tiles a node spans */
% for l in range(1, levels + 1):
    const int cnt${l} = (cnt${l - 1} + fan - 1) / fan;
    const int off${l} = off${l - 1} + cnt${l - 1}, span${l} = span${l - 1} * fan;
% endfor
    /* the group's first row's tile (the last whose start is not past it):
       the walk starts nearest it */
    const int first = active[min((int)get_group_id(0) * WG, m_active - 1)];
    int t0 = 0;
    for (int lo = 0, hi = tiles; lo < hi; ) {
        const int mid = lo + ((hi - lo) >> 1);
        if (tile_start[mid] <= first) {
            t0 = mid;
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    const int mine${levels + 1} = live;
${walk(levels)}\
    if (live) {
% for s in range(k):
        out_w[(long)t * ${k} + ${s}] = best${s};
        out_j[(long)t * ${k} + ${s}] = bj${s};
% endfor
        out_b[t] = skipped;
% if count:
        counts[3 * t] = work_n;
        counts[3 * t + 1] = work_t;
        counts[3 * t + 2] = work_d;
% endif
    }
}
