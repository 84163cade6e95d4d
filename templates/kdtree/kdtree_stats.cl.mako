<%doc>
The KD-tree-pruned statistics pass (concatenated parallelism over the leaves
of a KD-tree): the rows are stored leaf by leaf, and a point of leaf L is
compared, for each model m, only with the candidate centroids kept for
(L, m) (kdtree_candidates.cl.mako: those that can be nearest to some point
of L's box).
Reads spec: mapping, d, wg, distributed (the models visited from model
lid mod M, as in ensemble_stats.cl.mako), weighted, word_atomics (local
statistics as 32-bit word pairs: kernels_cl/local_stats.cl).
  "direct":      a leaf per work-group at a time (persistent groups walk the
                 leaves g, g + G, ...); statistics in local memory.  The
                 group first makes the leaf's candidate lists of the
                 launch's models (kdtree_candidates.cl.mako's leaf_lists;
                 each list's length and first entry kept in local memory
                 too, read there: no round trip through global memory for
                 a leaf's single-candidate models), then lists the models
                 with more than one candidate (local memory): its points
                 visit only those.
  "distributed": a work-group spans leaves: consecutive work-items take
                 points of consecutive leaves, so they tend to update
                 different centroids (less local atomic contention, but
                 scattered reads of the rows).
  "replicated":  a leaf per work-group (its lists made as in "direct"), and
                 every work-item keeps its own statistics in global memory
                 (no atomics, no conflicts); kdtree_aggregate.cl.mako sums
                 the replicas.
A (leaf, model) pair left with a single candidate takes the whole leaf at
once: the leaf's fixed-point sums (leaf_fx, summed on the host from the same
per-point values) are added to that centroid, and its points skip the model
(the filtering algorithm's shortcut; in integers the totals are unchanged).
Centroids are staged in local memory in every mapping.  Sums are fixed
point exactly as in ensemble_stats.cl.mako (same rounding, same distance sum,
ties to the lowest index), so the statistics equal the brute-force pass bit
for bit.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="candidates" file="/kdtree/kdtree_candidates.cl.mako"/>
#define D ${d}
#define STAT_WORDS ${int(word_atomics and mapping != "replicated")}
<%include file="/local_stats.cl"/>
#define WG ${wg}
% if weighted:
#define WEIGHT(i) w[i]
% else:
#define WEIGHT(i) ((real_t)1)
% endif

% if mapping == "distributed":
#define OPEN_MODEL(open, t) (t)                 /* every model of the launch */
/* the length and first entry of (leaf, model t)'s list: list is its index */
#define LIST_COUNT(list, t) (cand_n[list])
#define LIST_FIRST(list, t) (cand[(list) * kmax])
% else:
#define OPEN_MODEL(open, t) (open[t])           /* the leaf's listed models */
#define LIST_COUNT(list, t) (lists[t])
#define LIST_FIRST(list, t) (lists[n_models + (t)])
% endif
<% lists_arg = "" if mapping == "distributed" else ", __local const int *lists" %>\

/* One point against its leaf's candidates of the n_open models to score
 * (the launch's models, or the leaf's list of those with several). */
inline void point_stats(
    const long i, const int leaf, const int lid,
    __global const real_t *restrict x, __global const real_t *restrict w,
    __local const real_t *lc, __global const int *restrict model_off,
    const int first_model, __local const int *open, const int n_open, const int all_models,
    const int n_models${lists_arg}, const int c_base,
    __global const int *restrict cand, __global const int *restrict cand_n, const int kmax,
    __global const acc_t *restrict shift, const acc_t sx, const acc_t sw,
% if mapping == "replicated":
    __global long *restrict mine, const int nc)
% else:
    __local stat_t *ls, __local stat_t *lw, const int nc)
