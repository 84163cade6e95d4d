<%doc>
How near another component may come to each tile of one component: a
Boruvka round's filter before its scans (passes/mst.py boruvka), so that
the rows of a tile far inside its component are not scanned one by one.
Reads spec: d, metric, core, levels (the tiles' hierarchy of
mst_nearest.cl.mako, levels > 0), and the bound that its boxes give (every
metric but cosine).

A work-item per tile t of one component (node_comp[t] >= 0; -1: several,
out -inf) with cap[t] (its component's cap; inf: out -inf, not filtered)
walks the hierarchy from the top: a node all of t's component is passed
over, one whose box-to-box bound or least core (of its rows not of t's
component where t's is its major one, node_major) exceeds the cap is
skipped and lowers the tile's bound to that, and any other is descended;
a tile reached within the cap ends the walk with out -inf (a row of t may
have an edge within the cap).  Else out[t] is the least bound of the nodes
skipped: every row of t weighs at least that to every row of another
component (the box-to-box bound is at most each pair's distance: the same
operations in the same order on gaps no larger than the rows', and a
margin of 8 ulps).
</%doc>
<%inherit file="/prelude.cl.mako"/>
## the walk of level l's nodes (inside node p${l + 1} of the level above; the
## top: every node)
<%def name="walk(l)">
        for (int p${l} = ${"0" if l == levels else f"p{l + 1} * fan"};
             !near && p${l} < ${f"cnt{l}" if l == levels else f"min(p{l + 1} * fan + fan, cnt{l})"};
             ++p${l}) {
            const int node${l} = off${l} + p${l};
            if (node_comp[node${l}] == ci)
                continue;
            const int rest${l} = node_major[node${l}] == ci;
            real_t lb${l} = 0;
% if bound:
            lb${l} = box_gap((rest${l} ? rest_lo : box_lo) + (long)node${l} * D,
                             (rest${l} ? rest_hi : box_hi) + (long)node${l} * D, lo, hi)
                     * (1 - 8 * EPS);
% endif
% if core:
            {
                const real_t c = rest${l} ? rest_core[node${l}] : node_core[node${l}];
                lb${l} = c > lb${l} ? c : lb${l};
            }
% endif
            if (lb${l} > thr) {
                least = lb${l} < least ? lb${l} : least;
                continue;
            }
% if l == 0:
            near = 1;
% else:
${walk(l - 1)}\
% endif
        }
</%def>
/* pdist rounds every product and sum: the bound's arithmetic is the same */
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define EPS ${"DBL_EPSILON" if real_t == "double" else "FLT_EPSILON"}
% if bound:

/* a lower bound of the distance between every row in box [lo, hi] and
   every row in box [a_lo, a_hi]: mst_nearest's box_bound on the gaps
   between the boxes */
static real_t box_gap(__global const real_t *lo, __global const real_t *hi,
                      __global const real_t *a_lo, __global const real_t *a_hi)
{
    real_t lb = 0;
    for (int c = 0; c < D; ++c) {
        real_t g = lo[c] - a_hi[c];
        const real_t g2 = a_lo[c] - hi[c];
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

__kernel void tile_reach(
% if core:
                         __global const real_t *restrict node_core,
                         __global const real_t *restrict rest_core,
% endif
% if bound:
                         __global const real_t *restrict box_lo,
                         __global const real_t *restrict box_hi,
                         __global const real_t *restrict rest_lo,
                         __global const real_t *restrict rest_hi,
% endif
                         __global const int *restrict node_comp,
                         __global const int *restrict node_major,
                         __global const real_t *restrict cap, const int tiles, const int fan,
                         __global real_t *restrict out)
{
    const int t = get_global_id(0);
    if (t >= tiles)
        return;
    const int ci = node_comp[t];
    const real_t thr = cap[t];
    if (ci < 0 || isinf(thr)) {
        out[t] = -INFINITY;
        return;
    }
% if bound:
    __global const real_t *lo = box_lo + (long)t * D;     /* the tile's rows: all of ci */
    __global const real_t *hi = box_hi + (long)t * D;
% endif
    const int cnt0 = tiles, off0 = 0;
% for l in range(1, levels + 1):
    const int cnt${l} = (cnt${l - 1} + fan - 1) / fan, off${l} = off${l - 1} + cnt${l - 1};
% endfor
    real_t least = INFINITY;
    int near = 0;
${walk(levels)}\
    out[t] = near ? -INFINITY : least;
}
