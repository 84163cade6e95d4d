<%doc>
Split-free sums on the device: exact_fold's words rounded to float64 as the
host's ExactWords.value() rounds an array's (runtime/exact_sums.py): the
words from the top down, each scaled to its grid (exact) and added in
float64, a non-finite partials' sum winning; the same words give the same
bits here and there (no contraction, no fast-math: IEEE sums).  For a
device-resident update (passes/lloyd_update.py) that computes from the
totals what the host would.
Reads spec: nothing beyond the prelude (acc_double).
Input: 4 x size doubles (exact_fold's out), lsb (size exponents); output:
size doubles.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#pragma OPENCL FP_CONTRACT OFF

__kernel void exact_value(__global const double *restrict words, const long size,
                          __global const int *restrict lsb, __global double *restrict out)
{
    const long e = get_global_id(0);
    if (e >= size)
        return;
    double total = 0.0;
    for (int i = 2; i >= 0; --i)
        total += ldexp(words[i * size + e], lsb[e] + 40 * i);
    const double special = words[3 * size + e];
    out[e] = special != 0 ? special : total;
}
