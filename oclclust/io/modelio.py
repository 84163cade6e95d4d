"""Model files: a fitted estimator as ``.npz`` arrays plus JSON metadata.

No pickle anywhere: the arrays load with ``allow_pickle=False`` and the
metadata is plain JSON naming the estimator class among oclclust's own, its
parameters and a format version.  Loading never executes code from the file.
"""
import json

import numpy as np

from ..cluster.registry import ESTIMATORS, estimator_class

FORMAT = "oclclust-model"
VERSION = 1
META = "__meta__"

# estimator classes a model file may name (module, class): nothing else is built
# parameters that describe where a fit ran, not the model: not saved
RUNTIME_PARAMS = ("devices", "comm", "verbose")


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


def save_model(estimator, path):
    """Write a fitted *estimator* to *path* (.npz)."""
    name = type(estimator).__name__
    if name not in ESTIMATORS:
        raise TypeError(f"cannot save a {name}: not an oclclust estimator")
    learned = {k: v for k, v in vars(estimator).items()
               if k.endswith("_") and not k.startswith("_")}
    if not learned:
        raise ValueError(f"this {name} is not fitted: nothing to save")
    arrays, scalars, params, array_params = {}, {}, {}, []
    for key, value in learned.items():
        if isinstance(value, np.ndarray) and value.dtype != object:
            arrays[key] = value
        elif _plain(value) is not _SKIP:
            scalars[key] = _plain(value)
    for key, value in estimator.get_params(deep=False).items():
        if key in RUNTIME_PARAMS:
            continue
        if isinstance(value, np.ndarray):
            arrays[f"param:{key}"] = value
            array_params.append(key)
        elif _plain(value) is not _SKIP:
            params[key] = _plain(value)
    meta = {"format": FORMAT, "version": VERSION, "class": name, "params": params,
            "array_params": array_params, "attributes": scalars,
            "arrays": sorted(k for k in arrays if not k.startswith("param:"))}
    with open(path, "wb") as fh:
        np.savez(fh, **{META: np.array(json.dumps(meta))}, **arrays)


def load_model(path):
    """The estimator saved in *path*, ready to predict."""
    try:
        npz = np.load(path, allow_pickle=False)
        if not isinstance(npz, np.lib.npyio.NpzFile):
            raise ValueError("a single array (.npy), not an .npz archive")
        with npz:
            files = {k: npz[k] for k in npz.files}
    except (OSError, ValueError, EOFError) as exc:
        raise ModelFileError(f"{path}: not a readable .npz model file ({exc})") from exc
    try:
        meta = json.loads(str(files.pop(META)))
    except (KeyError, ValueError) as exc:
        raise ModelFileError(f"{path}: no oclclust metadata in this .npz") from exc
    if meta.get("format") != FORMAT:
        raise ModelFileError(f"{path}: not an oclclust model file")
    if not isinstance(meta.get("version"), int) or meta["version"] > VERSION:
        raise ModelFileError(f"{path}: model format version {meta.get('version')} is newer "
                             f"than this oclclust reads ({VERSION}): upgrade oclclust")
    name = meta.get("class")
    if name not in ESTIMATORS:
        raise ModelFileError(f"{path}: unknown estimator class {name!r}")
    cls = estimator_class(name)
    params = dict(meta["params"])
    for key in meta.get("array_params", []):
        params[key] = files.pop(f"param:{key}")
    try:
        estimator = cls(**params)
    except TypeError as exc:
        raise ModelFileError(f"{path}: parameters do not fit {name}: {exc}") from exc
    for key, value in meta["attributes"].items():
        setattr(estimator, key, value)
    for key in meta["arrays"]:
        setattr(estimator, key, files[key])
    return estimator
