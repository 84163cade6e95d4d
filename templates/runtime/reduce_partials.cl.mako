<%doc>
Sum per-work-group partial statistics in a fixed order, on the device, so only
the reduced statistics travel to the host.
Reads spec: acc_double.
Input: groups x size values (then, for Kahan sums, their compensations);
output: size values in double, or hi and lo float pairs without fp64.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>

__kernel void reduce_partials(__global const acc_t *restrict part, const long groups,
                              const long size, __global acc_t *restrict out)
{
    const long e = get_global_id(0);
    if (e >= size)
        return;
% if acc_double:
    acc_t s = 0;
    for (long g = 0; g < groups; ++g)
        s += part[g * size + e];
    out[e] = s;
% else:
    /* Kahan over the slab sums; their own compensations summed beside */
    float s = 0, comp = 0, lo = 0;
    for (long g = 0; g < groups; ++g) {
${select.kahan_add("s", "comp", "part[g * size + e]")}\
        lo -= part[(groups + g) * size + e];
    }
    out[e] = s;
    out[size + e] = lo - comp;
% endif
}
