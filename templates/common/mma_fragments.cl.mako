<%doc>
The tensor-core products of the 3xTF32 kernels (gmm_mma_estep,
gmm_mma_mstep, cmeans_mma_pass): MMA(d, a0..a3, b0, b1), one m16n8k8 TF32
product into the four accumulators d##0..d##3 (inline PTX mma.sync, or with
``emulate`` the same fragment layout through local memory, so that CPU
runtimes and oclgrind run every other line of the kernel); tf32(v), v
rounded to TF32 (nearest, ties away); SPLIT(b, s, v), v's big and small
TF32 parts; warp_any(v) (PTX only: vote.sync.any).  The emulated MMA reads the kernel's ``emulated`` (__local uint
[WG * 6]), ``warp`` and ``lane``; every work-item of the group must reach
every MMA (none under a branch).
</%doc>
<%def name="products(emulate)">\
% if emulate:
<%include file="/tf32_split.cl"/>
/* emulate: the m16n8k8 product through local memory (the fragments' PTX
   layout), so that CPU runtimes run the kernel's every other line; every
   work-item of the group reaches every MMA (no MMA under a branch) */
#define MMA(d, a0, a1, a2, a3, b0, b1) \
    mma_emulated(&d##0, &d##1, &d##2, &d##3, a0, a1, a2, a3, b0, b1, emulated + warp * 192, lane)
inline void mma_emulated(float *d0, float *d1, float *d2, float *d3, const uint a0,
                         const uint a1, const uint a2, const uint a3, const uint b0,
                         const uint b1, __local uint *s, const int lane)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    s[lane * 6] = a0;
    s[lane * 6 + 1] = a1;
    s[lane * 6 + 2] = a2;
    s[lane * 6 + 3] = a3;
    s[lane * 6 + 4] = b0;
    s[lane * 6 + 5] = b1;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int gq = lane / 4, tq = lane % 4;
    /* A[r][c]: lane (r % 8) * 4 + c % 4, register a0 / a1 (r >= 8) / a2 (c >= 4) / a3;
       B[c][col]: lane col * 4 + c % 4, register b0 / b1 (c >= 4) */
    for (int c = 0; c < 8; ++c) {
        const float lo = as_float(s[(gq * 4 + c % 4) * 6 + (c >= 4 ? 2 : 0)]);
        const float hi = as_float(s[(gq * 4 + c % 4) * 6 + (c >= 4 ? 3 : 1)]);
        const float e0 = as_float(s[((2 * tq) * 4 + c % 4) * 6 + 4 + (c >= 4)]);
        const float e1 = as_float(s[((2 * tq + 1) * 4 + c % 4) * 6 + 4 + (c >= 4)]);
        *d0 = fma(lo, e0, *d0);
        *d1 = fma(lo, e1, *d1);
        *d2 = fma(hi, e0, *d2);
        *d3 = fma(hi, e1, *d3);
    }
}

/* v rounded to TF32, nearest, ties away */
inline uint tf32(const float v)
{
    return tf32_bits(v);
}
% else:
/* d##0 ... d##3 += A (a0..a3) x B (b0, b1), one m16n8k8 product */
#define MMA(d, a0, a1, a2, a3, b0, b1) \
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 " \
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};" \
        : "+f"(d##0), "+f"(d##1), "+f"(d##2), "+f"(d##3) \
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))

/* whether v is non-zero in any lane of the warp (every lane reaches it) */
inline int warp_any(const int v)
{
    uint r;
    asm("{.reg .pred p, q; setp.ne.u32 p, %1, 0; vote.sync.any.pred q, p, 0xffffffff; "
        "selp.u32 %0, 1, 0, q;}" : "=r"(r) : "r"(v));
    return r;
}

/* v rounded to TF32, nearest, ties away (tf32_split.cl's tf32_bits, one instruction) */
inline uint tf32(const float v)
{
    uint r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}
% endif

/* big and small TF32 parts of v */
#define SPLIT(b, s, v) const uint b = tf32(v), s = tf32((v) - as_float(b))
</%def>