% endif
{
    real_t xp[D];
    long fv[D];
    for (int c = 0; c < D; ++c) {
        xp[c] = x[i * D + c];
        fv[c] = convert_long_rte((acc_t)WEIGHT(i) * ((acc_t)xp[c] - shift[c]) * sx);
    }
    const long fw = convert_long_rte((acc_t)WEIGHT(i) * sw);
% if distributed:
    const int first_visit = lid % max(n_open, 1);
% endif
    for (int t = 0; t < n_open; ++t) {
% if distributed:
        /* distributed order: (lid + t) mod n_open, without a division each time */
        const int visit = first_visit + t < n_open ? first_visit + t : first_visit + t - n_open;
        const int m = first_model + OPEN_MODEL(open, visit);
% else:
        const int m = first_model + OPEN_MODEL(open, t);
% endif
        const long list = (long)leaf * all_models + m;
        __global const int *js = cand + list * kmax;
        const int count = LIST_COUNT(list, m - first_model);
        if (count == 1)
            continue;                                       /* taken as a whole leaf */
        real_t best = INFINITY;
        int bj = js[0] - c_base;
        for (int q = 0; q < count; ++q) {                   /* ascending indices */
            const int j = js[q] - c_base;
            real_t s = 0;
            for (int c = 0; c < D; ++c) {
                const real_t diff = xp[c] - lc[j * D + c];
                s = fma(diff, diff, s);
            }
            if (s < best) {
                best = s;
                bj = j;
            }
        }
% if mapping == "replicated":
        for (int c = 0; c < D; ++c)
            mine[bj * D + c] += fv[c];
        mine[nc * D + bj] += fw;
% else:
        for (int c = 0; c < D; ++c)
            stat_add(ls + bj * D + c, nc * D, fv[c]);
        stat_add(lw + bj, nc, fw);
% endif
    }
}

/* The models of the launch (from the t0-th, every step-th) that have a
 * single candidate in *leaf* get the leaf's sums added at once. */
inline void leaf_stats(
    const int leaf, const int t0, const int step,
    __global const long *restrict leaf_fx, __global const int *restrict cand,
    __global const int *restrict cand_n, const int kmax,
    const int first_model, const int n_models, const int all_models${lists_arg},
    const int c_base,
% if mapping == "replicated":
    __global long *restrict mine, const int nc)
% else:
    __local stat_t *ls, __local stat_t *lw, const int nc)
