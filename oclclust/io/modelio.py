"""Model files: a fitted estimator as ``.npz`` arrays plus JSON metadata.

No pickle anywhere: the arrays load with ``allow_pickle=False`` and the
metadata is plain JSON naming the estimator class among oclclust's own, its
parameters and a format version.  Loading never executes code from the file,
and a file is checked whole against its class's schema (model_schema.py:
known attribute names only, their types, shapes that fit the parameters)
before the estimator is built: a damaged or hostile file is refused with a
ModelFileError naming the file and the problem.
"""
import json
import zipfile
import zlib

import numpy as np

from ..cluster.registry import ESTIMATORS, estimator_class
from .model_schema import SCHEMAS, SchemaError, check

FORMAT = "oclclust-model"
VERSION = 1
META = "__meta__"
PARAM = "param:"   # the prefix of a parameter's array in the archive
# the metadata's entries beside format, version and class, and their JSON types
ENTRIES = {"params": dict, "array_params": list, "attributes": dict, "arrays": list}
# parameters that describe where a fit ran (and its checkpoint), not the model: not saved
RUNTIME_PARAMS = ("devices", "comm", "verbose", "checkpoint", "checkpoint_every")
# what a damaged archive raises while it is read
UNREADABLE = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error)


# Python types of decoded JSON as JSON calls them
JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number",
              bool: "true/false", type(None): "null"}


class ModelFileError(ValueError):
    """A model file that is not one, is damaged, or is of a newer format."""


_SKIP = object()


