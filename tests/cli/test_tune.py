"""The auto-tuner: its devices.yaml entry loads, is keyed by device and
driver, and the next fit plans its Lloyd kernel from it."""
import numpy as np
import pytest
import yaml

import oclclust as oc
from oclclust.runtime import codegen
from oclclust.cli import tune
from oclclust.runtime.profiles import load_profile_file

GEMM = dict(lloyd_variant="gemm", lloyd_tile_rows=16, lloyd_tile_centroids=8,
            lloyd_reg_rows=2, lloyd_reg_centroids=2, lloyd_depth=4, lloyd_vector_width=2)


def tuned_profile(profile):
    """*profile*'s device as list_devices resolves it now."""
    return next(p for p in oc.list_devices() if p.key == profile.key)


def fit_specs(profile, X, k):
    """The Lloyd specs a fit on *profile*'s platform (by name) planned."""
    codegen.forget_plans("lloyd")
    oc.KMeans(k, n_init=1, random_state=0, max_iter=2, devices=profile.platform).fit(X)
    return [spec for spec, _ in codegen.plans("lloyd").values() if spec.update]


def test_quick_tune_writes_a_profile_the_next_fit_uses(profile, tmp_path, monkeypatch,
                                                      make_blobs, capsys):
    out = tmp_path / "tuned.yaml"
    assert tune.main(["--devices", profile.platform, "--quick", "--repeats", "1",
                      "--out", str(out)]) == 0
    assert "tune: best" in capsys.readouterr().out
    (match, terms, _), = load_profile_file(out)
    assert match == {"name": profile.name.lower(), "platform": profile.platform.lower(),
                     "driver": profile.driver_version.lower()}
    assert terms["lloyd_variant"] in ("rowwise", "blocked", "tiled", "gemm")
    assert terms in tune.configurations(profile, quick=True)
    monkeypatch.setenv("OCLCLUST_DEVICES_YAML", str(out))
    resolved = tuned_profile(profile)
    assert resolved.profile_entries[-1] == "tuned.yaml#0"
    assert all(resolved.term(term) == value for term, value in terms.items())
    X, _ = make_blobs(n=300, d=4, k=5, seed=2, dtype=np.float32)
    assert {s.variant for s in fit_specs(profile, X, 5)} == {terms["lloyd_variant"]}


def test_a_retune_replaces_its_entry_and_keeps_the_rest(profile, tmp_path, monkeypatch,
                                                       make_blobs):
    """--configs pins the winner: the next fit runs exactly those gemm tiles;
    a second tune of the device replaces the block, other entries and
    comments stay."""
    out = tmp_path / "devices.yaml"
    out.write_text("# my own settings\n- match: {type: gpu}\n  work_group_size: 64\n")
    configs = tmp_path / "configs.yaml"
    configs.write_text(yaml.safe_dump([GEMM]))
    argv = ["--devices", profile.platform, "--shapes", "500,6,9", "--repeats", "1",
            "--configs", str(configs), "--out", str(out)]
    assert tune.main(argv) == 0
    assert tune.main(argv) == 0
    text = out.read_text()
    assert text.startswith("# my own settings\n") and text.count("# tuned by oclclust") == 1
    entries = load_profile_file(out)
    assert len(entries) == 2 and entries[1][1] == GEMM
    monkeypatch.setenv("OCLCLUST_DEVICES_YAML", str(out))
    X, _ = make_blobs(n=300, d=6, k=9, seed=3, dtype=np.float32)
    spec, = fit_specs(profile, X, 9)
    assert (spec.variant, spec.tm, spec.rm, spec.rn, spec.kc, spec.vw) == ("gemm", 16, 2, 2, 4, 2)
    km = oc.KMeans(9, n_init=1, random_state=0, devices=profile.platform).fit(X)
    assert len(np.unique(km.labels_)) == 9


@pytest.mark.parametrize("argv, message", [
    (["--shapes", "10,3"], "shape must be n,d,k"),
    (["--shapes", "3,2,10"], "n >= k"),
    (["--devices", "no such device"], "no OpenCL device matches"),
])
def test_bad_arguments_are_usage_errors(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        tune.main(argv + ["--out", str(tmp_path / "x.yaml")])
    assert info.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "x.yaml").exists()


@pytest.mark.one_runtime   # argparse alone
def test_help_runs_standalone():
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "oclclust.cli.tune", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "--shipped" in proc.stdout


def test_tune_writes_the_users_file_which_is_read_by_default(profile, tmp_path, monkeypatch):
    """Without --out (and no $OCLCLUST_DEVICES_YAML) the entry goes to the
    user's devices.yaml, which the next process reads with nothing set."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("OCLCLUST_DEVICES_YAML", raising=False)
    configs = tmp_path / "configs.yaml"
    configs.write_text(yaml.safe_dump([GEMM]))
    assert tune.main(["--devices", profile.platform, "--shapes", "500,6,9", "--repeats", "1",
                      "--configs", str(configs)]) == 0
    written = tmp_path / "config" / "oclclust" / "devices.yaml"
    assert tune.default_path() == written and written.is_file()
    resolved = tuned_profile(profile)
    assert resolved.profile_entries[-1] == "user:devices.yaml#0"
    assert resolved.term("lloyd_variant") == "gemm" and resolved.term("tile_depth") == 4
