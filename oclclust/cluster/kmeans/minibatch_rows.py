"""Where a mini-batch fit's rows are: on the host (HostRows: each batch
placed on the devices), on the host and once, whole, on one fp64 device
(DeviceRows: each batch gathered there), sparse on the host (SparseRows),
or in a dask array's blocks on a Dask cluster's workers (WorkerRows,
parallel/dask.py).  All answer alike, so the fit is one code: rows by index
(the inits' sample, reassigned centres), a batch's totals (minibatch_sums.py:
the same bits every way), the labels and inertia of all rows, the
features' variances.  A WorkerRows never brings more rows to the client
than an index asks for (the init's init_size rows, a reassignment's few)."""
import contextlib

import numpy as np

from .sparse import rows_on_device
from .minibatch_sums import (BatchTotals, assign, assign_rows, fold, fold_assigned,
                             fold_weights, grouped)
from ...parallel.comm import Ranks
from ...parallel.placement import fit_data, new_data
from .lloyd_shards import LloydShards
from ...passes.minibatch import BatchPass


class HostRows:
    """Validated host rows X (n x d, the compute dtype) and their weights w.
    ``rows_per_device``: {device: rows} of the last pass (a batch, or all
    rows for the labels): the estimator's ``devices_``."""

    def __init__(self, X, w, devices, name):
        self.X, self.w, self.devices, self.name = X, w, devices, name
        (self.n, self.d), self.dtype = X.shape, X.dtype
        self.rows_per_device = {}

    def rows(self, indices):
        return self.X[indices]

    def dense_rows(self, indices):
        """rows(indices) as a dense array (a reassigned centre's rows)."""
        return self.rows(indices)

    def batch(self, indices, weights, centers, order):
        """BatchTotals of rows *indices* of *weights* about *centers*, folded in
        *order* (index_order(indices): ascending indices)."""
        indices, weights = indices[order], weights[order]
        rows = self.X[indices]
        data = new_data(rows, None, self.devices, self.dtype, self.d, self.name)
        try:
            labels, dist = assign(data, centers)
            self.rows_per_device = data.rows_per_device
        finally:
            data.close()
        return fold(BatchTotals.zeros(len(centers), self.d), rows, weights, labels, dist)

    def labels_inertia(self, centers):
        """(labels, inertia) of every row about *centers*, on the devices."""
        data = new_data(self.X, self.w, self.devices, self.dtype, self.d, self.name)
        try:
            lloyd = LloydShards(data, len(centers))
            stats = lloyd.run(np.asarray(centers, np.float64), update=False)
            self.rows_per_device = data.rows_per_device
            return lloyd.labels(), float(stats.inertia)
        finally:
            data.close()

    def variances(self):
        return self.X.var(axis=0, dtype=np.float64)

    @contextlib.contextmanager
    def seeding(self, pick):
        """(data, host weights, ranks) of rows *pick* (None: all) for an
        init (inits.draw_centers), on the devices while the block runs."""
        X, w = (self.X, self.w) if pick is None else (self.X[pick], self.w[pick])
        data, host_w, ranks = fit_data(X, w, self.devices, self.dtype, None, None, self.name)
        try:
            yield data, host_w, ranks
        finally:
            data.close()


class DeviceRows(HostRows):
    """Host rows X also placed once, whole, on one device with fp64 (*data*:
    their DeviceData of one resident chunk): each batch gathered, assigned
    and folded there (passes/minibatch.BatchPass), the additions of the
    host's fold, so the same bits; only indices, labels, distances and the
    k x d sums cross the link a step."""

    def __init__(self, X, w, devices, name, data):
        super().__init__(X, w, devices, name)
        self.data, self.passes = data, {}
        self.rows_per_device = data.rows_per_device   # every pass's: the rows stay there

    @classmethod
    def placed(cls, X, w, devices, name):
        """DeviceRows of X, or None where the rows would not sit whole on one
        device with fp64 (several devices, streamed, no fp64)."""
        data, _, _ = fit_data(X, w, devices, X.dtype, None, None, name)
        chunks = data.chunks
        if (len(chunks) != 1 or not chunks[0].acc_double
                or any(getattr(shard, "streamed", False) for shard in data.shards)):
            data.close()
            return None
        return cls(X, w, devices, name, data)

    def batch(self, indices, weights, centers, order):
        # gathered and assigned as drawn; folded in the host's order: each
        # cluster's rows by ascending index (ties as drawn), the weights and
        # inertia over all rows in *order*
        key = (len(indices), len(centers))
        if key not in self.passes:
            self.passes[key] = BatchPass(self.data.chunks[0], len(centers), len(indices))
        batch = self.passes[key]
        labels, dist = batch.assign(indices, centers)
        total = BatchTotals.zeros(len(centers), self.d)
        w = np.asarray(weights, np.float64)
        members = grouped(order, labels)
        return BatchTotals(batch.fold(total.sums, labels, w, members),
                         *fold_weights(total, w[order], labels[order], dist[order]))

    def labels_inertia(self, centers):
        lloyd = LloydShards(self.data, len(centers))
        stats = lloyd.run(np.asarray(centers, np.float64), update=False)
        return lloyd.labels(), float(stats.inertia)

    def finite(self):
        """Whether every row is finite (the device's mean and variance pass)."""
        return bool(self.data.mean_var_finite()[2])

    def close(self):
        self.data.close()


