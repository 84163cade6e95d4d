"""devices.yaml: its schema, the registry of profile terms and their validation.

A profile term is a devices.yaml key whose value tunes a kernel.  The generic
ones (work-group size, memory budgets, register room) are declared here and
are DeviceProfile fields; every other term belongs to the pass that reads it
and is declared there, as a frozen dataclass of ``term`` fields registered by
``declare_terms``.  Importing ``oclclust.passes`` declares all of them (the
package imports every declaring module), so a profile is resolved with every
term known.  Nothing from a YAML file reaches a kernel without passing
``Term.check``: type, range or enumeration.
"""
import copy
import dataclasses
import functools
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import yaml

from .resources import shipped_profiles_path

MATCH_KEYS = {"vendor", "name", "platform", "driver", "type"}
DEVICE_TYPES = {"cpu", "gpu", "accelerator"}


class ProfileError(ValueError):
    """A devices.yaml file is malformed or holds an out-of-range value."""


class Term(NamedTuple):
    """A term's value: *kind* int or float within [lo, hi], or str, one of
    the choices *lo* (an enumeration; hi is None)."""
    kind: type
    lo: object
    hi: object = None

    def check(self, key, value, where):
        """*value* as the term's kind, or a ProfileError naming *where* and *key*."""
        if self.kind is str:
            if value not in self.lo:
                raise ProfileError(f"{where}: {key} must be one of {self.lo}, got {value!r}")
            return value
        numbers = (int, float) if self.kind is float else int
        if isinstance(value, bool) or not isinstance(value, numbers):
            raise ProfileError(f"{where}: {key} must be {self.kind.__name__}, got {value!r}")
        if not self.lo <= value <= self.hi:
            raise ProfileError(f"{where}: {key}={value!r} is outside [{self.lo}, {self.hi}]")
        return self.kind(value)


# The generic terms: DeviceProfile fields, read by passes of every kind.
GENERIC_TERMS = {
    "work_group_size": Term(int, 1, 4096),
    "groups_per_compute_unit": Term(int, 1, 256),   # persistent work-groups a unit
    "local_memory_fraction": Term(float, 0.0, 1.0),
    "private_floats": Term(int, 1, 65536),         # registers a work-item may hold
    "memory_fraction": Term(float, 0.001, 1.0),
}
# Every term by devices.yaml key: the generic ones, then those the passes declare.
PROFILE_TERMS = dict(GENERIC_TERMS)
# Keys of earlier releases, still read from devices.yaml files: old -> current.
OLD_NAMES = {}
_OWNERS = {}   # declared key -> the class declaring it


# ------------------------------------------------------------ declarations
def term(key, lo, hi=None, *, old_name=None):
    """A field of a pass's terms dataclass, read from the devices.yaml *key*:
    an int or float field takes values in [lo, hi]; a str field one of the
    choices *lo*.  *old_name*: the key it had before, still accepted."""
    return dataclasses.field(metadata={"profile_key": key, "range": (lo, hi),
                                       "old_name": old_name})


def declare_terms(cls):
    """Register the ``term`` fields of the frozen dataclass *cls* (a pass's
    profile terms); ``DeviceProfile.terms(cls)`` reads them back typed."""
    if not dataclasses.is_dataclass(cls) or not cls.__dataclass_params__.frozen:
        raise TypeError(f"{cls.__name__}: profile terms are a frozen dataclass")
    fields = dataclasses.fields(cls)
    for field in fields:
        key = field.metadata["profile_key"]
        if field.type not in (int, float, str):
            raise TypeError(f"{cls.__name__}.{field.name}: a term is an int, float or str")
        owner = _OWNERS.get(key)
        reloaded = owner is not None and _name(owner) == _name(cls)   # its module, again
        if key in GENERIC_TERMS or owner is not None and not reloaded:
            raise TypeError(f"{cls.__name__}: profile term {key!r} is declared already")
    for field in fields:
        key, old = field.metadata["profile_key"], field.metadata["old_name"]
        PROFILE_TERMS[key] = Term(field.type, *field.metadata["range"])
        _OWNERS[key] = cls
        if old is not None:
            OLD_NAMES[old] = key
    return cls


