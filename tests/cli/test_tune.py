"""The auto-tuner: its devices.yaml entry loads, is keyed by device and
driver, and the next fit plans its Lloyd kernel, and its ensemble pass, from
it; a device's Lloyd and ensemble tunes share its entry."""
import re

import numpy as np
import pytest
import yaml

import oclclust as oc
from oclclust.runtime import codegen
from oclclust.cli import tune, tune_ensemble, tune_results
from oclclust.passes.ensemble import work_group
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
    printed = capsys.readouterr().out
    assert "tune: best" in printed and "ensemble" not in printed   # Lloyd's alone, as before
    assert "ensemble" not in out.read_text()
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
    (["--kernels", "kmeans"], "invalid choice: 'kmeans'"),
    (["--kernels", "ensemble", "--ensemble-shapes", "1000,2,10"], "must be n,d,k,m"),
    (["--kernels", "ensemble", "--ensemble-shapes", "5,2,10,4"], "n >= k"),
    (["--kernels", "ensemble", "--ensemble-shapes", "1000,2,10,0"], "m >= 1 models"),
    (["--kernels", "ensemble", "--iters", "0"], "must be at least 1"),
    (["--kernels", "ensemble", "--shapes", "500,6,9"], "--shapes is lloyd's"),
    (["--configs", "c.yaml", "--kernels", "ensemble"], "--configs is lloyd's"),
    (["--ensemble-shapes", "1000,2,10,4"], "--ensemble-shapes is ensemble's"),
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


def ensemble_stats_specs(profile, X):
    """The statistics pass's specs an EnsembleKMeans fit with strategy
    "auto" ran on *profile*'s platform (by name)."""
    km = oc.EnsembleKMeans(3, n_models=4, max_iter=3, random_state=0,
                           devices=profile.platform).fit(X)
    return [r["key"] for r in km.kernels_ if r["spec"] == "StatsSpec"]


def test_ensemble_tune_writes_terms_the_next_fit_runs(profile, tmp_path, monkeypatch, capsys):
    """--kernels ensemble: the entry holds the EnsembleTerms of one of the
    configurations timed and the strategy "auto" takes, the figures as
    comments; an EnsembleKMeans fit then runs its statistics pass so."""
    out = tmp_path / "tuned.yaml"
    assert tune.main(["--devices", profile.platform, "--kernels", "ensemble", "--quick",
                      "--iters", "1", "--out", str(out)]) == 0
    assert "concatenated over data: " in capsys.readouterr().out
    (match, terms, _), = load_profile_file(out)
    assert match["name"] == profile.name.lower()
    strategy = terms.pop("ensemble_strategy")
    order = terms.pop("ensemble_order")
    timed = tune_ensemble.candidates(profile, quick=True)
    if strategy == "concatenated":
        assert {"ensemble_order": order, **terms} in timed["concatenated"]
    else:   # data or task parallelism's terms, concatenated's order
        assert terms in timed[strategy] and order in tune_ensemble.ORDERS
    assert re.search(r"^# ensemble 4000x2 k=10 M=4: concatenated over data: \d+\.\d\dx "
                     r"\(pass \d+\.\d\dx, kernels \d+\.\d\dx\)$", out.read_text(), re.M)
    monkeypatch.setenv("OCLCLUST_DEVICES_YAML", str(out))
    resolved = tuned_profile(profile)
    assert resolved.term("ensemble_strategy") == strategy
    assert all(resolved.term(key) == value for key, value in terms.items())
    X = np.random.default_rng(0).standard_normal((400, 2)).astype(np.float32)
    spec, = ensemble_stats_specs(profile, X)
    assert spec["strategy"] == strategy and spec["word_atomics"] == bool(
        terms["ensemble_word_atomics"])
    assert spec["wg"] == work_group(resolved, size=terms["ensemble_work_group_size"])
    assert spec["distributed"] == (strategy == "concatenated" and order == "distributed")


def test_ensemble_picks_by_per_iteration_and_kernels_times(profile, monkeypatch):
    """Within a strategy the least kernels' time wins, between strategies
    the least time per iteration; the figures are the winners' ratios."""
    seconds = {("concatenated", "uniform", 1): (2.0, 1.0, 0.5),
               ("concatenated", "uniform", 0): (1.0, 1.0, 0.6),
               ("data", None, 0): (6.0, 4.0, 2.0), ("data", None, 1): (9.0, 8.0, 1.0)}

    def timed(profile, X, models, k, strategy, terms, iters):   # distributed, task refused
        key = (strategy, terms.get("ensemble_order"), terms["ensemble_word_atomics"])
        return (seconds[key], None) if key in seconds else (None, "refused")
    monkeypatch.setattr(tune_ensemble, "time_terms", timed)
    terms, notes = tune_ensemble.tune_ensemble(profile, [(40, 2, 3, 2)], quick=True, iters=1,
                                               log=lambda line: None)
    assert terms == {"ensemble_strategy": "concatenated", "ensemble_order": "uniform",
                     "ensemble_word_atomics": 1, "ensemble_work_group_size": 0,
                     "ensemble_groups_per_compute_unit": 0}
    assert notes == ["ensemble 40x2 k=3 M=2: concatenated over data: 4.50x "
                     "(pass 8.00x, kernels 2.00x)",
                     "ensemble 40x2 k=3 M=2, s/iteration: concatenated 2.000e+00, "
                     "data 9.000e+00"]


@pytest.mark.parametrize("first", ["lloyd", "ensemble"])
def test_lloyd_and_ensemble_tunes_share_the_devices_entry(profile, tmp_path, first):
    """Tuned apart, in either order, and again: one block for the device
    with both kernels' terms and figures, each tune replacing its own."""
    out = tmp_path / "devices.yaml"
    configs = tmp_path / "configs.yaml"
    configs.write_text(yaml.safe_dump([GEMM]))
    base = ["--devices", profile.platform, "--out", str(out)]
    runs = {"lloyd": base + ["--shapes", "500,6,9", "--repeats", "1", "--configs", str(configs)],
            "ensemble": base + ["--kernels", "ensemble", "--quick", "--iters", "1"]}
    second = "ensemble" if first == "lloyd" else "lloyd"
    for kernel in (first, second, first):
        assert tune.main(runs[kernel]) == 0
    text = out.read_text()
    assert text.count("# tuned by oclclust") == 1
    assert text.count(" s/pass") == 1 and text.count("concatenated over data") == 1
    (_, terms, _), = load_profile_file(out)
    assert {k: terms[k] for k in GEMM} == GEMM
    assert set(terms) == set(GEMM) | set(tune_results.ensemble_keys())
