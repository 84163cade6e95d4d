<%doc>
knn_core over the grid (passes/grid.py): each row's k smallest distances
(itself included), searching the rings of cells around its own cell
(grid_cells.cl.mako's for_ring) until every row within its k-th smallest
distance so far must lie in the rings searched: after ring r every row
less than r cell widths away in each gridded feature has been seen, and a
euclidean, cityblock or chebyshev distance is at least each feature's
difference, so k-th <= r * eps (eps: the grid's, a width MARGIN under
every cell's, which covers the distances' rounding) ends the search; so
does a ring past every cell (span).  Distances as knn_core computes them
(pdist's arithmetic), so the same k values.  A row still searching after
``rings`` rings is marked in ``left`` (knn_core's subset finishes it).
One work-item a sorted row; ``out`` and ``left`` by row index, with ids
``out_j`` the rows those distances are to (row indices; ties in any
order: every row nearer than the k-th is among them), HDBSCAN's MST's
first candidates (passes/mst.py).  Reads spec: d, metric, k, g, ids.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="dist" file="/mst/mst_distance.cl.mako"/>
<%namespace name="grid" file="/grid/grid_cells.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define K ${k}
${grid.lower_bound()}

__kernel void knn_grid_core(__global const real_t *restrict x, const int n,
                            __global const long *restrict keys,
                            __global const long *restrict shape,
                            __global const int *restrict index, const real_t eps,
                            const int rings, const int span,
                            __global real_t *restrict out, __global char *restrict left
% if ids:
                            , __global int *restrict out_j
% endif
                            )
{
    const int p = get_global_id(0);
    if (p >= n)
        return;
    real_t own[D];
    for (int c = 0; c < D; ++c)
        own[c] = x[(size_t)p * D + c];
    real_t best[K];
    for (int s = 0; s < K; ++s)
        best[s] = INFINITY;
% if ids:
    int bj[K];
    for (int s = 0; s < K; ++s)
        bj[s] = -1;
% endif
    int r = 0;
    for (; r <= rings; ++r) {
<%grid:for_ring p="p" q="q" r="r">
                    __global const real_t *other = x + (size_t)q * D;
${dist.pair_distance("own", "other", "dd")}\
                    if (dd < best[K - 1]) {
                        int s = K - 1;
                        for (; s > 0 && best[s - 1] > dd; --s) {
                            best[s] = best[s - 1];
% if ids:
                            bj[s] = bj[s - 1];
% endif
                        }
                        best[s] = dd;
% if ids:
                        bj[s] = index[q];
% endif
                    }
</%grid:for_ring>
        if (best[K - 1] <= r * eps || r >= span)
            break;
    }
    const int i = index[p];
    left[i] = r > rings;
    for (int s = 0; s < K; ++s)
        out[(size_t)i * K + s] = best[s];
% if ids:
    for (int s = 0; s < K; ++s)
        out_j[(size_t)i * K + s] = bj[s];
% endif
}
