"""MPI: the ranks of a fit and their collectives.  Every rank owns its shard
and its device manager; the partial statistics of a pass are joined with these.

Only a caller that passes ``comm`` reaches this module's mpi4py use: the
communicator's own methods are all it calls, so nothing here imports mpi4py
(and with ``comm=None`` every function is the identity on one rank).
"""
import builtins
import ctypes
import pickle

import numpy as np


class RankError(RuntimeError):
    """Another rank failed (or disagreed); every rank raises it together.
    Raised as a subclass that is also the failing rank's built-in exception
    type (rank_error_type): a ValueError for bad data stays a ValueError on
    every rank, as scikit-learn users catch it."""


_TYPED = {}


def builtin_base(exc):
    """The name of the nearest built-in class of exception *exc* (ValueError
    for a ProfileError)."""
    return next(c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins")


def rank_error_type(name):
    """RankError that is also the built-in exception class *name*
    ("ValueError" ...); plain RankError where there is none to add, or
    where the two cannot be combined (OSError's instance layout)."""
    base = getattr(builtins, name, None)
    if not (isinstance(base, type) and issubclass(base, Exception)) or \
            issubclass(RankError, base):
        return RankError
    if name not in _TYPED:
        try:
            _TYPED[name] = type("RankError", (RankError, base),
                                {"__module__": __name__, "__doc__": RankError.__doc__})
        except TypeError:
            _TYPED[name] = RankError
    return _TYPED[name]


def size(comm):
    return 1 if comm is None else comm.Get_size()


def rank(comm):
    return 0 if comm is None else comm.Get_rank()


def sum_across(comm, *arrays, exact=False):
    """Each array summed over the ranks, in float64, in rank order on every
    rank (an Allgather, then a sum in a fixed order: every rank gets the
    same bits, whatever the MPI library's reduction tree).  *exact*: the
    values are whole numbers whose sum over the ranks stays under 2^53
    (split-free sums' words, counts), so any order gives the same bits:
    one Allreduce instead, whose bytes a rank moves do not grow with the
    ranks (a ring's 2 S; the Allgather's (R - 1) S)."""
    flat = [np.asarray(a, dtype=np.float64).ravel() for a in arrays]
    if comm is None or comm.Get_size() == 1:
        joined = flat
    else:
        mine = np.concatenate(flat) if flat else np.zeros(0)
        if exact:
            total = np.empty_like(mine)
            comm.Allreduce(mine, total)
        else:
            everyone = np.empty((comm.Get_size(), mine.size), np.float64)
            comm.Allgather(mine, everyone)
            total = np.zeros(mine.size, np.float64)
            for row in everyone:          # rank order, the same on every rank
                total += row
        joined = np.split(total, np.cumsum([f.size for f in flat])[:-1])
    out = [j.reshape(np.shape(a)) for j, a in zip(joined, arrays)]
    return out[0] if len(arrays) == 1 else tuple(out)


def raise_if_any_failed(comm, error=None):
    """A collective check: raise on every rank if any rank had *error*
    (an exception, a KeyboardInterrupt, or None).  Call it where all ranks
    pass, so a failing rank never leaves the others waiting in the next
    collective."""
    if comm is None or comm.Get_size() == 1:
        if error is not None:
            raise error
        return
    messages = comm.allgather(None if error is None else
                              (f"{type(error).__name__}: {error}", builtin_base(error)))
    failed = [(r, m) for r, m in enumerate(messages) if m is not None]
    if not failed:
        return
    text = "; ".join(f"rank {r}: {m[0]}" for r, m in failed)
    if error is not None and not isinstance(error, Exception):
        raise error   # a KeyboardInterrupt stays one where it came (the others: RankError)
    # the first failing rank's type, the same on every rank
    kind = rank_error_type(failed[0][1][1])
    if error is not None:
        raise kind(f"fit failed on {len(failed)} of {comm.Get_size()} ranks: {text}") \
            from error
    raise kind(f"fit failed on {len(failed)} of {comm.Get_size()} ranks: {text}")


check_together = raise_if_any_failed   # its former name, on this module's API page

_FAILED = 17   # the tag of a failure notice on a fit's side communicator


def _abandon(request):
    """Keep *request* (an mpi4py Request: it owns its buffers) alive until
    the process ends.  A collective a failed rank never joins cannot be
    cancelled, and MPI may still write into its receive buffer at any
    later call, up to MPI_Finalize (which runs after the interpreter's
    teardown); freed with the exception's frames, that buffer was reused,
    and Open MPI's late writes corrupted the heap (an abort at exit, 5 of
    12 three-rank runs on the lent GPU host).  The reference is never
    released: a few bytes a failed fit."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(request))


class FitComm:
    """A fit's own communicator (a duplicate of the caller's, so a collective
    a failed fit left half done never meets the next fit's), whose
    collectives wait by polling and give up when another rank reports that
    it left the fit (fail): a rank that raised, or was interrupted, outside
    a collective check would otherwise leave the others waiting forever.
    Notices travel on a second duplicate, never mixed with the fit's data."""

    def __init__(self, comm):
        self._comm, self._side = comm.Dup(), comm.Dup()
        self._sent = []

    def Get_size(self):
        return self._comm.Get_size()

    def Get_rank(self):
        return self._comm.Get_rank()

    def _wait(self, request):
        from mpi4py import MPI
        try:
            while not request.Test():
                if self._side.Iprobe(source=MPI.ANY_SOURCE, tag=_FAILED):
                    rank, message, kind = self._side.recv(source=MPI.ANY_SOURCE, tag=_FAILED)
                    raise rank_error_type(kind)(self.failure(rank, message))
        except BaseException:   # a notice, or an interrupt between two tests
            _abandon(request)
            raise

    def failure(self, rank, message):
        return f"fit failed on rank {rank} of {self.Get_size()}: {message}"

    def Allgather(self, sendbuf, recvbuf):
        self._wait(self._comm.Iallgather(sendbuf, recvbuf))

    def Allreduce(self, sendbuf, recvbuf):
        """The elementwise sum (MPI.SUM) of every rank's *sendbuf*."""
        self._wait(self._comm.Iallreduce(sendbuf, recvbuf))

    def Alltoallv(self, sendbuf, recvbuf):
        """mpi4py's Alltoallv: [array, (counts, displacements), datatype] each."""
        self._wait(self._comm.Ialltoallv(sendbuf, recvbuf))

    def allgather(self, value):
        """Every rank's picklable *value*, in rank order."""
        mine = np.frombuffer(pickle.dumps(value), np.uint8)
        sizes = np.empty(self.Get_size(), np.int64)
        self.Allgather(np.array([mine.size], np.int64), sizes)
        joined = np.empty(int(sizes.sum()), np.uint8)
        self._wait(self._comm.Iallgatherv(mine, [joined, sizes]))
        ends = np.cumsum(sizes)
        return [pickle.loads(joined[e - n:e].tobytes()) for n, e in zip(sizes, ends)]

    def fail(self, exc):
        """Tells every other rank that this one leaves the fit with *exc*
        (they raise a RankError at their next collective, or at once), and
        returns the RankError this rank raises with them (a KeyboardInterrupt
        stays one)."""
        kind = builtin_base(exc) if isinstance(exc, Exception) else "RuntimeError"
        note = (self.Get_rank(), f"{type(exc).__name__}: {exc}", kind)
        if not self._sent:   # once: an error is re-raised through several frames
            self._sent = [self._side.isend(note, dest=r, tag=_FAILED)
                          for r in range(self.Get_size()) if r != self.Get_rank()]
            for request in self._sent:   # a rank may take its notice after this fit
                _abandon(request)
        if not isinstance(exc, Exception):
            return exc
        return rank_error_type(kind)(self.failure(*note[:2]))

    def free(self):
        self._comm.Free()
        self._side.Free()


class Ranks:
    """This rank's place in a fit: the communicator (None: a fit of one
    process), every rank's row count, the global row count ``n`` and this
    rank's first global row ``offset``.  Building it is the collective check
    before iterating: a rank that failed to load its shard, has none, or
    has another n_features or dtype makes every rank raise RankError."""

    def __init__(self, comm, n_local, d, dtype, error=None):
        self.comm = FitComm(comm) if comm is not None and comm.Get_size() > 1 else None
        if self.comm is None:
            if error is not None:
                raise error
            self.counts = np.array([n_local], dtype=np.int64)
            self.rank = 0
        else:
            try:
                self._agree(error, (int(n_local), int(d), np.dtype(dtype).name))
            except RankError:   # every rank raises here: the fit's communicator goes
                self.close()
                raise
            except BaseException as exc:   # noqa: BLE001 -- failed in the check itself
                self.raise_left(exc)   # (interrupted waiting for a slower rank): all are told
        self.n = int(self.counts.sum())
        self.offset = int(self.counts[:self.rank].sum())

    def _agree(self, error, shape):
        raise_if_any_failed(self.comm, error)
        shapes = self.comm.allgather(shape)
        for what, i in (("n_features", 1), ("dtype", 2)):
            if len({s[i] for s in shapes}) > 1:
                raise rank_error_type("ValueError")(
                    f"the ranks' shards disagree on {what}: " + ", ".join(
                    f"rank {r}: {s[i]}" for r, s in enumerate(shapes)))
        self.counts = np.array([s[0] for s in shapes], dtype=np.int64)
        self.rank = self.comm.Get_rank()

    def left(self, exc):
        """This rank leaves the fit with *exc*: the other ranks are told
        (unless it is a RankError, which every rank raises already), and the
        error to raise is returned: a RankError naming this rank, of exc's
        built-in type, the one the others raise."""
        if self.comm is None or isinstance(exc, RankError):
            return exc
        return self.comm.fail(exc)

    def finished(self):
        """The end of this rank's fit, collective: it returns once every
        rank has ended its fit, and raises on every rank where one failed
        after its last sum over the ranks (the host's work after the last
        iteration, as GaussianMixture's final model): the others, with
        nothing left to wait for, would return a model that rank never
        had.  Then the fit's communicator goes."""
        if self.comm is not None:
            raise_if_any_failed(self.comm)
        self.close()

    def raise_left(self, exc):
        """Raise what this rank raises on leaving the fit with *exc* (left's
        error, from *exc*; exc itself where that is it)."""
        raised = self.left(exc)
        if raised is exc:
            raise exc
        raise raised from exc

    def close(self):
        """The fit's communicator freed (every rank ended the fit, or
        raised together)."""
        if self.comm is not None:
            self.comm.free()
            self.comm = None

    @classmethod
    def alone(cls, data):
        """The one rank of a fit of one process over *data* (a ShardedData)."""
        return cls(None, data.n, data.d, data.dtype)

    @property
    def size(self):
        return len(self.counts)

    def sum(self, *arrays, exact=False):
        """float64 sums over the ranks (rank order; identity on one rank);
        *exact*: sum_across's, for whole numbers that add in any order."""
        return sum_across(self.comm, *arrays, exact=exact)

    def run_failing_all(self, fn):
        """fn() on this rank; an exception raised by it here raises on every
        rank (a RankError naming this one), so none is left waiting: the
        others learn it in the collective they are in, whichever it is."""
        if self.comm is None:
            return fn()
        try:
            return fn()
        except BaseException as exc:   # noqa: BLE001 -- an interrupt must reach them too
            self.raise_left(exc)

    together = run_failing_all   # its former name (oclclust.mpi's public API)

    def gather(self, value):
        """Every rank's *value* (small Python objects), in rank order."""
        return [value] if self.comm is None else self.comm.allgather(value)

    def exchange(self, parts):
        """What every rank sends every other: ``parts[r]`` (a numpy array) goes
        to rank r; returns the arrays the ranks sent this one, in rank order
        (one Alltoallv of whole rows: each part of one dtype and one shape
        past its first axis on every rank)."""
        if self.comm is None:
            return [parts[0]]
        from mpi4py import MPI
        dtype, tail = parts[0].dtype, parts[0].shape[1:]
        width = int(np.prod(tail, dtype=np.int64)) * dtype.itemsize
        sent = np.array([len(part) for part in parts], np.int64)
        every = np.empty((self.size, self.size), np.int64)
        self.comm.Allgather(sent, every)
        got = every[:, self.rank]
        send = np.ascontiguousarray(np.concatenate(parts), dtype)
        recv = np.empty((int(got.sum()), *tail), dtype)
        row = MPI.BYTE.Create_contiguous(max(width, 1)).Commit()
        try:
            self.comm.Alltoallv(
                [send.view(np.uint8).reshape(-1), (sent, _displacements(sent)), row],
                [recv.view(np.uint8).reshape(-1), (got, _displacements(got)), row])
        finally:
            row.Free()
        return np.split(recv, np.cumsum(got)[:-1])

    def owner(self, index):
        """(rank, local row) of global row *index*."""
        rank = int(np.searchsorted(np.cumsum(self.counts), index, side="right"))
        return rank, int(index - self.counts[:rank].sum())

    def rows(self, data, indices):
        """Global rows *indices* of the data, float64, on every rank: each
        rank fills in the rows it owns (the others add zeros, exactly)."""
        out = np.zeros((len(indices), data.d), np.float64)
        indices = np.asarray(indices, np.int64).reshape(-1)
        ends = np.cumsum(self.counts)
        mine = np.flatnonzero(np.searchsorted(ends, indices, side="right") == self.rank)
        if len(mine):   # asked for at once (a Dask cluster's rows, thousands of k-means||'s)
            out[mine] = data.rows(indices[mine] - self.offset)
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


def _displacements(counts):
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)


# ------------------------------------------------------------- local ranks
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
