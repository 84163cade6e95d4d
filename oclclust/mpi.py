"""MPI: SPMD fits across ranks (layer 5).  Every rank owns its shard and its
device manager; the partial statistics of a pass are joined here.

Only a caller that passes ``comm`` reaches this module's mpi4py use: the
communicator's own methods are all it calls, so nothing here imports mpi4py
(and with ``comm=None`` every function is the identity on one rank).
"""
import numpy as np


class RankError(RuntimeError):
    """Another rank failed (or disagreed); every rank raises it together."""


def size(comm):
    return 1 if comm is None else comm.Get_size()


def rank(comm):
    return 0 if comm is None else comm.Get_rank()


def sum_across(comm, *arrays):
    """Each array summed over the ranks, in float64, in rank order on every
    rank (an Allgather, then a sum in a fixed order: every rank gets the
    same bits, whatever the MPI library's reduction tree)."""
    flat = [np.asarray(a, dtype=np.float64).ravel() for a in arrays]
    if comm is None or comm.Get_size() == 1:
        joined = flat
    else:
        mine = np.concatenate(flat) if flat else np.zeros(0)
        everyone = np.empty((comm.Get_size(), mine.size), np.float64)
        comm.Allgather(mine, everyone)
        total = np.zeros(mine.size, np.float64)
        for row in everyone:          # rank order, the same on every rank
            total += row
        joined = np.split(total, np.cumsum([f.size for f in flat])[:-1])
    out = [j.reshape(np.shape(a)) for j, a in zip(joined, arrays)]
    return out[0] if len(arrays) == 1 else tuple(out)


def check_together(comm, error=None):
    """A collective check: raise on every rank if any rank had *error*
    (an exception or None).  Call it where all ranks pass, so a failing rank
    never leaves the others waiting in the next collective."""
    if comm is None or comm.Get_size() == 1:
        if error is not None:
            raise error
        return
    messages = comm.allgather(None if error is None else f"{type(error).__name__}: {error}")
    failed = [(r, m) for r, m in enumerate(messages) if m is not None]
    if not failed:
        return
    text = "; ".join(f"rank {r}: {m}" for r, m in failed)
    if error is not None:
        raise RankError(f"fit failed on {len(failed)} of {comm.Get_size()} ranks: {text}") \
            from error
    raise RankError(f"fit failed on {len(failed)} of {comm.Get_size()} ranks: {text}")
