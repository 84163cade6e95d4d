<%doc>
GMM E-step: per point, the weighted log-density of every component, their
log-sum-exp, the most likely component and (store_resp) the responsibilities.
Reads spec: d, wg, ppi (points per work-item), cchunk (components staged
in local memory at a time), stage_params (stage them; else read from global
memory), full
(covariance "full": packed upper-triangular precision Cholesky factors;
else "diag": their diagonal), store_resp.

The number of components k is a kernel argument, not a spec field: order
selection (mdl.py) runs k = n_components, n_components - 1, ... with one build.
Component record (CP reals):
  c_k = log w_k - D/2 log(2 pi) + log det U_k, then mu_k (D), then U_k: the
  upper triangle column by column (column j holds U[0..j][j], T = D(D+1)/2
  reals) or its diagonal (T = D).
log p_k(x) = c_k - 1/2 |(x - mu_k)^T U_k|^2: the point is centred on mu_k
first, so float32 keeps its digits far from the origin.

The log-sum-exp is taken online (running maximum and rescaled sum), so no
component's density underflows whatever d and k are; the per-point log p_k
are written to resp first and normalised in place once the sum is known.
Outputs: lse (n), labels (n), resp (k x n, component-major: coalesced),
per work-group sum of lse (acc_t; Kahan: sums then compensations) and the
count of points whose log-density is not finite.

tiled (diag only): the Mahalanobis terms of TM points x TN components as
register tiles (distance_tile.cl.mako, FORM sqdiff_scaled: ((x - mu) u)^2
summed over the features in order, as below -- the same bits), written as
log-densities to a local TM x TN tile; then each point's owner walks the
tile's components in increasing order with the same online log-sum-exp, so
every point's lse, label and responsibilities are the per-point kernel's.
Reads spec (tiled): tm, tn, rm, rn, kc, vw (distance_tile.cl.mako's fields;
wg = (tm / rm) * (tn / rn)); ppi and the staging fields are unused.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="tile" file="/distance_tile/distance_tile.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
#define D ${d}
#define WG ${wg}
#define PPI ${ppi}
#define CCH ${cchunk}
#define TILE (WG * PPI)
% if full:
#define T (D * (D + 1) / 2)
% else:
#define T D
% endif
#define CP (1 + D + T)
% if stage_params:
#define PARAM(j, e) lp[((j) - jc) * CP + (e)]
% else:
#define PARAM(j, e) params[(j) * CP + (e)]
% endif
<% unroll = "#pragma unroll" if d <= 32 else "" %>
% if tiled:
${tile.defines(c_pad=True, with_wg=False)}\
#define DP ((D + KC - 1) / KC * KC)
#define TNL (TN + 1)                    /* row stride of the log-density tile */
#define RPI ((TM + WG - 1) / WG)        /* tile rows (points) a work-item owns */
/* element e of the depth-kc chunk of the tile's points / of field off (mean:
   1, precision factor: 1 + D) of components jt..: zero outside the data */
#define X_AT(e, kc) (base + (e) / KC < n && (kc) + (e) % KC < D ? \
                     x[(base + (e) / KC) * stride + (kc) + (e) % KC] : (real_t)0)
#define P_AT(e, jt, kc, off) ((jt) + (e) / KC < k && (kc) + (e) % KC < D ? \
                              params[((jt) + (e) / KC) * CP + (off) + (kc) + (e) % KC] : (real_t)0)
${tiled_kernel()}
% else:

