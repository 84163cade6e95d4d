<%doc>
What a Boruvka round knows of a row without scanning it (passes/mst_known.py):
a work-item per row r, of every row (absorb = 0: t = r) or of the rows a
scan just made (absorb = 1: t the scan's active place, r = ids[active[t]]).
Reads spec: keep, absorb.

The state, by row: W, J (n x keep) its kept rows of other components
ascending by (w, j) (j = n: none), (B, Bj) the bound every row left out
comes after (Bj = n: w <= B is exact; -1: w < B), slot the first kept row
not yet seen inside its own component (components only merge: a kept row
found inside stays inside; keep: none left).  absorb: the scan's keep rows
(scan_w, scan_j by t) become the row's, its bound the keep-th's (Bj = n) or
the scan's skipped nodes' bound (scan_b; Bj = -1) where lower or tied, and
slot starts at 0.

Out by t: the first kept row from slot on still in another component
(comp[j] != comp[r]), (out_w, out_j) (INFINITY, n where none), and exact
where it comes no later than (B, Bj): then it is the row's nearest there;
with absorb, out_b the row's bound B.  Comparisons only: no value is
rounded.
</%doc>
<%inherit file="/prelude.cl.mako"/>
#define K ${keep}

__kernel void known_rows(
% if absorb:
                         __global const int *restrict active, __global const int *restrict ids,
                         __global const real_t *restrict scan_w,
                         __global const int *restrict scan_j,
                         __global const real_t *restrict scan_b,
% endif
                         const int rows, const int n, __global const int *restrict comp,
                         __global real_t *restrict W, __global int *restrict J,
                         __global real_t *restrict B, __global int *restrict Bj,
                         __global int *restrict slot, __global char *restrict exact,
                         __global real_t *restrict out_w, __global int *restrict out_j
% if absorb:
                         , __global real_t *restrict out_b
% endif
                         )
{
    const int t = get_global_id(0);
    if (t >= rows)
        return;
% if absorb:
    const int r = ids[active[t]];
    for (int s = 0; s < K; ++s) {
        W[(long)r * K + s] = scan_w[(long)t * K + s];
        J[(long)r * K + s] = scan_j[(long)t * K + s];
    }
    const real_t kth = scan_w[(long)t * K + K - 1], skipped = scan_b[t];
    const real_t b = kth < skipped ? kth : skipped;
    const int bj = kth < skipped ? n : -1;
    B[r] = b;
    Bj[r] = bj;
    out_b[t] = b;
    int s = 0;
% else:
    const int r = t;
    const real_t b = B[r];
    const int bj = Bj[r];
    int s = slot[r];
% endif
    const int cr = comp[r];
    real_t w = INFINITY;
    int j = n;
    char sure = 0;
    for (; s < K; ++s) {
        const int js = J[(long)r * K + s];
        if (js < n && comp[js] != cr) {
            w = W[(long)r * K + s];
            j = js;
            sure = w < b || (w == b && j <= bj);
            break;
        }
    }
    slot[r] = s;
    exact[t] = sure;
    out_w[t] = w;
    out_j[t] = j;
}
