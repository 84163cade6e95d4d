"""devices.yaml: its schema, the validation of every value, the shipped and
the user's files, and the terms the passes declare."""
import dataclasses
import time

import pytest

import oclclust as oc
from oclclust.passes.cmeans import CMeansTerms
from oclclust.passes.distance_tile import TileTerms
from oclclust.passes.ensemble import EnsembleTerms
from oclclust.passes.gmm_specs import GmmTerms
from oclclust.passes.kdtree import KdTreeTerms
from oclclust.passes.linkage import LinkageTerms
from oclclust.passes.linkage_rows import WardRowsTerms
from oclclust.passes.lloyd_blocked import BlockedTerms
from oclclust.passes.lloyd import LloydTerms
from oclclust.passes.lloyd_gemm import SumsTerms
from oclclust.passes.lloyd_update_specs import UpdateTerms
from oclclust.passes.mst import MstTerms
from oclclust.passes.pass_rates import PassRates
from oclclust.runtime import profiles as pf
from oclclust.runtime.profiles import PROFILE_TERMS, ProfileError

NUMERIC_TERMS = [t for t, (kind, _, _) in PROFILE_TERMS.items() if kind in (int, float)]


# ------------------------------------------------------------- devices.yaml
def write(tmp_path, text, name="profiles.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_shipped_file_loads():
    entries = pf.load_profile_file(pf.shipped_profiles_path())
    match, terms, label = entries[0]
    assert match == {} and set(terms) == set(PROFILE_TERMS) and label == "devices.yaml#0"


BAD_FILES = {
    "unknown term": ("- {match: {}, work_group_sise: 8}", "unknown profile term 'work_group_sise'"),
    "string for int": ("- {work_group_size: '16'}", "work_group_size must be int"),
    "float for int": ("- {work_group_size: 16.5}", "work_group_size must be int"),
    "bool for int": ("- {work_group_size: true}", "work_group_size must be int"),
    "list for float": ("- {memory_fraction: [0.5]}", "memory_fraction must be float"),
    "too small": ("- {work_group_size: 0}", r"work_group_size=0 is outside \[1, 4096\]"),
    "too large": ("- {local_memory_fraction: 1.5}", r"local_memory_fraction=1.5 is outside"),
    "negative": ("- {centroid_tile: -4}", "centroid_tile=-4 is outside"),
    "bad variant": ("- {lloyd_variant: fastest}", "lloyd_variant must be one of"),
    "bad match key": ("- {match: {colour: red}, work_group_size: 8}", "'match' takes only"),
    "match not a mapping": ("- {match: [cpu], work_group_size: 8}", "'match' takes only"),
    "bad device type": ("- {match: {type: tpu}, work_group_size: 8}", "match type must be"),
    "entry not a mapping": ("- work_group_size", "an entry must be a mapping"),
    "not a list": ("work_group_size: 8", "expected a list of entries"),
    "malformed": ("- {match: {type: cpu}\n- [", "cannot read device profiles"),
    "unsafe tag": ("- !!python/object/apply:os.system ['true']", "cannot read device profiles"),
}


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("case", BAD_FILES)
def test_bad_profile_file(tmp_path, case):
    text, match = BAD_FILES[case]
    path = write(tmp_path, text)
    with pytest.raises(ProfileError, match=match) as info:
        pf.load_profile_file(path)
    assert str(path) in str(info.value)   # the error names the file


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("term", NUMERIC_TERMS)
def test_every_numeric_term_is_range_checked(tmp_path, term):
    kind, lo, hi = PROFILE_TERMS[term]
    for value in (lo - 1, hi * 2):
        with pytest.raises(ProfileError, match=f"{term}=.* is outside"):
            pf.load_profile_file(write(tmp_path, f"- {{{term}: {kind(value)!r}}}"))
    pf.load_profile_file(write(tmp_path, f"- {{{term}: {kind(hi)!r}}}"))   # bounds are closed


def test_missing_file_is_a_profile_error(tmp_path):
    with pytest.raises(ProfileError, match="nope.yaml"):
        pf.load_profile_file(tmp_path / "nope.yaml")


def test_empty_file_has_no_entries(tmp_path):
    assert pf.load_profile_file(write(tmp_path, "# nothing\n")) == []


def test_an_unset_term_is_an_error():
    reported = {"name": "x", "vendor": "v", "platform": "p", "driver": "d", "type": "cpu"}
    entries = [({}, {"work_group_size": 8}, "only.yaml#0")]
    with pytest.raises(ProfileError, match="no profile entry sets .*centroid_tile"):
        pf.resolve_terms(reported, entries)


def test_user_file_overrides_the_shipped_one(tmp_path, monkeypatch, profile):
    path = write(tmp_path, f"""
- match: {{platform: {profile.platform.lower()!r}, type: {profile.type}}}
  work_group_size: 8
  memory_fraction: 0.25
- match: {{vendor: no such vendor}}
  work_group_size: 4
""", name="mine.yaml")
    monkeypatch.setenv("OCLCLUST_DEVICES_YAML", str(path))
    mine = [p for p in oc.list_devices() if p.key == profile.key][0]
    assert mine.work_group_size == 8 and mine.memory_fraction == 0.25
    assert mine.profile_entries[-1] == "mine.yaml#0"
    assert "mine.yaml#1" not in mine.profile_entries
    assert mine.term("centroid_tile") == profile.term("centroid_tile")   # the rest as shipped
    for p in oc.list_devices():   # match values are case-insensitive substrings
        applies = profile.platform.lower() in p.platform.lower() and p.type == profile.type
        assert ("mine.yaml#0" in p.profile_entries) == applies


def user_config(tmp_path, monkeypatch, text):
    """The user's devices.yaml (in a config folder of tmp_path's) holding *text*."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("OCLCLUST_DEVICES_YAML", raising=False)
    path = tmp_path / "config" / "oclclust" / "devices.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def test_the_users_devices_yaml_is_read_by_default(tmp_path, monkeypatch, profile):
    """The user's file (where ``oclclust tune`` writes) is applied after the
    shipped one without any variable set; its entries are labelled as the
    user's, not as the shipped file's."""
    path = user_config(tmp_path, monkeypatch, f"""
- match: {{platform: {profile.platform.lower()!r}}}
  work_group_size: 8
""")
    assert pf.user_profiles_path() == path
    assert [(p, tag) for p, tag in pf.profile_files()] == [(pf.shipped_profiles_path(), ""),
                                                           (path, "user:")]
    mine = next(p for p in oc.list_devices() if p.key == profile.key)
    assert mine.work_group_size == 8
    assert mine.profile_entries[0] == "devices.yaml#0"
    assert mine.profile_entries[-1] == "user:devices.yaml#0"
    assert sum(e.endswith("devices.yaml#0") for e in mine.profile_entries) == 2
    assert mine.term("centroid_tile") == profile.term("centroid_tile")   # the rest as shipped


def test_the_variable_overrides_the_users_file(tmp_path, monkeypatch, profile):
    """Precedence: $OCLCLUST_DEVICES_YAML over the user's file over the shipped one."""
    user_config(tmp_path, monkeypatch, "- {work_group_size: 8, memory_fraction: 0.25}\n")
    named = write(tmp_path, "- {work_group_size: 16}\n", name="mine.yaml")
    monkeypatch.setenv("OCLCLUST_DEVICES_YAML", str(named))
    mine = next(p for p in oc.list_devices() if p.key == profile.key)
    assert mine.work_group_size == 16 and mine.memory_fraction == 0.25
    assert mine.profile_entries[-2:] == ("user:devices.yaml#0", "mine.yaml#0")
    # the variable naming the user's file itself: read once
    monkeypatch.setenv("OCLCLUST_DEVICES_YAML", str(pf.user_profiles_path()))
    mine = next(p for p in oc.list_devices() if p.key == profile.key)
    assert mine.work_group_size == 8 and mine.profile_entries[-1] == "devices.yaml#0"
    assert "user:devices.yaml#0" not in mine.profile_entries


def test_the_users_file_defaults_to_dot_config_in_home(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert pf.user_profiles_path() == tmp_path / ".config" / "oclclust" / "devices.yaml"
    assert [p for p, _ in pf.profile_files()] == [pf.shipped_profiles_path()]   # none there


def test_a_bad_users_file_is_reported_with_its_path(tmp_path, monkeypatch):
    path = user_config(tmp_path, monkeypatch, "- {points_per_item: 99}")
    with pytest.raises(ProfileError, match=f"{path} entry 0: points_per_item=99"):
        oc.list_devices()


def test_bad_user_file_is_reported_with_its_name(tmp_path, monkeypatch):
    path = write(tmp_path, "- {points_per_item: 99}", name="broken.yaml")
    monkeypatch.setenv("OCLCLUST_DEVICES_YAML", str(path))
    with pytest.raises(ProfileError, match="broken.yaml entry 0: points_per_item=99"):
        oc.list_devices()


# ------------------------------------------------------ terms of the passes
OLD_TILE_FILE = """
- match: {}
  lloyd_tile_rows: 32
  lloyd_tile_centroids: 128
  lloyd_reg_rows: 8
  lloyd_reg_centroids: 2
  lloyd_depth: 4
  lloyd_vector_width: 8
"""


def test_old_names_load_the_same_values(tmp_path, monkeypatch, profile):
    """Users' files (and tuned entries) written with the lloyd_* tile names
    give the profile the values the tile_* names give."""
    old = write(tmp_path, OLD_TILE_FILE, name="old.yaml")
    text = OLD_TILE_FILE
    for old_name, key in pf.OLD_NAMES.items():
        text = text.replace(f"{old_name}:", f"{key}:")
    new = write(tmp_path, text, name="new.yaml")
    resolved = []
    for path in (old, new):
        monkeypatch.setenv("OCLCLUST_DEVICES_YAML", str(path))
        resolved.append(next(p for p in oc.list_devices() if p.key == profile.key))
    assert resolved[0].term_values == resolved[1].term_values
    assert resolved[0].terms(TileTerms) == TileTerms(rows=32, columns=128, reg_rows=8,
                                                     reg_columns=2, depth=4, vector_width=8)
    for old_name, key in pf.OLD_NAMES.items():
        assert resolved[0].term(old_name) == resolved[0].term(key)


@pytest.mark.one_runtime   # host code alone
def test_a_profile_file_is_read_again_unless_settled(tmp_path, monkeypatch):
    """A file rewritten at once (the same size, maybe the same clock tick)
    is read again; one whose stat is unchanged since a change older than
    SETTLED_NS is not; a rewrite of it is."""
    path = write(tmp_path, "- {lloyd_variant: gemm}\n")
    assert "gemm" in pf.load_profile_file(path)[0][1]["lloyd_variant"]
    path.write_text("- {lloyd_variant: mma }\n")
    assert pf.load_profile_file(path)[0][1]["lloyd_variant"] == "mma"
    monkeypatch.setattr(pf, "SETTLED_NS", 0)
    pf.load_profile_file(path)                      # read, now settled
    reads = []
    monkeypatch.setattr(pf, "open", lambda *a: reads.append(a) or open(*a), raising=False)
    assert pf.load_profile_file(path)[0][1]["lloyd_variant"] == "mma"
    assert not reads
    path.write_text("- {lloyd_variant: tiled}\n")
    assert pf.load_profile_file(path)[0][1]["lloyd_variant"] == "tiled"
    assert reads


def test_a_term_set_under_both_names_is_an_error(tmp_path):
    path = write(tmp_path, "- {lloyd_depth: 4, tile_depth: 8}")
    with pytest.raises(ProfileError, match="tile_depth is set twice"):
        pf.load_profile_file(path)


def test_every_pass_declares_its_terms(profile):
    """Each terms class reads back what the profile resolved; together with
    the generic terms they are every term, each declared once."""
    declared = [LloydTerms, SumsTerms, BlockedTerms, TileTerms, EnsembleTerms, KdTreeTerms,
                CMeansTerms, GmmTerms, LinkageTerms, MstTerms, WardRowsTerms, PassRates,
                UpdateTerms]
    keys = [f.metadata["profile_key"] for cls in declared for f in dataclasses.fields(cls)]
    assert sorted(keys + list(pf.GENERIC_TERMS)) == sorted(PROFILE_TERMS)
    assert set(profile.term_values) == set(keys)
    for cls in declared:
        terms = profile.terms(cls)
        for field in dataclasses.fields(cls):
            assert getattr(terms, field.name) == profile.term(field.metadata["profile_key"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.terms(LloydTerms).variant = "gemm"


def test_replace_takes_fields_and_terms(profile):
    changed = profile.replace(lloyd_reg_rows=1, tile_depth=2, work_group_size=8)
    assert changed.terms(TileTerms).reg_rows == 1 and changed.term("lloyd_depth") == 2
    assert changed.work_group_size == changed.term("work_group_size") == 8
    assert changed != profile and profile.replace() == profile
    back = changed.replace(tile_reg_rows=profile.term("tile_reg_rows"),
                           tile_depth=profile.term("tile_depth"),
                           work_group_size=profile.work_group_size)
    assert back == profile and hash(back) == hash(profile)
    with pytest.raises(TypeError, match="no field or term 'tile_rowz'"):
        profile.replace(tile_rowz=4)


def test_a_term_is_declared_once():
    @dataclasses.dataclass(frozen=True)
    class Again:
        rows: int = pf.term("tile_rows", 1, 8)

    @dataclasses.dataclass
    class Mutable:
        rows: int = pf.term("mutable_rows", 1, 8)

    with pytest.raises(TypeError, match="'tile_rows' is declared already"):
        pf.declare_terms(Again)
    with pytest.raises(TypeError, match="frozen dataclass"):
        pf.declare_terms(Mutable)
    assert "mutable_rows" not in PROFILE_TERMS


def test_a_file_is_parsed_once_per_text(tmp_path, monkeypatch):
    """A fit resolves the profiles each time: a file's text is parsed once,
    an edited file is read anew, and a caller's changes to the entries it
    got do not reach the next caller."""
    path = tmp_path / "devices.yaml"
    path.write_text("- {match: {type: cpu}, work_group_size: 32}\n")
    parsed, parse = [], pf._parse

    def counted(text, where):
        parsed.append(text)
        return parse(text, where)
    monkeypatch.setattr(pf, "_parse", counted)
    first = pf.load_profile_file(path)
    first[0][1]["work_group_size"] = 1
    assert pf.load_profile_file(path)[0][1] == {"work_group_size": 32} and len(parsed) == 1
    path.write_text("- {match: {type: cpu}, work_group_size: 16}\n")
    assert pf.load_profile_file(path)[0][1] == {"work_group_size": 16} and len(parsed) == 2


def billion_laughs(levels=9):
    """A few hundred bytes whose nested aliases expand to 9**levels strings."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"{chr(97 + i)}: &{chr(97 + i)} [{','.join(['*' + chr(96 + i)] * 9)}]")
    return "- " + "\n  ".join(lines) + "\n"


BOUNDED_FILES = {
    "alias bomb": (billion_laughs(), r"aliases \(\*a\) are not allowed"),
    "one alias": ("- {match: &m {type: cpu}, work_group_size: 8}\n- {match: *m}\n",
                  r"aliases \(\*m\) are not allowed"),
    "over 1 MiB": ("#" * ((1 << 20) + 1), "over 1048576 bytes are refused"),
    "not UTF-8": (b"- {work_group_size: 8} # \xff\n", "cannot read device profiles"),
}


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("case", BOUNDED_FILES)
def test_profile_file_is_bounded(tmp_path, case):
    """A hostile file is refused at once, named, without being expanded."""
    text, match = BOUNDED_FILES[case]
    path = tmp_path / "profiles.yaml"
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    start = time.perf_counter()
    with pytest.raises(ProfileError, match=match) as info:
        pf.load_profile_file(path)
    assert str(path) in str(info.value) and time.perf_counter() - start < 1.0


@pytest.mark.one_runtime   # host code alone
def test_term_values_hash_once_and_pickle_their_values_alone():
    """A profile's terms are hashed once (profiles key plan caches every
    fit); a pickled copy carries the values, not this process's hash."""
    import pickle
    terms = pf.TermValues({"lloyd_variant": "tiled", "cmeans_wg": 64})
    assert hash(terms) == hash(frozenset(terms.items())) == terms._hash
    copy = pickle.loads(pickle.dumps(terms))
    assert copy._hash is None and copy == terms and hash(copy) == hash(terms)
