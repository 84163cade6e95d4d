<%doc>
The ensemble's model update on the device (ensemble_update.py): from the
statistics pass's fixed-point totals, each model's new centroids, in
float64 and rounded to the data's type for the next pass, and its centre
shift, so that an iteration needs no host round trip but a small read.
Reads spec: d, wg (needs double: acc_double).

Bit for bit the host's update (lloyd_loop.host_update after
FixedPoint.to_float): weight w = count / sw, sum = total / sx + w * shift,
centre = sum / w, shift = the squared moves summed in centroid then
dimension order, with no contraction into FMAs.  A work-group per model, a
work-item per centroid row: the rows' loads overlap (one work-item walking a
model's rows waits on each in turn),
and the first work-item sums the rows' squared moves in order.  A model with
an empty cluster, or whose shift is within rounding of tol, is flagged and
left as it was: the host takes that iteration (relocation, KMeans's own
summation order).  The totals are zeroed once read, for the next pass.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF
#define D ${d}
#define WG ${wg}
#define FLAG_EMPTY 1          /* a cluster of the model has no weight */
#define FLAG_NEAR_TOL 2       /* the shift is too close to tol to decide here */

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void update_models(
    __global long *restrict sums,             /* C x D fixed-point totals; zeroed */
    __global long *restrict counts,           /* C fixed-point weights; zeroed */
    __global const double *restrict shift,    /* D: fixed-point origin */
    const double sx, const double sw,         /* fixed-point scales */
    __global const int *restrict model_off,   /* M + 1 */
    const int n_models, const double tol,
    __global const double *restrict old,      /* C x D centres of this iteration */
    __global double *restrict next,           /* C x D: the new ones */
    __global real_t *restrict rounded,        /* C x D: the new ones, for the next pass */
    __global double *restrict result)         /* M shifts, then M flags */
{
    const int m = get_group_id(0), lid = get_local_id(0);
    const int lo = model_off[m], hi = model_off[m + 1];
    __local int empty;
    __local double rows[WG];
    if (lid == 0)
        empty = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = lo + lid; j < hi; j += WG)
        if (counts[j] == 0)
            atomic_or(&empty, FLAG_EMPTY);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int flags = empty;
    double moved = 0;                          /* the first work-item's */
    for (int base = lo; base < hi && !flags; base += WG) {
        const int j = base + lid;
        double row = 0;
        if (j < hi) {
            const double w = (double)counts[j] / sw;
            for (int c = 0; c < D; ++c) {
                const long e = (long)j * D + c;
                const double total = (double)sums[e] / sx + w * shift[c];
                const double centre = total / w;
                const double step = centre - old[e];
                row += step * step;
                next[e] = centre;
                rounded[e] = (real_t)centre;
            }
        }
        rows[lid] = row;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0)
            for (int r = 0; r < min(WG, hi - base); ++r)
                moved += rows[r];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        /* the host's order (lloyd_loop.sequential_shifts); near tol the host
           takes the iteration and sums as KMeans does (numpy's order) */
        const int near = !flags && fabs(moved - tol) <= 1e-9 * fmax(tol, 1e-300);
        result[m] = moved;
        result[n_models + m] = flags | (near ? FLAG_NEAR_TOL : 0);
    }
    /* the next pass adds to zero: no fill of the statistics between passes
       (a work-item zeroes the rows it read) */
    for (int j = lo + lid; j < hi; j += WG) {
        counts[j] = 0;
        for (int c = 0; c < D; ++c)
            sums[(long)j * D + c] = 0;
    }
}