class SparseRows(HostRows):
    """Validated sparse host rows X (canonical CSR, the compute dtype) and
    their weights w: assigned by sparse.py's CSR pass on the preferred
    device, the batch folded over the stored values in row order -- the
    additions of the dense fold but for its zero terms (t + 0 is t)."""

    def dense_rows(self, indices):
        return self.X[indices].toarray()

    def batch(self, indices, weights, centers, order):
        indices, weights = indices[order], weights[order]
        rows = self.X[indices]
        on_device = rows_on_device(rows, self.devices)
        labels, dist = on_device.assign(centers)
        self.rows_per_device = on_device.rows_per_device
        return fold(BatchTotals.zeros(len(centers), self.d), rows, weights, labels, dist)

    def labels_inertia(self, centers):
        on_device = rows_on_device(self.X, self.devices)
        labels, dist = on_device.assign(centers)
        self.rows_per_device = on_device.rows_per_device
        return labels, float(np.asarray(self.w, np.float64) @ dist)

    def variances(self):
        x = self.X.astype(np.float64)
        mean = np.asarray(x.mean(axis=0)).ravel()
        return np.asarray(x.multiply(x).mean(axis=0)).ravel() - mean ** 2


class WorkerRows(HostRows):
    """A dask array's rows on the workers (*data*: a parallel.dask.DaskData)
    and their weights *w* on the client (one number per row)."""

    def __init__(self, data, w, devices, name):
        self.data, self.w, self.devices, self.name = data, w, devices, name
        self.n, self.d, self.dtype = data.n, data.d, data.dtype
        self.rows_per_device = data.rows_per_device
        _, self._var, finite = data.mean_var_finite()
        if not finite:
            raise ValueError("Input X contains NaN or infinity.")

    @classmethod
    @contextlib.contextmanager
    def loaded(cls, X, sample_weight, devices, dtype, name):
        """The rows of dask array X on the active Client's workers while the
        block runs (freed there after it, also on error)."""
        from ...parallel.dask import dask_fit_data
        data, w = dask_fit_data(X, sample_weight, devices, dtype, None, name)
        try:
            yield cls(data, w, devices, name)
        finally:
            data.close()

    def rows(self, indices):
        return self.data.rows(indices)

    def batch(self, indices, weights, centers, order):
        return self.data.fold_rows(indices[order], weights[order], np.asarray(centers),
                                   BatchTotals.zeros(len(centers), self.d), assign_rows,
                                   fold_assigned)

    def labels_inertia(self, centers):
        """(labels as a dask array on the workers, inertia) of every row."""
        lloyd = LloydShards(self.data, len(centers), device_update=False)
        stats = lloyd.run(np.asarray(centers, np.float64), update=False)
        return lloyd.labels(), float(stats.inertia)

    def variances(self):
        """From the blocks' moments (numpy's X.var to rounding)."""
        return self._var

    @contextlib.contextmanager
    def seeding(self, pick):
        """All rows: on the workers; a sample: its rows on the client's
        devices (the host path's)."""
        if pick is not None:
            with HostRows(self.rows(pick), self.w[pick], self.devices,
                          self.name).seeding(None) as seeded:
                yield seeded
            return
        yield self.data, self.w, Ranks.alone(self.data)
