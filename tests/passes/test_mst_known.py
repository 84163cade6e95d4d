"""What Boruvka's rounds know of each row, on the device (passes/mst_known.py:
mst_seed.cl.mako, mst_known.cl.mako), against numpy references: the host code
they replace."""
import numpy as np
import pytest
from scipy.spatial.distance import cdist

from oclclust.passes.linkage import Plan
from oclclust.passes.mst import KEEP
from oclclust.passes.mst_known import Known


def seed_reference(nearest, core, keep, dtype):
    """(W, J, B, Bj): the nearest rows' weights max(core_i, core_j, d_ij),
    the keep least by (w, j) (the row itself none: (inf, n)), and the bound
    (the m-th distance, Bj -1; or the first left out, (w, j - 1))."""
    dist, ids = nearest
    n, m = ids.shape
    own = ids == np.arange(n)[:, None]
    w = np.where(own, np.inf, np.maximum(np.maximum(core[:, None], core[ids]), dist)).astype(dtype)
    j = np.where(own, n, ids).astype(np.int32)
    order = np.lexsort((j, w), axis=1)
    w, j = np.take_along_axis(w, order, 1), np.take_along_axis(j, order, 1)
    B, Bj = dist[:, -1].astype(dtype), np.full(n, -1, np.int32)
    if m > keep:
        cut_w, cut_j = w[:, keep], j[:, keep] - 1
        tighter = (cut_w < B) | ((cut_w == B) & (cut_j < Bj))
        B, Bj = np.where(tighter, cut_w, B), np.where(tighter, cut_j, Bj)
        w, j = w[:, :keep], j[:, :keep]
    W, J = np.full((n, keep), np.inf, dtype), np.full((n, keep), n, np.int32)
    W[:, :w.shape[1]], J[:, :j.shape[1]] = w, j
    return W, J, B, Bj


def known_reference(rows, comp, W, J, B, Bj, slot):
    """(exact, w, j) of *rows*: the first kept row from slot on in another
    component, exact where (w, j) is at most (B, Bj); slot advanced."""
    keep, n = W.shape[1], len(B)
    exact = np.zeros(rows.size, bool)
    w, j = np.full(rows.size, np.inf, W.dtype), np.full(rows.size, n, np.int32)
    for t, r in enumerate(rows):
        while slot[r] < keep:
            s = J[r, slot[r]]
            if s < n and comp[s] != comp[r]:
                w[t], j[t] = W[r, slot[r]], s
                exact[t] = w[t] < B[r] or (w[t] == B[r] and s <= Bj[r])
                break
            slot[r] += 1
    return exact, w, j


def rows_of(kind, n, d, rng):
    if kind == "duplicates":       # a row's nearest may leave the row itself out
        return rng.randint(0, 3, (n, d)).astype(np.float64)
    return rng.randn(n, d)


def nearest_of(X, m, dtype):
    """Each row's m nearest (distances, ids), ascending by (distance, id),
    in *dtype* as the core distances' pass computes them."""
    D = cdist(X, X).astype(dtype).astype(np.float64)
    ids = np.lexsort((np.broadcast_to(np.arange(len(X)), D.shape), D), axis=1)[:, :m]
    return np.take_along_axis(D, ids, 1), ids.astype(np.int32)


def state(known):
    q = known.plan.queue
    n, keep = known.n, known.keep
    return (known.W.get(q).reshape(n, keep), known.J.get(q).reshape(n, keep), known.B.get(q),
            known.Bj.get(q), known.slot.get(q))


@pytest.fixture(params=["float64", "float32"])
def plan(request, profile):
    if request.param == "float64" and not profile.fp64:
        pytest.skip("no fp64")
    return Plan(profile.replace(work_group_size=16), np.dtype(request.param))


def merged(comp, rng, parts):
    """comp with its components merged into at most *parts* (components only merge)."""
    return rng.randint(0, parts, comp.max() + 1)[comp]


@pytest.mark.parametrize("m", [3, KEEP, KEEP + 1, 17])
@pytest.mark.parametrize("kind", ["random", "duplicates"])
def test_seed_and_rounds_are_numpys(plan, m, kind):
    """The seed's lists and bounds, then rounds of components merging: each
    row's first kept row in another component, whether it is exact, and the
    slots, as numpy's."""
    rng = np.random.RandomState(m)
    n, dtype = 203, plan.dtype
    X = rows_of(kind, n, 3, rng)
    nearest = nearest_of(X, m, dtype)
    core = nearest[0][:, min(2, m - 1)].copy()
    known = Known(plan, n, KEEP, nearest, core)
    W, J, B, Bj = seed_reference(nearest, core, KEEP, dtype)
    got = state(known)
    for name, a, b in zip("W J B Bj".split(), got, (W, J, B, Bj)):
        np.testing.assert_array_equal(a, b, err_msg=name)
    np.testing.assert_array_equal(got[4], 0, err_msg="slot")
    np.testing.assert_array_equal(known.bound, B)
    assert np.isfinite(W).any() and (J < n).any()
    if m > KEEP + 1:                   # the row itself among them: the first left out beyond
        assert (Bj >= 0).any()
    elif m < KEEP:
        assert (J == n).all(axis=1).sum() == 0 and (J == n).any()
    slot = np.zeros(n, np.int64)
    comp = np.arange(n)
    for parts in (n, 60, 12, 3):
        comp = merged(comp, rng, parts)
        exact, w, j = known.every(comp.astype(np.int32))
        ref = known_reference(np.arange(n), comp, W, J, B, Bj, slot)
        for name, a, b in zip(("exact", "w", "j"), (exact, w, j), ref):
            np.testing.assert_array_equal(a, b, err_msg=f"{name}, {parts} parts")
        np.testing.assert_array_equal(known.slot.get(plan.queue), slot)
    assert slot.max() > 0


