<%doc>
One step of greedy k-means++ between two candidate_potentials launches
(kmeanspp_candidates.cl.mako, indexed), in one work-group, with no host
step: each trial's potential summed over the candidate kernel's groups in
group order (float64, or a Kahan pair), the least (the first of equals, as
numpy.argmin) chosen and recorded in chosen[step] (its cand_dist row becomes
the closest: best[0]); then, unless the k-th centre was that one, the next
trials drawn: target = uniforms[step * T + t] x the total potential, located
in the groups' inclusive prefix sums of the chosen trial's potentials (the
first group reaching it, as numpy.searchsorted side="left", clipped), then
in that group's rows by their running (w x) distances (the first row
reaching it; the group's last row where rounding leaves it short).  The step
is counter[0], incremented here; every argument stays the same from one
launch to the next.
Reads spec: trials, wg, blocks (most candidate groups), weighted.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#define T ${trials}
#define WG ${wg}
#define BLOCKS ${blocks}
#define LOADS 8

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void draw_trials(
    __global const acc_t *restrict part_pot,    /* groups x T */
    const int groups,
    __global const acc_t *restrict cand_dist,   /* T x n */
    const long n, const long rows_per_group,
    __global const real_t *restrict w,
    __global const acc_t *restrict uniforms,    /* (k - 1) x T */
    const int k,
    __global int *restrict counter,
    __global int *restrict trial_rows,          /* T */
    __global int *restrict best,
    __global int *restrict chosen)              /* k */
{
    const int lid = get_local_id(0);
    __local acc_t pots[T];
    __local acc_t prefix[BLOCKS];
    __local acc_t spans[WG];
    __local int chosen_trial;
    const int step = counter[0];
    for (int t = lid; t < T; t += WG) {
        acc_t s = 0;
#if !ACC_DOUBLE
        acc_t comp = 0;
#endif
        /* LOADS values read before they are added (in order): that many
           reads in flight, not one a dependent add */
        for (int g0 = 0; g0 < groups; g0 += LOADS) {
            acc_t v[LOADS];
            for (int j = 0; j < LOADS; ++j)
                v[j] = g0 + j < groups ? part_pot[(g0 + j) * T + t] : 0;
            for (int j = 0; j < LOADS && g0 + j < groups; ++j) {
#if ACC_DOUBLE
                s += v[j];
#else
                const acc_t y = v[j] - comp;
                const acc_t sum = s + y;
                comp = (sum - s) - y;
                s = sum;
#endif
            }
        }
        pots[t] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        int b = 0;
        for (int t = 1; t < T; ++t)
            if (pots[t] < pots[b])
                b = t;
        chosen_trial = b;
        chosen[step] = trial_rows[b];
        best[0] = b;
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    const int b = chosen_trial;
    if (step + 1 < k) {
        /* inclusive prefix sums of the groups' potentials: a span of groups
           a work-item, in order, then the spans' offsets in order */
        const int span = (groups + WG - 1) / WG;
        const int g0 = min(groups, lid * span), g1 = min(groups, g0 + span);
        acc_t s = 0;
        for (int g = g0; g < g1; ++g) {
            s += part_pot[g * T + b];
            prefix[g] = s;
        }
        spans[lid] = s;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            acc_t run = 0;
            for (int j = 0; j < WG; ++j) {
                const acc_t v = spans[j];
                spans[j] = run;
                run += v;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const acc_t before = spans[lid];
        for (int g = g0; g < g1; ++g)
            prefix[g] += before;
        barrier(CLK_LOCAL_MEM_FENCE);
        const acc_t total = prefix[groups - 1];
        const long near_row = (long)b * n;
        for (int t = lid; t < T; t += WG) {
            const acc_t target = uniforms[(long)step * T + t] * total;
            int lo = 0, hi = groups;
            while (lo < hi) {
                const int mid = lo + (hi - lo) / 2;
                if (prefix[mid] < target)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            const int block = min(lo, groups - 1);
            acc_t run = block ? prefix[block - 1] : 0;
            const long r0 = block * rows_per_group, r1 = min(n, r0 + rows_per_group);
            long found = r1 - 1;
            bool done = false;
            for (long i0 = r0; i0 < r1 && !done; i0 += LOADS) {
                acc_t v[LOADS];
                for (int j = 0; j < LOADS; ++j) {
                    const long i = min(i0 + j, r1 - 1);
% if weighted:
                    v[j] = (acc_t)w[i] * cand_dist[near_row + i];
% else:
                    v[j] = cand_dist[near_row + i];
% endif
                }
                for (int j = 0; j < LOADS && i0 + j < r1; ++j) {
                    run += v[j];
                    if (run >= target) {
                        found = i0 + j;
                        done = true;
                        break;
                    }
                }
            }
            trial_rows[t] = (int)found;
        }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (lid == 0)
        counter[0] = step + 1;
}
