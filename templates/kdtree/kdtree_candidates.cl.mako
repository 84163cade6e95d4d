<%doc>
The per-iteration leaf -> candidate mapping of the KD-tree pass, on the
device (no host round trip of the lists): for leaf L and model m, the
centroids of m whose least distance to L's box is not above the least
greatest distance of any centroid of m to that box (times 1 + eps, plus
tiny: a margin above the rounding of the distance sums in kdtree_stats, so a
dropped centroid can never be the nearest one there).
Reads spec: d.
Work-item (L, m) writes its list in ascending index order (the tie rule of
the statistics passes) and its length, which is at least 1.  The mappings
with a leaf per work-group make their leaf's lists themselves (leaf_lists,
in kdtree_stats.cl.mako): this kernel serves the distributed one.
</%doc>
<%inherit file="/prelude.cl.mako"/>
## the lists of one (leaf, model): the box's corners blo, bhi (D each), the
## model's centroids first..last of *centres* (rows of D), written as
## index (+ *offset*) to out[] in ascending order, their count to out_n (and
## the first to out_first, if given); the C names eps, tiny, D in scope
## (kdtree_stats.cl.mako calls it per group)
<%def name="leaf_lists(blo, bhi, centres, first, last, offset, out, out_n, out_first=None)">
    {
        acc_t bound = INFINITY;
        for (int j = ${first}; j < ${last}; ++j) {
            acc_t far = 0;
            for (int c = 0; c < D; ++c) {
                const acc_t v = ${centres}[j * D + c];
                const acc_t f = fmax(v - (acc_t)${blo}[c], (acc_t)${bhi}[c] - v);
                far += f * f;
            }
            bound = fmin(bound, far);
        }
        const acc_t limit = bound * (1 + eps) + tiny;
        int count = 0;
        for (int j = ${first}; j < ${last}; ++j) {
            acc_t near = 0;
            for (int c = 0; c < D; ++c) {
                const acc_t v = ${centres}[j * D + c];
                const acc_t f = fmax(fmax((acc_t)${blo}[c] - v, v - (acc_t)${bhi}[c]), (acc_t)0);
                near += f * f;
            }
            if (near <= limit) {
% if out_first is not None:
                if (count == 0)
                    ${out_first} = j${"" if offset is None else f" + {offset}"};
% endif
                (${out})[count++] = j${"" if offset is None else f" + {offset}"};
            }
        }
        ${out_n} = count;
    }
</%def>
#define D ${d}

__kernel void kdtree_candidates(
    __global const real_t *restrict lo, __global const real_t *restrict hi,  /* L x D */
    __global const real_t *restrict centers, __global const int *restrict model_off,
    const int n_models, const int n_leaves, const int kmax, const acc_t eps, const acc_t tiny,
    __global int *restrict cand,                /* L x n_models x kmax */
    __global int *restrict cand_n)              /* L x n_models */
{
    const long gid = get_global_id(0);
    if (gid >= (long)n_leaves * n_models)
        return;
    const long leaf = gid / n_models;
    const int m = (int)(gid % n_models);
${leaf_lists("(lo + leaf * D)", "(hi + leaf * D)", "centers", "model_off[m]", "model_off[m + 1]",
             None, "cand + gid * kmax", "cand_n[gid]")}\
}
