<%doc>
The core rows' connected components over the grid in one pass: every pair
of core rows within eps (compared as dbscan_counts compares them, each pair
once: from its first sorted row) joins its rows' trees in ``parent`` (by row
index, parent[i] <= i, every row its own parent at first), a lock-free
union-find: a root links under the other root when it is the larger index
(atomic_cmpxchg, retried from the new roots when another link came first),
so a component's root is its least row index, whatever order the links come
in.  Finds halve the path as they climb (atomic_min: a row's parent only
ever moves to an ancestor, toward the root).  Every access to ``parent``
is atomic, so no read races a link.  dbscan_grid_roots then reads each
row's root.  ``core`` in the grid's row order.  Reads spec: d, metric, g.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="dist" file="/mst/mst_distance.cl.mako"/>
<%namespace name="grid" file="/grid/grid_cells.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
${grid.lower_bound()}

static int find_root(volatile __global int *parent, int i)
{
    for (;;) {
        const int up = atomic_or(parent + i, 0);
        if (up == i)
            return i;
        const int above = atomic_or(parent + up, 0);
        if (above != up)
            atomic_min(parent + i, above);
        i = above;
    }
}

static void unite(volatile __global int *parent, int a, int b)
{
    for (;;) {
        a = find_root(parent, a);
        b = find_root(parent, b);
        if (a == b)
            return;
        if (a < b) {
            const int t = a;
            a = b;
            b = t;
        }
        if (atomic_cmpxchg(parent + a, a, b) == a)
            return;
    }
}

__kernel void dbscan_grid_union(__global const real_t *restrict x, const int n,
                                const real_t radius, __global const long *restrict keys,
                                __global const long *restrict shape,
                                __global const int *restrict index,
                                __global const char *restrict core,
                                volatile __global int *parent)
{
    const int p = get_global_id(0);
    if (p >= n || !core[p])
        return;
    real_t own[D];
    for (int c = 0; c < D; ++c)
        own[c] = x[(size_t)p * D + c];
    const int i = index[p];
<%grid:for_candidates p="p" q="q">
                if (q <= p || !core[q])
                    continue;
                __global const real_t *other = x + (size_t)q * D;
${dist.pair_distance("own", "other", "dd")}\
                if (dd <= radius)
                    unite(parent, i, index[q]);
</%grid:for_candidates>
}

/* each row's root once the links are made (no link runs beside it) */
__kernel void dbscan_grid_roots(const int n, __global const int *restrict parent,
                                __global int *restrict root)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    int r = i;
    while (parent[r] != r)
        r = parent[r];
    root[i] = r;
}
