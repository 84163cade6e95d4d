"""The workers' side of a Dask fit (dask.py is the client's): each block
of rows on this worker's devices in a registry, under the fit's id and the
block's index, with the states its passes keep; the tasks the client sends
to a block (a pass, its per-row values, rows by index, a rebuild).

Run in the workers' processes; pickled by reference, so the client holds
nothing here but names.
"""
import copy
import warnings

import numpy as np

from ..runtime.extras import require
from ..runtime.validation import as_dtype, check_data, check_sample_weight
from .manager import DeviceManager
from .placement import bind_by_index, compute_dtype

cloudpickle = require("cloudpickle", "fitting dask arrays")
get_worker = require("distributed", "fitting dask arrays").get_worker


def worker_devices(devices, local):
    """The devices of this worker (*local*: its index and count on its
    host): a list or a DeviceManager as given; a name (or None) resolved
    here, one GPU per worker on a host of several (bind_by_index)."""
    if isinstance(devices, DeviceManager):
        return copy.deepcopy(devices)
    manager = DeviceManager(devices)
    if devices is None or isinstance(devices, str):
        manager.profiles = bind_by_index(manager.profiles, *local)
    return manager


# --------------------------------------------------- on the workers
_BLOCKS = {}   # (fit id, block index) -> _Block, in each worker process
_KEPT = {}     # (fit id, block index, version) -> a rebuild's per-row values


class _Block:
    """A block's rows on this worker's devices and the passes' states."""

    def __init__(self, data):
        self.data, self.states = data, {}
        self.version = 0   # the fit's keyed passes (its journal's entries) run here


def _block(fit, index):
    try:
        return _BLOCKS[fit, index]
    except KeyError:
        raise RuntimeError(f"block {index} of the fit is not on Dask worker "
                           f"{get_worker().address} (restarted since it was loaded?)") from None


def _load(fit, index, rows, weights, start, devices, dtype, local, name, stat_values):
    X = check_data(rows, name)
    manager = worker_devices(devices, local)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dtype = compute_dtype(dtype, X, manager.profiles)
    w = check_sample_weight(weights, X.shape[0], dtype)
    data = manager.scatter(as_dtype(X, dtype), w, stat_values=stat_values)
    for chunk in data.chunks:   # global rows: what the passes report and relocation asks
        chunk.offset += start
    old = _BLOCKS.pop((fit, index), None)
    if old is not None:   # loaded again here (its first load's answer was lost)
        old.data.close()
    _BLOCKS[fit, index] = _Block(data)
    return dict(dtype=dtype.name, chunks=[(c.offset, c.n) for c in data.chunks],
                rows_per_device=data.rows_per_device,
                warnings=[str(c.message) for c in caught])


def _rebuild_block(fit, index, rows, weights, start, devices, dtype, local, name,
                   stat_values, replay):
    """_load, then the fit's keyed passes so far (*replay*: [(task, args,
    this block's values)]) run again on the block: its states as they were."""
    loaded = _load(fit, index, rows, weights, start, devices, dtype, local, name, stat_values)
    for task, args, values in replay:
        out = task(fit, index, *args, *(() if values is None else (values,)))
        if task is _rows_of_block:   # lost with the old worker: Dask asks again
            _KEPT[fit, index, args[-1]] = out
    return loaded


def _states_fn(fit, index, key, payload, other_keys=(), values=None, counted=True):
    block = _block(fit, index)
    make, fn = cloudpickle.loads(payload)
    if key is None:
        return block, lambda chunk: fn(chunk, None)
    if counted:   # a keyed pass: an entry of the fit's journal
        block.version += 1
    states = block.states.setdefault(key, {})
    theirs = [block.states[other] for other in other_keys]   # made by earlier maps
    extra = {} if values is None else dict(zip(block.data.chunks, values))

    def one(chunk):
        if chunk not in states:
            states[chunk] = make(chunk)
        return fn(chunk, states[chunk], *[t[chunk] for t in theirs],
                  *([extra[chunk]] if values is not None else []))
    return block, one


def _on_block(fit, index, key, payload, timed, other_keys=(), rows=True, values=None):
    block, one = _states_fn(fit, index, key, payload, other_keys, values)
    return block.data.map(one, timed, rows)


def _rows_of_block(fit, index, key, payload, version):
    """The block's per-row values of its *version*-th keyed pass: made now
    (the block one pass before), or again (the block at that pass, or a
    rebuild kept them); else the states they came from are gone."""
    if (fit, index, version) in _KEPT:
        return _KEPT[fit, index, version]
    block = _BLOCKS.get((fit, index))
    if block is None or block.version not in (version - 1, version):
        raise RuntimeError(f"the per-row values of block {index} of a fit on Dask left "
                           "with their worker, and the states they came from with the "
                           "fit: fit again")
    first = block.version == version - 1
    block, one = _states_fn(fit, index, key, payload, counted=False)
    if first:
        block.version += 1
    return np.concatenate(block.data.map(one))


def _shape_and_dtype(array):
    return array.shape, array.dtype


def _block_rows(fit, index, local):
    data = _block(fit, index).data
    return np.array([data.row(int(i)) for i in local]).reshape(len(local), data.d)


def _with_block(fit, index, fn, *args):
    return fn(_block(fit, index).data, *args)


def _free(fit):
    for key in [k for k in _BLOCKS if k[0] == fit]:
        _BLOCKS.pop(key).data.close()
    for key in [k for k in _KEPT if k[0] == fit]:
        del _KEPT[key]
