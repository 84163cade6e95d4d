/* The 3xTF32 split of the "mma" Lloyd variant (lloyd_mma_*.cl.mako): a float
   v is big + small, both TF32 (10-bit mantissas), small the rounding error of
   big; big.big + big.small + small.big is a float32-level product.  The
   rounding is to nearest, ties away from zero (PTX cvt.rna.tf32), in integer
   operations so that every runtime splits alike. */
inline uint tf32_bits(const float v)
{
    const uint bits = as_uint(v);
    return isfinite(v) ? (bits + 0x1000u) & 0xFFFFE000u : bits;
}

/* big and small parts of v0, then of v1: one lane's B fragment pair */
inline uint4 tf32_split2(const float v0, const float v1)
{
    const uint b0 = tf32_bits(v0), b1 = tf32_bits(v1);
    return (uint4)(b0, tf32_bits(v0 - as_float(b0)), b1, tf32_bits(v1 - as_float(b1)));
}