${signature()}\
{
    const int lid = get_local_id(0);
    const long g = get_group_id(0), groups = get_num_groups(0);
    __local acc_t scratch[WG];
% if stage_params:
    __local real_t lp[CCH * CP];
% endif
${tallies()}\
    const long first = g * tiles_per_group * TILE;
    for (long t = 0; t < tiles_per_group; ++t) {
        const long base = first + t * TILE;
        if (base >= n)
            break;                      /* uniform over the group */
        long pt[PPI];
        real_t xp[PPI][D];
        real_t run_max[PPI], run_sum[PPI];
        int best[PPI], saw_nan[PPI];
        #pragma unroll
        for (int p = 0; p < PPI; ++p) {
            const long i = base + p * WG + lid;
            pt[p] = i < n ? i : n - 1;  /* edge: score a valid point, drop it below */
            ${unroll}
            for (int c = 0; c < D; ++c)
                xp[p][c] = x[pt[p] * stride + c];
            run_max[p] = -INFINITY;
            run_sum[p] = 0;
            best[p] = 0;
            saw_nan[p] = 0;
        }
        for (int jc = 0; jc < k; jc += CCH) {
            const int jend = min(jc + CCH, k);
% if stage_params:
            /* the next chunk of component records (once if all fit) */
            if (k > CCH || t == 0) {
                barrier(CLK_LOCAL_MEM_FENCE);
                for (int e = lid; e < (jend - jc) * CP; e += WG)
                    lp[e] = params[jc * CP + e];
                barrier(CLK_LOCAL_MEM_FENCE);
            }
% endif
            for (int j = jc; j < jend; ++j) {
                const real_t cj = PARAM(j, 0);
                /* all PPI points at once: each record value is read once
                   from local memory for PPI fmas */
                real_t z[PPI][D], maha[PPI];
                ${unroll}
                for (int c = 0; c < D; ++c) {
                    const real_t mu = PARAM(j, 1 + c);
                    #pragma unroll
                    for (int p = 0; p < PPI; ++p)
                        z[p][c] = xp[p][c] - mu;
                }
                #pragma unroll
                for (int p = 0; p < PPI; ++p)
                    maha[p] = 0;
% if full:
                /* y_c = sum_{r <= c} z_r U[r][c]; maha = |y|^2 */
                ${unroll}
                for (int c = 0; c < D; ++c) {
                    real_t y[PPI];
                    #pragma unroll
                    for (int p = 0; p < PPI; ++p)
                        y[p] = 0;
                    ${unroll}
                    for (int r = 0; r <= c; ++r) {
                        const real_t u = PARAM(j, 1 + D + c * (c + 1) / 2 + r);
                        #pragma unroll
                        for (int p = 0; p < PPI; ++p)
                            y[p] = fma(z[p][r], u, y[p]);
                    }
                    #pragma unroll
                    for (int p = 0; p < PPI; ++p)
                        maha[p] = fma(y[p], y[p], maha[p]);
                }
% else:
                ${unroll}
                for (int c = 0; c < D; ++c) {
                    const real_t u = PARAM(j, 1 + D + c);
                    #pragma unroll
                    for (int p = 0; p < PPI; ++p) {
                        const real_t y = z[p][c] * u;
                        maha[p] = fma(y, y, maha[p]);
                    }
                }
% endif
                #pragma unroll
                for (int p = 0; p < PPI; ++p) {
                    const real_t logp = fma((real_t)-0.5, maha[p], cj);
                    const long i = base + p * WG + lid;
${lse_update("j", "p")}\
                }
            }
        }
        for (int p = 0; p < PPI; ++p) {
            const long i = base + p * WG + lid;
            if (i >= n)
                continue;
${point_result("p")}\
        }
    }
${group_result()}\
}
% endif
## the kernel's name and arguments (both forms)
<%def name="signature()">
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gmm_estep(__global const real_t *restrict x, const long n, const long stride,
               __global const real_t *restrict params,   /* k x CP */
               const int k,
               __global real_t *restrict lse,            /* n */
               __global int *restrict labels,            /* n */
               const int store_resp,
               __global real_t *restrict resp,           /* k x n (store_resp) */
               __global acc_t *restrict part_ll,         /* groups (x2 if Kahan) */
               __global int *restrict part_bad,          /* groups */
               const long tiles_per_group)
</%def>
## a work-item's sum of log-likelihoods (and its compensation) and bad count
<%def name="tallies()">
    acc_t ll = 0;
% if not acc_double:
    acc_t ll_comp = 0;
% endif
    int bad = 0;
</%def>
## component j's log-density logp of point i (slot u of the work-item's
## points) into the online log-sum-exp; stored in resp until normalised
<%def name="lse_update(j, u)">
                    saw_nan[${u}] |= isnan(logp);
                    if (store_resp && i < n)
                        resp[(long)(${j}) * n + i] = logp;
                    if (logp > run_max[${u}]) {
                        /* a new maximum: rescale the sum so far */
                        run_sum[${u}] = fma(run_sum[${u}], exp(run_max[${u}] - logp), (real_t)1);
                        run_max[${u}] = logp;
                        best[${u}] = ${j};
                    } else if (logp > -INFINITY) {
                        run_sum[${u}] += exp(logp - run_max[${u}]);
                    }
