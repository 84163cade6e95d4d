<%doc>
Rows stored at 2 bytes a value widened to float32 (a chunk of a packed
shard, parallel/shard.py): IEEE half through vload_half (core OpenCL, no
cl_khr_fp16 needed), bfloat16 as the top 16 bits of a float32.  Exact: every
half and every bfloat16 is a float32.
Reads spec: packed ("float16" or "bfloat16").
</%doc>
<%inherit file="/prelude.cl.mako"/>

__kernel void widen_rows(__global const ushort *restrict src, const long first,
                         const long count, __global float *restrict dst)
{
    const long i = get_global_id(0);
    if (i >= count)
        return;
% if packed == "float16":
    dst[i] = vload_half(first + i, (__global const half *)src);
% else:
    dst[i] = as_float((uint)src[first + i] << 16);
% endif
}
