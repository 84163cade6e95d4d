<%doc>
The k smallest distances of every row to all rows (itself included, at
distance 0): HDBSCAN's core distance is the last of them (scikit-learn's
kneighbors of the fitted rows, which counts the row itself).  Distances are
computed from the rows on the fly (mst_distance.cl.mako, pdist's arithmetic,
the MST engine's), never stored: the other rows pass through local memory a
work-group's tile at a time.  Reads spec: d, metric, k, wg, subset, ids
(the rows of those distances written to out_j too, ties in any order).
  knn_core: one work-item a row (subset: a row of the m in ``rows``, the
            rows the grid's search left, passes/neighbours.py); its k
            smallest so far in a private sorted list (insertion: k is
            small, min_samples); out[i*k .. i*k+k-1] ascending.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="dist" file="/mst/mst_distance.cl.mako"/>
/* pdist rounds every product and sum: no fused multiply-adds, so the
   distances are the MST engine's and a core distance ties as they do */
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define K ${k}
#define WG ${wg}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void knn_core(__global const real_t *restrict x, const int n,
% if subset:
              __global const int *restrict rows, const int m,
% endif
              __global real_t *restrict out
% if ids:
              , __global int *restrict out_j
% endif
              )
{
    __local real_t tile[WG * D];
    const int i = get_global_id(0), lid = get_local_id(0);
% if subset:
    const int row = rows[i < m ? i : m - 1];   /* items past m stage tiles, write nothing */
% else:
    const int m = n;
    const int row = i < n ? i : n - 1;   /* items past n stage tiles, write nothing */
% endif
    real_t own[D];
    for (int c = 0; c < D; ++c)
        own[c] = x[(size_t)row * D + c];
    real_t best[K];
    for (int s = 0; s < K; ++s)
        best[s] = INFINITY;
% if ids:
    int bj[K];
    for (int s = 0; s < K; ++s)
        bj[s] = -1;
% endif
    for (int base = 0; base < n; base += WG) {
        const int j0 = base + lid;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int c = 0; c < D; ++c)
            tile[lid * D + c] = j0 < n ? x[(size_t)j0 * D + c] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        const int top = min(WG, n - base);
        for (int t = 0; t < top; ++t) {
            __local const real_t *other = tile + t * D;
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
                bj[s] = base + t;
% endif
            }
        }
    }
    if (i < m)
        for (int s = 0; s < K; ++s) {
            out[(size_t)i * K + s] = best[s];
% if ids:
            out_j[(size_t)i * K + s] = bj[s];
% endif
        }
}
