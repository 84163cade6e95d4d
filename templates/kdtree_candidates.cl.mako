<%doc>
The per-iteration leaf -> candidate mapping of the KD-tree pass, on the
device (no host round trip of the lists): for leaf L and model m, the
centroids of m whose least distance to L's box is not above the least
greatest distance of any centroid of m to that box (times 1 + eps, plus
tiny: a margin above the rounding of the distance sums in kdtree_stats, so a
dropped centroid can never be the nearest one there).
Reads spec: d.
Work-item (L, m) writes its list in ascending index order (the tie rule of
the statistics passes) and its length, which is at least 1.
</%doc>
<%inherit file="prelude.cl.mako"/>
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
    __global const real_t *blo = lo + leaf * D, *bhi = hi + leaf * D;
    const int first = model_off[m], last = model_off[m + 1];
    acc_t bound = INFINITY;
    for (int j = first; j < last; ++j) {
        acc_t far = 0;
        for (int c = 0; c < D; ++c) {
            const acc_t v = centers[j * D + c];
            const acc_t f = fmax(v - (acc_t)blo[c], (acc_t)bhi[c] - v);
            far += f * f;
        }
        bound = fmin(bound, far);
    }
    const acc_t limit = bound * (1 + eps) + tiny;
    int count = 0;
    for (int j = first; j < last; ++j) {
        acc_t near = 0;
        for (int c = 0; c < D; ++c) {
            const acc_t v = centers[j * D + c];
            const acc_t f = fmax(fmax((acc_t)blo[c] - v, v - (acc_t)bhi[c]), (acc_t)0);
            near += f * f;
        }
        if (near <= limit)
            cand[gid * kmax + count++] = j;
    }
    cand_n[gid] = count;
}
