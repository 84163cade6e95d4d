/* Fixed-point statistics in local memory (ensemble_stats, kdtree_stats):
 * 64-bit integers added atomically, in any order, to exact totals.
 *
 * STAT_WORDS 1 keeps each statistic as two 32-bit words, the low words
 * first and the high words HIGH_AT elements further on, and adds with 32-bit
 * atomics and an explicit carry: the same totals as a 64-bit add (modulo
 * 2^64, which no total reaches), on atomics every device has natively.
 * NVIDIA's runtime emulates 64-bit local atomics with compare-and-swap
 * loops: word pairs are faster there (devices.yaml).  STAT_WORDS 0: atom_add on longs.
 */
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#if STAT_WORDS
typedef uint stat_t;
inline void stat_add(__local uint *lo, const int high_at, const long v)
{
    const uint vlo = (uint)(ulong)v, vhi = (uint)((ulong)v >> 32);
    const uint old = atomic_add(lo, vlo);
    const uint hi = vhi + (uint)(old + vlo < old);   /* the low word's carry */
    if (hi)
        atomic_add(lo + high_at, hi);
}
#define STAT_ZERO(p, high_at, i) (p[i] = 0, p[(i) + (high_at)] = 0)
#define STAT_GET(p, high_at, i) ((long)(((ulong)p[(i) + (high_at)] << 32) | p[i]))
#else
typedef long stat_t;
#define stat_add(p, high_at, v) atom_add(p, v)
#define STAT_ZERO(p, high_at, i) (p[i] = 0)
#define STAT_GET(p, high_at, i) (p[i])
#endif
