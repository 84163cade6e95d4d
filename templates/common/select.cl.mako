<%doc>
Selection and compensated sums shared by the kernels: a def library with no
kernel of its own, imported through
    <%namespace name="select" file="/common/select.cl.mako"/>
  row_winners, exact_distance, record_winner, assignment_partials: the Lloyd
      assignments (lloyd_gemm_assign, lloyd_mma_assign, lloyd_assign_accumulate
      and its rowwise form): a row's winner, its exact distance, the outputs;
  work_group_argmin, lower: hierarchical_linkage and hierarchical_prim
      (work-group argmin, partial minima of many work-groups);
  kahan_add: every float sum kept with a compensation (gmm_estep, gmm_mstep,
      lloyd_accumulate_sums, cmeans_pass, partition_moments, reduce_partials).

Reads spec (from the calling template's context): real_t; acc_t and
group_sum come with the prelude.  The assignment defs also read the caller's
macros and names: D, TM, WG, WEIGHT(i) and the kernel arguments x, stride, n,
centers, labels, min_dist, part_inertia, part_flags; the linkage defs WG.

Ties go to the lowest index everywhere: a candidate replaces the minimum only
if strictly smaller, or equal with a lower index -- a sequential argmin's
choice, whatever order the candidates meet in.
</%doc>
## candidate (v, i) into the running minimum (best, index); ties to the lower index
<%def name="lower(v, i, best, index)">if (${v} < ${best} || (${v} == ${best} && ${i} < ${index})) { ${best} = ${v}; ${index} = ${i}; }</%def>
## the exact (x - c)^2 distance of a row's winner, into *exact* of type t:
## the scores ||c||^2 - 2 x.c cancel, the inertia must not
<%def name="exact_distance(x_at, c_at, t='real_t')">
                /* the exact distance of the winner: no cancellation in the inertia */
                ${t} exact = 0;
                for (int c = 0; c < D; ++c) {
                    const ${t} diff = ${x_at} - ${c_at};
                    exact = fma(diff, diff, exact);
                }
</%def>
## row i's winner j with its exact distance: the assignment's outputs and tallies
<%def name="record_winner(i, j)">
                nonfinite += !isfinite(exact);
                inertia += (acc_t)WEIGHT(${i}) * exact;
                changed += labels[${i}] != ${j};
                labels[${i}] = ${j};
                min_dist[${i}] = exact;
</%def>
## the TM rows of the tile at *base*: each row's *lanes* partial winners
## (row_best, row_index: lanes per row, in lane order) reduced to one, whose
## exact distance is recorded; t the data's type
<%def name="row_winners(lanes, t='real_t')">
        for (int r = lid; r < TM; r += WG) {
            ${t} b = row_best[r * ${lanes}];
            int j = row_index[r * ${lanes}];
            for (int s = 1; s < ${lanes}; ++s) {
                const ${t} v = row_best[r * ${lanes} + s];
                const int vj = row_index[r * ${lanes} + s];
                ${lower("v", "vj", "b", "j")}
            }
            const long i = base + r;
            if (i < n) {
${exact_distance("x[i * stride + c]", "centers[(long)j * D + c]", t)}\
${record_winner("i", "j")}\
            }
        }
</%def>
## the work-group's inertia, changed and non-finite counts, summed in a fixed
## order and written by work-item 0 to the group's partials
<%def name="assignment_partials()">
    inertia = group_sum(inertia, scratch);
    const int total_changed = (int)group_sum((acc_t)changed, scratch);
    const int total_nonfinite = (int)group_sum((acc_t)nonfinite, scratch);
    if (lid == 0) {
        part_inertia[g] = inertia;
        part_flags[2 * g] = total_changed;
        part_flags[2 * g + 1] = total_nonfinite;
    }
</%def>
## argmin_local(): the (value, index) minimum of a work-group's local arrays,
## left in v[0], idx[0]; reduce_partials(): that of many work-groups' partial
## minima, reduced by one work-group
<%def name="work_group_argmin()">
/* (value, index) minimum of a work-group; ties to the lower index */
inline void argmin_local(__local real_t *v, __local int *idx, const int lid)
{
    for (int s = WG / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < s) {
            const real_t a = v[lid], b = v[lid + s];
            const int ia = idx[lid], ib = idx[lid + s];
            if (b < a || (b == a && ib < ia)) {
                v[lid] = b;
                idx[lid] = ib;
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* one work-group's reduction of the partial minima: leaves them in v[0], idx[0] */
inline void reduce_partials(const int groups, __global const real_t *restrict part_v,
                            __global const int *restrict part_i, __local real_t *v,
                            __local int *idx)
{
    const int lid = get_local_id(0);
    real_t mv = INFINITY;
    int mi = 0x7fffffff;
    for (int g = lid; g < groups; g += WG) {
        const real_t a = part_v[g];
        const int ia = part_i[g];
        ${lower("a", "ia", "mv", "mi")}
    }
    v[lid] = mv;
    idx[lid] = mi;
    argmin_local(v, idx, lid);
}
</%def>
## sum += value with compensation comp (Kahan: long runs of float additions
## keep ~float64 accuracy); sum and comp are float lvalues; a block of its own,
## so it stands anywhere a statement may
<%def name="kahan_add(sum, comp, value)">
    {   /* Kahan: long runs of float additions keep ~float64 accuracy */
        const float kahan_y = ${value} - ${comp};
        const float kahan_t = ${sum} + kahan_y;
        ${comp} = (kahan_t - ${sum}) - kahan_y;
        ${sum} = kahan_t;
    }
</%def>
