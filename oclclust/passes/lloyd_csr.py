"""k-means over sparse rows: the assignment and the distance matrix computed
on one device from a CSR matrix's own arrays (pairs with templates/lloyd_csr/).

A TF-IDF matrix of a million documents over a hundred thousand terms is a
few hundred megabytes as CSR and half a terabyte dense: the rows stay CSR on
the device, and every distance is |x|^2 + |c|^2 - 2 x.c over the row's
nonzeros, accumulated in acc_t (double where the device has it).
"""
import dataclasses

import numpy as np
import pyopencl.array as cla

from ..runtime.codegen import Spec, kernel


@dataclasses.dataclass(frozen=True)
class CsrAssignSpec(Spec):
    template = "lloyd_csr/lloyd_csr_assign.cl.mako"
    ct: int = 8          # centres scored per walk over a row's nonzeros


@dataclasses.dataclass(frozen=True)
class CsrDistancesSpec(Spec):
    template = "lloyd_csr/lloyd_csr_distances.cl.mako"


def _groups(n, wg):
    return ((n + wg - 1) // wg) * wg


class CsrRows:
    """A CSR matrix (scipy.sparse, float32 or float64, canonical) resident on
    the device of *profile*, with its rows' squared norms (float64, from the
    host's values) and its float64 copy on the host (``wide``).  ``n``, ``d``, ``dtype`` as a ShardedData's; ``row(i)``
    is a dense float64 row (for empty-cluster relocation)."""

    def __init__(self, profile, X):
        self.profile, self.host = profile, X
        self.queue = q = profile.queue()
        self.n, self.d = X.shape
        self.dtype = X.dtype
        self.acc_double = bool(profile.fp64)
        acc = np.float64 if self.acc_double else np.float32
        self.indptr = cla.to_device(q, X.indptr.astype(np.int64))
        self.indices = cla.to_device(q, X.indices.astype(np.int32))
        self.values = cla.to_device(q, X.data if X.nnz else np.zeros(1, X.dtype))
        # float64: float32 values squared and summed in float64; the fit's
        # per-cluster sums read it too
        self.wide = X.astype(np.float64)
        self.norms = np.asarray(self.wide.multiply(self.wide).sum(axis=1), np.float64).ravel()
        self._norms = cla.to_device(q, self.norms.astype(acc))
        self.rows_per_device = {str(profile): self.n}
        self._acc = acc

    def _centers(self, centers):
        c = np.ascontiguousarray(centers, dtype=self.dtype)
        norms = np.einsum("ij,ij->i", c.astype(np.float64), c.astype(np.float64))
        return cla.to_device(self.queue, c), cla.to_device(self.queue, norms.astype(self._acc))

    def _spec(self, cls, **kw):
        return cls(dtype=self.dtype.name, acc_double=self.acc_double, **kw)

    def assign(self, centers):
        """(labels int32, squared distance to the own centre float64) of every
        row for *centers* (k x d)."""
        q, k = self.queue, len(centers)
        c, cn = self._centers(centers)
        labels = cla.empty(q, self.n, np.int32)
        dist = cla.empty(q, self.n, self._acc)
        wg = 64
        kernel(q.context, self._spec(CsrAssignSpec), "lloyd_csr_assign")(
            q, (_groups(self.n, wg),), (wg,), self.indptr.data, self.indices.data,
            self.values.data, np.int64(self.n), self._norms.data, c.data, cn.data,
            np.int32(k), np.int64(self.d), labels.data, dist.data)
        return labels.get(q), dist.get(q).astype(np.float64)

    def distances(self, centers):
        """n x m squared distances (float64) of the rows to *centers*."""
        q, m = self.queue, len(centers)
        c, cn = self._centers(centers)
        out = cla.empty(q, (self.n, m), self._acc)
        kernel(q.context, self._spec(CsrDistancesSpec), "lloyd_csr_distances")(
            q, (self.n, m), None, self.indptr.data, self.indices.data, self.values.data,
            np.int64(self.n), self._norms.data, c.data, cn.data, np.int32(m),
            np.int64(self.d), out.data)
        return out.get(q).astype(np.float64)

    def row(self, i):
        return self.host[int(i)].toarray().ravel().astype(np.float64)
