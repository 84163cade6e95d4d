<%doc>
Distance + argmin on NVIDIA tensor cores (the "mma" Lloyd variant: compute
capability 8 or more, float32 data, d <= 128): the outputs of
lloyd_gemm_assign.cl.mako -- labels, exact distances, inertia and change
counts -- and its sums from lloyd_accumulate_sums.cl.mako.  The portable gemm
variant stands beside it: lloyd_mma.py offers this one only where NVIDIA's
runtime reports tensor cores, and the gemm variant is planned where it does
not build.
Reads spec: d, dp (d padded to 8), kp (k padded to tn), tm (rows of a
work-group tile: wg / 32 warps of 16 * mt), tn (centroids of a local-memory
chunk), wg (work-items), mt (m16 row tiles a warp owns), kpar (accumulator
sets over the k steps: 1, or 2 for even and odd ones), weighted, k,
precision ("float32", "tf32", "bf16"), gamma, quantum (the fast modes'
bound: lloyd_mma.bound_terms), emulate (the products in plain OpenCL:
common/mma_fragments.cl.mako, tests on CPUs; bf16's m16n8k16 as two
m16n8k8), truncate (emulate's sums as the tensor cores' truncation).

The dot products x.c run as inline-PTX mma.sync m16n8k8 TF32 products in the
3xTF32 split: each float v = big + small, both TF32 (round to nearest), and
x.c = xb.cb + xb.cs + xs.cb (the small x small term, 2^-22 relative, dropped):
float32-level products at tensor-core rates (precision "float32").

