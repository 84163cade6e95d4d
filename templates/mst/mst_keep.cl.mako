<%doc>
A row's k least candidates, ascending by (w, observation): a def library
with no kernel of its own, imported through
    <%namespace name="kept" file="/mst/mst_keep.cl.mako"/>
by mst_nearest.cl.mako and mst_seed.cl.mako.  The caller declares the list
best0.., bj0.. (k values and observations; (INFINITY, n): none) and defines
BEFORE(w, j, bw, bj): (w, j) before (bw, bj) by (w, observation).

insert(k): (w, jid) into the list after every entry before it, the last
dropped; the caller tests first that it comes before the last entry.
Comparisons only: the values are kept as they came.
</%doc>
<%def name="insert(k)">
% for s in range(k - 1, 0, -1):
                if (BEFORE(w, jid, best${s - 1}, bj${s - 1})) {
                    best${s} = best${s - 1};
                    bj${s} = bj${s - 1};
                } else if (BEFORE(w, jid, best${s}, bj${s})) {
                    best${s} = w;
                    bj${s} = jid;
                }
% endfor
                if (BEFORE(w, jid, best0, bj0)) {
                    best0 = w;
                    bj0 = jid;
                }
</%def>
