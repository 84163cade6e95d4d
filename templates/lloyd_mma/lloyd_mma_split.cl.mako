<%doc>
The centres of the "mma" Lloyd variant in its B fragments' order
(center_tiles of lloyd_mma_assign.cl.mako), split once an iteration.
Reads spec: d, k, dp (d padded to 8), kp (k padded to the chunk).

Centroid j's row holds DP / 2 uint4 slots; slot p is the lane tq = s % 4 of
k8 step s / 4, where s = p ^ SWIZZLE(j): big and small parts of dimension
8 (s / 4) + tq, then of that + 4.  With an even number of k8 steps the rows'
length is a multiple of 32 banks, and odd rows swap the slots of even and
odd steps, so that the fragment reads of a warp's 8 rows do not collide.
</%doc>
<%inherit file="prelude.cl.mako"/>
<%include file="tf32_split.cl"/>
#define D ${d}
#define K ${k}
#define KP ${kp}
#define SLOTS ${dp // 2}
#define SWIZZLE(j) (${int(dp // 8 % 2 == 0)} * ((j) & 1) << 2)

__kernel void split_centers(
    __global const float *restrict centers,   /* K x D */
    __global uint4 *restrict center_tiles)    /* KP x SLOTS */
{
    const int e = get_global_id(0);
    if (e >= KP * SLOTS)
        return;
    const int j = e / SLOTS, s = (e % SLOTS) ^ SWIZZLE(j);
    const int c = s / 4 * 8 + s % 4;
    __global const float *row = centers + (long)j * D;
    center_tiles[e] = tf32_split2(j < K && c < D ? row[c] : 0.0f,
                                  j < K && c + 4 < D ? row[c + 4] : 0.0f);
}
