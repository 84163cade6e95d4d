"""What a Boruvka round knows of a row without scanning it (passes/mst.py
boruvka): its kept rows of other components, ascending by (w, j), and the
bound (B, Bj) that every row left out comes after; where the first kept row
still in another component is within it, that row is the row's nearest
there.  seed: those lists from the core distances' pass's nearest rows.
"""
import numpy as np


def known(rows, comp_ext, W, J, B, Bj, slot):
    """(exact, w, j) of *rows*: a row's first kept row still in another
    component (the kept rows are ascending by (w, j)) is its nearest there
    where no row left out can beat it: (w, j) is at most the row's bound
    (B, Bj) (every row left out comes after it by (w, j); Bj = n: w <= B).
    *comp_ext*: the components with -1 appended (J = n: none kept).
    *slot*: each row's first kept row not yet seen in its own component
    (components only merge, so a kept row found inside stays inside: a
    round starts there, not at the first; KEEP: none left), advanced here
    (a scan of a row starts it at 0 again)."""
    keep, n = W.shape[1], len(B)
    exact = np.zeros(rows.size, bool)
    w, j = np.full(rows.size, np.inf, W.dtype), np.full(rows.size, n, np.int32)
    Jf, Wf = J.reshape(-1), W.reshape(-1)             # flat: one gather a slot
    todo = np.flatnonzero(slot[rows] < keep)
    while todo.size:
        r = rows[todo]
        at = r * keep + slot[r]
        js = Jf[at]
        apart = (comp_ext[js] != comp_ext[r]) & (js < n)
        hit = todo[apart]
        w[hit], j[hit] = Wf[at[apart]], js[apart]
        ra = r[apart]
        exact[hit] = (w[hit] < B[ra]) | ((w[hit] == B[ra]) & (j[hit] <= Bj[ra]))
        out = ~apart
        inside = r[out]
        slot[inside] += 1
        todo = todo[out][slot[inside] < keep]
    return exact, w, j


def seed(nearest, core, keep, dtype):
    """(W, J, B, Bj) of every row from its nearest rows (distances, ids: n
    x m ascending, the row itself among them; core_distances' neighbours):
    their mutual-reachability weights max(core_i, core_j, d_ij), the keep
    least by (w, j), and the bound: a row not among the m is at least the
    m-th distance away, so its weight is too (Bj = -1: strictly below it
    is exact); one of the m not kept comes after the last kept."""
    dist, ids = nearest
    n, m = ids.shape
    own = ids == np.arange(n)[:, None]
    w = np.where(own, np.inf, np.maximum(np.maximum(core[:, None], core[ids]), dist)).astype(dtype)
    j = np.where(own, n, ids).astype(np.int32)
    by_j = np.argsort(j, axis=1, kind="stable")
    w, j = np.take_along_axis(w, by_j, 1), np.take_along_axis(j, by_j, 1)
    by_w = np.argsort(w, axis=1, kind="stable")
    w, j = np.take_along_axis(w, by_w, 1), np.take_along_axis(j, by_w, 1)
    B = dist[:, -1].astype(dtype)
    Bj = np.full(n, -1, np.int32)
    if m > keep:                      # the first left out: strictly before it
        cut_w, cut_j = w[:, keep], j[:, keep] - 1
        tighter = (cut_w < B) | ((cut_w == B) & (cut_j < Bj))
        B, Bj = np.where(tighter, cut_w, B), np.where(tighter, cut_j, Bj)
        w, j = w[:, :keep], j[:, :keep]
    W = np.full((n, keep), np.inf, dtype)
    J = np.full((n, keep), n, np.int32)
    W[:, :w.shape[1]], J[:, :j.shape[1]] = w, j
    return W, J, B, Bj
