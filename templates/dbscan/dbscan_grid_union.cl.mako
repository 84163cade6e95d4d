<%doc>
The core rows' connected components over the grid in one pass: every pair
of core rows within eps (compared as dbscan_counts compares them, each pair
once) joins its rows' trees in ``parent``, a lock-free union-find over the
rows of a slab of the sorted grid (all of it on one device; by sorted row,
every row its own parent at first): a root links under the other root when
its row index (``index``) is the larger (atomic_cmpxchg, retried from the
new roots when another link came first), so a component's root is its row
of least index, whatever order the links come in, and a parent's index is
always less than its child's (no cycle).  Finds halve the path as they
climb (atomic_cmpxchg: a row's parent only moves to its grandparent, and
only where no other find moved it first).  Every access to ``parent`` is
atomic, so no read races a link.

The work-items are the slab's sorted rows [first, last) (dbscan_grid_counts);
the rows outside are its halo, the cells within eps of it.  A pair of two
answered rows is joined from its first sorted row, a pair of an answered
row and a halo row from the answered one: every pair with a row in
[first, last), none of two halo rows (another slab answers for those).
dbscan_grid_parents makes every row its own parent first;
dbscan_grid_roots then reads each row's root (the halo's too: the links
between slabs).  ``core`` in the slab's row order.  Reads spec: d, metric, g.
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
            atomic_cmpxchg(parent + i, up, above);
        i = above;
    }
}

static void unite(volatile __global int *parent, __global const int *restrict index,
                  int a, int b)
{
    for (;;) {
        a = find_root(parent, a);
        b = find_root(parent, b);
        if (a == b)
            return;
        if (index[a] < index[b]) {
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
                                const int first, const int last,
                                __global const char *restrict core,
                                volatile __global int *parent)
{
    const int p = first + (int)get_global_id(0);
    if (p >= last || !core[p])
        return;
    real_t own[D];
    for (int c = 0; c < D; ++c)
        own[c] = x[(size_t)p * D + c];
<%grid:for_candidates p="p" q="q">
                if (q == p || (q < p && q >= first) || !core[q])
                    continue;
                __global const real_t *other = x + (size_t)q * D;
${dist.pair_distance("own", "other", "dd")}\
                if (dd <= radius)
                    unite(parent, index, p, q);
</%grid:for_candidates>
}

/* every row its own parent, before the links (made here, not sent from the host) */
__kernel void dbscan_grid_parents(const int n, __global int *restrict parent)
{
    const int i = get_global_id(0);
    if (i < n)
        parent[i] = i;
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
