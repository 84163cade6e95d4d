<%doc>
The diagonal GMM E-step on NVIDIA tensor cores (compute capability 8 or
more, float32 data, d <= 128): the outputs (and kernel name) of gmm_estep.cl.mako -- lse,
labels, responsibilities (component-major), the work-groups' log-likelihood
sums and bad-row counts -- with the log-densities as one GEMM in inline-PTX
mma.sync m16n8k8 TF32 products, 3xTF32 as lloyd_mma_assign.cl.mako's
(x.c = xb.cb + xb.cs + xs.cb, each float split by cvt.rna.tf32 into big and
small TF32 parts).  gmm_mma.py offers it only where NVIDIA's runtime reports
tensor cores; gmm_estep.cl.mako serves everywhere else.
Reads spec: d, dp (d padded to 8), tn (components of a local-memory chunk),
tm (rows of a work-group tile: wg / 32 warps of 16 * mt), wg, mt (m16 row
tiles a warp owns), precision, emulate (the products in plain OpenCL: tests
on CPUs), resplit (the rows split again each chunk: KEEP), copies (of the
chunk in local memory: 2, double-buffered, or 1), lane_recheck (the
re-check's values made by each row's four lanes, below), packed
(packed_chunks at "bf16": the chunk's coefficients rounded to bfloat16
pairs as they are staged, the B fragments' registers as they are read:
half the local memory, and no warp rounds them again), roww (chunk_row:
32-bit words of a component's local row), local_floats (the local array).

precision "float32": the 3xTF32 products below.  "tf32": one TF32 product
of the rounded operands (x'^2 and x' against P and -2 mu' P, each rounded
to nearest TF32: relative error 2^-11 an operand); "bf16": one m16n8k8
BF16 product of operands rounded to bfloat16 (2^-8 an operand), each
lane's two k slots 2 tq, 2 tq + 1 holding its dimensions tq, tq + 4 of the
step (a dot product over the step's 8 dimensions in any order).  Each
log-density is then within 1/2 (2u + u^2) sum_c (|x'_c^2 P_jc| +
|x'_c 2 mu'_jc P_jc|) of the float32 operands' exact value, u the
operands' unit roundoff, plus float32 accumulation (gmm_mma_bound.estep_bound).
The number of components k is a kernel argument.

Re-check ("tf32", "bf16"): the log-densities are always stored (store_resp
0 as 2).  A value j of row i may matter to the row's sum unless
v_ij + B_ij < m_i - B_ib - T: m_i the row's largest one-product value (at
component b), B_ij = F (|x'_i|^2 Pmax_j + |x'_i| |L_j|) at least the
product's error (Cauchy-Schwarz on estep_bound's terms; F its factor;
``scales``: Pmax_j, |L_j| of the coefficient rows, gmm_mma_operands.cl.mako;
|x'_i|^2 from the lanes' registers), T = 17 + ln k: the values that cannot
matter add less than e^-17 of the row's sum.  Each lane also keeps the
two components of its largest upper ends v_j + B_j and the largest upper
end of its others (|x'|^2 added from the lanes' parts at the tile's
start): by upper end, not by value, since a sharp component's B_j may
lift a lower value over the line where a wide one's does not.  Where none
of the others may matter, only the lanes' two each may, and those that
may are made again in float32 from the float32 operands (one FMA a term
in dimension order, scalar, from global memory) and stored over their
values; the row's sum is theirs.  Else the row's values are read back
(such rows one at a time, the work-group's items a share of each), each
that may matter made again and stored, and the sum taken over them all.
lane_recheck: those of the lanes' two each that may matter are made by
the row's four lanes, each the terms of its own dimensions from the x'
in its registers (the coefficients of 4 lanes' dimensions adjacent), in
local memory summed (tq 0 + tq 2) + (tq 1 + tq 3), instead of by one
work-item a row from global memory.
Either way the row's log-sum-exp, label and log-likelihood term are
float32's to its rounding; where components are apart, one value a row is
made again.

    log p_j(x) = const_j - 1/2 (sum_c x'_c^2 P_jc + sum_c x'_c (-2 mu'_jc P_jc))
with x' = x - shift: the GEMM of the rows [x'^2 | x'] and the coefficient
rows [P_j | -2 mu'_j P_j] (gmm_mma.operands: the host's float64 made
float32).  A warp's rows stay in registers as raw x' values (dp / 2 a row
tile); each chunk's k8 steps split x' and x'^2 into the A fragments, the
coefficients come from a local-memory chunk of tn components (rows padded
by 4 floats: conflict-free fragment reads), copied double-buffered -- one
barrier a chunk -- or into one copy, two barriers a chunk, where local
memory holds a chunk twice as large (each row split serves more
components), and split as they are read.  The square and linear
halves' big products and corrections go to four accumulator sets.

Each lane keeps the online log-sum-exp of gmm_estep.cl.mako (running
maximum and rescaled sum, the first maximum's component, a NaN flag) of its
two rows of each m16 tile over its columns, in increasing component order;
the four lanes of a row are merged in local memory (largest maximum, the
lowest component among equal maxima, sums rescaled to it), and each row's
owner finishes as gmm_estep.cl.mako's point_result: lse, label, the
log-likelihood term; then the whole work-group normalises the tile's
responsibilities in place, component by component (the log-densities were
stored as they were made; a global fence orders them).  store_resp 2
leaves the log-densities as they are: the tensor-core M kernel
(gmm_mma_mstep.cl.mako, ``normalize``) makes the same responsibilities,
exp(log p_j - lse) with the same operations, as it reads them.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="mma" file="/common/mma_fragments.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
<%
    steps = dp // 8
    corrected = precision == "float32"   # the small parts' two products too
    bf16 = precision == "bf16"
    nt = tn // 8
    recheck = not corrected
    chunk_f4 = tn * 2 * dp // 4
    # staged a work-item a float4, or, packed, two: 8 floats of a step made 4 words
    stage_items = chunk_f4 // 2 if packed else chunk_f4
    copy_iters = -(-stage_items // wg)
%>
#define D ${d}
#define DP ${dp}
#define TN ${tn}
#define TM ${tm}
#define WG ${wg}
#define ROWW ${roww}                    /* a component's local row: 2 DP + 4 (packed: DP + 4) */
#define CHUNK_F4 ${chunk_f4}            /* float4 of a chunk's coefficients */
#define STAGE_ITEMS ${stage_items}      /* ... staged a work-item each */
#define CHUNK_LOCAL (TN * ROWW)
% if recheck:
/* B_ij / (|x'|^2 Pmax_j + |x'| |L_j|): gmm_mma_bound.bound_factor, a little over */
#define BOUND_F ${"%.9e" % bound_factor}f
  % if lane_recheck:
#define FAST_ROW 256                    /* row_made: only the lanes' two each may matter */
  % endif

/* B_j of a row (|x'|^2 xx, |x'| xn) and a component's scales s */
inline float value_bound(const float xx, const float xn, const float2 s)
{
    return BOUND_F * fma(xx, s.x, xn * s.y);
}

/* the re-check's line: a value whose upper end is below it cannot matter
   (the row's largest one-product value most, its bound) */
inline float line_of(const float most, const float bound, const int k)
{
    return most - bound - (17.0f + log((float)k));
}

/* the log-density of row x' against component row c ([P | L]) and its
   constant, in float32: a term an FMA, in dimension order */
inline float exact_logp(__global const float *restrict xi, __global const float *restrict shift,
                        __global const float *restrict c, const float cst)
{
    float acc = 0.0f;
    for (int e = 0; e < D; ++e) {
        const float v = xi[e] - shift[e];
        acc = fma(v * v, c[e], acc);
        acc = fma(v, c[DP + e], acc);
    }
    return fma(-0.5f, acc, cst);
}
% endif

${mma.products(emulate, bf16=bf16)}\
% if resplit and not emulate:
/* v, opaque to the compiler's loop-invariant motion: the rows' splits are
   made again each chunk instead of hoisted out of the chunk loop, where
   four split halves of dp / 2 values a tile outgrow the registers (spills) */
inline float keep(const float v)
{
    float r;
    asm volatile("mov.b32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}
#define KEEP(v) keep(v)
% else:
#define KEEP(v) (v)
% endif

<%def name="stage_read(u, chunk)">\
% if packed:
                    {   /* dimensions 8 s.. of one half: the pairs (tq, tq + 4) */
                        __global const float4 *src = coefs + (long)(${chunk}) * CHUNK_F4 + 2 * e;
                        const float4 a = src[0], b = src[1];
                        p[${u}] = (uint4)(BF16_PACK(a.x, b.x), BF16_PACK(a.y, b.y),
                                          BF16_PACK(a.z, b.z), BF16_PACK(a.w, b.w));
                    }
% else:
                    p[${u}] = coefs[(long)(${chunk}) * CHUNK_F4 + e];
% endif
</%def>\
<%def name="stage_write(u, to)">\
% if packed:
                    vstore4(p[${u}], 0, (__local uint *)(${to}) + (e / (DP / 4)) * ROWW + (e % (DP / 4)) * 4);
% else:
                    vstore4(p[${u}], 0, ${to} + (e / (DP / 2)) * ROWW + (e % (DP / 2)) * 4);
% endif
</%def>\
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gmm_estep(__global const float *restrict x, const long n, const long stride,
               __global const float4 *restrict coefs,   /* KP x 2 DP: [P | -2 mu' P] */
               __global const float *restrict consts,   /* KP */
               __global const float *restrict shift,    /* DP */
% if recheck:
               __global const float2 *restrict scales,  /* KP: Pmax_j, |L_j| (re-check) */
% endif
               const int k,
               __global float *restrict lse,            /* n */
               __global int *restrict labels,           /* n */
               const int store_resp,                    /* 0, 1 (normalised), 2 (log) */
               __global float *restrict resp,           /* k x n (store_resp) */
               __global acc_t *restrict part_ll,        /* groups (x2 if Kahan) */
               __global int *restrict part_bad,         /* groups */
               const long tiles_per_group)
{
    const int lid = get_local_id(0);
    const int lane = lid % 32, warp = lid / 32;
    const int gq = lane / 4, tq = lane % 4;      /* the fragments' row group, thread */
% if emulate:
    __local uint emulated[WG * 6];
% endif
    const long g = get_group_id(0), groups = get_num_groups(0);
    /* two chunks of coefficients; once a tile's last chunk is read, the
       lanes' partial log-sum-exps (TM x 4 lanes x 4) */
    __local float lc[${local_floats}];
    __local float *lane_max = lc, *lane_sum = lc + TM * 4;
    __local int *lane_best = (__local int *)(lc + TM * 8), *lane_nan = (__local int *)(lc + TM * 12);
    __local float row_total[TM];      /* each row's lse (NaN: a bad row or past n) */
% if recheck:
    __local int row_best[TM];         /* ... the component of its largest value (-1: done) */
    __local float row_xx[TM];         /* ... |x'|^2 */
    __local float *lane_upper = lc + TM * 16;
    __local int *lane_j1 = (__local int *)(lc + TM * 20), *lane_j2 = (__local int *)(lc + TM * 24);
  % if lane_recheck:
    /* TM x 8 candidates x 4 lanes; TM */
    __local float *parts = lc + TM * 28;
    __local int *row_made = (__local int *)(lc + TM * 60);
  % endif
% endif
    __local acc_t scratch[WG];
    acc_t ll = 0;
% if not acc_double:
    acc_t ll_comp = 0;
% endif
    int bad = 0;
    const int chunks = (k + TN - 1) / TN;
    const long first = g * tiles_per_group * TM;
    for (long t = 0; t < tiles_per_group; ++t) {
        const long base = first + t * TM;
        if (base >= n)
            break;                      /* uniform over the group */
        /* this lane's x' values: rows gq and gq + 8 of each m16 tile,
           dimensions tq and tq + 4 of each k8 step; zero outside the data */
% for mi in range(mt):
  % for s in range(steps):
        float xr_${mi}_${s}_0, xr_${mi}_${s}_1, xr_${mi}_${s}_2, xr_${mi}_${s}_3;
  % endfor
        {
  % for h in range(2):
            const long i${h} = base + warp * ${16 * mt} + ${16 * mi + 8 * h} + gq;
            __global const float *r${h} = x + (i${h} < n ? i${h} : 0) * stride;
            const int ok${h} = i${h} < n;
  % endfor
  % for s in range(steps):
    % for e, (h, kk) in enumerate(((0, 0), (1, 0), (0, 4), (1, 4))):
            {
                const int c = ${8 * s + kk} + tq;
                xr_${mi}_${s}_${e} = ok${h} && c < D ? r${h}[c] - shift[c] : 0.0f;
            }
    % endfor
  % endfor
        }
% endfor
% for mi in range(mt):
  % for r in range(2):
        float run_max_${mi}_${r} = -INFINITY, run_sum_${mi}_${r} = 0;
% if recheck:
        /* the lane's two largest upper ends v_j + B_j and their components
           (-1: none), the largest upper end of its other values */
        float u1_${mi}_${r} = -INFINITY, u2_${mi}_${r} = -INFINITY, upper_${mi}_${r} = -INFINITY;
        int j1_${mi}_${r} = -1, j2_${mi}_${r} = -1;
% endif
        int best_${mi}_${r} = 0, saw_nan_${mi}_${r} = 0;
  % endfor
% endfor
% if recheck:
        /* each row's |x'|^2, the lanes' parts added in a fixed order through
           row_xx and row_total (free until the chunks are done):
           (tq 0 + tq 2) + (tq 1 + tq 3) */
  % for rnd in range(2):
    % for mi in range(mt):
      % for r in range(2):
        {
            float part = 0.0f;
        % for st in range(steps):
          % for e in ((0, 2) if r == 0 else (1, 3)):
            part = fma(xr_${mi}_${st}_${e}, xr_${mi}_${st}_${e}, part);
          % endfor
        % endfor
            const int row = warp * ${16 * mt} + ${16 * mi + 8 * r} + gq;
            __local float *to = tq % 2 ? row_total : row_xx;
            if (tq / 2 == ${rnd})
                to[row] = ${"part" if rnd == 0 else "to[row] + part"};
        }
      % endfor
    % endfor
        barrier(CLK_LOCAL_MEM_FENCE);
  % endfor
  % for mi in range(mt):
    % for r in range(2):
        float xx_${mi}_${r}, xn_${mi}_${r};
        {
            const int row = warp * ${16 * mt} + ${16 * mi + 8 * r} + gq;
            xx_${mi}_${r} = row_xx[row] + row_total[row];
            xn_${mi}_${r} = sqrt(xx_${mi}_${r});
        }
    % endfor
  % endfor
% endif
        /* chunk 0 staged; then each chunk's successor is read into registers
           while it is multiplied, and stored in the other copy */
        ${"uint4" if packed else "float4"} p[${copy_iters}];
        for (int u = 0; u < ${copy_iters}; ++u) {
            const int e = lid + u * WG;
            if (e < STAGE_ITEMS) {
${stage_read("u", "0")}\
${stage_write("u", "lc")}\
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int chunk = 0; chunk < chunks; ++chunk) {
            const int more = chunk + 1 < chunks;
            if (more) {
                for (int u = 0; u < ${copy_iters}; ++u) {
                    const int e = lid + u * WG;
                    if (e < STAGE_ITEMS) {
${stage_read("u", "chunk + 1")}\
                    }
                }
            }
% if copies == 2:
            __local const float *cur = lc + (chunk & 1) * CHUNK_LOCAL;
% else:
            __local const float *cur = lc;
% endif
% for mi in range(mt):
  % for ni in range(nt):
    % for a in (("sqb", "sqf", "lnb", "lnf") if corrected else ("sqb", "lnb")):
            float ${a}_${mi}_${ni}_0 = 0, ${a}_${mi}_${ni}_1 = 0, ${a}_${mi}_${ni}_2 = 0, ${a}_${mi}_${ni}_3 = 0;
    % endfor
  % endfor
% endfor
% for s in range(steps):
            {
  % for mi in range(mt):
    % for e in range(4):
                const float v_${mi}_${e} = KEEP(xr_${mi}_${s}_${e});
                const float v2_${mi}_${e} = v_${mi}_${e} * v_${mi}_${e};
      % if corrected:
                SPLIT(lb_${mi}_${e}, ls_${mi}_${e}, v_${mi}_${e});
                SPLIT(qb_${mi}_${e}, qs_${mi}_${e}, v2_${mi}_${e});
      % elif not bf16:
                const uint lb_${mi}_${e} = tf32(v_${mi}_${e}), qb_${mi}_${e} = tf32(v2_${mi}_${e});
      % endif
    % endfor
    % if bf16:
                /* rows gq (a0) and gq + 8 (a1), dimensions tq (low) and tq + 4 (high) */
                const uint la_${mi}_0 = BF16_PACK(v_${mi}_0, v_${mi}_2), la_${mi}_1 = BF16_PACK(v_${mi}_1, v_${mi}_3);
                const uint qa_${mi}_0 = BF16_PACK(v2_${mi}_0, v2_${mi}_2), qa_${mi}_1 = BF16_PACK(v2_${mi}_1, v2_${mi}_3);
    % endif
  % endfor
  % for ni in range(nt):
                {   /* component 8 ni + gq's coefficients of dimensions tq, tq + 4 */
    % if packed:
                    __local const uint *bq = (__local const uint *)cur + (${8 * ni} + gq) * ROWW + ${4 * s} + tq;
                    const uint pa = bq[0], ma = bq[DP / 2];
    % else:
                    __local const float *bq = cur + (${8 * ni} + gq) * ROWW + ${8 * s} + tq;
                    const float p0 = bq[0], p1 = bq[4], m0 = bq[DP], m1 = bq[DP + 4];
    % endif
    % if corrected:
                    SPLIT(pb0, ps0, p0);
                    SPLIT(pb1, ps1, p1);
                    SPLIT(mb0, ms0, m0);
                    SPLIT(mb1, ms1, m1);
    % elif bf16:
      % if not packed:
                    const uint pa = BF16_PACK(p0, p1), ma = BF16_PACK(m0, m1);
      % endif
    % else:
                    const uint pb0 = tf32(p0), pb1 = tf32(p1), mb0 = tf32(m0), mb1 = tf32(m1);
    % endif
    % for mi in range(mt):
      % if bf16:
                    MMA_BF16(sqb_${mi}_${ni}_, qa_${mi}_0, qa_${mi}_1, pa);
                    MMA_BF16(lnb_${mi}_${ni}_, la_${mi}_0, la_${mi}_1, ma);
      % else:
                    MMA(sqb_${mi}_${ni}_, qb_${mi}_0, qb_${mi}_1, qb_${mi}_2, qb_${mi}_3, pb0, pb1);
                    MMA(lnb_${mi}_${ni}_, lb_${mi}_0, lb_${mi}_1, lb_${mi}_2, lb_${mi}_3, mb0, mb1);
      % endif
      % if corrected:
                    MMA(sqf_${mi}_${ni}_, qb_${mi}_0, qb_${mi}_1, qb_${mi}_2, qb_${mi}_3, ps0, ps1);
                    MMA(lnf_${mi}_${ni}_, lb_${mi}_0, lb_${mi}_1, lb_${mi}_2, lb_${mi}_3, ms0, ms1);
                    MMA(sqf_${mi}_${ni}_, qs_${mi}_0, qs_${mi}_1, qs_${mi}_2, qs_${mi}_3, pb0, pb1);
                    MMA(lnf_${mi}_${ni}_, ls_${mi}_0, ls_${mi}_1, ls_${mi}_2, ls_${mi}_3, mb0, mb1);
      % endif
    % endfor
                }
  % endfor
            }
% endfor
            /* this lane's components in increasing index (element 0 before 1) */
% for ni in range(nt):
            {
                const int j0 = chunk * TN + ${8 * ni} + 2 * tq;
                const float c0 = consts[j0], c1 = consts[j0 + 1];
% if recheck:
                const float2 s0 = scales[j0], s1 = scales[j0 + 1];
% endif
  % for mi in range(mt):
    % for r in range(2):
                {
                    const long i = base + warp * ${16 * mt} + ${16 * mi + 8 * r} + gq;
                    __global float *to = resp + (long)j0 * n + i;   /* (component j0's value) */
      % for e in range(2):
<% q = 2 * r + e %>\
                    if (j0 + ${e} < k) {
% if corrected:
                        const float logp = fma(-0.5f, (sqb_${mi}_${ni}_${q} + lnb_${mi}_${ni}_${q})
                                                      + (sqf_${mi}_${ni}_${q} + lnf_${mi}_${ni}_${q}), c${e});
% else:
                        const float logp = fma(-0.5f, sqb_${mi}_${ni}_${q} + lnb_${mi}_${ni}_${q}, c${e});
% endif
                        saw_nan_${mi}_${r} |= isnan(logp);
                        if (${"1" if recheck else "store_resp"} && i < n)
                            to[${"n" if e else "0"}] = logp;
% if recheck:
                        {   /* (selects, not branches: a warp's lanes part ways at each value) */
                            const float u = logp + value_bound(xx_${mi}_${r}, xn_${mi}_${r}, s${e});
                            const int above1 = u > u1_${mi}_${r}, above2 = u > u2_${mi}_${r};
                            upper_${mi}_${r} = fmax(upper_${mi}_${r}, above2 ? u2_${mi}_${r} : u);
                            u2_${mi}_${r} = above1 ? u1_${mi}_${r} : above2 ? u : u2_${mi}_${r};
                            j2_${mi}_${r} = above1 ? j1_${mi}_${r} : above2 ? j0 + ${e} : j2_${mi}_${r};
                            u1_${mi}_${r} = above1 ? u : u1_${mi}_${r};
                            j1_${mi}_${r} = above1 ? j0 + ${e} : j1_${mi}_${r};
                        }
% endif
                        {
                            const int above = logp > run_max_${mi}_${r};
                            const float scale = exp(above ? run_max_${mi}_${r} - logp : logp - run_max_${mi}_${r});
                            run_sum_${mi}_${r} = above ? fma(run_sum_${mi}_${r}, scale, 1.0f)
                                                : logp > -INFINITY ? run_sum_${mi}_${r} + scale : run_sum_${mi}_${r};
                            best_${mi}_${r} = above ? j0 + ${e} : best_${mi}_${r};
                            run_max_${mi}_${r} = above ? logp : run_max_${mi}_${r};
                        }
                    }
      % endfor
                }
    % endfor
  % endfor
            }
% endfor
            if (more) {
% if copies == 2:
                /* the other copy was last read before the previous barrier */
                __local float *next = lc + ((chunk + 1) & 1) * CHUNK_LOCAL;
% else:
                __local float *next = lc;
                barrier(CLK_LOCAL_MEM_FENCE);   /* the one copy's readers are done */
% endif
                for (int u = 0; u < ${copy_iters}; ++u) {
                    const int e = lid + u * WG;
                    if (e < STAGE_ITEMS) {
${stage_write("u", "next")}\
                    }
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        /* the 4 lanes' partial log-sum-exps of each row */
% for mi in range(mt):
  % for r in range(2):
        {
            const int s = (warp * ${16 * mt} + ${16 * mi + 8 * r} + gq) * 4 + tq;
            lane_max[s] = run_max_${mi}_${r};
            lane_sum[s] = run_sum_${mi}_${r};
            lane_best[s] = best_${mi}_${r};
            lane_nan[s] = saw_nan_${mi}_${r};
% if recheck:
            lane_upper[s] = upper_${mi}_${r};
            lane_j1[s] = j1_${mi}_${r};
            lane_j2[s] = j2_${mi}_${r};
% endif
        }
  % endfor
% endfor
        /* the log-densities in resp are read below by other work-items
           (store_resp 1 or a re-check: a global fence waits for the tile's stores) */
% if recheck:
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  % if lane_recheck:
        /* each lane, for each of its rows: whether only the lanes' two each
           may matter (the owner's test below), and its part of the float32
           value of each of those that may -- the row's x' of its dimensions
           from its registers, one FMA a term in dimension order -- into
           parts; row_made: bit l the lanes' candidate l made, FAST_ROW */
    % for mi in range(mt):
      % for r in range(2):
        {
            const int row = warp * ${16 * mt} + ${16 * mi + 8 * r} + gq;
${merged(sums=False)}\
            const float xx = xx_${mi}_${r}, xn = xn_${mi}_${r};
            float rest = -INFINITY;
            for (int l = 0; l < 4; ++l)
                rest = fmax(rest, lane_upper[row * 4 + l]);
            const float least = line_of(most, value_bound(xx, xn, scales[best]), k);
            const int fast = i < n && !bad_row && rest < least;
            int made = fast ? FAST_ROW : 0;
            for (int l = 0; l < 8; ++l) {
                const int b = l < 4 ? lane_j1[row * 4 + l] : lane_j2[row * 4 + l - 4];
                float part = 0.0f;
                if (fast && b >= 0) {
                    if (resp[(long)b * n + i] + value_bound(xx, xn, scales[b]) >= least) {
                        __global const float *cb = (__global const float *)coefs + (long)b * 2 * DP;
        % for st in range(steps):
          % for e, kk in ((r, 0), (r + 2, 4)):
                        part = fma(xr_${mi}_${st}_${e} * xr_${mi}_${st}_${e}, cb[${8 * st + kk} + tq], part);
                        part = fma(xr_${mi}_${st}_${e}, cb[DP + ${8 * st + kk} + tq], part);
          % endfor
        % endfor
                        made |= 1 << l;
                    }
                }
                parts[(row * 8 + l) * 4 + tq] = part;
            }
            if (tq == 0)
                row_made[row] = made;
        }
      % endfor
    % endfor
        barrier(CLK_LOCAL_MEM_FENCE);
  % endif
        for (int row = lid; row < TM; row += WG) {
${merged()}\
            const float xx = row_xx[row] + row_total[row];   /* (as the lanes') */
            row_total[row] = NAN;
            row_best[row] = -1;
            if (i >= n)
                continue;
            if (bad_row) {   /* as finish(): no re-check */
                lse[i] = most + log(sum);
                labels[i] = best;
                ++bad;
                continue;
            }
  % if lane_recheck:
            const int made = row_made[row];
            if (!(made & FAST_ROW)) {
  % else:
            const float xn = sqrt(xx);
            const float least = line_of(most, value_bound(xx, xn, scales[best]), k);
            float rest = -INFINITY;   /* the largest v_j + B_j past the lanes' two */
            for (int l = 0; l < 4; ++l)
                rest = fmax(rest, lane_upper[row * 4 + l]);
            if (rest >= least) {
  % endif
                row_total[row] = most;   /* values past the lanes' two may matter */
                row_best[row] = best;
                row_xx[row] = xx;
                continue;
            }
            /* only the lanes' two each may matter: those that may are made
               again (the one-product values of the others may be far off: a
               row's sum is of these alone; the largest value is among them) */
  % if not lane_recheck:
            __global const float *xi = x + i * stride;
            __global const float *cf = (__global const float *)coefs;
  % endif
            float again[8];
            most = -INFINITY;
            for (int l = 0; l < 8; ++l) {
                const int b = l < 4 ? lane_j1[row * 4 + l] : lane_j2[row * 4 + l - 4];
                float v = -INFINITY;
  % if lane_recheck:
                if (made & (1 << l)) {   /* the four lanes' parts: (tq 0 + 2) + (1 + 3) */
                    __local const float *pl = parts + (row * 8 + l) * 4;
                    v = fma(-0.5f, (pl[0] + pl[2]) + (pl[1] + pl[3]), consts[b]);
                    resp[(long)b * n + i] = v;
                }
  % else:
                if (b >= 0) {
                    __global float *rb = resp + (long)b * n + i;
                    if (*rb + value_bound(xx, xn, scales[b]) >= least) {
                        v = exact_logp(xi, shift, cf + (long)b * 2 * DP, consts[b]);
                        *rb = v;
                    }
                }
  % endif
                again[l] = v;
                if (v > most || (v == most && v > -INFINITY && b < best)) {
                    most = v;
                    best = b;
                }
            }
            sum = 0;   /* the other values add less than e^-17 of it: left out */
            for (int l = 0; l < 8; ++l)
                if (again[l] > -INFINITY)
                    sum += exp(again[l] - most);
${finish()}\
        }
        /* the rows whose values past their lanes' two largest may matter, one
           at a time, each work-item a share of the row's values (a few rows
           a tile where components are near each other) */
        for (int row = 0; row < TM; ++row) {
            barrier(CLK_LOCAL_MEM_FENCE);   /* (row_* written; lane_* read) */
            const int top_j = row_best[row];
            if (top_j < 0)
                continue;                   /* (uniform) done above */
            const long i = base + row;
            const float xx = row_xx[row], xn = sqrt(xx);
            const float least = line_of(row_total[row], value_bound(xx, xn, scales[top_j]), k);
            __global const float *xi = x + i * stride;
            __global const float *cf = (__global const float *)coefs;
            float run_max = -INFINITY, run_sum = 0;
            int best = 0;
            for (int j = lid; j < k; j += WG) {
                __global float *rj = resp + (long)j * n + i;
                float v = *rj;
                if (v + value_bound(xx, xn, scales[j]) >= least) {
                    v = exact_logp(xi, shift, cf + (long)j * 2 * DP, consts[j]);
                    *rj = v;
                }
                if (v > run_max) {
                    run_sum = fma(run_sum, exp(run_max - v), 1.0f);
                    run_max = v;
                    best = j;
                } else if (v > -INFINITY) {
                    run_sum += exp(v - run_max);
                }
            }
            lane_max[lid] = run_max;
            lane_sum[lid] = run_sum;
            lane_best[lid] = best;
            /* a tree of the work-items' partial log-sum-exps: the larger
               maximum (its lower component among equal ones), sums rescaled */
            for (int h = WG / 2; h > 0; h /= 2) {
                barrier(CLK_LOCAL_MEM_FENCE);
                if (lid < h) {
                    const float m0 = lane_max[lid], m1 = lane_max[lid + h];
                    const int b0 = lane_best[lid], b1 = lane_best[lid + h];
                    const float most = fmax(m0, m1);
                    if (most > -INFINITY) {
                        const float part0 = m0 > -INFINITY ? lane_sum[lid] * exp(m0 - most) : 0.0f;
                        const float part1 = m1 > -INFINITY ? lane_sum[lid + h] * exp(m1 - most) : 0.0f;
                        lane_sum[lid] = part0 + part1;
                        lane_max[lid] = most;
                        lane_best[lid] = m1 > m0 || (m1 == m0 && b1 < b0) ? b1 : b0;
                    }
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid == 0) {
                float most = lane_max[0], sum = lane_sum[0];
                int best = lane_best[0], bad_row = 0;
                do {   /* (finish's continue: out of this row) */
${finish()}\
                } while (0);
            }
        }
        /* (store_resp 1 reads the values stored here: a global fence) */
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
% else:
        if (store_resp == 1)
            barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        else
            barrier(CLK_LOCAL_MEM_FENCE);
        for (int row = lid; row < TM; row += WG) {
${merged()}\
${finish()}\
        }
% endif
        barrier(CLK_LOCAL_MEM_FENCE);
        /* the tile's responsibilities normalised in place: consecutive rows
           of a component together, many independent reads in flight */
        if (store_resp == 1) {
            /* TM is WG or WG / 2: WG / TM components a step */
            const int row = lid % TM;
            const float total = row_total[row];
            if (!isnan(total)) {
                __global float *r = resp + base + row;
                #pragma unroll 8
                for (int j = lid / TM; j < k; j += WG / TM)
                    r[(long)j * n] = exp(r[(long)j * n] - total);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);   /* lc is the next tile's chunk copy again */
    }
    ll = group_sum(ll, scratch);
% if not acc_double:
    ll_comp = group_sum(ll_comp, scratch);
% endif
    const int total_bad = (int)group_sum((acc_t)bad, scratch);
    if (lid == 0) {
        part_ll[g] = ll;
% if not acc_double:
        part_ll[groups + g] = ll_comp;
% endif
        part_bad[g] = total_bad;
    }
}

## the largest of a row's four lanes' partial log-sum-exps (lane_*), its
## lowest component among equal maxima, the others' sums rescaled to it:
## most, sum, best, bad_row
<%def name="merged(sums=True)">\
            const long i = base + row;
            float most = -INFINITY, sum = 0;
            int best = 0, bad_row = 0;
            for (int l = 0; l < 4; ++l) {   /* the largest maximum, its lowest component */
                const float m = lane_max[row * 4 + l];
                const int b = lane_best[row * 4 + l];
                bad_row |= lane_nan[row * 4 + l];
                if (m > most || (m == most && b < best)) {
                    most = m;
                    best = b;
                }
            }
% if sums:
            for (int l = 0; l < 4; ++l) {
                const float m = lane_max[row * 4 + l];
                if (m > -INFINITY)
                    sum = fma(lane_sum[row * 4 + l], exp(m - most), sum);
            }
% endif
</%def>
## a row's lse, label and log-likelihood term from merged()'s
<%def name="finish()">\
            const float total = most + log(sum);
            bad_row = bad_row || !isfinite(total);
            row_total[row] = i < n && !bad_row ? total : NAN;   /* NaN: not normalised */
            if (i >= n)
                continue;
            lse[i] = total;
            labels[i] = best;
            if (bad_row) {
                ++bad;
                continue;
            }
% if acc_double:
            ll += (acc_t)total;
% else:
${select.kahan_add("ll", "ll_comp", "total")}\
% endif
</%def>
