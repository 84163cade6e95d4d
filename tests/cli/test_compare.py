"""python -m oclclust.cli.compare (issue 5): --quick runs and its JSON and CSV are well formed."""
import csv
import json

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
