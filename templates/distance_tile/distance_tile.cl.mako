<%doc>
Register-tiled distances of a block of TM rows ("X", the points) by TN
columns ("C": centres, or other points): a def library with no kernel of its
own, used by lloyd_gemm_assign.cl.mako (k-means), hierarchical_distances.cl.mako
(condensed pdist) and cmeans_pass.cl.mako (fuzzy c-means) through
    <%namespace name="tile" file="/distance_tile/distance_tile.cl.mako"/>

Reads spec (from the calling template's context): real_t, tm, tn (rows and
columns of a work-group tile), rm, rn (a work-item's register tile), kc
(depth of a local-memory chunk), vw (width of the local-memory reads; a
work-item's register tile is rm / vw by rn / vw vectors, interleaved with its
neighbours' so a wavefront reads consecutive vectors: no bank conflicts).

The caller owns the loop over depth chunks (and its barriers): per chunk it
stages KC features of its TM rows (transposed: lx[k * TMP + row]) and of its
TN columns (lc[k * TNP + col]) with stage_*(), then runs multiply(form),
which walks the chunk's features in increasing order.  Zero padding (rows
past n, features past d) adds an exact zero in every form, so a pair's
accumulator is the in-order sum over its real features -- the rounding of a
plain loop over the features (pdist's, or a fused c-means loop's).

Forms (acc_r_q the accumulator of register row r, column q; a, b the row's
and the column's feature):
  dot           acc = fma(a, b, acc)                 k-means: ||c||^2 - 2 x.c
  sqdiff        t = a - b; acc = fma(t, t, acc)      exact squared distance
  sqdiff_nofma  t = a - b; acc += t * t              scipy's rounding (the caller
                                                     sets FP_CONTRACT OFF)
  cityblock     acc += fabs(a - b)
  chebyshev     acc = fmax(acc, fabs(a - b))
  sqdiff_scaled t = (a - b) * s; acc = fma(t, t, acc) a diagonal Mahalanobis term (GMM
                                                     "diag": s the column's precision
                                                     factor, staged in ls like lc)
</%doc>
<%!
    COMPS = "0123456789abcdef"
%>
## the macros of the tile shape; c_pad: the column tile's local rows padded by
## the vector width too (columns staged transposed from row-major data)
## with_wg=False: the caller defines WG (it must equal NX * NY)
<%def name="defines(c_pad=False, with_wg=True)">
#define TM ${tm}
#define TN ${tn}
#define KC ${kc}
#define NX ${tn // rn}
#define NY ${tm // rm}
% if with_wg:
#define WG ${(tn // rn) * (tm // rm)}
% endif
/* local rows padded by the vector width: the transposed stores (one row per
   lane run) hit different banks, and vector reads stay aligned */
#define TMP (TM + ${vw})
#define TNP ${f"(TN + {vw})" if c_pad else "TN"}
</%def>
## the local chunks: lx (KC x TMP) and lc (KC x TNP), declared as vectors so
## that the vector reads are aligned; copies 2: two of each (double buffering,
## chunk b at lx + b * KC * TMP)
<%def name="local_chunks(scaled=False, copies=1)">
<%  vec = f"{real_t}{vw}" if vw > 1 else real_t %>\
    __local ${vec} lx_vec[${copies} * KC * TMP / ${vw}];
    __local ${vec} lc_vec[${copies} * KC * TNP / ${vw}];
    __local real_t *lx = (__local real_t *)lx_vec;
    __local real_t *lc = (__local real_t *)lc_vec;
% if scaled:
    __local ${vec} ls_vec[KC * TNP / ${vw}];     /* the columns' scales (sqdiff_scaled) */
    __local real_t *ls = (__local real_t *)ls_vec;
% endif
</%def>
## index (within the tile) of register row r / register column q of work-item (ty, tx)
<%def name="row(r)">(${r // vw} * NY + ty) * ${vw} + ${r % vw}</%def>
<%def name="col(q)">(${q // vw} * NX + tx) * ${vw} + ${q % vw}</%def>
## the accumulators, zero
<%def name="accumulators(indent='        ')">
% for r in range(rm):
  % for q in range(rn):
${indent}real_t acc_${r}_${q} = 0;
  % endfor
% endfor
</%def>
## stage a chunk: element e of *rows* x KC (row e / KC, feature e % KC), value
## *value* (an expression of e), into *dst* transposed with row stride *stride*
<%def name="stage_transposed(dst, stride, rows, value)">
            for (int e = lid; e < ${rows} * KC; e += WG)
                ${dst}[(e % KC) * ${stride} + e / KC] = ${value};
</%def>
## stage a chunk already feature-major: element e (feature e / cols, column e % cols)
<%def name="stage_direct(dst, cols, value)">
            for (int e = lid; e < ${cols} * KC; e += WG)
                ${dst}[e] = ${value};
</%def>
## the register tile over the chunk's KC features, in increasing order; buf:
## which copy of the chunks (an expression; local_chunks(copies=2))
<%def name="multiply(form, buf=None)">
<%
    at_x = f"({buf}) * (KC * TMP / {vw}) + " if buf is not None else ""
    at_c = f"({buf}) * (KC * TNP / {vw}) + " if buf is not None else ""
%>\
            #pragma unroll
            for (int kk = 0; kk < KC; ++kk) {
% if vw > 1:
<%  vec = f"{real_t}{vw}" %>\
                __local const ${vec} *xr = lx_vec + ${at_x}kk * (TMP / ${vw});
                __local const ${vec} *cr = lc_vec + ${at_c}kk * (TNP / ${vw});
  % for r0 in range(0, rm, vw):
                const ${vec} a${r0} = xr[${r0 // vw} * NY + ty];
  % endfor
  % for q0 in range(0, rn, vw):
                const ${vec} b${q0} = cr[${q0 // vw} * NX + tx];
    % if form == "sqdiff_scaled":
                const ${vec} s${q0} = (ls_vec + kk * (TNP / ${vw}))[${q0 // vw} * NX + tx];
    % endif
  % endfor
% else:
                __local const real_t *xr = lx_vec + ${at_x}kk * TMP;
                __local const real_t *cr = lc_vec + ${at_c}kk * TNP;
  % for r in range(rm):
                const real_t a${r} = xr[${r} * NY + ty];
  % endfor
  % for q in range(rn):
                const real_t b${q} = cr[${q} * NX + tx];
    % if form == "sqdiff_scaled":
                const real_t s${q} = ls[kk * TNP + ${q} * NX + tx];
    % endif
  % endfor
% endif
% for r in range(rm):
  % for q in range(rn):
<%
      if vw > 1:
          a, b = f"a{r - r % vw}.s{COMPS[r % vw]}", f"b{q - q % vw}.s{COMPS[q % vw]}"
          sc = f"s{q - q % vw}.s{COMPS[q % vw]}"
      else:
          a, b, sc = f"a{r}", f"b{q}", f"s{q}"
      acc = f"acc_{r}_{q}"
%>\
    % if form == "dot":
                ${acc} = fma(${a}, ${b}, ${acc});
    % elif form == "sqdiff":
                { const real_t t = ${a} - ${b}; ${acc} = fma(t, t, ${acc}); }
    % elif form == "sqdiff_nofma":
                { const real_t t = ${a} - ${b}; ${acc} += t * t; }
    % elif form == "sqdiff_scaled":
                { const real_t t = (${a} - ${b}) * ${sc}; ${acc} = fma(t, t, ${acc}); }
    % elif form == "cityblock":
                ${acc} += fabs(${a} - ${b});
    % elif form == "chebyshev":
                ${acc} = fmax(${acc}, fabs(${a} - ${b}));
    % else:
<%      raise ValueError(f"distance_tile: unknown form {form!r}") %>
    % endif
  % endfor
% endfor
            }
</%def>
