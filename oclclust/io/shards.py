"""Loading this rank's rows of a data set: only its slice is read."""
import numpy as np

from ..parallel.comm import rank, size


def shard_range(n, comm):
    """This rank's contiguous rows [start, stop) of *n* (sizes differ by at most 1)."""
    ranks, rank_ = size(comm), rank(comm)
    return n * rank_ // ranks, n * (rank_ + 1) // ranks


def load_shard(paths, comm=None):
    """This rank's slice of the rows of a ``.npy`` file, or of a list of them
    taken as one array (concatenated in order): only the rows of the slice
    are read (the files are memory-mapped), so no rank holds all the data."""
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
    start, stop = shard_range(int(ends[-1]), comm)
    pieces = []
    for a, end in zip(arrays, ends):
        first = end - len(a)
        lo, hi = max(start, first), min(stop, end)
        if lo < hi:
            pieces.append(np.asarray(a[lo - first:hi - first]))
    if not pieces:
        return np.empty((0, arrays[0].shape[1]), arrays[0].dtype)
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