def _numpy_scalar(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(type(value).__name__)


def _plain(value):
    """*value* as plain JSON data (numpy scalars made Python), or _SKIP."""
    try:
        return json.loads(json.dumps(value, default=_numpy_scalar, allow_nan=True))
    except (TypeError, ValueError):
        return _SKIP


def _saved_params(cls):
    """{name: default} of the parameters a model file holds for *cls*."""
    return {k: v for k, v in cls().get_params(deep=False).items() if k not in RUNTIME_PARAMS}


def save_model(estimator, path):
    """Write a fitted oclclust *estimator* to *path* (.npz)."""
    name = type(estimator).__name__
    if name not in ESTIMATORS or estimator_class(name) is not type(estimator):
        raise TypeError(f"cannot save {type(estimator).__module__}.{name}: model files "
                        f"hold oclclust's estimators ({', '.join(ESTIMATORS)})")
    # getattr, not vars: an attribute may be read lazily (FuzzyCMeans' u_, labels_)
    learned = {k: getattr(estimator, k) for k in SCHEMAS[name].attributes
               if hasattr(estimator, k)}
    if not learned:
        raise ValueError(f"this {name} is not fitted: nothing to save")
    arrays, scalars, params, array_params = {}, {}, {}, {}
    for key, value in learned.items():
        if isinstance(value, np.ndarray) and value.dtype == object:
            value = value.tolist()   # feature_names_in_: strings, a JSON list (no pickle)
        if isinstance(value, np.ndarray):
            arrays[key] = value
        elif _plain(value) is not _SKIP:
            scalars[key] = _plain(value)
    defaults = _saved_params(type(estimator))
    for key, value in estimator.get_params(deep=False).items():
        if key not in defaults:
            continue
        if isinstance(value, np.ndarray):
            array_params[key] = value
        elif _plain(value) is not _SKIP:
            params[key] = _plain(value)
    try:   # what is written, load_model reads
        check(name, {**defaults, **params, **array_params}, {**scalars, **arrays})
    except SchemaError as exc:
        raise ValueError(f"cannot save this {name}: {exc}") from None
    meta = {"format": FORMAT, "version": VERSION, "class": name, "params": params,
            "array_params": sorted(array_params), "attributes": scalars,
            "arrays": sorted(arrays)}
    with open(path, "wb") as fh:
        np.savez(fh, **{META: np.array(json.dumps(meta))}, **arrays,
                 **{PARAM + k: v for k, v in array_params.items()})


def _read(path):
    """{name: array} of every member of the archive at *path*."""
    try:
        npz = np.load(path, allow_pickle=False)
        if not isinstance(npz, np.lib.npyio.NpzFile):
            raise ValueError("a single array (.npy), not an .npz archive")
        with npz:
            return {k: npz[k] for k in npz.files}
    except UNREADABLE as exc:
        raise ModelFileError(f"{path}: not a readable .npz model file ({exc})") from exc


def _metadata(path, files):
    """The archive's metadata, its entries of the right JSON types."""
    text = files.pop(META, None)
    if text is None or text.dtype.kind != "U" or text.ndim != 0:
        raise ModelFileError(f"{path}: no oclclust metadata in this .npz")
    try:
        meta = json.loads(str(text))
    except (ValueError, RecursionError) as exc:
        raise ModelFileError(f"{path}: its metadata is not JSON ({exc})"[:200]) from None
    if not isinstance(meta, dict):
        raise ModelFileError(f"{path}: its metadata is a JSON {JSON_TYPES[type(meta)]}, "
                             "not an object")
    if meta.get("format") != FORMAT:
        raise ModelFileError(f"{path}: not an oclclust model file")
    version = meta.get("version")
    if type(version) is not int or version < 1:
        raise ModelFileError(f"{path}: no model format version ({version!r})")
    if version > VERSION:
        raise ModelFileError(f"{path}: model format version {version} is newer "
                             f"than this oclclust reads ({VERSION}): upgrade oclclust")
    if meta.get("class") not in ESTIMATORS:
        raise ModelFileError(f"{path}: unknown estimator class {meta.get('class')!r}")
    for key, kind in ENTRIES.items():
        if key not in meta:
            raise ModelFileError(f"{path}: its metadata lacks {key!r}")
        if not isinstance(meta[key], kind):
            raise ModelFileError(f"{path}: its metadata's {key!r} is a JSON "
                                 f"{JSON_TYPES[type(meta[key])]}, not an {JSON_TYPES[kind]}")
    for key in ("array_params", "arrays"):
        if not all(isinstance(k, str) for k in meta[key]):
            raise ModelFileError(f"{path}: its metadata's {key!r} is not a list of names")
    return meta


def _contents(path, meta, files, defaults):
    """(params, array params, attributes) of a model file, its names checked
    against the archive and the class's parameters."""
    named = meta["arrays"] + [PARAM + k for k in meta["array_params"]]
    absent = sorted(set(named) - set(files))
    if absent:
        raise ModelFileError(f"{path}: its metadata names arrays the archive lacks: {absent}")
    unnamed = sorted(set(files) - set(named))
    if unnamed:
        raise ModelFileError(f"{path}: holds arrays its metadata does not name: {unnamed}")
    params = meta["params"]
    array_params = {k: files[PARAM + k] for k in meta["array_params"]}
    unknown = sorted((set(params) | set(array_params)) - set(defaults))
    twice = (set(params) & set(array_params)) | (set(meta["attributes"]) & set(meta["arrays"]))
    if unknown:
        raise ModelFileError(f"{path}: parameter(s) {unknown} are not among a "
                             f"{meta['class']}'s saved ones ({', '.join(sorted(defaults))})")
    if twice:
        raise ModelFileError(f"{path}: {sorted(twice)} given twice")
    return params, array_params, {**meta["attributes"],
                                  **{k: files[k] for k in meta["arrays"]}}


def load_model(path):
    """The estimator saved in *path*, ready to predict."""
    files = _read(path)
    meta = _metadata(path, files)
    name = meta["class"]
    cls = estimator_class(name)
    defaults = _saved_params(cls)
    params, array_params, attributes = _contents(path, meta, files, defaults)
    try:
        check(name, {**defaults, **params, **array_params}, attributes)
    except SchemaError as exc:
        raise ModelFileError(f"{path}: not a valid {name} model: {exc}") from None
    estimator = cls(**params, **array_params)
    for key, value in attributes.items():
        if key == "feature_names_in_":   # scikit-learn's type: an object array
            value = np.asarray(value, dtype=object)
        setattr(estimator, key, value)
    return estimator
