<%doc>
Greedy k-means++ step: the squared distance of every point to each candidate
centre, clipped by its distance to the centres chosen so far, and each
candidate's potential (weighted sum of those distances) per work-group.
With ``indexed`` the candidates are rows of x named by trial_rows (drawn on
the device by kmeanspp_draw.cl.mako) and the distances to the chosen centres
are row best[0] of cand_dist (the last step's chosen trial; each work-item
reads its rows' entries there before it writes the new ones): the device
loop of passes/kmeanspp.DeviceGreedy, with no host step between draws.
Reads spec: d, trials, wg, weighted, indexed.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#define D ${d}
#define T ${trials}
#define WG ${wg}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void candidate_potentials(
    __global const real_t *restrict x, const long n, const long stride,
    __global const real_t *restrict w,
% if indexed:
    __global const int *restrict trial_rows,   /* T rows of x: the candidates */
    __global const int *restrict best,         /* cand_dist's row of the closest */
% else:
    __global const real_t *restrict cand_rows,  /* T x D candidate centres */
    __global const acc_t *restrict closest,    /* n: distance to chosen centres */
% endif
    __global acc_t *restrict cand_dist,        /* T x n */
    __global acc_t *restrict part_pot,         /* groups x T */
    const long rows_per_group)
{
    const int lid = get_local_id(0);
    const long g = get_group_id(0);
    const long lo = g * rows_per_group, hi = min(n, lo + rows_per_group);
    __local acc_t scratch[WG];
% if indexed:
    const long near_row = (long)best[0] * n;
    long cand_at[T];
    for (int t = 0; t < T; ++t)
        cand_at[t] = (long)trial_rows[t] * stride;
% endif
    acc_t pot[T];
    for (int t = 0; t < T; ++t)
        pot[t] = 0;
    for (long i = lo + lid; i < hi; i += WG) {
% if weighted:
        const acc_t wi = w[i];
% else:
        const acc_t wi = 1;
% endif
        /* the row is read once, each value against every candidate: reading it
           once per candidate cost T times the traffic of a row that no cache
           keeps, which bounded the step on large rows; each
           candidate's sum still adds its features in order */
        acc_t s[T];
        for (int t = 0; t < T; ++t)
            s[t] = 0;
        for (int k = 0; k < D; ++k) {
            const acc_t xk = x[i * stride + k];
            for (int t = 0; t < T; ++t) {
% if indexed:
                const acc_t diff = xk - (acc_t)x[cand_at[t] + k];
% else:
                const acc_t diff = xk - (acc_t)cand_rows[t * D + k];
% endif
                s[t] += diff * diff;
            }
        }
% if indexed:
        const acc_t near = cand_dist[near_row + i];
% else:
        const acc_t near = closest[i];
% endif
        for (int t = 0; t < T; ++t) {
            const acc_t dist = fmin(s[t], near);
            cand_dist[t * n + i] = dist;
            pot[t] += wi * dist;
        }
    }
    for (int t = 0; t < T; ++t) {
        const acc_t total = group_sum(pot[t], scratch);
        if (lid == 0)
            part_pot[g * T + t] = total;
    }
}
