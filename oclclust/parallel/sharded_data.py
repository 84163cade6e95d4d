"""What a fit's rows answer, wherever they are: the ShardedData protocol.

A ShardedPass (sharded.py) and the families' estimators see a fit's rows
through these members alone.  Two implementations declare it:
device_data.DeviceData (the rows on the devices of this host, the one a
DeviceManager's scatter lays out) and dask.DaskData (the rows as blocks on
a Dask cluster's workers, the client's view of them).  Rows that are
elsewhere (``remote``) also answer RemoteShardedData: the per-chunk state of
a pass lives beside the rows, and the pass's functions travel there.
"""
from typing import Any, Callable, Optional, Protocol, Sequence, runtime_checkable

import numpy as np

from ..runtime import exact_sums
from ..runtime.exact_fold import magnitudes_of
from ..runtime.exact_sums import ExactWords


@runtime_checkable
class ShardedData(Protocol):
    """A fit's rows split into chunks (all of this process's rows, or of
    one MPI rank's): what ShardedPass and the estimators ask of them.

    Attributes
    ----------
    n, d : int
        Rows and features (this rank's rows).
    dtype : numpy.dtype
        The compute dtype the devices hold the rows in.
    chunks : list
        The chunks in row order, each with ``offset`` (its first row) and
        ``n`` (its rows); on this host's devices each is a
        runtime.partition.DevicePartition (``queue``, ``profile``,
        ``weights``, ``row(i)``, ``mean_var_finite()`` ...), over remote
        rows the client's note of one (those travel to the real chunk).  A
        re-split lays out a new list: a pass's per-chunk state follows the
        list's identity.
    source : array
        The rows as given: host rows (numpy, memmap), a pyopencl device
        array, or a dask array (remote).
    manager : object
        What a device failure is reported to: ``drop(failure)`` forgets a
        failed device (or raises), ``reshards`` counts the layouts made
        anew (the estimators' ``reshards_``); a DeviceManager, or over
        remote rows the data itself.
    rows_per_device : dict
        {device: rows} of the present layout (the estimators' ``devices_``
        and each iteration's ``history_``).
    remote : bool
        Whether the chunks are in other processes (RemoteShardedData): a
        pass's functions and states go there, and only chunk-sized results
        come back.
    """

    n: int
    d: int
    dtype: np.dtype
    chunks: Sequence[Any]
    source: Any
    manager: Any
    rows_per_device: dict
    remote: bool

    def map(self, fn: Callable, timed: bool = False, rows: bool = True) -> list:
        """[fn(chunk) for every chunk] in row order, all devices at once.
        *timed*: the pass is the algorithm's main one, whose per-device
        times guide rebalancing; *rows* False: fn reads only the chunks'
        own state, not their rows (a streamed shard streams nothing)."""

    def map_enqueued(self, launch: Callable, collect: Callable, timed: bool = False) -> list:
        """[collect(chunk, launch(chunk))] for every chunk in row order, as
        map: *launch* only enqueues the pass and *collect* waits for it and
        reads its results (an implementation may launch every chunk's pass
        before it collects any)."""

    def row(self, i: int) -> np.ndarray:
        """Row *i* (of this rank's rows) to the host, in ``dtype``."""

    def rows(self, indices) -> np.ndarray:
        """Rows *indices* (of this rank's rows) to the host, len(indices) x d."""

    def mean_var_finite(self) -> tuple:
        """(column means, column variances, whether every value is finite)
        of all rows, in float64 (combined_mean_var_finite)."""

    def magnitudes(self) -> tuple:
        """(max |x| of each column, max weight) of this rank's rows, float64:
        the bounds of the split-free sums' grids (combined_magnitudes)."""

    def rebalance(self, save: Optional[Callable] = None, min_gain: float = 0.05):
        """With measured device weights, the rows split anew between passes
        when that pays: save()'s value, taken before the chunks (and their
        state) are laid out anew, or None (no re-split)."""

    def reshard(self) -> None:
        """Lay the rows out anew after the device list or weights changed
        (a device dropped); raises where the rows cannot move."""

    def close(self) -> None:
        """Free the rows' device memory (and threads, or remote blocks)."""