% endif
{
    for (int t = t0; t < n_models; t += step) {
        const long list = (long)leaf * all_models + first_model + t;
        if (LIST_COUNT(list, t) != 1)
            continue;
        const int j = LIST_FIRST(list, t) - c_base;
        __global const long *fx = leaf_fx + (long)leaf * (D + 1);
% if mapping == "replicated":
        for (int c = 0; c < D; ++c)
            mine[j * D + c] += fx[c];
        mine[nc * D + j] += fx[D];
% else:
        for (int c = 0; c < D; ++c)
            stat_add(ls + j * D + c, nc * D, fx[c]);
        stat_add(lw + j, nc, fx[D]);
% endif
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void kdtree_stats(
    __global const real_t *restrict x,          /* n x D, rows in leaf order */
    __global const real_t *restrict w,          /* n, leaf order (if weighted) */
    __global const real_t *restrict centers,    /* C x D packed */
    __global const int *restrict model_off,
    const int first_model, const int n_models, const int all_models,
    __global const int *restrict leaf_start,    /* n_leaves + 1 */
    const int n_leaves, const int max_leaf,
<% lists = "" if mapping != "distributed" else "const " %>\
    __global ${lists}int *restrict cand,        /* n_leaves x all_models x kmax */
    __global ${lists}int *restrict cand_n,      /* n_leaves x all_models (made here
                                                   unless distributed) */
    const int kmax,
    __global const long *restrict leaf_fx,      /* n_leaves x (D + 1) fixed-point sums */
    __global const acc_t *restrict shift, const acc_t sx, const acc_t sw,
% if mapping != "distributed":
    __global const real_t *restrict lo, __global const real_t *restrict hi,  /* boxes */
    const acc_t eps, const acc_t tiny,          /* as kdtree_candidates.cl.mako */
% endif
% if mapping == "replicated":
    __global long *restrict replicas,           /* work-items x (nc * (D + 1)) */
% else:
    __global long *restrict sums, __global long *restrict counts,
% endif
    __local real_t *lc
% if mapping != "replicated":
    , __local stat_t *ls, __local stat_t *lw
% endif
% if mapping != "distributed":
    , __local int *open      /* 3 n_models + 1: a leaf's list of models to score, its
                                length, then every model's list length, first entry */
% endif
    )
{
    const int lid = get_local_id(0);
    const int g = get_group_id(0), groups = get_num_groups(0);
    const int c_base = model_off[first_model];
    const int nc = model_off[first_model + n_models] - c_base;
    for (int e = lid; e < nc * D; e += WG)
        lc[e] = centers[c_base * D + e];
% if mapping == "replicated":
    __global long *mine = replicas + get_global_id(0) * (long)(nc * (D + 1));
    for (int e = 0; e < nc * (D + 1); ++e)
        mine[e] = 0;
% else:
    for (int e = lid; e < nc * D; e += WG)
        STAT_ZERO(ls, nc * D, e);
    for (int e = lid; e < nc; e += WG)
        STAT_ZERO(lw, nc, e);
% endif
    barrier(CLK_LOCAL_MEM_FENCE);

% if mapping == "distributed":
    const long T = (long)groups * WG;
    for (long s = get_global_id(0); s < (long)n_leaves * max_leaf; s += T) {
        const int leaf = (int)(s % n_leaves);
        const long i = leaf_start[leaf] + s / n_leaves;
        if (s < n_leaves)           /* the leaf's first slot adds its whole-leaf models */
            leaf_stats(leaf, 0, 1, leaf_fx, cand, cand_n, kmax, first_model, n_models,
                       all_models, c_base, ls, lw, nc);
        if (i < leaf_start[leaf + 1])
            point_stats(i, leaf, lid, x, w, lc, model_off, first_model, 0, n_models,
                        all_models, n_models, c_base, cand, cand_n, kmax, shift, sx, sw,
                        ls, lw, nc);
    }
% else:
    __local int *lists = open + n_models + 1;
    for (int leaf = g; leaf < n_leaves; leaf += groups) {
        barrier(CLK_LOCAL_MEM_FENCE);   /* the previous leaf's lists are done with */
        /* the leaf's candidate lists of the launch's models, made here (no
           launch of kdtree_candidates): a work-item per model */
        for (int t = lid; t < n_models; t += WG) {
            const long list = (long)leaf * all_models + first_model + t;
            __global int *out = cand + list * kmax;
${candidates.leaf_lists("(lo + (long)leaf * D)", "(hi + (long)leaf * D)", "lc",
                        "model_off[first_model + t] - c_base",
                        "model_off[first_model + t + 1] - c_base", "c_base", "out",
                        "cand_n[list] = lists[t]", "lists[n_models + t]")}\
        }
        if (lid == 0)
            open[n_models] = 0;
        /* the lists' lengths and first entries are the group's to read
           (local), the longer lists too (global) */
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        leaf_stats(leaf, lid, WG, leaf_fx, cand, cand_n, kmax, first_model, n_models,
                   all_models, lists, c_base,
  % if mapping == "replicated":
                   mine, nc);
  % else:
                   ls, lw, nc);
  % endif
        /* the models whose points this leaf scores: those with several
           candidates (in any order: the integer sums do not mind) */
        for (int t = lid; t < n_models; t += WG)
            if (lists[t] > 1)
                open[atomic_inc(open + n_models)] = t;
        barrier(CLK_LOCAL_MEM_FENCE);
        const int n_open = open[n_models];
        /* most leaves have none to score: their rows are not even read */
        for (long i = leaf_start[leaf] + lid; n_open && i < leaf_start[leaf + 1]; i += WG)
            point_stats(i, leaf, lid, x, w, lc, model_off, first_model, open, n_open,
                        all_models, n_models, lists, c_base, cand, cand_n, kmax, shift, sx,
                        sw,
  % if mapping == "replicated":
                        mine, nc);
  % else:
                        ls, lw, nc);
  % endif
    }
% endif

% if mapping != "replicated":
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < nc * D; e += WG) {
        const long v = STAT_GET(ls, nc * D, e);
        if (v != 0)
            atom_add(sums + c_base * D + e, v);
    }
    for (int e = lid; e < nc; e += WG) {
        const long v = STAT_GET(lw, nc, e);
        if (v != 0)
            atom_add(counts + c_base + e, v);
    }
% endif
}
