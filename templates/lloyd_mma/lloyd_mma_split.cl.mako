<%doc>
The centres of the "mma" Lloyd variant in its B fragments' order
(center_tiles of lloyd_mma_assign.cl.mako), split once an iteration.
Reads spec: d, k, dp (d padded to 8; 32 in bf16), kp (k padded to the
chunk), precision.

"float32" and "tf32": centroid j's row holds DP / 2 uint4 slots; slot p is
the lane tq = s % 4 of k8 step s / 4, where s = p ^ SWIZZLE(j): big and
small parts of dimension 8 (s / 4) + tq, then of that + 4 ("tf32" reads the
big parts only).  "bf16": DP / 8 slots; slot p (s = p ^ SWIZZLE(j)) is lane
tq = s % 4's B registers of k16 steps 2 (s / 4) and 2 (s / 4) + 1, each two
registers of two bf16 values (the m16n8k16 B fragment): dimensions
16 t + 2 tq and + 1, then 16 t + 2 tq + 8 and + 9, for step t.  With an even
number of slot groups (4 slots each) the rows' length is a multiple of 32
banks, and odd rows swap the slots of even and odd groups, so that the
fragment reads of a warp's 8 rows do not collide.

The fast modes ("tf32", "bf16") also write center_rounding: centroid j's
||c~_j|| and ||c_j - c~_j|| (c~_j: its operands as the products read them),
the per-centre terms of the re-check's bound (lloyd_mma.bound_terms; zero
on padding), one work-item a centroid.
</%doc>
<%inherit file="/prelude.cl.mako"/>
${includes()}\
#define D ${d}
#define K ${k}
#define KP ${kp}
${definitions()}

__kernel void split_centers(
    __global const float *restrict centers,   /* K x D */
    __global uint4 *restrict center_tiles     /* KP x SLOTS */
% if precision != "float32":
    , __global float *restrict center_rounding  /* KP x 2: ||c~_j||, ||c_j - c~_j|| */
% endif
    )
{
    const int e = get_global_id(0);
${split_one("e")}\
}

<%doc>
The split as definitions, which lloyd_update_group.cl.mako also expands (its
one work-group writing every element in turn): D, K, KP defined, the
centres read from "centers" (float, K x D), the helpers' includes
(includes()) before.
</%doc>
<%def name="includes()">\
<%include file="/tf32_split.cl"/>
% if precision == "bf16":
<%include file="/bf16_pack.cl"/>
% endif
</%def>

<%def name="definitions()">\
<% groups = dp // 32 if precision == "bf16" else dp // 8 %>\
#define SLOTS ${dp // 8 if precision == "bf16" else dp // 2}
#define SWIZZLE(j) (${int(groups % 2 == 0)} * ((j) & 1) << 2)

/* dimension c of centroid j, zero outside the centres */
#define AT(j, c) ((j) < K && (c) < D ? centers[(long)(j) * D + (c)] : 0.0f)
% if precision == "bf16":
#define ROUNDED(v) as_float(bf16_bits(v) << 16)
% elif precision == "tf32":
#define ROUNDED(v) as_float(tf32_bits(v))
% endif
</%def>

<%def name="split_one(e)">\
% if precision != "float32":
    if (${e} < KP) {   /* KP * SLOTS >= KP elements */
        float kept = 0, lost = 0;
        for (int c = 0; c < D; ++c) {
            const float v = AT(${e}, c), r = ROUNDED(v);
            kept = fma(r, r, kept);
            lost = fma(v - r, v - r, lost);   /* v - r: exact */
        }
        center_rounding[2 * ${e}] = sqrt(kept);
        center_rounding[2 * ${e} + 1] = sqrt(lost);
    }
% endif
    if (${e} < KP * SLOTS) {
        const int j = ${e} / SLOTS, s = (${e} % SLOTS) ^ SWIZZLE(j);
% if precision == "bf16":
        const int c0 = s / 4 * 32 + 2 * (s % 4), c1 = c0 + 16;
        center_tiles[${e}] = (uint4)(bf16_pack(AT(j, c0), AT(j, c0 + 1)),
                                     bf16_pack(AT(j, c0 + 8), AT(j, c0 + 9)),
                                     bf16_pack(AT(j, c1), AT(j, c1 + 1)),
                                     bf16_pack(AT(j, c1 + 8), AT(j, c1 + 9)));
% else:
        const int c = s / 4 * 8 + s % 4;
        center_tiles[${e}] = tf32_split2(AT(j, c), AT(j, c + 4));
% endif
    }
</%def>
