"""Input and parameter validation with scikit-learn's rules and messages."""
import numbers
import sys

import numpy as np
import pyopencl.array as cla


class NotFittedError(ValueError, AttributeError):
    """Raised when a method needs a fitted estimator (as scikit-learn's)."""


_OWN_NOT_FITTED = NotFittedError
del NotFittedError   # the module's is chosen on first use (__getattr__)


def __getattr__(name):
    # NotFittedError: scikit-learn's where it is installed, one exception type
    # with its, so that its callers catch ours; looked up on first use, for
    # importing scikit-learn (its scipy.stats) is most of a second that
    # `import oclclust` need not pay (the estimators' modules import it)
    if name == "NotFittedError":
        try:
            from sklearn.exceptions import NotFittedError
        except ImportError:
            NotFittedError = _OWN_NOT_FITTED
        globals()["NotFittedError"] = NotFittedError
        return NotFittedError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_params(estimator, rules):
    """Check estimator parameters against *rules*: name -> list of allowed
    values, types, ``callable`` (any callable), or (type, low, high)
    intervals, closed, or with a fourth item which ends are closed (as
    scikit-learn's Interval: "both", "left", "right", "neither")."""
    for name, allowed in rules.items():
        value = getattr(estimator, name)
        for rule in allowed:
            if isinstance(rule, tuple):
                kind, lo, hi, closed = (*rule, "both")[:4]
                if (isinstance(value, kind) and not isinstance(value, bool)
                        and (lo is None or value > lo
                             or (value == lo and closed in ("both", "left")))
                        and (hi is None or value < hi
                             or (value == hi and closed in ("both", "right")))):
                    break
            elif isinstance(rule, type):
                if isinstance(value, rule):
                    break
            elif rule is callable:   # a function (a callable init or metric)
                if callable(value) and not isinstance(value, type):
                    break
            elif isinstance(value, str) and value == rule:
                break
            elif rule is None and value is None:
                break
        else:
            raise ValueError(f"The {name!r} parameter of {type(estimator).__name__} must be "
                             f"one of {_describe(allowed)}. Got {value!r} instead.")


def _describe(allowed):
    parts = []
    for rule in allowed:
        if isinstance(rule, tuple):
            kind, lo, hi, closed = (*rule, "both")[:4]
            left = "[" if closed in ("both", "left") else "("
            right = "]" if closed in ("both", "right") else ")"
            parts.append(f"{kind.__name__} in {left}{lo}, {hi}{right}")
        elif isinstance(rule, type):
            parts.append(f"an instance of {rule.__name__}")
        elif rule is callable:
            parts.append("a callable")
        else:
            parts.append(repr(rule))
    return ", ".join(parts)


# 2-byte float types host rows may hold, by numpy's name for them (bfloat16:
# ml_dtypes'): kept at 2 bytes a value on the devices, computed in float32
PACKED_FLOATS = ("float16", "bfloat16")


def packed_type(dtype):
    """The 2-byte float type's name of *dtype*, or None."""
    name = np.dtype(dtype).name
    return name if name in PACKED_FLOATS else None


def check_data(X, estimator="estimator", min_samples=1):
    """X as a numeric 2-D host array (any float/int dtype) or a device array."""
    if isinstance(X, cla.Array):
        if X.queue is None:
            raise ValueError("a pyopencl array input needs a queue: pass array.with_queue(q)")
        if X.ndim != 2:
            raise ValueError(f"Expected 2D array, got {X.ndim}D pyopencl array instead.")
        if not X.flags.c_contiguous:
            raise ValueError("a pyopencl array input must be C-contiguous")
    else:
        if hasattr(X, "toarray") or type(X).__module__.startswith("scipy.sparse"):
            raise TypeError(f"{estimator} does not accept sparse data: pass a dense array "
                            "(X.toarray()).")
        X = np.asarray(X)
        if np.iscomplexobj(X):
            raise ValueError("Complex data not supported")
        if X.dtype.kind not in "fiub" and packed_type(X.dtype) is None:
            try:   # a TypeError (a dict among the numbers, say) stays one, as in sklearn
                X = X.astype(np.float64)
            except ValueError as exc:
                raise ValueError(f"could not convert input to numbers: {exc}") from exc
        if X.ndim != 2:
            raise ValueError(f"Expected 2D array, got {X.ndim}D array instead. Reshape your "
                             "data either using array.reshape(-1, 1) if your data has a single "
                             "feature or array.reshape(1, -1) if it contains a single sample.")
    n, d = X.shape
    if n < min_samples:
        raise ValueError(f"Found array with {n} sample(s) (shape={tuple(X.shape)}) while a "
                         f"minimum of {min_samples} is required by {estimator}.")
    if d < 1:
        raise ValueError(f"Found array with 0 feature(s) (shape={tuple(X.shape)}) while a "
                         f"minimum of 1 is required by {estimator}.")
    return X


def as_dtype(X, dtype):
    """A device array in *dtype*, converted on its device; host rows as they
    are (a memmap stays one, unread): they are converted a piece at a time
    where they are copied to a device (runtime.transfer), never whole."""
    if isinstance(X, cla.Array):
        return X if X.dtype == dtype else X.astype(dtype)
    return X


