<%doc>
The condensed distance matrix across device buffers: a def library with no
kernel of its own, imported by hierarchical_distances, hierarchical_prim and
hierarchical_linkage through
    <%namespace name="cm" file="/linkage/condensed.cl.mako"/>
Entry e (pdist's layout: (i, j), i < j, at n*i - i*(i+1)/2 + (j - i - 1))
lives in buffer e / PER at e % PER: every buffer but the last holds PER
entries (the device's largest buffer, or the profile's
linkage_buffer_bytes), so n past one buffer spans as many as the device
budget holds.  One buffer (buffers == 1) is the plain array.
  params(const): the buffers' parameters dist0, dist1, ... (a kernel's or a
      helper's; const where it only reads)
  accessor(const): dist_at(DIST_ARGS, e), the address of entry e; DIST(e)
      the entry itself (an lvalue where not const), in any function whose
      parameters are params()
Reads spec: buffers, buffer_elems (PER; 0 with one buffer).
</%doc>
<%def name="params(const)">${", ".join(f"__global {'const ' if const else ''}real_t *restrict dist{b}" for b in range(buffers))}</%def>
<%def name="accessor(const)">
<% ptr = f"__global {'const ' if const else ''}real_t *" %>\
#define DIST_ARGS ${", ".join(f"dist{b}" for b in range(buffers))}
#define DIST(e) (*dist_at(DIST_ARGS, (e)))
% if buffers == 1:
inline ${ptr}dist_at(${params(const)}, const long e)
{
    return dist0 + e;
}
% else:
#define PER ${buffer_elems}L
/* buffer e / PER by comparisons (no division, no array of pointers) */
inline ${ptr}dist_at(${params(const)}, const long e)
{
%   for b in range(buffers - 1):
    if (e < ${b + 1} * PER)
        return dist${b} + (e - ${b} * PER);
%   endfor
    return dist${buffers - 1} + (e - ${buffers - 1} * PER);
}
% endif
</%def>
