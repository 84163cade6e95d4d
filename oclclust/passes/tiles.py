"""Rows in tiles of a spatial order (the MST engine's and linkage_rows'):
the order, each tile's bounding box, and a hierarchy of nodes over the
tiles (each node fan consecutive nodes of the level below, with its rows'
box, least core, component) that lets a scan skip far rows a node at a
time (templates/mst/mst_nearest.cl.mako).
"""
import numpy as np

# principal axes the rows' spatial order is taken over
ORDER_AXES = 8


def spatial_order(X, metric, tb):
    """A permutation of the rows that keeps near rows together: a k-d tree's
    leaf order (scipy's cKDTree) over the rows' leading principal axes (at
    most 8, from a sample of the rows; cosine: of the unit rows), so a tile
    of tb consecutive rows is compact and its bounding box tight."""
    from scipy.spatial import cKDTree
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
    if not np.all(np.isfinite(Y)):          # an overflow: any order is right
        return np.arange(n, dtype=np.int32)
    tree = cKDTree(Y, leafsize=max(8, tb), balanced_tree=False, compact_nodes=False)
    return tree.indices.astype(np.int32)


def boxes(xp, tb):
    """Each tile's bounding box (lo, hi): tiles of tb rows, the last ragged
    (a reshape: reduceat along the rows is much slower)."""
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
