"""What a model file may hold, per estimator class.

For each class: the fitted attributes its ``fit`` sets (no other name is
accepted), the parameters the attributes depend on, and each one's kind --
a JSON value's type and range, an array's dtype, dimensions and value range.
Array dimensions are symbols: a parameter (``n_clusters``), an attribute
(``n_features_in_``), a class's derived symbol (``k_best``), or a free one
(``n_samples``) that the first array naming it binds.  A symbol is checked
before its value is used, so a file cannot smuggle a bad value in through a
dimension.  ``check`` raises SchemaError naming the first problem; model
files are checked on load (before anything is built) and on save (a file
save_model writes, load_model reads).
"""
import dataclasses
import numbers

import numpy as np

FREE = ("n_samples",)   # symbols bound by the first array that names them


class SchemaError(ValueError):
    """A model's parameters or attributes that its class's schema refuses."""


def _what(value):
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    if value is None:
        return "null"
    return f"{type(value).__name__} {value!r}"[:80]


class _Mismatch(str):
    """A value of the wrong type: "is VALUE, not WHAT" (AnyOf lists the WHATs)."""

    def __new__(cls, value, what):
        text = super().__new__(cls, f"is {_what(value)}, not {what}")
        text.what = what
        return text


def _bound(bound, symbols):
    return symbols[bound] if isinstance(bound, str) else bound


def _range_problem(value, low, high, below, symbols, verb="is"):
    low, high, below = (_bound(b, symbols) for b in (low, high, below))
    if low is not None and value < low:
        return f"{verb} {value}, below {low}"
    if high is not None and value > high:
        return f"{verb} {value}, above {high}"
    if below is not None and value >= below:
        return f"{verb} {value}, not below {below}"
    return None


def _first_problem(items, symbols):
    """The first problem of a container's (place, item, kind) items, placed."""
    for place, item, kind in items:
        problem = kind.problem(item, symbols)
        if problem:
            return f"[{place}] {problem}"
    return None


# ------------------------------------------------------------------ kinds
@dataclasses.dataclass(frozen=True)
class Int:
    """A JSON integer in [low, high] and below *below* (bounds: numbers or symbols)."""
    low: object = None
    high: object = None
    below: object = None

    def problem(self, value, symbols):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            return _Mismatch(value, "an integer")
        return _range_problem(value, self.low, self.high, self.below, symbols)


@dataclasses.dataclass(frozen=True)
class Number:
    """A JSON number (NaN and infinities included) at least *low*, above *above*."""
    low: object = None
    above: object = None

    def problem(self, value, symbols):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return _Mismatch(value, "a number")
        if self.above is not None and not value > self.above:
            return f"is {value}, not above {self.above}"
        return _range_problem(value, self.low, None, None, symbols)


@dataclasses.dataclass(frozen=True)
class Bool:
    def problem(self, value, symbols):
        return None if isinstance(value, bool) else _Mismatch(value, "true or false")


@dataclasses.dataclass(frozen=True)
class Text:
    def problem(self, value, symbols):
        return None if isinstance(value, str) else _Mismatch(value, "a string")


@dataclasses.dataclass(frozen=True)
class Choice:
    values: tuple

    def problem(self, value, symbols):
        if any(type(value) is type(v) and value == v for v in self.values):
            return None
        return _Mismatch(value, f"one of {list(self.values)}")


@dataclasses.dataclass(frozen=True)
class Plain:
    """Any JSON value (a record's field)."""

    def problem(self, value, symbols):
        return _Mismatch(value, "JSON") if isinstance(value, np.ndarray) else None


@dataclasses.dataclass(frozen=True)
class Record:
    """A JSON object of exactly *fields* {name: kind}."""
    fields: dict

    def problem(self, value, symbols):
        if not isinstance(value, dict):
            return _Mismatch(value, "an object")
        if set(value) != set(self.fields):
            return f"has the keys {sorted(value)}, not {sorted(self.fields)}"
        return _first_problem(((repr(key), value[key], kind) for key, kind in
                               self.fields.items()), symbols)


@dataclasses.dataclass(frozen=True)
class RelativePath:
    """A relative path of "/"-separated names, none of them "." or ".."."""

    def problem(self, value, symbols):
        if not isinstance(value, str):
            return _Mismatch(value, "a string")
        if not value or value.startswith("/") or "\\" in value or any(
                part in ("", ".", "..") for part in value.split("/")):
            return f"is {value!r}, not a relative path"
        return None


@dataclasses.dataclass(frozen=True)
class Optional:
    """null, or *kind*."""
    kind: object

    def problem(self, value, symbols):
        return None if value is None else self.kind.problem(value, symbols)


