<%doc>
A split-free k-means iteration's whole update by one work-group
(passes/lloyd_update.py, small fits, unweighted rows): what four launches do
for a large fit, in one, with their code and so their bits --
  the block sums of the pass's distances (runtime/block_sums.cl.mako's
      group_block_sum, every block in turn) into the read slot's array;
  the exact folds of the sums' and weights' block partials into words
      (runtime/exact_fold.cl.mako's fold_words, every block by one item);
  the new centres from the words (lloyd_new_centers.cl.mako's new_center,
      a centre an item in turn), with the next pass's inputs;
  the summary into the results' slot (lloyd_summary.cl.mako's summary);
  with split (the "mma" variant), the new centres split into its tiles
      (lloyd_mma/lloyd_mma_split.cl.mako's split_one, every element in turn).
Each step's global writes are read by other items of the group after a
barrier with a global fence.  A small fit's iteration is bound by its
launches (about 15 us of host time each on an H200's host), not by this
group's work.
Reads spec: d, k, kp, layout, cb, rows, wg (a power of two), levels (as
lloyd_new_centers.cl.mako and lloyd_summary.cl.mako; words always), split,
dp and precision (as lloyd_mma_split.cl.mako).
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="exact" file="/common/exact_words.cl.mako"/>
<%namespace name="centre" file="/lloyd_update/lloyd_new_centers.cl.mako"/>
<%namespace name="summary" file="/lloyd_update/lloyd_summary.cl.mako"/>
<%namespace name="mma" file="/lloyd_mma/lloyd_mma_split.cl.mako"/>
% if split:
${mma.includes()}\
% endif
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define K ${k}
#define KP ${kp}
#define WG ${wg}
#define LEVELS ${levels}
#define BLOCK 128              /* numpy's PW_BLOCKSIZE */
#define STACK 64               /* deeper than any array's tree */
${exact.rounded()}
${exact.block_sum(False, "real_t")}
${exact.fold()}
${summary.functions()}
% if split:
${mma.definitions()}
% endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void update_group(
    __global const real_t *restrict min_dist,       /* n: the pass's distances */
    const long n,
    const long block_rows,
    __global double *restrict block_inertia,        /* blocks: their sums (the slot's) */
    __global const double *restrict part_sums,      /* blocks x K x D partials */
    __global const double *restrict part_weights,   /* blocks x K */
    const long blocks,
    __global double *restrict sum_words,            /* 4 x K x D (the fold's out) */
    __global const int *restrict sum_lsb,           /* K x D */
    __global double *restrict weight_words,         /* 4 x K */
    __global const int *restrict weight_lsb,        /* K */
    __global double *restrict sums,                 /* K x D: the words' values */
    __global double *restrict weights,              /* K: the same */
    __global const double *restrict old,            /* K x D centres of this pass */
    __global double *restrict next,                 /* K x D: the new ones */
    __global double *restrict moved,                /* K x D: (next - old)^2 */
    __global real_t *restrict centers,              /* the next pass's layout */
    __global real_t *restrict center_rows,          /* K x D (gemm, mma) */
    __global real_t *restrict norms,                /* KP; the padding stays +inf */
    __global const double *restrict part_inertia,   /* groups */
    __global const int *restrict part_flags,        /* groups x 2: changed, non-finite */
    const long groups,
    __global const int *restrict part_rechecked,    /* rechecked_groups: re-checked rows */
    const long rechecked_groups,                    /* 0 (the pass re-checks none) or groups */
    __global double *restrict results,              /* slots x 6 (lloyd_summary.cl.mako) */
    const long slot                                 /* the slot this one writes */
% if split:
    , __global uint4 *restrict center_tiles         /* KP x SLOTS (lloyd_mma_split.cl.mako) */
% if precision != "float32":
    , __global float *restrict center_rounding      /* KP x 2 */
% endif
% endif
    )
{
    __local double tree[WG];
    const long n_moved = (long)K * D;
    for (long b = 0; b < blocks; ++b) {
        const long lo = b * block_rows;
        const double total = group_block_sum(min_dist, min_dist, lo, min(n, lo + block_rows),
                                             tree);
        if (get_local_id(0) == 0)
            block_inertia[b] = total;
    }
    for (long e = get_local_id(0); e < n_moved + K; e += WG) {
        if (e < n_moved)
            fold_words(part_sums, 0, blocks, n_moved, e, sum_lsb[e], sum_words);
        else
            fold_words(part_weights, 0, blocks, K, e - n_moved, weight_lsb[e - n_moved],
                       weight_words);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int j = get_local_id(0); j < K; j += WG) {
${centre.new_center()}\
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
% if split:
    for (int e = get_local_id(0); e < KP * SLOTS; e += WG) {
${mma.split_one("e")}\
    }
% endif
${summary.summary()}\
}