@runtime_checkable
class RemoteShardedData(ShardedData, Protocol):
    """Rows whose chunks are in other processes (``remote`` True: a Dask
    cluster's workers): a pass's state of a chunk is made and kept beside
    it, under the pass's *key*, by *make* (which travels there, as every
    function given here does: none may hold a client-side object)."""

    def map_states(self, key, make: Callable, fn: Callable, timed: bool = False,
                   others: Sequence = (), each: Optional[Sequence] = None) -> list:
        """[fn(chunk, its state, *its states of the passes keyed *others*[,
        each[i]])] over every chunk i in row order, where the chunks are;
        *each*: one value per chunk, each sent only to its own."""

    def rows_states(self, key, make: Callable, fn: Callable):
        """fn(chunk, its state) -> one value per row of the chunk, joined in
        row order as an array that stays where the rows are."""

    def fold_rows(self, indices, weights, centers, total, assign: Callable, fold: Callable):
        """*total* continued with rows *indices* (ascending) of *weights*,
        assigned about *centers* where they are (``assign``) and folded in
        row order (``fold``), the running totals travelling from block to
        block (the mini-batch's, cluster/kmeans/minibatch_sums.py)."""


def combined_mean_var_finite(data, ranks=None):
    """(column means, column variances, all finite) of *data*'s rows (and
    every rank's, with *ranks*), the same bits however the rows are split:
    the column sums of fixed blocks of rows (DevicePartition.block_moments)
    added exactly (runtime.exact_sums), first about zero for the means,
    then about the means for the variances."""
    n = data.n if ranks is None else ranks.n

    def total(shift):
        if one_partition(data, ranks):   # the same bits without the words
            return exact_sums.rounded_sum(data.map(lambda c: _block_moments(c, shift))[0])
        parts = data.map(lambda c: _exact_block_moments(c, shift))
        summed = sum(parts) if parts else ExactWords.of_values(np.zeros((0, 2 * data.d)))
        if ranks is not None:
            summed = summed.from_flat(ranks.sum(summed.flat(), exact=True))
        return summed.value()
    s1 = total(np.zeros(data.d))
    if not np.all(np.isfinite(s1)) or n == 0:
        nan = np.full(data.d, np.nan)
        return nan, nan, False
    mean = s1[:data.d] / n
    shift = mean.astype(data.dtype).astype(np.float64)
    s2 = total(shift)[data.d:]
    if not np.all(np.isfinite(s2)):
        nan = np.full(data.d, np.nan)
        return nan, nan, False
    return mean, np.maximum(s2 / n - (mean - shift) ** 2, 0.0), True


def one_partition(data, ranks=None):
    """Whether *data*'s rows (over *ranks*: comm.Ranks, None for one
    process) are one chunk on one process: their exact sums may then be
    rounded as they finish (runtime.exact_sums.rounded_sum, or on the
    device), as no other chunk or rank adds to them."""
    return (not getattr(data, "remote", False) and len(data.chunks) == 1
            and getattr(ranks, "comm", None) is None)


def _block_moments(chunk, shift):
    return chunk.block_moments(shift, chunk.block_rows or exact_sums.MIN_BLOCK_ROWS)


def _exact_block_moments(chunk, shift):
    """A chunk's block moments about *shift*, exactly summed (ExactWords)."""
    return ExactWords.of_values(_block_moments(chunk, shift))


def combined_magnitudes(data):
    """(max |x| of each column, max weight) of *data*'s rows: each chunk's
    (exact_fold.magnitudes_of, on its device), their maximum (exact)."""
    parts = data.map(magnitudes_of)
    if not parts:
        return np.zeros(data.d), 1.0
    return np.max([p[0] for p in parts], axis=0), max(p[1] for p in parts)
