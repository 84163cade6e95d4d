"""python -m oclclust.cli.compare (issue 5): --quick runs and its JSON and CSV are well formed;
python -m oclclust.compare (the design card's command) runs the same benchmark."""
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import oclclust
from oclclust.cli import compare


def test_quick_writes_json_csv(devices, tmp_path):
    name = devices[0].platform
    assert compare.main(["--quick", "--devices", name, "--no-progress", "--out",
                         str(tmp_path), "--models", "1", "3", "--kd-d", "2"]) == 0
    report = json.loads((tmp_path / "compare.json").read_text())
    assert set(report) == {"meta", "records"}
    records = report["records"]
    variants = {(r["strategy"], r["kdtree"]) for r in records}
    assert {("task", "none"), ("data", "none"), ("concatenated", "none"),
            ("concatenated", "direct"), ("concatenated", "distributed"),
            ("concatenated", "replicated")} <= variants
    for r in records:
        assert r["seconds_per_iter"] > 0 and r["gb_per_s"] > 0 and 0 < r["kept"] <= 1
        assert r["seconds_per_pass"] > 0
        assert 0 < r["device_seconds_per_pass"] < 60   # the kernels' (profiling events)
        assert r["device"].endswith(f"[{name}]")
        assert r["order"] in (("distributed", "uniform") if r["strategy"] == "concatenated"
                              else ("-",))
    task = [r for r in records if r["strategy"] == "task" and r["sweep"] == "models"]
    assert all(abs(r["speedup_vs_task"] - 1) < 1e-12 for r in task)
    assert all(abs(r["pass_speedup_vs_task"] - 1) < 1e-12 for r in task)
    data = [r for r in records if r["strategy"] == "data" and r["sweep"] == "models"]
    assert all(abs(r["speedup_vs_data"] - 1) < 1e-12 for r in data)
    assert all(abs(r["device_speedup_vs_data"] - 1) < 1e-12 for r in data)
    concatenated = [r for r in records
                    if r["strategy"] == "concatenated" and r["sweep"] == "models"]
    assert all(r["device_speedup_vs_data"] > 0 for r in concatenated)
    rows = list(csv.DictReader(open(tmp_path / "compare.csv")))
    assert len(rows) == len(records)
    try:
        import matplotlib  # noqa: F401
        assert list(tmp_path.glob("*.png"))
    except ImportError:
        pass


def test_help_documents_every_flag():
    out = compare.parser().format_help()
    for flag in ("--devices", "--n", "--k", "--models", "--d", "--kd-d", "--kd-models",
                 "--iters", "--strategies", "--kdtree", "--leaf-size", "--quick",
                 "--baselines", "--out", "--no-progress", "--seed"):
        assert flag in out


def test_python_m_oclclust_compare_runs_the_benchmark(devices, tmp_path):
    """The design card's command, in a fresh process: --help, then a tiny
    real run whose table and JSON name the strategies on the device."""
    name = devices[0].platform
    source = str(Path(oclclust.__file__).resolve().parent.parent)   # this checkout's oclclust
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [source, os.environ.get("PYTHONPATH")])))
    command = [sys.executable, "-m", "oclclust.compare"]
    help_run = subprocess.run(command + ["--help"], capture_output=True, text=True, env=env,
                              timeout=120)
    assert help_run.returncode == 0, help_run.stderr
    assert "--strategies" in help_run.stdout and "--kdtree" in help_run.stdout
    run = subprocess.run(command + ["--quick", "--devices", name, "--no-progress",
                                    "--models", "1", "--kd-d", "2", "--n", "2000",
                                    "--out", str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    for strategy in ("task", "data", "concatenated"):
        assert strategy in run.stdout
    records = json.loads((tmp_path / "compare.json").read_text())["records"]
    assert {r["strategy"] for r in records} == {"task", "data", "concatenated"}
    assert all(r["device"].endswith(f"[{name}]") and r["seconds_per_iter"] > 0
               for r in records)
