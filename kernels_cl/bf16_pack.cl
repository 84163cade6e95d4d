/* The bf16 operands of the "mma" Lloyd variant's "bf16" precision
   (lloyd_mma_*.cl.mako): a float rounded to bfloat16 (8-bit exponent, 7-bit
   mantissa) to nearest, ties to even, in integer operations so that every
   runtime rounds alike; NaN stays NaN (quiet), infinities stay. */
inline uint bf16_bits(const float v)
{
    const uint bits = as_uint(v);
    if (isnan(v))
        return (bits >> 16) | 0x40u;
    return (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
}

/* lo and hi as one mma register: lo in the low half (the lower k index) */
inline uint bf16_pack(const float lo, const float hi)
{
    return bf16_bits(lo) | (bf16_bits(hi) << 16);
}