def check_sample_weight(sample_weight, n, dtype, signed=False):
    """Host weights of length n (None stays None: unit weights); *signed*:
    any real weights (DBSCAN's: a negative weight keeps a neighbour from
    being core, as scikit-learn allows)."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, numbers.Number):
        return np.full(n, sample_weight, dtype=dtype)
    w = np.asarray(sample_weight)
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(f"sample_weight.shape == {w.shape}, expected ({n},)!")
    if np.iscomplexobj(w):   # astype would drop the imaginary parts with a warning
        raise ValueError("Complex data not supported: sample_weight must be real numbers.")
    try:
        w = w.astype(dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"sample_weight must be numbers: {exc}") from None
    if not np.isfinite(w).all():
        raise ValueError("Input sample_weight contains NaN or infinity.")
    if not signed and (w < 0).any():
        raise ValueError("Negative values in data passed to `sample_weight`")
    if (w.sum() <= 0) if not signed else not w.any():
        raise ValueError("Sample weights must contain at least one non-zero number.")
    return w


def check_random_state(seed):
    if seed is None or seed is np.random:
        return np.random.mtrand._rand
    if isinstance(seed, numbers.Integral):
        return np.random.RandomState(seed)
    if isinstance(seed, np.random.RandomState):
        return seed
    raise ValueError(f"{seed!r} cannot be used to seed a numpy.random.RandomState instance")


# raw outputs of a bit generator that one uniform double takes (numpy's next_double)
_RAWS_PER_DOUBLE = {"MT19937": 2, "PCG64": 1, "PCG64DXSM": 1, "Philox": 1, "SFC64": 1}


def skip_uniform(rng, values, block=1 << 20):
    """Move the RandomState *rng* past *values* uniform doubles without
    drawing them (another rank's or chunk's): numpy's PCG64 jumps there
    (advance), the others run their raw stream on without output; an
    unknown bit generator draws and drops them, *block* values at a time."""
    values = int(values)
    if values <= 0:
        return
    state = rng.get_state(legacy=False)
    kind = state["bit_generator"]
    if kind not in _RAWS_PER_DOUBLE:
        for start in range(0, values, block):
            rng.uniform(size=min(block, values - start))
        return
    bits = getattr(np.random, kind)()
    bits.state = state
    if kind.startswith("PCG64"):
        bits.advance(values)
    else:
        bits.random_raw(values * _RAWS_PER_DOUBLE[kind], output=False)
    # a double never takes the buffered 32 bits: the stream's own stay
    rng.set_state({**state, **{key: value for key, value in bits.state.items()
                               if key not in ("has_uint32", "uinteger")}})


def is_sparse(X):
    """Whether X is a scipy.sparse matrix or array (without importing scipy:
    a process that never imported it holds none)."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(X)


def checked_csr(X, dtype, name, n_features=None, unit=False):
    """X validated as scikit-learn validates sparse input, as canonical CSR
    (float32 stays float32, other types become float64; a copy); *unit*:
    each row scaled to unit length (spherical k-means; a row of norm 0
    stays 0, as cluster/spherical.py's)."""
    if X.ndim != 2:
        raise ValueError(f"Expected 2D input, got {X.ndim}D sparse input instead.")
    n, d = X.shape
    if n < 1 or d < 1:
        raise ValueError(f"Found array with {n} sample(s) and {d} feature(s) (shape={X.shape}) "
                         f"while a minimum of 1 is required by {name}.")
    if n_features is not None and d != n_features:
        raise ValueError(f"X has {d} features, but {name} is expecting {n_features} features "
                         "as input.")
    if np.iscomplexobj(X):
        raise ValueError("Complex data not supported")
    want = np.dtype(dtype) if dtype is not None else (
        np.dtype(np.float32) if X.dtype == np.float32 else np.dtype(np.float64))
    if want not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {want}")
    X = X.tocsr().astype(want, copy=True)   # any format (dok, lil, coo ...) as CSR
    X.sum_duplicates()
    X.sort_indices()
    if not np.isfinite(X.data).all():
        raise ValueError("Input X contains NaN or infinity.")
    if unit:
        wide = X.data.astype(np.float64)
        norms = np.sqrt(np.add.reduceat(wide * wide, X.indptr[:-1]) if X.nnz else
                        np.zeros(n))
        norms[np.diff(X.indptr) == 0] = 1.0   # reduceat's value for an empty row is not 0
        X.data = (wide / np.repeat(np.where(norms > 0, norms, 1.0),
                                   np.diff(X.indptr))).astype(X.dtype)
    return X


def nonfinite_error(dtype):
    """The error of rows whose pass gave non-finite distances: a NaN or
    infinity among them, or values whose squares overflow *dtype* (fit,
    predict, score and transform alike)."""
    return ValueError("Input X contains NaN or infinity (or values whose squares overflow "
                      f"{np.dtype(dtype).name}).")


def all_finite(X, block=1 << 20):
    """np.isfinite(X).all(), a block of rows at a time (no n x d temporary)."""
    return all(np.isfinite(X[start:start + block]).all() for start in range(0, len(X), block))
