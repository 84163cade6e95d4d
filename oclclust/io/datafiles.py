"""Data files for the command line and batch jobs: rows x features arrays.

``.npy`` (memory-mapped) and ``.npz``; ``.csv`` / ``.tsv`` (a header line is
detected: a first line that does not parse as numbers); ``.fvecs`` /
``.bvecs`` / ``.ivecs`` (the SIFT/GIST descriptor formats: each vector is an
int32 dimension followed by its values); ``.fcs`` flow-cytometry files
through ``flowio`` (columns are channel names, PnN or PnS) and ``.h5`` /
``.hdf5`` through ``h5py`` (the dataset path as *key*) -- both optional
extras (``pip install 'oclclust[formats]'``).  Under MPI (``comm``) each rank
gets its contiguous slice of the rows; for ``.npy`` and the vecs formats
only that slice is read.  A bad or truncated file raises DataFileError
naming the file and the problem.
"""
import csv
import os

import numpy as np

from ..runtime.extras import require
from .shards import rows_per_block, shard_range

VECS = {".fvecs": np.float32, ".ivecs": np.int32, ".bvecs": np.uint8}


class DataFileError(ValueError):
    """A data file that cannot be read as a samples x features array."""


def not_a_file(path):
    """Why *path*, which is no regular file, cannot be read (one line)."""
    return f"{path}: is a folder, not a file" if os.path.isdir(path) else f"{path}: no such file"


def load_data(path, columns=None, key=None, comm=None, block_rows=None):
    """This rank's rows of the data in *path* (all rows without *comm*).
    *columns*: indices or (for files with a header) names to keep;
    *key*: the array's name in an .npz file; *block_rows*: the estimator to
    fit (or its ``fit_block_rows``): the ranks' slices in whole blocks of
    its sums (io.shards.load_shard)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DataFileError(not_a_file(path))
    ext = os.path.splitext(path)[1].lower()
    header = None
    if ext == ".npy":
        X = _npy(path)
    elif ext == ".npz":
        X = _npz(path, key)
    elif ext in (".csv", ".tsv", ".txt"):
        X, header = _text(path, "\t" if ext == ".tsv" else ",")
    elif ext in VECS:
        X = _vecs(path, VECS[ext])
    elif ext == ".fcs":
        X, header = _fcs(path)
    elif ext in (".h5", ".hdf5"):
        X = _hdf5(path, key)
    else:
        raise DataFileError(f"{path}: unknown data format {ext!r} (known: .npy, .npz, "
                            ".csv, .tsv, .fvecs, .bvecs, .ivecs, .fcs, .h5, .hdf5)")
    if X.ndim != 2:
        raise DataFileError(f"{path}: expected samples x features (2-D), got shape {X.shape}")
    if columns is not None:
        X = X[:, _column_indices(path, columns, header, X.shape[1])]
    start, stop = shard_range(len(X), comm, rows_per_block(block_rows, X.shape[1], X.dtype))
    return np.asarray(X[start:stop])


MAGIC = {".npy": b"\x93NUMPY", ".npz": b"PK"}   # a NumPy array's header; a zip's


def _check_magic(path, ext):
    """DataFileError where *path* does not begin as a file of *ext* does:
    numpy's own error for it (a pickle refused) would mislead."""
    with open(path, "rb") as fh:
        head = fh.read(512)
    if head.startswith(MAGIC[ext]):
        return
    try:
        text = b"\0" not in head and bool(head.decode("utf-8"))
    except UnicodeDecodeError:   # (a character cut at byte 512 reads as binary: no matter)
        text = False
    what = ("the file is empty" if not head else
            "it holds text: name a text file .csv, .tsv or .txt" if text else
            f"it has no {ext} header")
    raise DataFileError(f"{path}: not a {ext} file ({what})")


def _npy(path):
    _check_magic(path, ".npy")
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DataFileError(f"{path}: not a valid .npy file ({exc})") from exc


def _npz(path, key):
    _check_magic(path, ".npz")
    try:
        with np.load(path, allow_pickle=False) as npz:
            names = list(npz.files)
            if key is None:
                if len(names) != 1:
                    raise DataFileError(f"{path}: holds {len(names)} arrays {names}: "
                                        "name one (--key)")
                key = names[0]
            if key not in names:
                raise DataFileError(f"{path}: no array {key!r} (has {names})")
            return npz[key]
    except (ValueError, OSError, EOFError) as exc:
        if isinstance(exc, DataFileError):
            raise
        raise DataFileError(f"{path}: not a valid .npz file ({exc})") from exc


