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


class Ranks:
    """This rank's place in a fit: the communicator (None: a fit of one
    process), every rank's row count, the global row count ``n`` and this
    rank's first global row ``offset``.  Building it is the collective check
    before iterating: a rank that failed to load its shard, has none, or
    has another n_features or dtype makes every rank raise RankError."""

    def __init__(self, comm, n_local, d, dtype, error=None):
        self.comm = comm if comm is not None and comm.Get_size() > 1 else None
        if self.comm is None:
            if error is not None:
                raise error
            self.counts = np.array([n_local], dtype=np.int64)
            self.rank = 0
        else:
            check_together(self.comm, error)
            shapes = self.comm.allgather((int(n_local), int(d), np.dtype(dtype).name))
            for what, i in (("n_features", 1), ("dtype", 2)):
                if len({s[i] for s in shapes}) > 1:
                    raise RankError(f"the ranks' shards disagree on {what}: " + ", ".join(
                        f"rank {r}: {s[i]}" for r, s in enumerate(shapes)))
            self.counts = np.array([s[0] for s in shapes], dtype=np.int64)
            self.rank = self.comm.Get_rank()
        self.n = int(self.counts.sum())
        self.offset = int(self.counts[:self.rank].sum())

    @property
    def size(self):
        return len(self.counts)

    def sum(self, *arrays):
        """float64 sums over the ranks (rank order; identity on one rank)."""
        return sum_across(self.comm, *arrays)

    def together(self, fn):
        """fn() on this rank; an exception on any rank raises on all of them
        (a RankError naming each), so none is left waiting."""
        if self.comm is None:
            return fn()
        try:
            result, error = fn(), None
        except Exception as exc:   # noqa: BLE001 -- every error must reach the other ranks
            result, error = None, exc
        check_together(self.comm, error)
        return result

    def gather(self, value):
        """Every rank's *value* (small Python objects), in rank order."""
        return [value] if self.comm is None else self.comm.allgather(value)

    def owner(self, index):
        """(rank, local row) of global row *index*."""
        rank = int(np.searchsorted(np.cumsum(self.counts), index, side="right"))
        return rank, int(index - self.counts[:rank].sum())

    def rows(self, data, indices):
        """Global rows *indices* of the data, float64, on every rank: each
        rank fills in the rows it owns (the others add zeros, exactly)."""
        out = np.zeros((len(indices), data.d), np.float64)
        for j, i in enumerate(indices):
            rank, local = self.owner(int(i))
            if rank == self.rank:
                out[j] = data.row(local)
        return self.sum(out)

    def locate(self, totals, targets):
        """For each prefix-sum *target* over all ranks' rows, the owning rank
        and the target relative to that rank's start; *totals* is this
        rank's sum.  Returns (owning rank per target, local targets)."""
        per_rank = np.array(self.gather(float(totals)))
        ends = np.cumsum(per_rank)
        owner = np.minimum(np.searchsorted(ends, targets, side="left"), self.size - 1)
        starts = np.concatenate([[0.0], ends[:-1]])
        return owner, targets - starts[owner]


# ----------------------------------------------------------- a fit's passes
def joined_fit_data(estimator, X, sample_weight, calibration=None):
    """((ShardedData, host weights), Ranks): placement.fit_data on this rank
    and the collective check of all ranks' shards (``estimator.comm``)."""
    from .placement import fit_data
    comm = getattr(estimator, "comm", None)
    if comm is None:
        data = fit_data(estimator, X, sample_weight, calibration)
        return data, Ranks(None, data[0].n, data[0].d, data[0].dtype)
    data, error, shape = None, None, (0, 0, "float64")
    if comm.Get_size() > 1:
        local_rank(comm)   # collective: here, where every rank passes
    try:
        data = fit_data(estimator, X, sample_weight, calibration)
        shape = (data[0].n, data[0].d, data[0].dtype)
    except Exception as exc:   # noqa: BLE001 -- reported on every rank
        error = exc
    try:
        return data, Ranks(comm, *shape, error=error)
    except Exception:
        if data is not None:
            data[0].close()
        raise


def joined_moments(data, ranks):
    """(means, variances, finite) of all ranks' rows, combined in float64."""
    mean, var, finite = data.moments()
    n = float(data.n)
    total_mean = ranks.sum(n * mean) / ranks.n
    m2 = ranks.sum(n * (var + (mean - total_mean) ** 2))
    bad = ranks.sum(float(not finite))
    return total_mean, m2 / ranks.n, bool(bad == 0)


def joined_pass(lloyd, centers, ranks, update=True):
    """A Lloyd pass (lloyd.ShardedLloyd) on this rank, its statistics summed
    over all ranks; an error on any rank raises on every rank."""
    from .lloyd import LloydStats
    stats = ranks.together(lambda: lloyd.run(centers, update=update))
    if ranks.comm is None:
        return stats
    counts = np.array([stats.inertia, stats.n_changed, stats.n_nonfinite], np.float64)
    if update:
        sums, weights, counts = ranks.sum(stats.sums, stats.weights, counts)
    else:
        sums = weights = None
        counts = ranks.sum(counts)
    return LloydStats(sums, weights, float(counts[0]), int(counts[1]), int(counts[2]))


# ------------------------------------------------------------- shard loading
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


# ---------------------------------------------------------- device binding
def launched_ranks():
    """The rank count an MPI launcher announced in the environment (1 if none):
    the command line joins the ranks only when launched under mpiexec."""
    import os
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS",
                "SLURM_NTASKS"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 1


def world():
    """MPI.COMM_WORLD (imports mpi4py: only for a caller that wants MPI)."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise RuntimeError("MPI was asked for but mpi4py is not installed: "
                           "pip install 'oclclust[mpi]'") from exc
    return MPI.COMM_WORLD


_LOCAL = {}


def local_rank(comm):
    """(this rank's index among the ranks of its host, their number).
    Collective the first time for a communicator (then remembered): a fit
    asks before anything can fail on one rank and not on the others."""
    key = comm.py2f()
    if key not in _LOCAL:
        from mpi4py import MPI
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        _LOCAL[key] = node.Get_rank(), node.Get_size()
        node.Free()
    return _LOCAL[key]


def bind_devices(profiles, comm):
    """The devices of this rank: with several ranks on a host that has GPUs,
    the GPU of the rank's local index (round robin), alone; else all of
    *profiles* (ranks sharing a CPU share its cores)."""
    if comm is None or comm.Get_size() == 1:
        return profiles
    index, count = local_rank(comm)
    gpus = [p for p in profiles if p.type == "gpu"]
    if count > 1 and gpus:
        return [gpus[index % len(gpus)]]
    return profiles
