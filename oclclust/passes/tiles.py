"""Rows in tiles of a spatial order (the MST engine's and linkage_rows'):
the order, each tile's bounding box, and a hierarchy of nodes over the
tiles (each node fan consecutive nodes of the level below, with its rows'
box, least core, component) that lets a scan skip far rows a node at a
time (templates/mst/mst_nearest.cl.mako).
"""
import dataclasses

import numpy as np

# principal axes the rows' spatial order is taken over
ORDER_AXES = 8
# split_hierarchy gathers the rows of the tiles of several components where
# they are at most this fraction of the tiles (the first Boruvka rounds' are
# nearly all: the gather would cost O(n d) where a rest is little tighter)
SPLIT_MIXED_UP_TO = 0.25


def _order_space(X, metric):
    """The rows as the spatial orders see them: their leading principal
    axes (at most ORDER_AXES, from a sample of the rows; cosine: of the unit
    rows), float64; None where a value overflows (any order is right)."""
    n, d = X.shape
    Y = np.asarray(X, np.float64)
    if metric == "cosine":
        norm = np.sqrt(np.einsum("ij,ij->i", Y, Y))
        Y = Y / np.where(norm > 0, norm, 1)[:, None]
    if d > ORDER_AXES:
        sample = Y[np.linspace(0, n - 1, min(n, 20000)).astype(np.int64)]
        sample = sample - sample.mean(axis=0)
        # the covariance's leading eigenvectors (eigh: ascending)
        axes = np.linalg.eigh(sample.T @ sample)[1][:, ::-1][:, :ORDER_AXES]
        Y = Y @ axes
    return Y if np.all(np.isfinite(Y)) else None


def spatial_order(X, metric, tb):
    """A permutation of the rows that keeps near rows together: a k-d tree's
    leaf order (scipy's cKDTree) over _order_space, so a tile of tb
    consecutive rows is compact and its bounding box tight."""
    from scipy.spatial import cKDTree
    Y = _order_space(X, metric)
    if Y is None:
        return np.arange(len(X), dtype=np.int32)
    tree = cKDTree(Y, leafsize=max(8, tb), balanced_tree=False, compact_nodes=False)
    return tree.indices.astype(np.int32)


