/* Accumulation helpers shared by every kernel (included by the prelude).
 *
 * acc_t is double where the device has fp64.  Without it, sums are kept as a
 * Kahan pair (sum, compensation) so long runs of float additions keep
 * ~float64 accuracy; a buffer of such sums holds the compensations in its
 * second half, `comp_offset` elements after the sums.
 */
inline void acc_add_global(__global acc_t *buf, const long i, const long comp_offset,
                           const acc_t v)
{
#if ACC_DOUBLE
    buf[i] += v;
#else
    const float y = v - buf[comp_offset + i];
    const float t = buf[i] + y;
    buf[comp_offset + i] = (t - buf[i]) - y;
    buf[i] = t;
#endif
}

/* Fixed-order tree sum of one value per work-item; all work-items call it.
 * Returns the total on work-item 0 (others get a partial). */
inline acc_t group_sum(acc_t v, __local acc_t *scratch)
{
    const int lid = get_local_id(0), size = get_local_size(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = size / 2; s > 0; s >>= 1) {
        if (lid < s)
            scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const acc_t total = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

inline real_t sq_euclidean(__global const real_t *a, __global const real_t *b, const int d)
{
    real_t s = 0;
    for (int i = 0; i < d; ++i) {
        const real_t t = a[i] - b[i];
        s = fma(t, t, s);
    }
    return s;
}
