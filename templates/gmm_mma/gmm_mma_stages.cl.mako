<%doc>
The stages of the tensor-core M kernel (gmm_mma_mstep.cl.mako) that have
products: per chunk of rows (slab) and block of cb components, one bit a
stage of `stage` rows from the chunk's first, set where a row of the stage
has a responsibility for a component of the block that is not its own
component's (those the own kernel sums) and that may not be zero.  Where
the components are many and apart most responsibilities underflow to zero
(a row has a few components within float's range of its largest), so most
of a block's stages hold none: the M kernel reads the rows and makes the
products of the flagged stages alone.
Reads spec: wg, stage, cb.

The flag is conservative, never unset for a stage with a product: a
stored responsibility a is flagged where it is not zero (or NaN); a
log-density a (normalize, its row's lse l not NaN) unless a - l < -120,
whose exp is zero (float's least subnormal is e^-103.3), the float
difference the M kernel takes too.  A work-group per (chunk, block, word
of 32 stages): its work-items take the word's rows, each row's block of
responsibilities in component order (consecutive work-items consecutive
rows: each component's reads coalesced), and OR their stages' bits into
the word in local memory.
Output: flags, chunks x blocks x words uint (words: a chunk's stages / 32,
rounded up); bit s of word w is stage 32 w + s.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#define WG ${wg}
#define S ${stage}
#define CB ${cb}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gmm_stages(__global const float *restrict resp,     /* k x n */
                __global const float *restrict lse,      /* n (normalize) */
                const int normalize,
                __global const int *restrict own,        /* n: each row's own component */
                const long n, const int k, const long rows_per_chunk, const long words,
                __global uint *restrict flags)           /* chunks x blocks x words */
{
    const int lid = get_local_id(0);
    const int blocks = (k + CB - 1) / CB;
    const long g = get_group_id(0);
    const long word = g % words, slab_block = g / words;   /* chunk * blocks + block */
    const int j0 = (int)(slab_block % blocks) * CB, jn = min(CB, k - j0);
    const long lo = slab_block / blocks * rows_per_chunk, hi = min(n, lo + rows_per_chunk);
    const long first = lo + word * 32 * S;
    __local uint bits;
    if (lid == 0)
        bits = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint mine = 0;
    for (int r = lid; r < 32 * S && first + r < hi; r += WG) {
        const long i = first + r;
        const float l = normalize ? lse[i] : NAN;
        const int o = own[i] - j0;
        int some = 0;
        for (int jj = 0; jj < jn; ++jj) {
            const float a = resp[(long)(j0 + jj) * n + i];
            some |= jj != o && (isnan(l) ? a != 0.0f : !(a - l < -120.0f));
        }
        if (some)
            mine |= 1u << (r / S);
    }
    if (mine)
        atomic_or(&bits, mine);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0)
        flags[g] = bits;
}
