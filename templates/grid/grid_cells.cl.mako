<%doc>
The candidate loop of the grid passes (passes/grid.py): a def library with
no kernel of its own, imported through
    <%namespace name="grid" file="/grid/grid_cells.cl.mako"/>
by the dbscan_grid_* kernels.  Reads spec: g (gridded features).

The caller's kernel takes ``keys`` (the sorted rows' cell keys, int64
ascending), ``n`` and ``shape`` (g key multipliers, then g cell counts).
lower_bound(keys, n, key): the first sorted row whose key is >= key.
for_candidates(p, q, until): runs the caller's body once for every sorted
row q (an int) of the 3^g cells around sorted row p's cell, ascending
within each run of three cells along the last feature; the runs in the
order of the other features' offsets (-1, 0, 1 each, the first feature
slowest); none after the condition *until* (if given) holds (checked
before each).
for_ring(p, q, r): the same for the cells of ring *r* (an int expression)
around sorted row p's cell: the cells r away in some gridded feature and at
most r in all (ring 0: its own cell); each line of cells along the last
feature a range at the ring's edge, else its two ends.
</%doc>
<%def name="lower_bound()">
static int lower_bound(__global const long *restrict keys, const int n, const long key)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        const int mid = lo + ((hi - lo) >> 1);
        if (keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
</%def>
<%def name="for_candidates(p, q, until=None)">
<% more = f" && !({until})" if until else "" %>\
    {
        const long own_key = keys[${p}];
        const long last = own_key % shape[${2 * g - 1}];
        const long first_key = own_key - last + (last > 0 ? last - 1 : 0);
        const long last_key = own_key - last + (last + 1 < shape[${2 * g - 1}] ? last + 1 : last);
% for f in range(g - 1):
        const long cell${f} = (own_key / shape[${f}]) % shape[${g + f}];
% endfor
% for f in range(g - 1):
        for (int o${f} = -1; o${f} <= 1${more}; ++o${f}) {
            if (cell${f} + o${f} < 0 || cell${f} + o${f} >= shape[${g + f}])
                continue;
% endfor
            const long shift = 0\
% for f in range(g - 1):
 + o${f} * shape[${f}]\
% endfor
;
            const int stop = lower_bound(keys, n, last_key + shift + 1);
            for (int ${q} = lower_bound(keys, n, first_key + shift);
                 ${q} < stop${more}; ++${q}) {
${caller.body()}
            }
% for f in range(g - 1):
        }
% endfor
    }
</%def>
<%def name="for_ring(p, q, r)">
    {
        const long own_key = keys[${p}];
        const long cells_last = shape[${2 * g - 1}];
        const long last = own_key % cells_last;
% for f in range(g - 1):
        const long cell${f} = (own_key / shape[${f}]) % shape[${g + f}];
% endfor
% for f in range(g - 1):
        for (long o${f} = -(${r}); o${f} <= (${r}); ++o${f}) {
            if (cell${f} + o${f} < 0 || cell${f} + o${f} >= shape[${g + f}])
                continue;
% endfor
            const long line = own_key - last\
% for f in range(g - 1):
 + o${f} * shape[${f}]\
% endfor
;
            const int edge = (${r}) == 0\
% for f in range(g - 1):
 || o${f} == (${r}) || o${f} == -(${r})\
% endfor
;
            for (int side = 0; side < (edge ? 1 : 2); ++side) {
                const long from = max(side ? last + (${r}) : last - (${r}), 0L);
                const long to = min(edge || side ? last + (${r}) : last - (${r}), cells_last - 1);
                if (from > to)
                    continue;
                const int stop = lower_bound(keys, n, line + to + 1);
                for (int ${q} = lower_bound(keys, n, line + from); ${q} < stop; ++${q}) {
${caller.body()}
                }
            }
% for f in range(g - 1):
        }
% endfor
    }
</%def>
