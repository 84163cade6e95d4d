<%doc>
One round of Boruvka's algorithm: every row's nearest row in another
component, distances computed from the rows (mst_distance.cl.mako), never
stored.  Reads spec: d, metric, wg (work-group size), tj (rows of the other
side staged in local memory per block; 0: read them from global memory,
where they do not fit), private_row (the work-item's own row in registers),
core (edge weights max(core[i], core[j], d(i, j)): mutual reachability),
k (each row's k nearest rows of other components are written, ascending).

A work-item per row i of the active list (the rows whose nearest row
joined their own component last round, and that could still beat their
component's least edge: the host's choice); the work-group walks all rows j in ascending blocks.
Rows of i's own component are skipped.  The first strict minimum wins, so
ties go to the lowest j: with the host's per-component choice by
(w, min(i, j), max(i, j)) every edge has one place in a total order and the
rounds make no cycle.  A row with no finite distance to another component
(cosine's zero vector, an overflow) keeps w = inf and j = n in its first slot: the host
refuses it, as scipy refuses a non-finite distance matrix.
</%doc>
<%inherit file="prelude.cl.mako"/>
## (w, j) into the sorted list best0.. / bj0..: after every entry it does
## not beat (the rows ascend, so an equal w keeps the lower j first)
<%def name="insert()">
% for s in range(k - 1, 0, -1):
            if (w < best${s - 1}) {
                best${s} = best${s - 1};
                bj${s} = bj${s - 1};
            } else if (w < best${s}) {
                best${s} = w;
                bj${s} = j;
            }
% endfor
            if (w < best0) {
                best0 = w;
                bj0 = j;
            }
</%def>
<%namespace name="dist" file="mst_distance.cl.mako"/>
/* pdist rounds every product and sum: no fused multiply-adds */
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define WG ${wg}
% if tj:
#define TJ ${tj}
% endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void nearest_other(__global const real_t *restrict x, const int n,
                   __global const int *restrict active, const int m_active,
                   __global const int *restrict comp,
% if core:
                   __global const real_t *restrict core,
% endif
                   __global real_t *restrict out_w, __global int *restrict out_j)
{
    const int t = get_global_id(0);
    const int live = t < m_active;
    const int i = live ? active[t] : 0;
    const int ci = live ? comp[i] : -1;
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
    /* the k nearest so far, ascending by (w, j); j = n: none yet */
% for s in range(k):
    real_t best${s} = INFINITY;
    int bj${s} = n;
% endfor
% if tj:
    __local real_t lx[TJ * D];
    __local int lcomp[TJ];
  % if core:
    __local real_t lcore[TJ];
  % endif
    const int lid = get_local_id(0);
    for (int j0 = 0; j0 < n; j0 += TJ) {
        const int m = min(TJ, n - j0);
        barrier(CLK_LOCAL_MEM_FENCE);      /* the last block's readers are done */
        for (int e = lid; e < m * D; e += WG)
            lx[e] = x[(long)j0 * D + e];
        for (int e = lid; e < m; e += WG) {
            lcomp[e] = comp[j0 + e];
  % if core:
            lcore[e] = core[j0 + e];
  % endif
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!live)
            continue;
        for (int jj = 0; jj < m; ++jj) {
            if (lcomp[jj] == ci)
                continue;
            __local const real_t *v = lx + jj * D;
${dist.pair_distance("u", "v", "w")}\
  % if core:
            if (w < core_i || w < lcore[jj])    /* NaN stays NaN (fmax would drop it) */
                w = core_i > lcore[jj] ? core_i : lcore[jj];
  % endif
            if (w < best${k - 1}) {
                const int j = j0 + jj;
${insert()}\
            }
        }
    }
% else:
    for (int j = 0; live && j < n; ++j) {
        if (comp[j] == ci)
            continue;
        __global const real_t *v = x + (long)j * D;
${dist.pair_distance("u", "v", "w")}\
  % if core:
        if (w < core_i || w < core[j])
            w = core_i > core[j] ? core_i : core[j];
  % endif
        if (w < best${k - 1}) {
${insert()}\
        }
    }
% endif
    if (live) {
% for s in range(k):
        out_w[(long)i * ${k} + ${s}] = best${s};
        out_j[(long)i * ${k} + ${s}] = bj${s};
% endfor
    }
}