def leaf_tiles(X, metric, tb):
    """(order, starts): a k-d tree's leaf order as spatial_order's, and the
    first place of each tile, the tiles its leaves (at most tb rows; a leaf
    of more, all of one point, cut in tiles of tb).  A tile of tb
    consecutive rows straddles leaves, so its box is looser: blobs 100k x 3,
    HDBSCAN's MST scans compare a third of the tiles over leaves."""
    from scipy.spatial import cKDTree
    n = len(X)
    Y = _order_space(X, metric)
    if Y is None:
        return np.arange(n, dtype=np.int32), np.arange(0, n, tb)
    tree = cKDTree(Y, leafsize=tb, balanced_tree=False, compact_nodes=False)
    first, stack = [], [tree.tree]
    while stack:                         # the leaves in their order
        node = stack.pop()
        if node.split_dim == -1:
            first.append(node.start_idx)
        else:
            stack += [node.greater, node.lesser]
    first = np.asarray(first, np.int64)
    size = np.diff(np.r_[first, n])
    cuts = -(-size // tb)
    starts = np.repeat(first, cuts) + tb * (np.arange(cuts.sum()) - np.repeat(np.cumsum(cuts) - cuts, cuts))
    return tree.indices.astype(np.int32), starts


@dataclasses.dataclass(frozen=True)
class RowTiles:
    """Boruvka's rows in tiles of a spatial order (passes/mst.py), made on
    the host from the rows alone (no core distance, no device): the order
    (ids: the row at each place), each tile's first place (starts), the
    rows in that order (rows, the scan's value type) and each tile's box
    (lo, hi; None where the scan tests no box).  tb, bound, index: the
    scan's (NearestSpec: its tb, bound, levels > 0) they were made for."""
    tb: int
    bound: bool
    index: bool
    ids: np.ndarray
    starts: np.ndarray
    rows: np.ndarray
    lo: np.ndarray = None
    hi: np.ndarray = None


def row_tiles(X, metric, tb, bound, index, dtype):
    """The RowTiles of X (dense rows) for a scan of tiles of at most *tb*
    rows: with *index* a k-d tree's leaves (leaf_tiles: tighter boxes), else
    tb consecutive rows of spatial_order; their boxes where *bound*."""
    X = np.ascontiguousarray(X, dtype)      # the order of the values the device holds
    n = len(X)
    if index:
        ids, starts = leaf_tiles(X, metric, tb)
    else:
        ids, starts = spatial_order(X, metric, tb), np.arange(0, n, tb)
    # take: a third of X[ids]'s time (rows of a few features)
    rows = np.ascontiguousarray(np.take(X, ids, axis=0))
    lo, hi = boxes(rows, tb, starts) if bound else (None, None)
    return RowTiles(tb, bound, index, ids, starts, rows, lo, hi)


def boxes(xp, tb, starts=None):
    """Each tile's bounding box (lo, hi): tiles of tb rows, the last ragged
    (a reshape: reduceat along the rows is much slower), or from the places
    *starts* on."""
    if starts is not None:
        return (np.ascontiguousarray(np.minimum.reduceat(xp, starts, axis=0)),
                np.ascontiguousarray(np.maximum.reduceat(xp, starts, axis=0)))
    full = len(xp) // tb * tb
    lo, hi = (xp[:full].reshape(-1, tb, xp.shape[1]).min(axis=1),
              xp[:full].reshape(-1, tb, xp.shape[1]).max(axis=1))
    if full < len(xp):
        lo = np.vstack([lo, xp[full:].min(axis=0)])
        hi = np.vstack([hi, xp[full:].max(axis=0)])
    return np.ascontiguousarray(lo), np.ascontiguousarray(hi)


def hierarchy(tiles, fan, levels, reduce):
    """Per-tile values and, level by level, each node's *reduce* (a ufunc)
    over its fan children (the last ragged), concatenated along axis 0."""
    parts = [tiles]
    for _ in range(levels):
        parts.append(reduce.reduceat(parts[-1], np.arange(0, len(parts[-1]), fan), axis=0))
    return np.ascontiguousarray(np.concatenate(parts))


def hierarchy_fan(tiles, levels):
    """The least fan (at least 2) whose *levels* over *tiles* leave at most
    fan nodes on top."""
    fan = max(2, int(tiles ** (1 / (levels + 1))))
    while True:
        count = tiles
        for _ in range(levels):
            count = -(-count // fan)
        if count <= fan:
            return fan
        fan += 1


def tile_rows(starts, n):
    """Each tile's places (tiles x its most rows; -1 past a tile's last):
    split_hierarchy's gather of a tile's rows."""
    size = np.diff(np.r_[starts, n])
    places = np.asarray(starts)[:, None] + np.arange(size.max() if size.size else 0)
    return np.where(places < (np.asarray(starts) + size)[:, None], places, -1)


def split_hierarchy(comp_pos, starts, fan, levels, parts, places):
    """Each node's components, for a scan to skip the rows of its own:
    (pure, major, rests), each over hierarchy's nodes (levels concatenated).
    pure: the one component of the node's rows (-1: several); major: one
    component of them (a tile's middle row's, a node's middle child's: most
    often the most rows'); rests: for each (values, tiles, ufunc, empty) of
    *parts* (per-row values in the spatial order, and ufunc's reduce of
    them over each tile's rows), ufunc's reduce over the node's rows not of
    its major component (empty where there are none): the box and least
    core a row of the major component meets there.  *places*: tile_rows';
    only the tiles of several components are gathered (after the first
    rounds, the few at components' edges), and only where they are at most
    SPLIT_MIXED_UP_TO of the tiles (else their rests are all their rows'
    reduce: looser, as right)."""
    n = len(comp_pos)
    size = np.diff(np.r_[starts, n])
    major = comp_pos[starts + size // 2]
    low, high = np.minimum.reduceat(comp_pos, starts), np.maximum.reduceat(comp_pos, starts)
    pure = np.where(low == high, low, -1)
    full = [tiles for _, tiles, _, _ in parts]
    rest = [np.full_like(tiles, empty) for _, tiles, _, empty in parts]
    mixed = np.flatnonzero(pure < 0)
    if mixed.size > SPLIT_MIXED_UP_TO * len(starts):
        for r, f in zip(rest, full):        # all their rows: a looser bound, no gather
            r[mixed] = f[mixed]
    elif mixed.size:
        at = places[mixed]
        other = (at >= 0) & (comp_pos[at] != major[mixed][:, None])
        for r, (values, _, ufunc, empty) in zip(rest, parts):
            gathered = values[at]
            shape = other.shape + (1,) * (values.ndim - 1)
            r[mixed] = ufunc.reduce(np.where(other.reshape(shape), gathered, empty), axis=1)
    out = [[pure], [major]] + [[r] for r in rest]
    for _ in range(levels):
        count = len(major)
        firsts = np.arange(0, count, fan)
        sizes = np.diff(np.r_[firsts, count])
        node_major = major[firsts + sizes // 2]
        # a child of the node's major component: its rest; else all its rows
        same = major == np.repeat(node_major, sizes)
        low, high = np.minimum.reduceat(pure, firsts), np.maximum.reduceat(pure, firsts)
        pure, major = np.where(low == high, low, -1), node_major
        for p, (values, _, ufunc, _) in enumerate(parts):
            shape = (-1,) + (1,) * (values.ndim - 1)
            rest[p] = ufunc.reduceat(np.where(same.reshape(shape), rest[p], full[p]), firsts,
                                     axis=0)
            full[p] = ufunc.reduceat(full[p], firsts, axis=0)
        for o, v in zip(out, [pure, major] + rest):
            o.append(v)
    return [np.ascontiguousarray(np.concatenate(o)) for o in out]