@dataclasses.dataclass(frozen=True)
class ListOf:
    """A JSON list of *kind* (of *length* items when given: a number or a symbol)."""
    kind: object
    length: object = None

    def problem(self, value, symbols):
        if not isinstance(value, list):
            return _Mismatch(value, "a list")
        length = _bound(self.length, symbols)
        if length is not None and len(value) != length:
            return f"has {len(value)} items, not {self.length}={length}"
        return _first_problem(((i, item, self.kind) for i, item in enumerate(value)), symbols)


@dataclasses.dataclass(frozen=True)
class Items:
    """A JSON list of fixed length, one kind per position."""
    kinds: tuple

    def problem(self, value, symbols):
        if not isinstance(value, list) or len(value) != len(self.kinds):
            return _Mismatch(value, f"a list of {len(self.kinds)} items")
        return _first_problem(((i, item, kind) for i, (item, kind) in
                               enumerate(zip(value, self.kinds))), symbols)


@dataclasses.dataclass(frozen=True)
class MapOf:
    """A JSON object of *kind* values."""
    kind: object

    def problem(self, value, symbols):
        if not isinstance(value, dict):
            return _Mismatch(value, "an object")
        return _first_problem(((repr(key), item, self.kind) for key, item in value.items()),
                              symbols)


@dataclasses.dataclass(frozen=True)
class AnyOf:
    kinds: tuple

    def problem(self, value, symbols):
        """None if a form fits; else the complaint of the form of the value's
        type, or (no form of its type) every form named."""
        problems = [k.problem(value, symbols) for k in self.kinds]
        if not all(problems):
            return None
        own = [p for p in problems if not isinstance(p, _Mismatch)]
        return own[0] if own else _Mismatch(value, " or ".join(p.what for p in problems))


@dataclasses.dataclass(frozen=True)
class Switch:
    """*cases*[value of the parameter *on*]: a kind that follows a parameter."""
    on: str
    cases: dict

    def problem(self, value, symbols):
        return self.cases[symbols[self.on]].problem(value, symbols)


# array dtypes: "float" the devices' (native float32 / float64), "int" any native
# integer, "real" any native integer or float (what a user may pass as an init)
DTYPES = {"float": lambda t: t in (np.dtype(np.float32), np.dtype(np.float64)),
          "int": lambda t: t.kind in "iu" and t.isnative,
          "real": lambda t: t.kind in "iuf" and t.isnative}


@dataclasses.dataclass(frozen=True)
class Array:
    """An array of *dtype* (a DTYPES key) and *shape* (numbers and symbols);
    float values finite (or NaN, where *nan* allows it: True, or a symbol
    naming the mask of the entries that may be NaN), values at least *low*
    and below *below*."""
    dtype: str
    shape: tuple
    low: object = None
    below: object = None
    nan: object = False

    def problem(self, value, symbols):
        if not isinstance(value, np.ndarray):
            return _Mismatch(value, "an array")
        if not DTYPES[self.dtype](value.dtype):
            return f"has dtype {value.dtype}, not {self.dtype}"
        want = []
        for dim in self.shape:
            size = _bound(dim, symbols)
            if size is None and dim in FREE and len(want) < value.ndim:
                size = symbols.bind(dim, value.shape[len(want)])
            want.append(size)
        if list(value.shape) != want:
            expected = ", ".join(f"{d}={w}" if isinstance(d, str) else str(d)
                                 for d, w in zip(self.shape, want))
            return f"has shape {value.shape}, expected ({expected})"
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            if not self.nan or np.isinf(value).any():
                return "holds NaN or infinity"
            nan = np.isnan(value)
            if isinstance(self.nan, str) and (nan & ~symbols[self.nan]).any():
                return f"holds NaN outside its {self.nan}"
            value = value[~nan]
        if value.size:
            lowest, highest = value.min().item(), value.max().item()
            return (_range_problem(lowest, self.low, None, None, symbols, "holds") or
                    _range_problem(highest, None, None, self.below, symbols, "holds"))
        return None


@dataclasses.dataclass(frozen=True)
class Schema:
    """One class's model: *params* and *attributes* {name: kind}, *derived*
    {symbol: function(symbols)}, and the attributes fit sets only sometimes."""
    params: dict
    attributes: dict
    derived: dict = dataclasses.field(default_factory=dict)
    optional: tuple = ()


class _Symbols:
    """One model's values looked up by name; a parameter or attribute is
    checked (once) before its value is used."""

    def __init__(self, schema, params, attributes):
        self.schema, self.values = schema, {**params, **attributes}
        self.kinds = {**schema.params, **schema.attributes}
        self.checked, self.bound = set(), {}

    def __getitem__(self, name):
        if name in self.schema.derived:
            return self.schema.derived[name](self)
        if name in FREE:
            return self.bound.get(name)
        self.check(name)
        return self.values.get(name)

    def bind(self, name, size):
        self.bound[name] = size
        return size

    def check(self, name):
        if name in self.checked:
            return
        self.checked.add(name)
        if name not in self.values:
            if name in self.schema.optional:
                return
            raise SchemaError(f"lacks {name}")
        problem = self.kinds[name].problem(self.values[name], self)
        if problem:
            raise SchemaError(f"{name} {problem}")


