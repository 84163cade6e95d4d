"""A fitted estimator's calls on a dask array's blocks of rows (predict,
transform, score ...): each block's on the worker that holds it, with that
worker's devices (dask.worker_devices); the results stay there as a dask
array, or come back as one number a block.
"""
import numpy as np
import dask.array as da
from distributed import get_worker

from .dask import active_client, local_indices, picklable_devices, worker_devices


def _on_blocks(X, fn, devices, weights):
    """(X in whole rows, [its weights as an n x 1 dask array], on_block):
    on_block(block[, w]) runs fn(block, the worker's devices[, w])."""
    if X.ndim != 2:
        raise ValueError(f"Expected 2D array, got {X.ndim}D dask array instead.")
    client = active_client()
    local = local_indices(client) if client is not None else {}
    devices = picklable_devices(devices)

    def on_block(block, *w):
        here = local.get(get_worker().address, (0, 1)) if local else (0, 1)
        return fn(block, worker_devices(devices, here), *[v[:, 0] for v in w])
    X = X.rechunk({1: -1})
    if weights is None:
        return X, [], on_block
    return X, [da.asarray(weights).rechunk((X.chunks[0],))[:, None]], on_block


def map_rows(X, fn, devices, dtype, columns=None):
    """fn(block, devices) on each block of rows of X on its worker, with the
    worker's devices (worker_devices): a dask array of one value per row
    (*columns*: of that many columns), never gathered."""
    X, _, on_block = _on_blocks(X, fn, devices, None)
    if columns is None:
        return X.map_blocks(on_block, drop_axis=1, dtype=dtype)
    return X.map_blocks(on_block, chunks=(X.chunks[0], (columns,)), dtype=dtype)


def block_total(X, fn, devices, sample_weight=None):
    """The sum of fn(block, devices, its weights or None) (a number per
    block, on its worker) over the blocks of X, in block order."""
    def one_number(block, devices, *w):
        return np.array([fn(block, devices, *(w or [None]))])
    X, w, on_block = _on_blocks(X, one_number, devices, sample_weight)
    parts = da.map_blocks(on_block, X, *w, drop_axis=1,
                          chunks=((1,) * X.numblocks[0],), dtype=np.float64)
    return float(sum(parts.compute()))
