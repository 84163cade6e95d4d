"""The workers' side of DBSCAN on Dask (dask_slabs.py is the client's):
the tasks the client pins to a block's worker (check, key, cut its rows
into the slabs' parts, make its labels from the slabs') and to a slab's
(hold it on the worker's devices in a registry, under the fit's id, and
run its steps there).

Run in the workers' processes; pickled by reference, so the client holds
nothing here but names.
"""
import numpy as np

from ....passes.dbscan_grid import joined_roots
from ....passes.grid import CellGrid
from ....passes.linkage import check_range
from ....runtime.validation import check_data, check_sample_weight, is_sparse
from .plans import worker_plans
from .slabs import (HeldSlab, key_sample, numbered, owned, owner_parts, to_slabs,
                    value_bounds)

# (the one-process fit takes sparse rows through an eps-graph on the host: no slabs)
SPARSE = ("DBSCAN on Dask workers takes dense blocks of rows, not sparse ones: pass "
          "X.map_blocks(lambda b: b.toarray()), or X.compute() to fit them here")

_HELD = {}   # (fit id, slab index) -> {"slab": HeldSlab, its values}, in each worker
_ENDED = set()   # the ids of the fits freed here (32 characters a fit): a slab
#                  made after its fit failed elsewhere is not kept


def _rows(block, name):
    """A block's rows as float64, checked as the one-process fit checks X."""
    if is_sparse(block):
        raise TypeError(SPARSE)
    X = np.asarray(check_data(block, name, min_samples=0), np.float64)
    if not np.isfinite(X).all():
        raise ValueError("Input X contains NaN or infinity.")
    return X


def _weights(w, n):
    """A block's weights (None: unit weights), checked as check_sample_weight
    checks them but for weights all zero: the fit refuses those alone."""
    if (w is not None and np.shape(w) == (n,) and np.asarray(w).dtype.kind in "biuf"
            and not np.asarray(w).any()):
        return np.zeros(n)
    return check_sample_weight(w, n, np.float64, signed=True)


def _check_block(block, w, devices, local, name):
    """A refusal of a block of rows (its exception's class name and
    message: the client raises it), or its devices' value type, value
    bounds and whether a weight is not zero."""
    try:
        X = _rows(block, name)
        plans, _ = worker_plans(devices, local)
        for plan in plans:
            check_range(X, plan)
        w = _weights(w, len(X))
    except (ValueError, TypeError) as exc:
        return dict(refused=(type(exc).__name__, str(exc)))
    values = np.ascontiguousarray(X, plans[0].dtype)
    return dict(refused=None, dtype=plans[0].dtype.name, nonzero=w is None or bool(w.any()),
                bounds=value_bounds(values) if len(values) else None)


def _block_grid(block, w, start, bounds, eps, dtype):
    """(rows in the devices' value type, weights, their CellGrid under the
    fit's bounds, rows numbered from *start*)."""
    values = np.ascontiguousarray(_rows(block, "DBSCAN"), dtype)
    grid = CellGrid(values, eps, dtype, bounds, start + np.arange(len(values)))
    return values, _weights(w, len(values)), grid


def _offer(keyed):
    return key_sample(keyed[2].keys)


def _routed(keyed, low, high):
    """[(rows, ids, weights)] a slab: the block's rows each slab holds."""
    values, w, grid = keyed
    sent = to_slabs(grid.keys, low, high)
    ws = sent(w[grid.order]) if w is not None else [None] * len(low)
    return list(zip(sent(values[grid.order]), sent(grid.ids), ws))


def _held(fit, index):
    try:
        return _HELD[fit, index]
    except KeyError:
        raise RuntimeError(f"slab {index} of a DBSCAN fit on Dask is not on this worker "
                           "(it left, or the fit ended): fit again") from None


def _hold(fit, index, parts, local, eps, metric, min_samples, bounds, cuts, low, high,
          devices, d, dtype):
    """Slab *index* held here from every block's *parts* (block order), its
    core flags counted: its halo_parts of them."""
    rows = np.concatenate([np.zeros((0, d), dtype)] + [p[0] for p in parts])
    ids = np.concatenate([np.zeros(0, np.int64)] + [p[1] for p in parts])
    w = None if parts[0][2] is None else np.concatenate([p[2] for p in parts])
    plans, split = worker_plans(devices, local)
    slab = HeldSlab(index, rows, ids, w, eps, metric, bounds, cuts, low, high, plans, split)
    state = dict(slab=slab, core=slab.core(min_samples))
    if fit not in _ENDED:
        _HELD[fit, index] = state
    return slab.halo_parts(state["core"].astype(np.int8))


def _link(fit, index, got):
    """(a, b, rows answered): the slab's links between components."""
    state = _held(fit, index)
    slab = state["slab"]
    state["held_core"] = slab.held(got, state["core"].astype(np.int8)).astype(bool)
    state["root"], a, b = slab.links(state["core"], state["held_core"])
    return a, b, slab.hoods.rows()


def _least(fit, index, a, b):
    """Every slab's links joined: the slab's rows that are their cluster's least."""
    state = _held(fit, index)
    state["root"] = joined_roots(state["root"], a, b)
    return state["slab"].least_rows(state["core"], state["root"])


def _number(fit, index, least):
    state = _held(fit, index)
    state["number"] = numbered(state["core"], state["root"], least)
    return state["slab"].halo_parts(state["number"])


def _label(fit, index, got, counts):
    """The slab's rows' (local index, label, core) cut by block."""
    state = _held(fit, index)
    slab = state["slab"]
    labels = slab.labels(state["core"], state["number"], state["held_core"],
                         slab.held(got, state["number"]))
    return owner_parts(slab.ids, labels, state["core"], counts)


def _block_out(n, parts):
    """(the block's labels, its core flags packed 8 a byte: what the client
    gathers, an eighth of a byte a row)."""
    labels, core = owned(parts, n)
    return labels, np.packbits(core)


def _free(fit):
    _ENDED.add(fit)
    for key in [k for k in _HELD if k[0] == fit]:
        del _HELD[key]