def check(name, params, attributes):
    """SchemaError unless *params* (every parameter's value) and the fitted
    *attributes* (JSON values and arrays) are a valid model of class *name*."""
    schema = SCHEMAS[name]
    unknown = sorted(set(attributes) - set(schema.attributes))
    if unknown:
        raise SchemaError(f"attribute(s) {unknown} are not among a {name}'s "
                          f"({', '.join(schema.attributes)})")
    symbols = _Symbols(schema, params, attributes)
    for key in (*schema.params, *schema.attributes):
        symbols.check(key)


# ------------------------------------------------------------ the classes
ROWS_PER_DEVICE = MapOf(Int(0))
HISTORY = ListOf(MapOf(Plain()))           # one record per iteration
INIT_NAMES = Choice(("k-means++", "k-means||", "random"))
LISTED = ListOf(Plain())                   # an init given as a list (checked by fit)
INIT = AnyOf((INIT_NAMES, Array("real", ("n_clusters", "n_features_in_")), LISTED))
# the kernels a fit ran (runtime.kernel_recorder.kernel_record)
KERNELS = ListOf(Record({"device": Text(), "pass": Text(), "variant": Text(), "spec": Text(),
                         "template": RelativePath(), "key": MapOf(Plain())}))


def _centres(k):
    return Array("float", (k, "n_features_in_"))


def _labels(k, n="n_samples"):
    return Array("int", (n,), low=0, below=k)


def _by_covariance(dtype, k):
    return Switch("covariance_type", {"full": Array(dtype, (k, "n_features_in_",
                                                            "n_features_in_")),
                                      "diag": Array(dtype, (k, "n_features_in_")),
                                      "tied": Array(dtype, ("n_features_in_",
                                                            "n_features_in_")),
                                      "spherical": Array(dtype, (k,))})


def _ensemble_ks(symbols):
    ks = symbols["n_clusters"]
    return [ks] * symbols["n_models"] if isinstance(ks, int) else [int(k) for k in ks]


def _common_k(symbols):
    """The models' K when all have the same (models_ is one array only then)."""
    ks = set(_ensemble_ks(symbols))
    return ks.pop() if len(ks) == 1 else None