def _name(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


def current_key(key):
    """The current devices.yaml key of *key* (itself, or the term it was named before)."""
    key = OLD_NAMES.get(key, key)
    if key not in PROFILE_TERMS:
        raise KeyError(key)
    return key


def read_terms(values, cls):
    """The terms dataclass *cls*, filled from the resolved *values* (by key)."""
    if any(_OWNERS.get(f.metadata.get("profile_key")) is not cls
           for f in dataclasses.fields(cls)):
        raise TypeError(f"{cls.__name__} is not declared as profile terms (declare_terms)")
    return cls(**{f.name: values[f.metadata["profile_key"]] for f in dataclasses.fields(cls)})


class TermValues(Mapping):
    """A profile's resolved pass terms by devices.yaml key: read-only and
    hashable, as the DeviceProfile holding them is a key of plan caches."""

    def __init__(self, values=()):
        self._values = dict(values)
        self._hash = None   # read-only: hashed once (a profile keys caches every fit)

    def __getitem__(self, key):
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def __hash__(self):
        if self._hash is None:
            self._hash = hash(frozenset(self._values.items()))
        return self._hash

    def __reduce__(self):   # the values alone: a string's hash is another process's there
        return type(self), (self._values,)

    def __repr__(self):
        return f"TermValues({self._values!r})"


# ------------------------------------------------------------ devices.yaml
def check_terms(terms, where):
    """The validated terms of a mapping {key: value}, keys as written (a
    term's old name too); a term set under both names is an error."""
    checked, seen = {}, {}
    for key, value in terms.items():
        try:
            current = current_key(key)
        except KeyError:
            raise ProfileError(f"{where}: unknown profile term {key!r}") from None
        if current in seen:
            raise ProfileError(f"{where}: {current} is set twice (as {seen[current]!r} "
                               f"and {key!r})")
        seen[current] = key
        checked[key] = PROFILE_TERMS[current].check(key, value, where)
    return checked


def _check_entry(entry, where):
    if not isinstance(entry, dict):
        raise ProfileError(f"{where}: an entry must be a mapping, got {type(entry).__name__}")
    match = entry.get("match", {}) or {}
    if not isinstance(match, dict) or set(match) - MATCH_KEYS:
        raise ProfileError(f"{where}: 'match' takes only {sorted(MATCH_KEYS)}")
    if "type" in match and str(match["type"]).lower() not in DEVICE_TYPES:
        raise ProfileError(f"{where}: match type must be one of {sorted(DEVICE_TYPES)}")
    terms = check_terms({k: v for k, v in entry.items() if k != "match"}, where)
    return {k: str(v).lower() for k, v in match.items()}, terms


# libyaml's parser where PyYAML was built with it: the shipped file's parse
# was 0.10 s of a fresh process's first fit in pure Python (H200 host)
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_PROFILE_BYTES = 1 << 20   # a devices.yaml is a few KiB; more is not a profile


def _parse(text, path):
    """The YAML of *text*, bounded: a devices.yaml is a few KiB and needs no
    aliases, and nested aliases (a "billion laughs" file of a few hundred
    bytes) expand to gigabytes: its events are scanned first, nothing
    expanded."""
    try:
        for event in yaml.parse(text, Loader=SAFE_LOADER):
            if isinstance(event, yaml.AliasEvent):
                raise ProfileError(f"{path}: aliases (*{event.anchor}) are not allowed in "
                                   f"device profiles (line {event.start_mark.line + 1})")
        return yaml.load(text, Loader=SAFE_LOADER) or []
    except yaml.YAMLError as exc:
        raise ProfileError(f"cannot read device profiles {path}: {exc}") from exc


_LOADED = {}   # (path, its text, terms known, label tag) -> its validated entries


_TEXTS = {}    # path -> (its stat signature, its text): _text's
SETTLED_NS = 2 * 10 ** 9   # a file unchanged this long is not read again while its stat is


def _text(path):
    """The text of profile file *path*.  Read again unless its inode, size,
    modification and change times are those of the last read and its last
    change is SETTLED_NS old: a rewrite moves a time past that (a clock
    tick may hold two quick writes' times equal, never a rewrite's and a
    settled one's).  Every fit resolves the profiles: reading and hashing
    the shipped file's text took 0.1 ms, a small fit's 5%; the same text
    object keeps its hash."""
    key = str(path)
    try:
        st = os.stat(path)
        sig = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        known = _TEXTS.get(key)
        if (known is not None and known[0] == sig
                and time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > SETTLED_NS):
            return known[1]
        with open(path, "rb") as f:
            raw = f.read(MAX_PROFILE_BYTES + 1)
        text = raw.decode()
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"cannot read device profiles {path}: {exc}") from exc
    if len(raw) > MAX_PROFILE_BYTES:
        raise ProfileError(f"{path}: device profiles over {MAX_PROFILE_BYTES} bytes "
                           "are refused")
    _TEXTS[key] = (sig, text)
    return text


