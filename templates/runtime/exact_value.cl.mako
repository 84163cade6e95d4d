<%doc>
Split-free sums on the device: exact_fold's words rounded to float64 as the
host's ExactWords.value() rounds an array's (runtime/exact_sums.py; the
rounding is common/exact_words.cl.mako's), so the same words give the same
bits here and there.  For a device-resident update that computes from the
totals what the host would (passes/lloyd_shared.py, passes/gmm.py,
passes/cmeans.py; KMeans' one-device update rounds its folds' words in
lloyd_new_centers.cl.mako instead, a launch fewer).
Reads spec: nothing beyond the prelude (acc_double).
Input: 4 x size doubles (exact_fold's out), lsb (size exponents); output:
size doubles.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="words" file="/common/exact_words.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF
${words.rounded()}

__kernel void exact_value(__global const double *restrict words, const long size,
                          __global const int *restrict lsb, __global double *restrict out)
{
    const long e = get_global_id(0);
    if (e >= size)
        return;
    out[e] = exact_rounded(words, size, e, lsb[e]);
}