def column_names(path, columns=None, key=None):
    """The names of the columns ``load_data(path, columns, key)`` keeps, where
    the file names them (a .csv / .tsv header, an FCS file's channels), else
    None.  A model fitted on them keeps them (``feature_names_in_``): pass
    them back as *columns* to read the same columns of a file for predict."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DataFileError(not_a_file(path))
    ext = os.path.splitext(path)[1].lower()
    if ext in (".csv", ".tsv", ".txt"):
        with open(path, newline="") as fh:
            first = next((r for r in csv.reader(fh, delimiter="\t" if ext == ".tsv" else ",")
                          if r and any(c.strip() for c in r)), None)
        header = _header(first)
    elif ext == ".fcs":
        header = _fcs(path)[1]
    else:
        return None
    if header is None:
        return None
    return [header[i] for i in (_column_indices(path, columns, header, len(header))
                                if columns is not None else range(len(header)))]


def _header(row):
    """The names in a text file's first *row*, or None where it holds numbers."""
    if row is None:
        return None
    try:
        [float(c) for c in row]
    except ValueError:
        return [c.strip() for c in row]
    return None


def _text(path, delimiter):
    with open(path, newline="") as fh:
        rows = [r for r in csv.reader(fh, delimiter=delimiter) if r and any(c.strip() for c in r)]
    if not rows:
        raise DataFileError(f"{path}: the file is empty")
    header = _header(rows[0])
    if header is not None:
        rows = rows[1:]
    if not rows:
        raise DataFileError(f"{path}: a header but no data rows")
    width = len(header) if header else len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != width:
            raise DataFileError(f"{path}: line {i + 1 + (header is not None)} has {len(row)} "
                                f"fields, expected {width}")
    try:
        return np.array(rows, dtype=np.float64), header
    except ValueError as exc:
        raise DataFileError(f"{path}: a value is not a number ({exc})") from exc


def _vecs(path, dtype):
    """Records of (int32 d, d values); all of one d (the SIFT/GIST layout)."""
    size = os.path.getsize(path)
    if size < 4:
        raise DataFileError(f"{path}: the file is empty or truncated")
    d = int(np.fromfile(path, dtype="<i4", count=1)[0])
    itemsize = np.dtype(dtype).itemsize
    record = 4 + d * itemsize
    if d <= 0 or size % record:
        raise DataFileError(f"{path}: truncated or not a {os.path.splitext(path)[1]} file "
                            f"(first dimension {d}, {size} bytes is no whole number of "
                            f"{record}-byte records)")
    raw = np.memmap(path, dtype=np.uint8, mode="r").reshape(-1, record)
    dims = raw[:, :4].view("<i4").ravel()
    if (dims != d).any():
        raise DataFileError(f"{path}: record {int(np.flatnonzero(dims != d)[0])} has "
                            f"dimension {int(dims[dims != d][0])}, the first has {d}")
    return raw[:, 4:].view(np.dtype(dtype).newbyteorder("<"))


def _optional(module, path):
    return require(module, f"reading {os.path.basename(path)}")


def _fcs(path):
    """Events x channels; channel names (PnN, or PnS where given) as header."""
    flowio = _optional("flowio", path)
    try:
        fcs = flowio.FlowData(path)
        X = fcs.as_array()
    except Exception as exc:   # noqa: BLE001 -- flowio raises many kinds
        raise DataFileError(f"{path}: not a readable FCS file ({exc})") from exc
    return X, list(fcs.pnn_labels)


def _hdf5(path, key):
    h5py = _optional("h5py", path)
    try:
        with h5py.File(path, "r") as fh:
            # every dataset's path, those inside groups too ("group/sub/data")
            names = []
            fh.visititems(lambda name, obj: names.append(name)
                          if isinstance(obj, h5py.Dataset) else None)
            if key is None:
                if len(names) != 1:
                    raise DataFileError(f"{path}: holds datasets {names}: name one (--key)")
                key = names[0]
            if key.strip("/") not in names:
                raise DataFileError(f"{path}: no dataset {key!r} (has {names})")
            return fh[key][()]
    except OSError as exc:
        raise DataFileError(f"{path}: not a readable HDF5 file ({exc})") from exc


def _column_indices(path, columns, header, width):
    out = []
    for c in columns:
        if isinstance(c, str) and not c.lstrip("-").isdigit():
            if header is None or c not in header:
                raise DataFileError(f"{path}: no column named {c!r}"
                                    + (f" (columns: {header})" if header else
                                       " (the file has no header)"))
            out.append(header.index(c))
        else:
            i = int(c)
            if not -width <= i < width:
                raise DataFileError(f"{path}: column {i} out of range ({width} columns)")
            out.append(i % width)
    return out