The fast modes make one product a step, float32 accumulation: "tf32" the
big x big one (dp = d padded to 8; the split centres' small parts unread),
"bf16" mma.sync m16n8k16 bf16 products (dp = d padded to 32; centres in the
bf16 layout of lloyd_mma_split.cl.mako, rows rounded by bf16_pack.cl).
A score and its centroid's index are one key: the index in the score's
low IBITS mantissa bits (bits of kp - 1), so each lane keeps its three
best keys of a row with five fmin / fmax (no index registers, no
branches), and the rows their three best of all.  The accumulators start
at -||x||^2 / 2, so a key is the distance ||x - c||^2 (shifted alike for
all of a row's centres) rather than ||c||^2 - 2 x.c: its index bits cost
2^(q-23) of the distance, not of ||x||^2.  Each key is within E_j
of its centre's exact score (lloyd_mma.bound_terms: the row's rounding
rho = ||x - x~|| and norm, taken here as the row's last step; the
centre's ||c~_j||, ||c_j - c~_j|| from split_centers' center_rounding; the
accumulation's gamma; the key's own quantum at its exponent).  A row is
re-checked unless k2 - k1 > E_1 + E_2, k3 - k1 > E_1 + E_3 and
k3 - k1 - c |k3| > E_1 + E (every other centre: the iteration's largest
centre terms, reduced at the start), each widened by 1.001 for its float
evaluation: the exact float32 (x - c)^2 distances of the best and of
each of j2, j3 failing its own test decide; the smallest (lower index on
ties) wins.  A row not re-checked has its winner's exact score below
every other's, so its winner is the exact argmin; a re-checked row's
label differs from it only by the float32 distances' rounding or where
a fourth centre is within the bound (the three-candidate limit).
part_rechecked counts the re-checked rows of each work-group.

A warp's rows stay in registers as the products' A fragments, split once per
row tile (16 * mt rows x dp dimensions: mt * dp registers), so the only
operand that moves is C: chunks of tn centroids, split once an iteration
into the B fragments' order (lloyd_mma_split.cl.mako: one 128-bit read for a
lane's big and small pair of fragments), copied to local memory
double-buffered -- one barrier a chunk -- and read there by every warp.  The
large products and the corrections go to separate accumulators (and with
kpar 2, even and odd k8 steps too): independent chains per fragment hide the
tensor cores' latency.  Scores ||c||^2 - 2 x.c, ties to the lowest index, and the winner's
exact (x - c)^2 distance recomputed, as in the gemm variant.
</%doc>
<%inherit file="/prelude.cl.mako"/>
<%namespace name="select" file="/common/select.cl.mako"/>
<%namespace name="mma" file="/common/mma_fragments.cl.mako"/>
% if emulate:
${mma.products(True, truncate, precision == "bf16")}\
/* the m16n8k16 bf16 product as its two m16n8k8 halves (registers a0, a1,
   b0: k 0..7; a2, a3, b1: k 8..15) */
#define MMA16(d, a0, a1, a2, a3, b0, b1) \
    do { MMA_BF16(d, a0, a1, b0); MMA_BF16(d, a2, a3, b1); } while (0)
% else:
<%include file="/tf32_split.cl"/>
  % if precision == "bf16":
<%include file="/bf16_pack.cl"/>
  % endif
% endif
<%
    fast = precision != "float32"
    bf16 = precision == "bf16"
    steps = dp // 16 if bf16 else dp // 8      # mma k steps (k16 or k8)
    groups = dp // 32 if bf16 else dp // 8     # a centroid's uint4 of 4 lanes
    nt = tn // 8
    slots = dp // 8 if bf16 else dp // 2
    ibits = max(1, (kp - 1).bit_length())      # a key's index bits
    chunk_vecs = tn * slots
    copy_iters = -(-chunk_vecs // wg)
%>
#define D ${d}
#define KP ${kp}
#define TN ${tn}
#define TM ${tm}
#define WG ${wg}
#define SLOTS ${slots}                 /* a centroid's uint4 (lloyd_mma_split.cl.mako) */
#define CHUNKS (KP / TN)
#define CHUNK_VECS ${chunk_vecs}
% if fast:
#define KEY_MASK ${hex(2 ** 32 - 2 ** ibits)}u    /* a key's score bits */
#define KEY_INDEX(key) ((int)(as_uint(key) & ${hex(2 ** ibits - 1)}u))
#define GAMMA ${gamma}
#define QUANTUM ${quantum}
  % if bf16:
#define ROUNDED(v) as_float(bf16_bits(v) << 16)   /* as the products read v */
  % else:
#define ROUNDED(v) as_float(tf32_bits(v))
  % endif

/* E_j of lloyd_mma.bound_terms: a bound on |key - exact score| for a key of
   a centre with ||c~|| m, ||c - c~|| r and float32 norm nn, for a row of
   norm `norm` and rounding rho; the key's quantum is the power of two of
   its exponent (at least the smallest normal's) times 2^(q - 23) */
inline float score_error(const float key, const float m, const float r, const float nn,
                         const float norm, const float rho)
{
    const float quantum = fmax(as_float(as_uint(key) & 0x7f800000u), FLT_MIN) * QUANTUM;
    return 2.0f * (fma(rho, m, norm * r) + GAMMA * fma(norm + rho, m, 0.5f * norm * norm))
           + fma(0x1p-24f, nn + fabs(key) + quantum, quantum);
}
% endif
% if weighted:
#define WEIGHT(i) w[i]
% else:
#define WEIGHT(i) ((real_t)1)
% endif

% if not emulate:
/* d##0 ... d##3 += A (a0..a3) x B (b0, b1), one m16n8k8 product */
#define MMA(d, a0, a1, a2, a3, b0, b1) \
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 " \
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};" \
        : "+f"(d##0), "+f"(d##1), "+f"(d##2), "+f"(d##3) \
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))
% endif
% if bf16 and not emulate:
/* the same with m16n8k16 bf16 operands (two packed values a register) */
#define MMA16(d, a0, a1, a2, a3, b0, b1) \
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 " \
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};" \
        : "+f"(d##0), "+f"(d##1), "+f"(d##2), "+f"(d##3) \
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))
% endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void assign_gemm(
    __global const float *restrict x, const long n, const long stride,
    __global const float *restrict w,
    __global const uint4 *restrict center_tiles,  /* KP x SLOTS (lloyd_mma_split) */
    __global const float *restrict centers,       /* K x D, for the exact distance */
    __global const float *restrict center_norms,  /* KP, +inf on padding */
% if fast:
    __global const float *restrict center_rounding,   /* KP x 2 (lloyd_mma_split) */
% endif
    __global int *restrict labels,                /* in: previous, out: new */
    __global float *restrict min_dist,            /* exact distance to own centre */
    __global acc_t *restrict part_inertia,        /* groups */
    __global int *restrict part_flags,            /* groups x 2: changed, non-finite */
% if fast:
    __global int *restrict part_rechecked,        /* groups: rows re-checked */
% endif
    const long tiles_per_group)
{
    const int lid = get_local_id(0);
    const int lane = lid % 32, warp = lid / 32;
    const int gq = lane / 4, tq = lane % 4;      /* the fragments' row group, thread */
    /* this lane's slot of even and odd k8 steps in a row (swizzled: see
       lloyd_mma_split.cl.mako) */
% if groups % 2 == 0:
    const int slot_even = tq + ((gq & 1) << 2), slot_odd = tq - ((gq & 1) << 2);
% else:
    const int slot_even = tq, slot_odd = tq;
% endif
    const long g = get_group_id(0);
    /* the chunks' memory is free once a row tile's last chunk is read: the
       rows' partial winners share it (it is made large enough for them) */
    __local uint4 lc[${max(2 * chunk_vecs, tm * (3 if fast else 2))}];
% if fast:
    __local float *row_keys = (__local float *)lc;      /* TM x 4 lanes x 3 */
% else:
    __local float *row_best = (__local float *)lc;
    __local int *row_index = (__local int *)lc + TM * 4;
% endif
    __local acc_t scratch[WG];
% if emulate:
    __local uint emulated[WG * 6];
% endif

    acc_t inertia = 0;
    int changed = 0, nonfinite = 0;
% if fast:
    int rechecked = 0;
    /* the largest n_j, ||c~_j||, ||c_j - c~_j|| over the real centres (the
       bound of the centres past a row's three): a work-group's max each */
    float most[3];
% for v, src in enumerate(("center_norms[j]", "center_rounding[2 * j]", "center_rounding[2 * j + 1]")):
    {
        float m = 0.0f;
        for (int j = lid; j < ${k}; j += WG)
            m = fmax(m, ${src});
        scratch[lid] = m;
        for (int s = WG / 2; s > 0; s >>= 1) {
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid < s)
                scratch[lid] = fmax(scratch[lid], scratch[lid + s]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        most[${v}] = scratch[0];
        barrier(CLK_LOCAL_MEM_FENCE);   /* scratch is free again */
    }
% endfor
% endif
    const long first = g * tiles_per_group * TM;
    for (long t = 0; t < tiles_per_group; ++t) {
        const long base = first + t * TM;
        if (base >= n)
            break;                      /* uniform over the group */
        /* this lane's A fragments: rows gq and gq + 8 of each m16 tile,
           dimensions tq and tq + 4 of each k8 step; zero outside the data */
% for mi in range(mt):
  % for s in range(steps):
        uint xb_${mi}_${s}_0, xb_${mi}_${s}_1, xb_${mi}_${s}_2, xb_${mi}_${s}_3;
    % if not fast:
        uint xs_${mi}_${s}_0, xs_${mi}_${s}_1, xs_${mi}_${s}_2, xs_${mi}_${s}_3;
    % endif
  % endfor
  % if fast:
        /* this lane's share of ||x||^2 of rows gq, gq + 8 (its fragments'
           dimensions): the rows' shifts below */
        float part_${mi}_0 = 0, part_${mi}_1 = 0, shift_${mi}_0, shift_${mi}_1;
  % endif
        {
  % for h in range(2):
            const long i${h} = base + warp * ${16 * mt} + ${16 * mi + 8 * h} + gq;
            __global const float *r${h} = x + (i${h} < n ? i${h} : 0) * stride;
            const int ok${h} = i${h} < n;
  % endfor
  % for s in range(steps):
    % if bf16:
      % for e, (h, kk) in enumerate(((0, 0), (1, 0), (0, 8), (1, 8))):
            {   /* dimensions c and c + 1, packed */
                const int c = ${16 * s + kk} + 2 * tq;
                const float v0 = ok${h} && c < D ? r${h}[c] : 0.0f;
                const float v1 = ok${h} && c + 1 < D ? r${h}[c + 1] : 0.0f;
                xb_${mi}_${s}_${e} = bf16_pack(v0, v1);
                part_${mi}_${h} = fma(v1, v1, fma(v0, v0, part_${mi}_${h}));
            }
      % endfor
    % else:
      % for e, (h, kk) in enumerate(((0, 0), (1, 0), (0, 4), (1, 4))):
            {
                const int c = ${8 * s + kk} + tq;
                const float v = ok${h} && c < D ? r${h}[c] : 0.0f;
                xb_${mi}_${s}_${e} = tf32_bits(v);
        % if fast:
                part_${mi}_${h} = fma(v, v, part_${mi}_${h});
        % else:
                xs_${mi}_${s}_${e} = tf32_bits(v - as_float(xb_${mi}_${s}_${e}));
        % endif
            }
      % endfor
    % endif
  % endfor
        }
% endfor
% if fast:
        {   /* -||x||^2 / 2 of each row, its four lanes' shares added in one
               order in each of them (so the row's keys shift alike): the
               products' accumulators start there, so that a key is
               ||x - c||^2, whose index bits cost 2^(q-23) of the distance,
               not of ||x||^2 (lloyd_mma.bound_terms).  lc is free here: the
               last tile's row winners were read before its end's barrier */
            __local float *parts = (__local float *)lc;
  % for mi in range(mt):
    % for h in range(2):
            parts[(warp * ${16 * mt} + ${16 * mi + 8 * h} + gq) * 4 + tq] = part_${mi}_${h};
    % endfor
  % endfor
            barrier(CLK_LOCAL_MEM_FENCE);
  % for mi in range(mt):
    % for h in range(2):
            {
                __local const float *p = parts + (warp * ${16 * mt} + ${16 * mi + 8 * h} + gq) * 4;
                shift_${mi}_${h} = -0.5f * (((p[0] + p[1]) + p[2]) + p[3]);
            }
    % endfor
  % endfor
            barrier(CLK_LOCAL_MEM_FENCE);   /* read before chunk 0 is staged there */
        }
% endif
% for mi in range(mt):
  % for r in range(2):
    % if fast:
        float key1_${mi}_${r} = INFINITY, key2_${mi}_${r} = INFINITY, key3_${mi}_${r} = INFINITY;
    % else:
        float best_${mi}_${r} = INFINITY;
        int index_${mi}_${r} = 0;
    % endif
  % endfor
% endfor
        /* chunk 0 staged; then each chunk's successor is read into registers
           while it is multiplied, and stored in the other copy */
        uint4 p[${copy_iters}];
        for (int u = 0; u < ${copy_iters}; ++u) {
            const int e = lid + u * WG;
            if (e < CHUNK_VECS)
                lc[e] = center_tiles[e];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int chunk = 0; chunk < CHUNKS; ++chunk) {
            const int more = chunk + 1 < CHUNKS;
            if (more) {
                for (int u = 0; u < ${copy_iters}; ++u) {
                    const int e = lid + u * WG;
                    if (e < CHUNK_VECS)
                        p[u] = center_tiles[(long)(chunk + 1) * CHUNK_VECS + e];
                }
            }
            __local const uint4 *cur = lc + (chunk & 1) * CHUNK_VECS;
% for mi in range(mt):
  % for ni in range(nt):
    % for a in (("big",) if fast else ("big", "fix")):
      % for par in range(kpar):
<% z0, z1 = (f"shift_{mi}_0", f"shift_{mi}_1") if fast and par == 0 else ("0", "0") %>\
            float ${a}_${mi}_${ni}_${par}_0 = ${z0}, ${a}_${mi}_${ni}_${par}_1 = ${z0}, ${a}_${mi}_${ni}_${par}_2 = ${z1}, ${a}_${mi}_${ni}_${par}_3 = ${z1};
      % endfor
    % endfor
  % endfor
% endfor
% for q in range(groups):
  % for ni in range(nt):
            {
    % if bf16:
                /* the lane's B registers of k16 steps 2q and 2q + 1 */
    % else:
                /* big and small parts of the lane's two B values */
    % endif
                const uint4 b = cur[(${8 * ni} + gq) * SLOTS + ${4 * q} + slot_${"odd" if q % 2 else "even"}];
    % for mi in range(mt):
      % if bf16:
        % for h in range(2):
<% s = 2 * q + h %>\
                MMA16(big_${mi}_${ni}_${s % kpar}_, xb_${mi}_${s}_0, xb_${mi}_${s}_1, xb_${mi}_${s}_2, xb_${mi}_${s}_3, b.s${2 * h}, b.s${2 * h + 1});
        % endfor
      % else:
<% s = q %>\
                MMA(big_${mi}_${ni}_${s % kpar}_, xb_${mi}_${s}_0, xb_${mi}_${s}_1, xb_${mi}_${s}_2, xb_${mi}_${s}_3, b.s0, b.s2);
        % if not fast:
                MMA(fix_${mi}_${ni}_${s % kpar}_, xb_${mi}_${s}_0, xb_${mi}_${s}_1, xb_${mi}_${s}_2, xb_${mi}_${s}_3, b.s1, b.s3);
                MMA(fix_${mi}_${ni}_${s % kpar}_, xs_${mi}_${s}_0, xs_${mi}_${s}_1, xs_${mi}_${s}_2, xs_${mi}_${s}_3, b.s0, b.s2);
        % endif
      % endif
    % endfor
            }
  % endfor
% endfor
            /* this lane's columns in increasing index (element 0 before 1):
               strict < keeps the lowest on ties */
% for ni in range(nt):
            {
                const int j = chunk * TN + ${8 * ni} + 2 * tq;
                const float n0 = center_norms[j], n1 = center_norms[j + 1];
  % for mi in range(mt):
    % for r in range(2):
                {
      % for e in range(2):
<% q = 2 * r + e %>\
% if fast and kpar == 2:
                    const float s${e} = fma(-2.0f, big_${mi}_${ni}_0_${q} + big_${mi}_${ni}_1_${q}, n${e});
% elif fast:
                    const float s${e} = fma(-2.0f, big_${mi}_${ni}_0_${q}, n${e});
% elif kpar == 2:
                    const float s${e} = fma(-2.0f, (big_${mi}_${ni}_0_${q} + big_${mi}_${ni}_1_${q})
                                                 + (fix_${mi}_${ni}_0_${q} + fix_${mi}_${ni}_1_${q}), n${e});
% else:
                    const float s${e} = fma(-2.0f, big_${mi}_${ni}_0_${q} + fix_${mi}_${ni}_0_${q}, n${e});
% endif
      % endfor
      % if fast:
        % for e in range(2):
                    {   /* the key into the lane's three best (a NaN key, a padding
                           centre's, repeats key1: the row merge drops repeats) */
                        const float key = as_float((as_uint(s${e}) & KEY_MASK) | (uint)(j + ${e}));
                        const float t = fmax(key1_${mi}_${r}, key);
                        key1_${mi}_${r} = fmin(key1_${mi}_${r}, key);
                        const float u = fmax(key2_${mi}_${r}, t);
                        key2_${mi}_${r} = fmin(key2_${mi}_${r}, t);
                        key3_${mi}_${r} = fmin(key3_${mi}_${r}, u);
                    }
        % endfor
      % else:
                    if (s0 < best_${mi}_${r}) { best_${mi}_${r} = s0; index_${mi}_${r} = j; }
                    if (s1 < best_${mi}_${r}) { best_${mi}_${r} = s1; index_${mi}_${r} = j + 1; }
      % endif
                }
    % endfor
  % endfor
            }
% endfor
            if (more) {
                /* the other copy was last read before the previous barrier */
                __local uint4 *next = lc + ((chunk + 1) & 1) * CHUNK_VECS;
                for (int u = 0; u < ${copy_iters}; ++u) {
                    const int e = lid + u * WG;
                    if (e < CHUNK_VECS)
                        next[e] = p[u];
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        /* the 4 partial winners of each row (its lanes tq); lowest index on ties */
% for mi in range(mt):
  % for r in range(2):
        {
            const int row = warp * ${16 * mt} + ${16 * mi + 8 * r} + gq;
% if fast:
            row_keys[row * 12 + tq * 3] = key1_${mi}_${r};
            row_keys[row * 12 + tq * 3 + 1] = key2_${mi}_${r};
            row_keys[row * 12 + tq * 3 + 2] = key3_${mi}_${r};
% else:
            row_best[row * 4 + tq] = best_${mi}_${r};
            row_index[row * 4 + tq] = index_${mi}_${r};
% endif
        }
  % endfor
% endfor
        barrier(CLK_LOCAL_MEM_FENCE);
% if fast:
        /* the three best distinct keys of each row's 12, then the re-check */
        for (int r = lid; r < TM; r += WG) {
            float k1 = INFINITY, k2 = INFINITY, k3 = INFINITY;
            for (int s = 0; s < 12; ++s) {
                const float v = row_keys[r * 12 + s];
                if (isnan(v) || v == k1 || v == k2 || v == k3)
                    continue;
                const float t = fmax(k1, v);
                k1 = fmin(k1, v);
                const float u = fmax(k2, t);
                k2 = fmin(k2, t);
                k3 = fmin(k3, u);
            }
            const long i = base + r;
            if (i < n) {
                __global const float *row = x + i * stride;
                int j = KEY_INDEX(k1);
                float exact = 0;
                for (int c = 0; c < D; ++c) {
                    const float diff = row[c] - centers[(long)j * D + c];
                    exact = fma(diff, diff, exact);
                }
                /* the row's norm and rounding rho = ||x - x~|| (the bound's) */
                float xx = 0, lost = 0;
                for (int c = 0; c < D; ++c) {
                    const float v = row[c], e = v - ROUNDED(v);   /* exact */
                    xx = fma(v, v, xx);
                    lost = fma(e, e, lost);
                }
                const float norm = sqrt(xx), rho = sqrt(lost);
                const float e1 = score_error(k1, center_rounding[2 * j], center_rounding[2 * j + 1],
                                             center_norms[j], norm, rho);
                /* candidates 2 and 3 against their own bounds; every other
                   centre (key >= k3) against the iteration's largest terms */
                int check = 0;
                for (int m = 0; m < 2; ++m) {
                    const float km = m ? k3 : k2;
                    if (isinf(km))
                        continue;   /* no such candidate */
                    const int jm = KEY_INDEX(km);
                    const float em = score_error(km, center_rounding[2 * jm],
                                                 center_rounding[2 * jm + 1], center_norms[jm],
                                                 norm, rho);
                    if (!(km - k1 > 1.001f * (e1 + em)))
                        check |= 1 << m;
                }
                const float others = score_error(0.0f, most[1], most[2], most[0], norm, rho);
                const float c3 = 0x1p-24f + (1.0f + 0x1p-23f) * QUANTUM;
                const int beyond = !isinf(k3) &&
                    !(k3 - k1 - 1.001f * c3 * fabs(k3) > 1.001f * (e1 + others));
                /* (a row of no finite key -- non-finite data, flagged -- is not a tie) */
                if (!isinf(k1) && (check || beyond)) {   /* a near tie: the exact distances decide */
                    ++rechecked;
                    for (int m = 0; m < 2; ++m) {
                        if (!(check & (1 << m)))
                            continue;
                        const int jm = KEY_INDEX(m ? k3 : k2);
                        float other = 0;
                        for (int c = 0; c < D; ++c) {
                            const float diff = row[c] - centers[(long)jm * D + c];
                            other = fma(diff, diff, other);
                        }
                        if (other < exact || (other == exact && jm < j)) {
                            exact = other;
                            j = jm;
                        }
                    }
                }
${select.record_winner("i", "j")}\
            }
        }
% else:
${select.row_winners(4, "float")}\
% endif
        barrier(CLK_LOCAL_MEM_FENCE);   /* row winners read before the next tile's */
    }
${select.assignment_partials()}\
% if fast:
    {
        const int total_rechecked = (int)group_sum((acc_t)rechecked, scratch);
        if (lid == 0)
            part_rechecked[g] = total_rechecked;
    }
% endif
}