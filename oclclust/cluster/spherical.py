"""Spherical k-means (faiss' ``spherical`` option; Dhillon & Modha 2001):
rows compared by cosine.

The rows are scaled to unit length (a copy) before they reach the devices;
between unit vectors the squared euclidean distance is 2 - 2 cos, so the
argmax of the dot products is the argmin of the distances and the Lloyd
passes serve unchanged.  The centre update is the mean of the unit rows
renormalised (on the host: a spherical fit takes the host's update, never
the device-resident one of passes/lloyd_update).  A row of norm 0 stays 0,
as faiss' fvec_renorm_L2 and scikit-learn's normalize leave it: it is at
distance 1 from every centre, adds nothing to a centre, and takes the
label that the rounding of the centres' norms favours.  An estimator takes part through a
``spherical`` parameter: KCluster normalises what fit, predict, score and
transform receive (MiniBatchKMeans needs only the parameter and
``renormalised`` after its own update).
"""
import numpy as np
import pyopencl.array as cla

from ..runtime.validation import check_data, packed_type


def renormalised(centers):
    """*centers* scaled to unit length (float64), a zero centre left 0."""
    centers = np.asarray(centers, np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", centers, centers))
    return centers / np.where(norms > 0, norms, 1.0)[:, None]


def unit_rows(X, estimator="estimator"):
    """A copy of X's rows scaled to unit length, in X's float dtype (others:
    float64), computed in float64; host rows, a pyopencl array (through the
    host, back onto its queue) or a dask array (lazily, block by block: the
    same bits as the host's)."""
    if type(X).__module__.startswith("dask"):
        return X.rechunk({1: -1}).map_blocks(_unit_block, dtype=_float_dtype(X.dtype))
    X = check_data(X, estimator)
    if isinstance(X, cla.Array):
        return cla.to_device(X.queue, unit_rows(X.get(), estimator))
    out = np.empty(X.shape, _float_dtype(X.dtype))
    for start in range(0, len(X), _BLOCK):   # float64 a block at a time, not all rows
        out[start:start + _BLOCK] = _unit_block(X[start:start + _BLOCK])
    return out


_BLOCK = 1 << 16


def _float_dtype(dtype):
    if packed_type(dtype):   # 2-byte floats are computed in float32
        return np.dtype(np.float32)
    return np.dtype(dtype) if dtype in (np.float32, np.float64) else np.dtype(np.float64)


def _unit_block(rows):
    """One block of rows scaled to unit length (float64 inside)."""
    rows = np.asarray(rows)
    wide = rows.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):   # NaN / inf: the fit names them
        norms = np.sqrt((wide * wide).sum(axis=1))
        return (wide / np.where(norms > 0, norms, 1.0)[:, None]).astype(
            _float_dtype(rows.dtype))