</%def>
## point i (slot u) once every component is seen: its lse, label, its term
## of the work-item's log-likelihood and its normalised responsibilities;
## inside the loop over the slots (a bad point continues to the next)
<%def name="point_result(u)">
            const real_t total = run_max[${u}] + log(run_sum[${u}]);
            lse[i] = total;
            labels[i] = best[${u}];
            if (saw_nan[${u}] || !isfinite(total)) {
                ++bad;
                continue;
            }
% if acc_double:
            ll += (acc_t)total;
% else:
${select.kahan_add("ll", "ll_comp", "total")}\
% endif
            if (store_resp)
                for (int j = 0; j < k; ++j)
                    resp[(long)j * n + i] = exp(resp[(long)j * n + i] - total);
</%def>
## the work-group's log-likelihood (and compensation) and bad count, summed
## in a fixed order and written by work-item 0
<%def name="group_result()">
    ll = group_sum(ll, scratch);
% if not acc_double:
    ll_comp = group_sum(ll_comp, scratch);
% endif
    const int total_bad = (int)group_sum((acc_t)bad, scratch);
    if (lid == 0) {
        part_ll[g] = ll;
% if not acc_double:
        part_ll[groups + g] = ll_comp;
% endif
        part_bad[g] = total_bad;
    }
</%def>
<%def name="tiled_kernel()">
${signature()}\
{
    const int lid = get_local_id(0);
    const int tx = lid % NX, ty = lid / NX;
    const long g = get_group_id(0), groups = get_num_groups(0);
    __local acc_t scratch[WG];
${tile.local_chunks(scaled=True)}\
    __local real_t lt[TM * TNL];
${tallies()}\
    const long first = g * tiles_per_group * TM;
    for (long t = 0; t < tiles_per_group; ++t) {
        const long base = first + t * TM;
        if (base >= n)
            break;                      /* uniform over the group */
        real_t run_max[RPI], run_sum[RPI];
        int best[RPI], saw_nan[RPI];
        #pragma unroll
        for (int u = 0; u < RPI; ++u) {
            run_max[u] = -INFINITY;
            run_sum[u] = 0;
            best[u] = 0;
            saw_nan[u] = 0;
        }
        for (int jt = 0; jt < k; jt += TN) {
${tile.accumulators("            ")}\
            for (int kc = 0; kc < DP; kc += KC) {
                barrier(CLK_LOCAL_MEM_FENCE);   /* the last readers of lx, lc, ls, lt are done */
${tile.stage_transposed("lx", "TMP", "TM", "X_AT(e, kc)")}\
${tile.stage_transposed("lc", "TNP", "TN", "P_AT(e, jt, kc, 1)")}\
${tile.stage_transposed("ls", "TNP", "TN", "P_AT(e, jt, kc, 1 + D)")}\
                barrier(CLK_LOCAL_MEM_FENCE);
${tile.multiply("sqdiff_scaled")}\
            }
% for q in range(rn):
            {
                const int j = jt + ${tile.col(q)};
                const real_t cj = j < k ? params[(long)j * CP] : 0;
  % for r in range(rm):
                lt[(${tile.row(r)}) * TNL + ${tile.col(q)}] = fma((real_t)-0.5, acc_${r}_${q}, cj);
  % endfor
            }
% endfor
            barrier(CLK_LOCAL_MEM_FENCE);
            /* my points' components of this tile, in increasing order */
            const int jn = min(TN, k - jt);
            #pragma unroll
            for (int u = 0; u < RPI; ++u) {
                const int row = lid + u * WG;
                const long i = base + row;
                if (row >= TM)
                    break;
                for (int jj = 0; jj < jn; ++jj) {
                    const real_t logp = lt[row * TNL + jj];
${lse_update("jt + jj", "u")}\
                }
            }
        }
        #pragma unroll
        for (int u = 0; u < RPI; ++u) {
            const int row = lid + u * WG;
            const long i = base + row;
            if (row >= TM || i >= n)
                continue;
${point_result("u")}\
        }
    }
${group_result()}\
}
</%def>
