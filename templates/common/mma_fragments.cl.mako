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

``truncate`` (with ``emulate``): the emulated product adds as a model of
the tensor cores' accumulation instead of float fma's: the 8 products
exact (TF32 x TF32 fits a float), each of them and the accumulator cut
toward zero to the grid 2^(e-23) of the largest magnitude among them
(2^e <= it < 2^(e+1)), their sum exact, then cut toward zero to a float
(no guard bits, no rounding to nearest: NVIDIA's mma.sync aligns and
truncates, Fasi et al. 2021, though real hardware may keep a few more
bits; this is the coarser model, so that CPU tests see the worst of it).
Magnitudes near float's underflow are not modelled (tests do not reach
them).

``bf16`` (cmeans_mma_pass's "bf16" precision): MMA_BF16(d, a0, a1, b0) too,
one m16n8k8 BF16 product (PTX mma.sync ...m16n8k8.row.col.f32.bf16.bf16.f32,
compute capability 8 or more) into the same four accumulators: two packed
bf16 values a register (bf16_pack.cl: the lower k index in the low half,
rounded to nearest, ties to even, as cvt.rn.bf16x2.f32), A row gq
(a0) / gq + 8 (a1) at k 2 tq, 2 tq + 1; B column gq at k 2 tq, 2 tq + 1
(b0); the accumulators' layout the TF32 product's.  Emulated likewise
(BF16 x BF16 fits a float exactly, so ``truncate`` models it the same).
BF16_PACK(lo, hi): bf16_pack's register, in one cvt.rn.bf16x2.f32 with
PTX (the same rounding; NaN stays NaN).
</%doc>
<%def name="products(emulate, truncate=False, bf16=False)">\
% if bf16:
<%include file="/bf16_pack.cl"/>
% endif
% if emulate:
<%include file="/tf32_split.cl"/>
/* emulate: the m16n8k8 product through local memory (the fragments' PTX
   layout), so that CPU runtimes run the kernel's every other line; every
   work-item of the group reaches every MMA (no MMA under a branch) */
#define MMA(d, a0, a1, a2, a3, b0, b1) \
    mma_emulated(&d##0, &d##1, &d##2, &d##3, a0, a1, a2, a3, b0, b1, emulated + warp * 192, lane)
% if truncate:
/* acc + p[0] + ... + p[7] as the truncation model (the doc above): every
   term cut toward zero to 2^(e-23), the largest's grid, summed exactly in
   integers (9 terms below 2^24 each), the sum cut toward zero to a float */
inline float truncated_sum(const float acc, const float *p)
{
    float big = fabs(acc);
    for (int c = 0; c < 8; ++c)
        big = fmax(big, fabs(p[c]));   /* fmax passes NaN over: the plain sum keeps it */
    const float plain = acc + p[0] + p[1] + p[2] + p[3] + p[4] + p[5] + p[6] + p[7];
    if (big == 0 || !isfinite(big) || isnan(plain))
        return plain;
    const int e = ilogb(big);
    long sum = (long)trunc(ldexp(acc, 23 - e));
    for (int c = 0; c < 8; ++c)
        sum += (long)trunc(ldexp(p[c], 23 - e));
    return ldexp(convert_float_rtz(sum), e - 23);
}

% endif
inline void mma_emulated(float *d0, float *d1, float *d2, float *d3, const uint a0,
                         const uint a1, const uint a2, const uint a3, const uint b0,
                         const uint b1, __local uint *s, const int lane)
{
${store_fragments(("a0", "a1", "a2", "a3", "b0", "b1"))}\
    /* A[r][c]: lane (r % 8) * 4 + c % 4, register a0 / a1 (r >= 8) / a2 (c >= 4) / a3;
       B[c][col]: lane col * 4 + c % 4, register b0 / b1 (c >= 4) */
${accumulate("as_float(s[(gq * 4 + c % 4) * 6 + (c >= 4 ? 2 : 0)])",
             "as_float(s[(gq * 4 + c % 4) * 6 + (c >= 4 ? 3 : 1)])",
             "as_float(s[((2 * tq) * 4 + c % 4) * 6 + 4 + (c >= 4)])",
             "as_float(s[((2 * tq + 1) * 4 + c % 4) * 6 + 4 + (c >= 4)])", truncate)}\
}
% if bf16:

/* the bf16 value in half h (0: low) of a packed register, as a float */
#define BF16_AT(word, h) as_float(((word) >> (16 * (h))) << 16)
#define BF16_PACK(lo, hi) bf16_pack(lo, hi)
#define MMA_BF16(d, a0, a1, b0) \
    mma_emulated_bf16(&d##0, &d##1, &d##2, &d##3, a0, a1, b0, emulated + warp * 192, lane)
inline void mma_emulated_bf16(float *d0, float *d1, float *d2, float *d3, const uint a0,
                              const uint a1, const uint b0, __local uint *s, const int lane)
{
${store_fragments(("a0", "a1", None, None, "b0", None))}\
    /* A[r][c]: lane (r % 8) * 4 + c / 2, register a0 / a1 (r >= 8), half c % 2;
       B[c][col]: lane col * 4 + c / 2, register b0, half c % 2 */
${accumulate("BF16_AT(s[(gq * 4 + c / 2) * 6], c % 2)",
             "BF16_AT(s[(gq * 4 + c / 2) * 6 + 1], c % 2)",
             "BF16_AT(s[((2 * tq) * 4 + c / 2) * 6 + 4], c % 2)",
             "BF16_AT(s[((2 * tq + 1) * 4 + c / 2) * 6 + 4], c % 2)", truncate)}\
}
% endif

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

% if bf16:
/* d##0 ... d##3 += A (a0, a1) x B (b0), one m16n8k8 BF16 product */
#define MMA_BF16(d, a0, a1, b0) \
    asm("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 " \
        "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};" \
        : "+f"(d##0), "+f"(d##1), "+f"(d##2), "+f"(d##3) \
        : "r"(a0), "r"(a1), "r"(b0))

/* bf16_pack(lo, hi) in one instruction (a to the upper half, b to the lower) */
inline uint bf16_pack_cvt(const float lo, const float hi)
{
    uint r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
#define BF16_PACK(lo, hi) bf16_pack_cvt(lo, hi)

% endif
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

<%def name="store_fragments(regs)">\
    barrier(CLK_LOCAL_MEM_FENCE);
% for i, r in enumerate(regs):
  % if r is not None:
    s[lane * 6 + ${i}] = ${r};
  % endif
% endfor
    barrier(CLK_LOCAL_MEM_FENCE);
    const int gq = lane / 4, tq = lane % 4;
</%def>

<%def name="accumulate(lo, hi, e0, e1, truncate)">\
  % if truncate:
    float p0[8], p1[8], p2[8], p3[8];
  % endif
    for (int c = 0; c < 8; ++c) {
        const float lo = ${lo};
        const float hi = ${hi};
        const float e0 = ${e0};
        const float e1 = ${e1};
  % if truncate:
        p0[c] = lo * e0;        /* exact: 11 x 11 (8 x 8) significand bits */
        p1[c] = lo * e1;
        p2[c] = hi * e0;
        p3[c] = hi * e1;
    }
    *d0 = truncated_sum(*d0, p0);
    *d1 = truncated_sum(*d1, p1);
    *d2 = truncated_sum(*d2, p2);
    *d3 = truncated_sum(*d3, p3);
  % else:
        *d0 = fma(lo, e0, *d0);
        *d1 = fma(lo, e1, *d1);
        *d2 = fma(hi, e0, *d2);
        *d3 = fma(hi, e1, *d3);
    }
  % endif
</%def>
