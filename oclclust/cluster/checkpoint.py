"""Checkpoints of a long fit (issue 37: HPC jobs are preempted and
time-limited): the iterative estimators' ``checkpoint`` and
``checkpoint_every`` parameters.

``checkpoint``: None (the default: none) or a file path.  The fit writes
its loop's state there every ``checkpoint_every``:

- an int N >= 1: every N iterations (EM iterations for GaussianMixture,
  mini-batch steps for MiniBatchKMeans);
- a float, or a string "<number>s" ("30s", "2.5s"), "<number>min" or
  "<number>h": at the first iteration's end at least that many seconds
  after the last write (or the fit's start).

A write is atomic: the state goes to a temporary file in the same folder,
is flushed and fsync'ed, then os.replace puts it in place (and the folder
is fsync'ed): a process killed mid-write leaves the last good checkpoint,
never a torn one.  Under MPI rank 0 writes (the state is every rank's).

A fit started with a path where a checkpoint is (every rank reads it)
resumes from it when it was written by the same estimator class, on data
of the same shape, dtype and fingerprint (a hash of every rank's rows and
weights, in rank order), with the same parameters (all but devices, comm,
verbose, checkpoint and checkpoint_every): it ends at the model of an
uninterrupted fit, bit for bit.  A checkpoint that does not match is
refused with a ValueError naming what differs (never overwritten: remove
it, or pass another path).  The file stays after the fit: started again,
the fit resumes at its end and returns the same model.

The file is an .npz archive read with ``allow_pickle=False``: one JSON
member (what the fit was, and the state's plain values) and the state's
arrays.  The estimators' loops call ``Checkpoint.step`` once an iteration
with a function that makes their state (called only when a write is due).
"""
import hashlib
import json
import numbers
import os
import re
import time
import zipfile
import zlib

import numpy as np

FORMAT = "oclclust-checkpoint"
VERSION = 1
META = "__checkpoint__"
ARRAY = "array:"     # the prefix of a state array's member
# parameters that say where or how a fit runs, not what it fits
NOT_MATCHED = ("devices", "comm", "verbose", "checkpoint", "checkpoint_every")
# the estimators' rules (cluster._base.check_params' forms)
CHECKPOINT_RULES = {
    "checkpoint": [None, str, os.PathLike],
    "checkpoint_every": [(numbers.Integral, 1, None), (numbers.Real, 0, None, "neither"), str],
}
_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0}
_EVERY = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(s|min|h)\s*")


