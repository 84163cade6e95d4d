"""Loading this rank's rows of a data set: only its slice is read.

The slices are in whole blocks of the fit's split-free sums when the
estimator is given (``block_rows``): the ranks' model is then one
process's bit for bit (parallel.shares.rank_rows)."""
import numpy as np

from ..parallel.comm import rank, size
from ..parallel.shares import rank_rows


def shard_range(n, comm, block_rows=1):
    """This rank's contiguous rows [start, stop) of *n*: in whole blocks of
    *block_rows* (parallel.shares.rank_rows; 1: sizes differ by at most 1)."""
    return rank_rows(n, size(comm), rank(comm), block_rows)


def rows_per_block(block_rows, d, dtype):
    """*block_rows* as a number: an int as it is, an estimator's (one with
    ``fit_block_rows``) for *d* features of *dtype*, None as 1."""
    if block_rows is None:
        return 1
    if hasattr(block_rows, "fit_block_rows"):
        return block_rows.fit_block_rows(d, dtype)
    return int(block_rows)


def load_shard(paths, comm=None, block_rows=None):
    """This rank's slice of the rows of a ``.npy`` file, or of a list of them
    taken as one array (concatenated in order): only the rows of the slice
    are read (the files are memory-mapped), so no rank holds all the data.
    *block_rows*: the estimator to fit (or its ``fit_block_rows``): slices
    in whole blocks of its sums, for a model bit for bit one process's."""
    paths = [paths] if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__") \
        else list(paths)
    if not paths:
        raise ValueError("load_shard: no files given")
    arrays = []
    for path in paths:
        try:
            a = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: cannot read as a .npy array: {exc}") from exc
        if a.ndim != 2:
            raise ValueError(f"{path}: expected a 2-D array (samples x features), "
                             f"got shape {a.shape}")
        if arrays and a.shape[1] != arrays[0].shape[1]:
            raise ValueError(f"{path}: {a.shape[1]} features, but {paths[0]} has "
                             f"{arrays[0].shape[1]}")
        arrays.append(a)
    ends = np.cumsum([len(a) for a in arrays])
    start, stop = shard_range(int(ends[-1]), comm,
                              rows_per_block(block_rows, arrays[0].shape[1], arrays[0].dtype))
    pieces = []
    for a, end in zip(arrays, ends):
        first = end - len(a)
        lo, hi = max(start, first), min(stop, end)
        if lo < hi:
            pieces.append(np.asarray(a[lo - first:hi - first]))
    if not pieces:
        return np.empty((0, arrays[0].shape[1]), arrays[0].dtype)
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
