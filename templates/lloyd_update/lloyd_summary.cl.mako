<%doc>
What the host reads of a k-means iteration kept on the device
(passes/lloyd_update.py), by one work-group: the centre shift (the squared
moves summed) and the inertia (the pass's partials summed), each in numpy's
pairwise order, so that they are np.sum's bits (history_ records both); the
labels changed and the non-finite rows; whether a cluster is empty; the
rows a fast precision's pass re-checked (lloyd_mma_assign.cl.mako's
part_rechecked; none without).

numpy's pairwise sum of n values: n < 8 in order; n <= 128 in eight
interleaved accumulators, combined ((0+1)+(2+3))+((4+5)+(6+7)), then the
rest in order; else the first n/2 rounded down to a multiple of 8 and the
remainder, each so, added.  Here the tree's top LEVELS levels are split over
the work-items (an item takes the subtree its id's bits lead to; a node that
is already a leaf goes to its first item) and combined back in the same
order; each item walks its subtree with an explicit stack.
Reads spec: k, wg (a power of two).
</%doc>
<%inherit file="/prelude.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF
#define K ${k}
#define WG ${wg}
#define LEVELS ${levels}
#define BLOCK 128              /* numpy's PW_BLOCKSIZE */
#define STACK 64               /* deeper than any array's tree */

## numpy's pairwise sums by a work-group: also lloyd_update_group.cl.mako's
<%def name="functions()">\
static long half_of(const long n)
{
    const long h = n / 2;
    return h - h % 8;
}

/* The accumulators are volatile: Intel's CPU compiler reorders a loop's
   floating-point sums (it summed the eight accumulators' values in order). */
static double block_sum(__global const double *restrict a, const long n)
{
    if (n < 8) {
        volatile double r = -0.0;
        for (long i = 0; i < n; ++i)
            r += a[i];
        return r;
    }
    volatile double r[8];
    for (int j = 0; j < 8; ++j)
        r[j] = a[j];
    long i = 8;
    for (; i < n - n % 8; i += 8)
        for (int j = 0; j < 8; ++j)
            r[j] += a[i + j];
    volatile double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i)
        res += a[i];
    return res;
}

/* numpy's pairwise_sum of a[0, n), its recursion unrolled */
static double pairwise(__global const double *restrict a, const long n)
{
    long start[STACK], size[STACK];
    double left[STACK];
    int right[STACK];            /* whether the node's left half is summed */
    int top = 0;
    start[0] = 0;
    size[0] = n;
    for (;;) {
        if (size[top] > BLOCK) {   /* descend into the left half */
            right[top] = 0;
            start[top + 1] = start[top];
            size[top + 1] = half_of(size[top]);
            ++top;
            continue;
        }
        double value = block_sum(a + start[top], size[top]);
        for (;;) {                 /* climb while right halves complete */
            if (top == 0)
                return value;
            --top;
            if (!right[top])
                break;
            value = left[top] + value;
        }
        left[top] = value;         /* now the right half */
        right[top] = 1;
        const long h = half_of(size[top]);
        start[top + 1] = start[top] + h;
        size[top + 1] = size[top] - h;
        ++top;
    }
}

/* pairwise(a, n) by the whole work-group; the result in every item */
static double group_pairwise(__global const double *restrict a, const long n,
                             __local double *restrict vals)
{
    const int lid = get_local_id(0);
    long lo = 0, len = n;
    long sizes[LEVELS + 1];      /* this item's ancestors' sizes (0: not split) */
    int own = 1;
    for (int l = 0; l < LEVELS; ++l) {
        sizes[l] = own ? len : 0;
        if (!own || len <= BLOCK) {
            /* a leaf above the bottom level: its first item takes it */
            own = own && (lid & ((1 << (LEVELS - l)) - 1)) == 0;
            sizes[l] = 0;
            continue;
        }
        const long h = half_of(len);
        if ((lid >> (LEVELS - 1 - l)) & 1) {
            lo += h;
            len -= h;
        } else {
            len = h;
        }
    }
    vals[lid] = own ? pairwise(a + lo, len) : 0.0;
    for (int l = LEVELS - 1; l >= 0; --l) {
        barrier(CLK_LOCAL_MEM_FENCE);
        const int span = 1 << (LEVELS - l);
        if ((lid & (span - 1)) == 0 && sizes[l] > BLOCK)
            vals[lid] = vals[lid] + vals[lid + span / 2];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const double total = vals[0];
    barrier(CLK_LOCAL_MEM_FENCE);   /* vals is free again */
    return total;
}
</%def>
## the summary into results' slot *slot* (the kernel's argument names)
<%def name="summary()">\
    __global double *restrict result = results + 6 * slot;
    __local double vals[WG];
    __local long counts[3 * WG];
    __local int empty;
    const int lid = get_local_id(0);
    const double shift = group_pairwise(moved, n_moved, vals);
    const double inertia = group_pairwise(part_inertia, groups, vals);
    long changed = 0, nonfinite = 0, rechecked = 0;
    for (long g = lid; g < groups; g += WG) {
        changed += part_flags[2 * g];
        nonfinite += part_flags[2 * g + 1];
    }
    for (long g = lid; g < rechecked_groups; g += WG)
        rechecked += part_rechecked[g];
    counts[lid] = changed;
    counts[WG + lid] = nonfinite;
    counts[2 * WG + lid] = rechecked;
    if (lid == 0)
        empty = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = lid; j < K; j += WG)
        if (weights[j] == 0)
            atomic_or(&empty, 1);
    for (int s = WG / 2; s > 0; s /= 2) {
        if (lid < s) {
            counts[lid] += counts[lid + s];
            counts[WG + lid] += counts[WG + lid + s];
            counts[2 * WG + lid] += counts[2 * WG + lid + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        result[0] = shift;
        result[1] = inertia;
        result[2] = (double)counts[0];
        result[3] = (double)counts[WG];
        result[4] = empty;
        result[5] = (double)counts[2 * WG];
    }
</%def>
${functions()}
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void summarize(
    __global const double *restrict moved,          /* n_moved squared moves */
    const long n_moved,
    __global const double *restrict part_inertia,   /* groups */
    __global const int *restrict part_flags,        /* groups x 2: changed, non-finite */
    const long groups,
    __global const int *restrict part_rechecked,    /* rechecked_groups: re-checked rows */
    const long rechecked_groups,                    /* 0 (the pass re-checks none) or groups */
    __global const double *restrict weights,        /* K */
    __global double *restrict results,              /* slots x 6: shift, inertia, changed,
                                                       non-finite, empty, re-checked */
    const long slot)                                /* the slot this one writes */
{
${summary()}\
}