def _load(path, tag=""):
    """(key, validated entries: shared, not to be changed) of one file, each
    labelled *tag* + its file name + #index."""
    path = Path(path)
    text = _text(path)
    key = (str(path), text, len(PROFILE_TERMS), tag)
    if key not in _LOADED:
        data = _parse(text, path)
        if not isinstance(data, list):
            raise ProfileError(f"{path}: expected a list of entries")
        _LOADED[key] = [_check_entry(e, f"{path} entry {i}") + (f"{tag}{path.name}#{i}",)
                        for i, e in enumerate(data)]
    return key, _LOADED[key]


def load_profile_file(path):
    """Validated (match, terms, label) entries of one devices.yaml file, the
    terms keyed as the file writes them.  Parsed once per text: every fit
    resolves the profiles, and parsing YAML took most of a small fit."""
    return copy.deepcopy(_load(path)[1])


USER_TAG = "user:"   # the label of a user file's entries: "user:devices.yaml#0"


def user_profiles_path():
    """The user's devices.yaml, where ``oclclust tune`` writes:
    ``$XDG_CONFIG_HOME/oclclust/devices.yaml``, by default
    ``~/.config/oclclust/devices.yaml``."""
    return _user_path(os.environ.get("XDG_CONFIG_HOME"), os.environ.get("HOME"))


@functools.lru_cache(maxsize=16)
def _user_path(config, home):
    """user_profiles_path of these variables (*home*: Path.home()'s; the
    path made once, not every fit)."""
    return Path(config or Path.home() / ".config") / "oclclust" / "devices.yaml"


def profile_files():
    """[(path, label tag)] of the profile files read, in the order they are
    applied (a later entry's terms win): the shipped devices.yaml, the
    user's (user_profiles_path(), when it exists; its entries labelled
    "user:"), then $OCLCLUST_DEVICES_YAML (when set: it must exist).  So
    the variable overrides the user's file, which overrides the shipped one."""
    files = [(shipped_profiles_path(), "")]
    user = user_profiles_path()
    named = os.environ.get("OCLCLUST_DEVICES_YAML")
    if user.is_file() and not (named and _same_file(named, user)):
        files.append((user, USER_TAG))
    if named:
        files.append((Path(named), ""))
    return files


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def profile_sources():
    """(a key that changes when any profile file's text does, the entries of
    profile_files() in order): shared, read-only."""
    loaded = [_load(path, tag) for path, tag in profile_files()]
    return tuple(key for key, _ in loaded), [e for _, entries in loaded for e in entries]


def profile_entries():
    """The entries of every profile file read (profile_files()), in order."""
    return copy.deepcopy(profile_sources()[1])


def _matches(match, reported):
    for key, want in match.items():
        have = reported[key].lower()
        if (want != have) if key == "type" else (want not in have):
            return False
    return True


def resolve_terms(reported, entries):
    """(every term by current key, labels of the entries used): the entries
    matching the *reported* device, applied in order, later ones winning."""
    terms, used = {}, []
    for match, entry_terms, label in entries:
        if _matches(match, reported):
            terms.update((current_key(k), v) for k, v in entry_terms.items())
            used.append(label)
    missing = set(PROFILE_TERMS) - set(terms)
    if missing:
        raise ProfileError(f"no profile entry sets {sorted(missing)} for {reported['name']}")
    return {key: terms[key] for key in PROFILE_TERMS}, tuple(used)
