<%doc>
Rows moved between two orders of the same rows on the device
(passes/permute.py): the grid's sorted rows and the caller's row order
(passes/grid.py), so that per-row values cross to the host in the order it
holds them and no host array is permuted.  ``order[p]`` is the row (in
``src`` for permute_gather, in ``dst`` for the scatters) that position p
stands for, a permutation of 0 ... n - 1; one work-item a position.  The
values are moved as bits, so one variant serves every type of a size.
permute_scatter_positions: ``src`` holds positions (int), each written as
the row it stands for (a sorted row's root, by the roots' row indices).
Reads spec: item (bytes a value: 1, 2, 4 or 8), width (values a row).
</%doc>
<%inherit file="/prelude.cl.mako"/>
<% value = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}[item] %>
#define WIDTH ${width}
typedef ${value} value_t;

/* dst[p] = src[order[p]], row by row */
__kernel void permute_gather(const int n, __global const int *restrict order,
                             __global const value_t *restrict src,
                             __global value_t *restrict dst)
{
    const int p = get_global_id(0);
    if (p >= n)
        return;
    __global const value_t *from = src + (size_t)order[p] * WIDTH;
    for (int c = 0; c < WIDTH; ++c)
        dst[(size_t)p * WIDTH + c] = from[c];
}

/* dst[order[p]] = src[p], row by row */
__kernel void permute_scatter(const int n, __global const int *restrict order,
                              __global const value_t *restrict src,
                              __global value_t *restrict dst)
{
    const int p = get_global_id(0);
    if (p >= n)
        return;
    __global value_t *to = dst + (size_t)order[p] * WIDTH;
    for (int c = 0; c < WIDTH; ++c)
        to[c] = src[(size_t)p * WIDTH + c];
}

/* dst[order[p]] = order[src[p]]: positions scattered as the rows they stand for */
__kernel void permute_scatter_positions(const int n, __global const int *restrict order,
                                        __global const int *restrict src,
                                        __global int *restrict dst)
{
    const int p = get_global_id(0);
    if (p >= n)
        return;
    dst[order[p]] = order[src[p]];
}