def parse_every(value, name="estimator"):
    """("iterations", N) or ("seconds", S) of a ``checkpoint_every``."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return "iterations", int(value)
    if isinstance(value, str):
        match = _EVERY.fullmatch(value)
        seconds = float(match[1]) * _UNITS[match[2]] if match else 0.0
        if not seconds > 0 or not np.isfinite(seconds):
            raise ValueError(f"The 'checkpoint_every' parameter of {name} must be an int "
                             "(iterations), a float or a string like '30s', '5min', '1h' "
                             f"(seconds, > 0). Got {value!r} instead.")
        return "seconds", seconds
    if not np.isfinite(value):
        raise ValueError(f"The 'checkpoint_every' parameter of {name} must be finite. "
                         f"Got {value!r} instead.")
    return "seconds", float(value)


def _digest(*parts):
    """A hex hash of *parts*: bytes or buffers as they are, the rest as text."""
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(part if isinstance(part, (bytes, memoryview)) else str(part).encode())
    return h.hexdigest()


def _array_digest(a):
    """A hash of array *a*'s dtype, shape and values (its buffer, not a copy
    of it, where it is contiguous)."""
    a = np.ascontiguousarray(a)
    if a.dtype.kind == "O":
        return _digest(a.dtype.str, a.shape, repr(a.tolist()))
    return _digest(a.dtype.str, a.shape, memoryview(a.reshape(-1).view(np.uint8)))


def rows_fingerprint(X, sample_weight=None):
    """A hash of rows X as given (host, sparse, device or dask array: a dask
    array's name, which its graph fixes) and their weights."""
    if type(X).__module__.startswith("dask"):
        rows = _digest("dask", X.name, X.shape)
    elif hasattr(X, "indptr"):   # scipy.sparse CSR / CSC
        rows = _digest("sparse", X.format, X.shape, *(_array_digest(a) for a in
                                                      (X.data, X.indices, X.indptr)))
    elif hasattr(X, "get") and hasattr(X, "queue"):   # a pyopencl array
        rows = _array_digest(X.get())
    else:
        rows = _array_digest(np.asarray(X))
    weights = None if sample_weight is None else (
        _digest("dask", sample_weight.name) if type(sample_weight).__module__.startswith("dask")
        else _array_digest(np.asarray(sample_weight)))
    return _digest(rows, weights)


def _param_token(value):
    """A JSON value standing for parameter *value* (arrays and random
    states by their hash, callables by their name)."""
    if isinstance(value, np.random.RandomState):
        kind, keys, pos, has_gauss, cached = value.get_state(legacy=True)
        return "RandomState:" + _digest(_array_digest(keys), pos, has_gauss, cached)
    if isinstance(value, (list, tuple)):   # a list of arrays of other shapes too
        try:
            value = np.asarray(value)
        except ValueError:
            return "list:" + _digest(*(json.dumps(_param_token(v)) for v in value))
    if isinstance(value, np.ndarray):
        return "array:" + _array_digest(value)
    if callable(value) and not isinstance(value, type):
        return "callable:" + getattr(value, "__qualname__", repr(value))
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _plain(value):
    """numpy scalars as Python's, for json.dumps."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not a checkpoint value")


def write_atomically(path, write):
    """write(file) into a temporary file beside *path*, flushed and fsync'ed,
    then put in place with os.replace: *path* is the old file or the whole
    new one, whenever the process dies."""
    folder = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    try:   # the rename itself on disk (not every system can open a folder)
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class Checkpoint:
    """A fit's checkpoint (see the module): what it matches, the state it
    resumes from (``saved``: {name: array or plain value}, or None), and
    the writes of this fit (rank 0's)."""

    def __init__(self, estimator, fingerprint, n_samples, n_features, dtype, ranks=None):
        name = type(estimator).__name__
        self.path = os.fspath(estimator.checkpoint)
        self.unit, self.every = parse_every(estimator.checkpoint_every, name)
        self.identity = {
            "class": name, "n_samples": int(n_samples), "n_features": int(n_features),
            "dtype": np.dtype(dtype).name, "fingerprint": fingerprint,
            "params": {k: _param_token(v) for k, v in
                       sorted(estimator.get_params(deep=False).items())
                       if k not in NOT_MATCHED}}
        folder = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(folder):   # said before the fit, not at its first write
            raise ValueError(f"checkpoint {self.path}: its folder {folder} does not exist")
        self.writes = ranks is None or ranks.rank == 0
        self.steps, self.last = 0, time.monotonic()
        self.saved = self._read()
        if ranks is not None and ranks.size > 1:   # every rank read the same state
            seen = ranks.gather(None if self.saved is None else self.saved.get("__written__"))
            if len(set(seen)) > 1:
                raise ValueError(f"checkpoint {self.path}: the ranks read different files "
                                 f"({seen}): is {os.path.dirname(self.path) or '.'} shared "
                                 "by every rank?")

    @classmethod
    def of(cls, estimator, X, sample_weight, n_samples, n_features, dtype, ranks=None):
        """The Checkpoint of a fit of *estimator* on rows X (this rank's) of
        all ranks' *n_samples*, or None without ``checkpoint``."""
        if getattr(estimator, "checkpoint", None) is None:
            return None
        mine = rows_fingerprint(X, sample_weight)
        every = [mine] if ranks is None else ranks.gather(mine)
        return cls(estimator, _digest(*every), n_samples, n_features, dtype, ranks)

    # ------------------------------------------------------------- reading
    def _read(self):
        if not os.path.exists(self.path):
            return None
        meta, state = read(self.path)
        self._check_identity(meta.get("identity", {}))
        return state

    def _check_identity(self, theirs):
        mine = self.identity
        for key in ("class", "n_samples", "n_features", "dtype", "fingerprint"):
            if theirs.get(key) != mine[key]:
                what = "the data's fingerprint (other rows or weights)" \
                    if key == "fingerprint" else f"{key} {theirs.get(key)!r} != {mine[key]!r}"
                raise ValueError(f"checkpoint {self.path} was written by another fit: "
                                 f"{what}; remove it or pass another path")
        params = theirs.get("params", {})
        differ = sorted(k for k in set(params) | set(mine["params"])
                        if params.get(k) != mine["params"].get(k))
        if differ:
            raise ValueError(f"checkpoint {self.path} was written by a fit of other parameters "
                             f"({', '.join(differ)}); remove it or pass another path")

    # ------------------------------------------------------------- writing
    def due(self):
        """Whether this iteration's end writes (counted on every rank)."""
        self.steps += 1
        if self.unit == "iterations":
            return self.steps % self.every == 0
        return time.monotonic() - self.last >= self.every

    def step(self, state):
        """The end of an iteration: when a write is due, on rank 0, what
        calling *state* gives ({name: array or plain value}) is written."""
        if self.due() and self.writes:
            self.write(state())

    def write(self, state):
        arrays = {ARRAY + k: np.asarray(v) for k, v in state.items()
                  if isinstance(v, np.ndarray)}
        plain = {k: v for k, v in state.items() if not isinstance(v, np.ndarray)}
        meta = {"format": FORMAT, "version": VERSION, "identity": self.identity,
                "written": time.time(), "state": plain}
        text = np.array(json.dumps(meta, default=_plain))
        write_atomically(self.path, lambda fh: np.savez(fh, **{META: text}, **arrays))
        self.last = time.monotonic()


def read(path):
    """(metadata, state) of the checkpoint at *path*: the state's plain
    values and arrays by name (``__written__``: when it was written)."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            files = {k: npz[k] for k in npz.files}
        meta = json.loads(str(files.pop(META)))
        if meta.get("format") != FORMAT:
            raise ValueError("not an oclclust checkpoint")
        state = dict(meta["state"])
    except (OSError, ValueError, KeyError, EOFError, TypeError, zipfile.BadZipFile,
            zlib.error) as exc:
        raise ValueError(f"checkpoint {path}: not a readable oclclust checkpoint "
                         f"({exc}); remove it or pass another path") from None
    if meta.get("version") != VERSION:
        raise ValueError(f"checkpoint {path}: format version {meta.get('version')} "
                         f"(this oclclust reads {VERSION})")
    state.update({k[len(ARRAY):]: v for k, v in files.items() if k.startswith(ARRAY)})
    state["__written__"] = meta.get("written")
    return meta, state


def rng_state(rng):
    """A RandomState's stream as plain values (a checkpoint's, a model
    file's): [position, has_gauss, cached_gaussian, 624 MT19937 keys]."""
    _, keys, pos, has_gauss, cached = rng.get_state(legacy=True)
    return [int(pos), int(has_gauss), float(cached), *map(int, keys)]


def set_rng_state(rng, state):
    """*rng* (a RandomState) set to the stream rng_state gave as *state*; *rng*."""
    pos, has_gauss, cached, *keys = state
    rng.set_state(("MT19937", np.array(keys, np.uint32), int(pos), int(has_gauss),
                   float(cached)))
    return rng
