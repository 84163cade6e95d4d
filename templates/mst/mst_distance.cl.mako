<%doc>
One pair's distance as scipy's pdist computes it in float64: a def library
with no kernel of its own, imported through
    <%namespace name="dist" file="/mst/mst_distance.cl.mako"/>
by mst_nearest.cl.mako and mst_prim.cl.mako.  Reads spec: metric.  The
caller defines D and builds with FP_CONTRACT OFF: pdist rounds every product
and sum, and a fused multiply-add could split a tie scipy keeps.

pair_distance(u, v, out): declares real_t *out* = d(u, v), u and v indexable
by feature (private, local or global rows).  Sums run over the features in
order (cosine's dot products in two lanes, even and odd features, then the
odd one out: pdist's order), so the rounding is pdist's and the distance is
the same whichever row is u.
</%doc>
<%def name="pair_distance(u, v, out)">
% if metric == "cosine":
            real_t ${out};
            {
                real_t uv0 = 0, uv1 = 0, uu0 = 0, uu1 = 0, vv0 = 0, vv1 = 0;
                for (int c = 0; c + 1 < D; c += 2) {
                    uv0 += ${u}[c] * ${v}[c];
                    uv1 += ${u}[c + 1] * ${v}[c + 1];
                    uu0 += ${u}[c] * ${u}[c];
                    uu1 += ${u}[c + 1] * ${u}[c + 1];
                    vv0 += ${v}[c] * ${v}[c];
                    vv1 += ${v}[c + 1] * ${v}[c + 1];
                }
                real_t uv = uv0 + uv1, uu = uu0 + uu1, vv = vv0 + vv1;
  % if d % 2:
                uv += ${u}[D - 1] * ${v}[D - 1];
                uu += ${u}[D - 1] * ${u}[D - 1];
                vv += ${v}[D - 1] * ${v}[D - 1];
  % endif
                ${out} = 1 - uv / (sqrt(uu) * sqrt(vv));
                /* pdist clips rounding to [0, 2]; a zero vector's NaN stays NaN */
                ${out} = ${out} < 0 ? 0 : (${out} > 2 ? 2 : ${out});
            }
% elif metric == "chebyshev":
            real_t ${out} = 0;
            for (int c = 0; c < D; ++c)
                ${out} = fmax(${out}, fabs(${u}[c] - ${v}[c]));
% elif metric == "cityblock":
            real_t ${out} = 0;
            for (int c = 0; c < D; ++c)
                ${out} += fabs(${u}[c] - ${v}[c]);
% elif metric in ("euclidean", "sqeuclidean"):
            real_t ${out} = 0;
            for (int c = 0; c < D; ++c) {
                const real_t diff = ${u}[c] - ${v}[c];
                ${out} += diff * diff;
            }
  % if metric == "euclidean":
            ${out} = sqrt(${out});
  % endif
% else:
<%      raise ValueError(f"mst_distance: unknown metric {metric!r}") %>
% endif
</%def>
