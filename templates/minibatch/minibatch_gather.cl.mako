<%doc>
A mini-batch's rows gathered from the rows resident on the device
(passes/minibatch.py): out row i is row idx[i] of x, one value a work-item,
so a work-group reads runs of a row's consecutive values.
Reads spec: d.
</%doc>
<%inherit file="/prelude.cl.mako"/>

__kernel void minibatch_gather(__global const real_t *restrict x, const long stride,
                               __global const long *restrict idx, const long count,
                               __global real_t *restrict out)
{
    const long i = get_global_id(0);
    if (i >= count * ${d})
        return;
    const long row = i / ${d};
    out[i] = x[idx[row] * stride + (i - row * ${d})];
}