SCHEMAS = {
    "KMeans": Schema(
        params={"n_clusters": Int(1), "init": INIT},
        attributes={"n_features_in_": Int(1), "cluster_centers_": _centres("n_clusters"),
                    "labels_": _labels("n_clusters"), "inertia_": Number(low=0),
                    "n_iter_": Int(1), "history_": Optional(HISTORY),
                    "devices_": ROWS_PER_DEVICE, "reshards_": Int(0)}),
    "MiniBatchKMeans": Schema(
        params={"n_clusters": Int(1), "init": INIT},
        attributes={"n_features_in_": Int(1), "cluster_centers_": _centres("n_clusters"),
                    "labels_": _labels("n_clusters"), "inertia_": Number(low=0),
                    "n_iter_": Int(0), "n_steps_": Int(0),
                    # what partial_fit goes on from: the centres' counts, the rows
                    # since the last reassignment, its random stream's state
                    "_counts": Array("float", ("n_clusters",), low=0),
                    "_n_since_last_reassign": Int(0), "_rng_state": ListOf(Plain())},
        # partial_fit with compute_labels off; files written before the counts
        optional=("labels_", "inertia_", "n_iter_", "_counts", "_n_since_last_reassign",
                  "_rng_state")),
    "FuzzyCMeans": Schema(
        params={"n_clusters": Int(1), "m": Number(above=1), "init": INIT},
        attributes={"n_features_in_": Int(1), "cluster_centers_": _centres("n_clusters"),
                    "u_": Array("float", ("n_samples", "n_clusters"), low=0),
                    "labels_": _labels("n_clusters"), "objective_": Number(low=0),
                    "n_iter_": Int(1), "history_": HISTORY, "devices_": ROWS_PER_DEVICE}),
    "EnsembleKMeans": Schema(
        params={"n_models": Int(1),
                "n_clusters": AnyOf((Int(1), ListOf(Int(1), "n_models"),
                                     Array("int", ("n_models",), low=1))),
                "init": AnyOf((INIT_NAMES, Array("real", ("n_models", "k_common",
                                                          "n_features_in_")), LISTED))},
        attributes={"n_features_in_": Int(1),
                    "models_": Array("float", ("n_models", "k_common", "n_features_in_")),
                    "inertias_": Array("float", ("n_models",), low=0),
                    "n_iter_": Array("int", ("n_models",), low=1),
                    "best_index_": Int(0, below="n_models"),
                    "cluster_centers_": _centres("k_best"), "inertia_": Number(low=0),
                    "labels_": _labels("k_best"),
                    "strategy_": MapOf(Items((Text(), Optional(Text())))),
                    "history_": HISTORY, "devices_": ROWS_PER_DEVICE},
        derived={"k_best": lambda s: _ensemble_ks(s)[s["best_index_"]],
                 "k_common": _common_k},
        optional=("models_",)),
    "GaussianMixture": Schema(
        params={"n_components": Int(1), "covariance_type": Choice(("full", "diag", "tied",
                                                                   "spherical")),
                "min_components": Optional(Int(1, high="n_components")),
                "weights_init": Optional(AnyOf((Array("real", ("n_components",)), LISTED))),
                "means_init": Optional(AnyOf((Array("real", ("n_components",
                                                             "n_features_in_")), LISTED))),
                "precisions_init": Optional(AnyOf((_by_covariance("real", "n_components"),
                                                   LISTED)))},
        attributes={"n_features_in_": Int(1), "n_components_": Int(1, high="n_components"),
                    "weights_": Array("float", ("n_components_",), low=0),
                    "means_": _centres("n_components_"),
                    "covariances_": _by_covariance("float", "n_components_"),
                    "precisions_cholesky_": _by_covariance("float", "n_components_"),
                    "precisions_": _by_covariance("float", "n_components_"),
                    "converged_": Bool(), "n_iter_": Int(0), "lower_bound_": Number(),
                    "lower_bounds_": ListOf(Number()),
                    "mdl_path_": Optional(ListOf(Items((Int(1), Number())))),
                    "history_": HISTORY, "devices_": ROWS_PER_DEVICE},
        optional=("lower_bounds_",)),   # files written before it was kept
    "AgglomerativeClustering": Schema(
        params={"n_clusters": Optional(Int(1))},
        attributes={"n_features_in_": Int(1), "n_leaves_": Int(2),
                    "n_connected_components_": Int(1),
                    "n_clusters_": Int(1, high="n_leaves_"),
                    "children_": Array("int", ("n_merges", 2), low=0, below="root"),
                    "distances_": Array("float", ("n_merges",)),
                    "labels_": _labels("n_clusters_", "n_leaves_")},
        derived={"n_merges": lambda s: s["n_leaves_"] - 1,
                 "root": lambda s: 2 * s["n_leaves_"] - 2},   # node ids below the root's
        optional=("distances_",)),   # kept with distance_threshold or compute_distances
    "DBSCAN": Schema(
        params={"min_samples": Int(1)},
        attributes={"n_features_in_": Int(1),
                    "labels_": Array("int", ("n_samples",), low=-1),
                    "core_sample_indices_": Array("int", ("n_core",), low=0,
                                                  below="n_samples"),
                    "components_": Array("float", ("n_core", "n_features_in_"))},
        derived={"n_core": lambda s: len(s["core_sample_indices_"])}),
    "HDBSCAN": Schema(
        params={"min_cluster_size": Int(2)},
        # labels -1 noise, -2 / -3 rows with inf / NaN (probability 0 / NaN), as in sklearn
        attributes={"n_features_in_": Int(1),
                    "labels_": Array("int", ("n_samples",), low=-3),
                    "probabilities_": Array("float", ("n_samples",), low=0, below=1.5,
                                            nan="missing_rows"),
                    "centroids_": Array("float", ("n_centers", "n_features_in_")),
                    "medoids_": Array("float", ("n_centers", "n_features_in_"))},
        derived={"n_centers": lambda s: int(max(s["labels_"].max(initial=-1), -1)) + 1,
                 "missing_rows": lambda s: s["labels_"] == -3},   # NaN: no probability
        optional=("centroids_", "medoids_")),   # kept with store_centers
}

# every fit records the kernels it ran (kernels_), the rows of its devices
# (devices_) and, fitted on named columns, their names (feature_names_in_, a
# JSON list; runtime/columns.py); files written before lack them (the
# one-device fits' devices_ too)
SCHEMAS = {name: dataclasses.replace(
               schema, attributes={"devices_": ROWS_PER_DEVICE, **schema.attributes,
                                   "kernels_": KERNELS,
                                   "feature_names_in_": ListOf(Text(), "n_features_in_")},
               optional=(*schema.optional, "kernels_", "feature_names_in_",
                         *(() if "devices_" in schema.attributes else ("devices_",))))
           for name, schema in SCHEMAS.items()}
