<%doc>
The diagonal GMM M-step statistics on NVIDIA tensor cores (compute
capability 8 or more, float32 data, d <= 128, fp64), as GEMMs in inline-PTX
mma.sync m16n8k8 TF32 products, 3xTF32 (as gmm_mma_estep.cl.mako).  Each
row's responsibilities are split in two by the row's own component o_i (the
E step's label, gmm_mma.py): r_ij = [j = o_i] r_ij + [j != o_i] r_ij, and
per component j
  other: N_j = sum r_ij,  sum r_ij x'_i,   sum r_ij x'_i^2   (x' = x - shift)
  own:   N_j = sum r_ij,  sum r_ij x''_i,  sum r_ij x''_i^2  (x'' = x - mu_j)
the first over the rows j does not own (R_other^T [x' | x'^2], this
kernel), the second over the rows it owns (gmm_mma_own.cl.mako: a row has
one own component, so those sums are n x d work, not a GEMM; mu_j the
current mean in float32), elementwise squares.  Raw sums about one shift
lose digits as |x'| grows against |x - mu_j| (the scatter is sum r x'^2 -
2 mu' sum r x' + N mu'^2: a one-hot start's scatter, zero, came out +-1e-5
at |x'| ~ 10); about each row's own mean the bulk of every scatter is
summed without that cancellation, and the rest -- rows a component shares
but does not own -- is the small part.  gmm_mma.central_stats makes both
the statistics about the means of gmm_mstep.cl.mako on the host, in
float64; gmm_mma.py offers this kernel only where NVIDIA's runtime reports
tensor cores, and gmm_mstep.cl.mako / gmm_mstep_rowwise.cl.mako serve
everywhere else.
Reads spec: d, dp (d padded to 8), wg, g (column groups of a half: x or
x^2), ntw (n8 column tiles a warp owns), mb (m16 component tiles a
work-group: cb = 16 mb components), stage (rows a local-memory stage),
emulate (the products in plain OpenCL: tests on CPUs), skip_stages (the
stages gmm_mma_stages.cl.mako flags alone: below).

A work-group owns one chunk of rows (slab) and one block of cb components
(group id = chunk * blocks + block; k, the number of components, is a
kernel argument).  Each stage copies stage rows of x (row stride dp + pad
= 8 mod 32 floats), the block's stage responsibilities (stride stage + 4)
and each row's own component if the block holds it (else -1): all zero
outside the data.  Warp w owns component tile w / (2 g) and the ntw column
tiles of group w % (2 g): the first g groups the x columns, the others x^2
(squared as read, after the shift is taken off).  A row's responsibility
for its own component is zero here (the own kernel sums it), exactly.
With skip_stages, the stages the stage flags leave unset (none of their
A values can be other than zero: gmm_mma_stages.cl.mako) are neither read
nor multiplied; they would have added zeros, so the sums are the same,
bit for bit.  Where the components are many and apart, most stages of a
block are such.

Only the other sums: their registers alone (the own ones beside them held
the kernel at 255 registers, one work-group of 8 warps a multiprocessor on
an H200, every barrier stalling it).

precision "tf32" (the estimators' "tf32" and "bf16"): the responsibilities
are rounded to TF32 alone and the rows keep their 3xTF32 split (2 products
a step, the small x big one dropped), so N, the sums and the squares are
all those of responsibilities each within 2^-11 relative of the E step's,
to float32's rounding: the statistics of a slightly reweighted mixture, not
sums that cancel apart (gmm_mma.mstep_specs).  Products
accumulate in float over a stage and are added into double registers
after it, so precision does not depend on n; the N sums
are the warps of group 0's sums of their A values, in the same stages.
Output: slab x k x SZ doubles (SZ = 2 + 4 d: [N other, N own, other sum r
x' (d), sum r x'^2 (d), own sum r x'' (d), sum r x''^2 (d)]), the other
entries of every slab written here, the own ones by gmm_mma_own.cl.mako,
no atomics, for reduce_partials.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="mma" file="/common/mma_fragments.cl.mako"/>
<%
    steps = dp // 8
    xs = dp + (8 - dp) % 32
    rs = stage + 4
    cb = 16 * mb
    x_iters = -(-stage * dp // wg)
    r_iters = -(-cb * stage // wg)
%>
#define D ${d}
#define DP ${dp}
#define STEPS ${steps}
#define WG ${wg}
#define CB ${cb}
#define S ${stage}
#define XS ${xs}                        /* x' row stride in local memory */
#define RS ${rs}                        /* responsibility row stride */
#define G ${g}
#define NTW ${ntw}
#define MB ${mb}
#define SZ (2 + 4 * D)

${mma.products(emulate)}\
% if skip_stages:
/* the first stage from st on whose flag is set, else stages; *at and *word
   the flag word last read and its index (a word read once for its 32
   stages: where every stage is flagged, no read's latency a stage) */
inline long next_stage(__global const uint *restrict flags, long st, const long stages,
                       long *at, uint *word)
{
    while (st < stages) {
        if (st / 32 != *at) {
            *at = st / 32;
            *word = flags[*at];
        }
        const uint w = *word >> (st % 32);
        if (w)
            return st + (31 - clz(w & (0u - w)));   /* its lowest set bit */
        st = (st / 32 + 1) * 32;
    }
    return stages;
}
#define NEXT(st) next_stage(busy, st, stages, &word_at, &word)
% else:
#define NEXT(st) (st)
% endif
<%def name="split_resp(b, sm, v)">\
% if precision != "float32":
const uint ${b} = as_uint(${v});\
% else:
SPLIT(${b}, ${sm}, ${v});\
% endif
</%def>\
<%def name="a_value(v)">\
% if precision == "float32":
${v}\
% else:
as_float(tf32(${v}))\
% endif
</%def>\
<%def name="fetch(first)">\
<% x_iters, r_iters, cb = -(-stage * dp // wg), -(-16 * mb * stage // wg), 16 * mb %>\
/* stage rows ${first}.. into registers: x, the block's responsibilities, own */
% for u in range(x_iters):
    {
        const int e = lid + ${u * wg}, r = e / DP, c = e % DP;
        const long i = ${first} + r;
        px_${u} = ${"e < S * DP && " if (u + 1) * wg > stage * dp else ""}i < hi && c < D ? x[i * stride + c] : 0.0f;
    }
% endfor
% for u in range(r_iters):
    {
        const int e = lid + ${u * wg}, jj = e / S, r = e % S;
        const long i = ${first} + r;
        const int in = ${"e < CB * S && " if (u + 1) * wg > cb * stage else ""}i < hi && jj < jn;
        pr_${u} = in ? resp[(long)(j0 + jj) * n + i] : 0.0f;
        /* the row's lse, NaN: no normalisation (a bad row, the padding) */
        pl_${u} = normalize && in ? lse[i] : NAN;
    }
% endfor
    if (lid < S) {
        const long i = ${first} + lid;
        const int o = i < hi ? own[i] - j0 : -1;
        po = o >= 0 && o < jn ? o : -1;
    }
</%def>\
<%def name="products(acc, a, b)">\
MMA(${acc}, ${a}b0, ${a}b1, ${a}b2, ${a}b3, ${b}b0, ${b}b1);
                MMA(${acc}, ${a}b0, ${a}b1, ${a}b2, ${a}b3, ${b}s0, ${b}s1);
% if precision == "float32":
                MMA(${acc}, ${a}s0, ${a}s1, ${a}s2, ${a}s3, ${b}b0, ${b}b1);
% endif
</%def>\

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gmm_mstep(__global const float *restrict x, const long n, const long stride,
               __global const float *restrict resp,     /* k x n */
               __global const float *restrict lse,      /* n (normalize) */
               const int normalize,
               __global const float *restrict shift,    /* DP */
               __global const int *restrict own,        /* n: each row's own component */
               __global const uint *restrict stage_flags,   /* skip_stages: gmm_stages' */
               const long words,                        /* ... of a slab and block */
               const int k,
               const long rows_per_chunk,
               __global double *restrict part)          /* slabs x k x SZ */
{
    const int lid = get_local_id(0);
    const int lane = lid % 32, warp = lid / 32;
    const int gq = lane / 4, tq = lane % 4;      /* the fragments' row group, thread */
% if emulate:
    __local uint emulated[WG * 6];
% endif
    const int blocks = (k + CB - 1) / CB;
    const long g = get_group_id(0);
    const int j0 = (int)(g % blocks) * CB;       /* the block's first component */
    const int jn = min(CB, k - j0);              /* its components */
    const long chunk = g / blocks;
    const long lo = chunk * rows_per_chunk, hi = min(n, lo + rows_per_chunk);
    const int mtile = warp / (2 * G), cg = warp % (2 * G);
    const int sq = cg / G, t0 = (cg % G) * NTW;   /* x (0) or x^2 (1); first tile */
    const int jlo = mtile * 16 + gq, jhi = jlo + 8;   /* this lane's A rows (block-relative) */
    __local float xl[S * XS];
    __local float rl[CB * RS];
    __local int ol[S];                           /* a row's own component - j0, or -1 */
% if emulate:
    __local int zl[(S / 8) * MB];                /* a k8 step's m16 tile is not all zero */
% endif
    __local double nl[CB * 4];
% for t in range(ntw):
    /* column tile t0 + ${t}'s shift (a tile past STEPS reads column DP - 1) */
    const float sc_${t} = shift[min((t0 + ${t}) * 8 + gq, DP - 1)];
    double sum_${t}_0 = 0, sum_${t}_1 = 0, sum_${t}_2 = 0, sum_${t}_3 = 0;
% endfor
    double n_lo = 0, n_hi = 0;                   /* components jlo, jhi */
    /* a stage's values are read into registers while the stage before is
       multiplied (global reads in flight over the products), stored to
       local memory after it */
% for u in range(x_iters):
    float px_${u};
% endfor
% for u in range(r_iters):
    float pr_${u}, pl_${u};
% endfor
    int po = -1;
    /* the stages to multiply, in order (every one without skip_stages) */
    const long stages = hi > lo ? (hi - lo + S - 1) / S : 0;
    __global const uint *busy = stage_flags + g * words;
    long word_at = -1;                           /* (next_stage's) */
    uint word = 0;
    long st = NEXT(0);
    if (st < stages) {
        ${fetch("lo + st * S")}
    }
    while (st < stages) {
        const long following = NEXT(st + 1);
        barrier(CLK_LOCAL_MEM_FENCE);            /* the last stage's readers are done */
% for u in range(x_iters):
        { const int e = lid + ${u * wg};
          ${"if (e < S * DP) " if (u + 1) * wg > stage * dp else ""}xl[(e / DP) * XS + e % DP] = px_${u}; }
% endfor
% for u in range(r_iters):
        {   /* normalised here, not as read: the reads stay in flight over the
               products (as the E kernel's normalisation) */
            const int e = lid + ${u * wg};
            ${"if (e < CB * S) " if (u + 1) * wg > cb * stage else ""}rl[(e / S) * RS + e % S] = isnan(pl_${u}) ? pr_${u} : exp(pr_${u} - pl_${u});
        }
% endfor
        if (lid < S)
            ol[lid] = po;
        barrier(CLK_LOCAL_MEM_FENCE);
% if emulate:
        /* each k8 step's flag per m16 tile: any A value of it not zero (the
           MMA path votes in each warp) */
        for (int e = lid; e < (S / 8) * MB; e += WG) {
            const int st = e / MB, mt = e % MB;
            int any = 0;
            for (int jj = mt * 16; jj < mt * 16 + 16; ++jj)
                for (int r = st * 8; r < st * 8 + 8; ++r)
                    any |= ol[r] != jj && ${a_value("rl[jj * RS + r]")} != 0.0f;
            zl[e] = any;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
% endif
        if (following < stages) {
            ${fetch("lo + following * S")}
        }
% for t in range(ntw):
        float acc_${t}_0 = 0, acc_${t}_1 = 0, acc_${t}_2 = 0, acc_${t}_3 = 0;
% endfor
        float part_lo = 0, part_hi = 0;
% for s in range(stage // 8):
        {   /* k8 step ${s}: rows ${8 * s}.. of the stage */
            __local const float *ra = rl + jlo * RS + ${8 * s} + tq;
            const int o0 = ol[${8 * s} + tq], o1 = ol[${8 * s + 4} + tq];   /* rows tq, tq + 4 */
            /* A[component][row]: f0 (jlo, tq), f1 (jhi, tq), f2 (jlo, tq + 4), f3 (jhi,
               tq + 4), each zero where the row is the component's own */
% if precision == "float32":
            const float f0 = o0 == jlo ? 0.0f : ra[0], f1 = o0 == jhi ? 0.0f : ra[8 * RS],
                        f2 = o1 == jlo ? 0.0f : ra[4], f3 = o1 == jhi ? 0.0f : ra[8 * RS + 4];
% else:
            /* the responsibilities rounded to TF32 once: N and the products alike */
            const float f0 = o0 == jlo ? 0.0f : as_float(tf32(ra[0])),
                        f1 = o0 == jhi ? 0.0f : as_float(tf32(ra[8 * RS])),
                        f2 = o1 == jlo ? 0.0f : as_float(tf32(ra[4])),
                        f3 = o1 == jhi ? 0.0f : as_float(tf32(ra[8 * RS + 4]));
% endif
            part_lo += f0 + f2;
            part_hi += f1 + f3;
  % if emulate:
            {   /* emulated: no MMA under a branch (PoCL's build of it is very slow); the
                   step's flag masks A instead, so that a wrong flag shows */
                const float on = zl[${s} * MB + mtile] ? 1.0f : 0.0f;
                const float g0 = f0 * on, g1 = f1 * on, g2 = f2 * on, g3 = f3 * on;
  % else:
            if (warp_any(f0 != 0.0f || f1 != 0.0f || f2 != 0.0f || f3 != 0.0f)) {
                /* a step whose A tile is all zero adds nothing: skipped (a
                   responsibility far from its component underflows to zero,
                   most of them where the components are many and apart) */
                const float g0 = f0, g1 = f1, g2 = f2, g3 = f3;
  % endif
  % for q in range(4):
            ${split_resp("fb%d" % q, "fs%d" % q, "g%d" % q)}
  % endfor
  % for t in range(ntw):
            {
                const int c = min((t0 + ${t}) * 8 + gq, DP - 1);
                float v0 = xl[(${8 * s} + tq) * XS + c] - sc_${t};
                float v1 = xl[(${8 * s + 4} + tq) * XS + c] - sc_${t};
                if (sq) {
                    v0 *= v0;
                    v1 *= v1;
                }
                SPLIT(bb0, bs0, v0);
                SPLIT(bb1, bs1, v1);
                ${products("acc_%d_" % t, "f", "b")}
            }
  % endfor
            }
        }
% endfor
% for t in range(ntw):
  % for q in range(4):
        sum_${t}_${q} += acc_${t}_${q};
  % endfor
% endfor
        n_lo += part_lo;
        n_hi += part_hi;
        st = following;
    }
    const long slab = chunk;
    /* N: group 0's lanes, the 4 of each component added in a fixed order */
    if (cg == 0) {
        nl[jlo * 4 + tq] = n_lo;
        nl[jhi * 4 + tq] = n_hi;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int jj = lid; jj < jn; jj += WG) {
        __local const double *v = nl + jj * 4;
        part[(slab * k + j0 + jj) * SZ] = ((v[0] + v[1]) + v[2]) + v[3];
    }
% for t in range(ntw):
    if (t0 + ${t} < STEPS) {
  % for q in range(4):
        {
            const int j = j0 + (${q} < 2 ? jlo : jhi);
            const int c = (t0 + ${t}) * 8 + 2 * tq + ${q % 2};
            if (j < k && c < D)
                part[(slab * k + j) * SZ + 2 + sq * D + c] = sum_${t}_${q};
        }
  % endfor
    }
% endfor
}