@pytest.mark.parametrize("seeded", [False, True])
def test_absorb_is_numpys(plan, seeded):
    """A scan's rows taken in: lists replaced, the bound the keep-th's or the
    skipped nodes' (where lower or tied), slots from 0; then their (exact,
    w, j) and the next round's as numpy's."""
    import pyopencl.array as cla
    rng = np.random.RandomState(5)
    n, dtype, q = 150, plan.dtype, plan.queue
    X = rows_of("random", n, 2, rng)
    nearest = nearest_of(X, KEEP + 2, dtype)
    core = nearest[0][:, 2].copy()
    known = Known(plan, n, KEEP, nearest if seeded else None, core)
    if seeded:
        W, J, B, Bj = seed_reference(nearest, core, KEEP, dtype)
        slot = np.zeros(n, np.int64)
    else:
        W, J = np.full((n, KEEP), np.inf, dtype), np.full((n, KEEP), n, np.int32)
        B, Bj, slot = np.full(n, -np.inf, dtype), np.full(n, n, np.int32), np.full(n, KEEP)
    comp = merged(np.arange(n), rng, 40)
    known.every(comp.astype(np.int32))
    known_reference(np.arange(n), comp, W, J, B, Bj, slot)
    ids = rng.permutation(n).astype(np.int32)            # place -> row
    pos = np.empty(n, np.int32)
    pos[ids] = np.arange(n)
    rows = np.sort(rng.choice(n, 70, replace=False))
    m = rows.size
    # a scan's lists: rows of other components ascending by (w, j), some short
    sw, sj = np.full((m, KEEP), np.inf, dtype), np.full((m, KEEP), n, np.int32)
    for t, r in enumerate(rows):
        others = np.flatnonzero(comp != comp[r])
        j = rng.choice(others, rng.randint(KEEP - 2, KEEP + 1), replace=False)
        w = np.round(rng.rand(j.size) * 4, 1).astype(dtype)       # ties in w
        order = np.lexsort((j, w))
        sw[t, :j.size], sj[t, :j.size] = w[order], j[order]
    # skipped nodes' bounds below the first kept, at the second and the
    # keep-th, and none
    sb = np.choose(rng.randint(0, 4, m), [sw[:, 0] / 2, sw[:, 1], sw[:, -1], np.full(m, np.inf)])
    sb = sb.astype(dtype)
    scanned = [cla.to_device(q, a) for a in (sw.reshape(-1), sj.reshape(-1), sb)]
    got = known.absorb(rows, cla.to_device(q, pos[rows]), cla.to_device(q, ids), scanned)
    W[rows], J[rows] = sw, sj
    kth = sw[:, -1]
    B[rows], Bj[rows] = np.minimum(kth, sb), np.where(kth < sb, n, -1)
    slot[rows] = 0
    ref = known_reference(rows, comp, W, J, B, Bj, slot)
    for name, a, b in zip(("exact", "w", "j"), got, ref):
        np.testing.assert_array_equal(a, b, err_msg=name)
    np.testing.assert_array_equal(known.bound, B)
    for name, a, b in zip("W J B Bj slot".split(), state(known), (W, J, B, Bj, slot)):
        np.testing.assert_array_equal(a, b, err_msg=name)
    assert got[0].any() and not got[0].all()
    comp = merged(comp, rng, 6)
    ref = known_reference(np.arange(n), comp, W, J, B, Bj, slot)
    for name, a, b in zip(("exact", "w", "j"), known.every(comp.astype(np.int32)), ref):
        np.testing.assert_array_equal(a, b, err_msg=f"{name}, next round")


def test_rounds_on_tied_bounds_are_numpys(plan):
    """Lists and bounds made to tie (w at B, j at, above and below Bj, Bj
    -1 and n), slots part-way: every row's (exact, w, j) as numpy's."""
    rng = np.random.RandomState(11)
    n, dtype, q = 180, plan.dtype, plan.queue
    W = np.sort(rng.randint(0, 4, (n, KEEP)), axis=1).astype(dtype)
    J = rng.randint(0, n, (n, KEEP)).astype(np.int32)
    J[rng.rand(n, KEEP) < 0.1] = n
    order = np.lexsort((J, W), axis=1)
    W, J = np.take_along_axis(W, order, 1), np.take_along_axis(J, order, 1)
    pick = rng.randint(0, KEEP, n)
    B = W[np.arange(n), pick]
    Bj = np.choose(rng.randint(0, 5, n), [J[np.arange(n), pick], J[np.arange(n), pick] - 1,
                                          J[np.arange(n), pick] + 1, np.full(n, -1),
                                          np.full(n, n)]).astype(np.int32)
    slot = rng.randint(0, 3, n)
    known = Known(plan, n, KEEP)
    for dev, host in zip((known.W, known.J, known.B, known.Bj, known.slot),
                         (W, J, B, Bj, slot.astype(np.int32))):
        dev.set(np.ascontiguousarray(host.reshape(-1), dev.dtype), queue=q)
    comp = np.arange(n)
    for parts in (n, 30, 4):
        comp = merged(comp, rng, parts)
        got = known.every(comp.astype(np.int32))
        ref = known_reference(np.arange(n), comp, W, J, B, Bj, slot)
        for name, a, b in zip(("exact", "w", "j"), got, ref):
            np.testing.assert_array_equal(a, b, err_msg=f"{name}, {parts} parts")
    assert got[0].any() and not got[0].all()
