"""Kernel checking: every template variant runs under oclgrind on tiny inputs.

tests/harness/oclgrind_driver.py renders and runs each variant (all Lloyd variants,
reductions in double and Kahan float, k-means++ weighted and not, moments,
transform; resident and streamed in chunks by the device manager; its
oclgrind_ex_*.py plugins every other algorithm's templates) on the
Oclgrind simulator, with data-race, uninitialised-value and API checking
on; any report oclgrind makes fails the test, traced to the
variant that caused it.  Independent of OCLCLUST_TEST_PLATFORM: the simulator
is its own platform.
"""
import collections
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import oclclust
from oclclust.runtime.resources import resource_dir

DRIVER = Path(__file__).resolve().parents[1] / "harness" / "oclgrind_driver.py"
PACKAGE_ROOT = Path(oclclust.__file__).resolve().parents[1]
OCLGRIND = shutil.which("oclgrind")
FLAGS = ["--data-races", "--uninitialized", "--check-api", "--build-options",
         "-cl-opt-disable", "--max-errors", "500"]

pytestmark = pytest.mark.skipif(OCLGRIND is None, reason="oclgrind is not installed "
                                "(Debian package oclgrind; tools/setup.sh installs it)")

# pyopencl asks the device for vendor-specific properties when it builds a
# program or creates a kernel; oclgrind does not know them and --check-api
# reports each refusal, which pyopencl handles.  Nothing else is forgiven.
BENIGN = [re.compile(r"Function: clGetDeviceInfo\s+Error:\s+CL_INVALID_VALUE\s+"
                     r"For argument 'param_name'")]


def parse_reports(stderr):
    """oclgrind's reports in *stderr*: (variant, text) pairs.  A report starts
    at an unindented line and runs over the indented lines after it; "@@ "
    lines from the driver name the variant that runs from there on."""
    reports, variant, block = [], "start", None

    def close():
        if block:
            reports.append((variant, "\n".join(block)))
    for line in stderr.splitlines():
        if line.startswith("@@ "):
            close()
            block, variant = None, line[3:]
        elif line and not line[0].isspace():
            close()
            block = [line]
        elif block is not None and line.strip():
            block.append(line)
    close()
    return reports


PY_WARNING = re.compile(r"^\S.*:\d+: \w*Warning: ")


def is_report(text):
    """Everything oclgrind prints is a report; Python's own warnings are not."""
    return not PY_WARNING.match(text.splitlines()[0])


def problems(stderr):
    """Reports that are not known-benign, grouped by (kind, kernel, source line)."""
    groups = collections.OrderedDict()
    for variant, text in parse_reports(stderr):
        if not is_report(text) or any(p.search(text) for p in BENIGN):
            continue
        lines = [l.strip() for l in text.splitlines()]
        kind = re.sub(r"0x[0-9a-f]+", "ADDR", lines[0])
        kernel = next((l for l in lines if l.startswith(("Kernel:", "Function:"))), "")
        at = next((i for i, l in enumerate(lines) if l.startswith("At line")), None)
        source = lines[at + 1] if at is not None and at + 1 < len(lines) else ""
        key = (kind, kernel, source)
        if key not in groups:
            groups[key] = {"count": 0, "first": text, "variants": []}
        groups[key]["count"] += 1
        if variant not in groups[key]["variants"]:
            groups[key]["variants"].append(variant)
    return groups


def describe(groups, limit=12):
    out = []
    for (kind, kernel, source), g in list(groups.items())[:limit]:
        out.append(f"{g['count']} x {kind} | {kernel} | {source}\n"
                   f"  in {len(g['variants'])} variant(s), first: {g['variants'][0]}\n"
                   + "\n".join("    " + l for l in g["first"].splitlines()))
    if len(groups) > limit:
        out.append(f"... and {len(groups) - limit} more kinds")
    return "\n".join(out)


def run_driver(tmp_path, *args, timeout=600):
    env = dict(os.environ, PYOPENCL_NO_CACHE="1")
    env.pop("OCLCLUST_DEVICES", None)
    # the driver runs the oclclust this test imported (a checkout's source
    # tree), not whichever copy is installed
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT)] + ([env["PYTHONPATH"]]
                                                               if env.get("PYTHONPATH") else []))
    return subprocess.run([OCLGRIND, *FLAGS, sys.executable, str(DRIVER), *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=timeout)


# the driver's own exercisers ("core") and one run per plugin module
PLUGINS = ["core"] + sorted(p.stem[len("oclgrind_ex_"):]
                            for p in DRIVER.parent.glob("oclgrind_ex_*.py"))
_RUNS = {}


def plugin_run(name, tmp_path_factory):
    """(process, report) of the driver run of one plugin (run once)."""
    if name not in _RUNS:
        tmp = tmp_path_factory.mktemp(f"oclgrind-{name}")
        proc = run_driver(tmp, "--only", name, "--report", str(tmp / "report.json"))
        report = None
        if (tmp / "report.json").exists():
            report = json.loads((tmp / "report.json").read_text())
        _RUNS[name] = proc, report
    return _RUNS[name]


@pytest.fixture(scope="module")
def driver_run(tmp_path_factory):
    return plugin_run("core", tmp_path_factory)


@pytest.mark.parametrize("name", PLUGINS[1:])
def test_plugin_runs_clean(name, tmp_path_factory):
    """A plugin's exercisers complete (their results checked against numpy)
    with no oclgrind report."""
    proc, report = plugin_run(name, tmp_path_factory)
    assert proc.returncode == 0 and report is not None, (
        f"the {name} exercisers failed under oclgrind (exit {proc.returncode})\n"
        f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-6000:]}")
    groups = problems(proc.stderr)
    if groups:
        pytest.fail(f"oclgrind reported problems in the {name} kernels:\n" + describe(groups),
                    pytrace=False)


def test_driver_completes(driver_run):
    proc, report = driver_run
    assert proc.returncode == 0 and report is not None, (
        f"the driver failed under oclgrind (exit {proc.returncode})\n"
        f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-6000:]}")
    assert "Oclgrind" in report["device"]


def test_no_oclgrind_reports(driver_run):
    proc, _ = driver_run
    groups = problems(proc.stderr)
    if groups:
        pytest.fail("oclgrind reported problems in the kernels:\n" + describe(groups),
                    pytrace=False)


# inline PTX for NVIDIA tensor cores: no other runtime builds them;
# tests/passes/test_lloyd_mma.py and test_gmm_mma.py run them on NVIDIA GPUs
# (test_gmm_mma.py also runs the gmm_mma kernels emulated on every runtime)
NVIDIA_ONLY = {"lloyd_mma_assign.cl.mako", "gmm_mma_estep.cl.mako", "gmm_mma_mstep.cl.mako"}


def test_every_template_is_exercised(tmp_path_factory):
    rendered = set()
    for name in PLUGINS:
        _, report = plugin_run(name, tmp_path_factory)
        assert report is not None, f"the {name} exercisers failed under oclgrind"
        rendered |= set(report["rendered"])
    folder = resource_dir("templates")
    paths = {p.name: p for p in folder.rglob("*.cl.mako")}
    shipped = set(paths)
    assert shipped, "no templates found"
    # def libraries (no kernel of their own, e.g. distance_tile.cl.mako) run
    # inside the kernels that import them: exercised when one of those is; a
    # template a spec renders is a kernel even when it inherits its __kernel
    # (cmeans_mma_pass.cl.mako: cmeans_pass.cl.mako's with blocks replaced)
    libraries = {t for t in shipped
                 if "__kernel" not in paths[t].read_text() and t not in rendered}
    for library in sorted(libraries - {"prelude.cl.mako"}):
        users = {t for t in rendered if t in shipped and library in paths[t].read_text()}
        assert users, f"the def library {library} is imported by no template run under oclgrind"
    missing = shipped - libraries - rendered - NVIDIA_ONLY
    assert not missing, (f"templates never rendered under oclgrind: {sorted(missing)}; "
                         "add an exerciser to tests/harness/oclgrind_driver.py or a plugin")


def test_lloyd_variants_cover_every_axis(driver_run):
    _, report = driver_run
    assert report is not None
    specs = [s for t, ss in report["rendered"].items() if t.startswith("lloyd_") for s in ss]
    assert specs

    def values(key, subset=specs):
        return {s[key] for s in subset if key in s}
    assert values("update") == {True, False}
    assert values("weighted") == {True, False}
    assert values("acc_double") == {True, False}            # double sums and Kahan
    assert values("dtype") == {"float32", "float64"}
    assert len(values("ppi")) > 1 and min(values("ppi")) == 1
    tiled = [s for s in specs if s.get("variant", "tiled") == "tiled"]
    assert values("stage_centers", tiled) == {True, False}
    assert values("stage_point", tiled) == {True, False}
    if any("variant" in s for s in specs):
        assert values("variant") >= {"tiled", "rowwise"}
    gemm = [s for s in specs if s.get("variant") == "gemm"]
    assert values("prefetch", gemm) == {0, 1, 2}     # staged, prefetched, double-buffered
    kinds = {s["kind"] for t, ss in report["rendered"].items() for s in ss}
    for kind in ("ReduceSpec", "MomentsSpec", "CandidateSpec", "SearchSpec"):
        assert kind in kinds
    reduce_modes = {s["acc_double"] for s in report["rendered"]["reduce_partials.cl.mako"]}
    assert reduce_modes == {True, False}
    candidates = report["rendered"]["kmeanspp_candidates.cl.mako"]
    assert {s["weighted"] for s in candidates} == {True, False}


def test_streamed_chunks_run_under_oclgrind(driver_run):
    """The device manager's streaming path (a shard uploaded chunk by chunk
    through two staging buffers on a second queue) runs there too: fits,
    predict/transform/score, moments and k-means++, against resident runs."""
    proc, _ = driver_run
    marks = [l[3:] for l in proc.stderr.splitlines() if l.startswith("@@ ")]
    for what in ("KMeans ", "KMeans.predict ", "KMeans.transform ", "KMeans.score ",
                 "moments ", "kmeans++ "):
        runs = [m for m in marks if m.startswith(what)]
        assert any(m.endswith(" streamed") for m in runs), f"no streamed {what.strip()} run"
        assert any(m.endswith(" resident") for m in runs), f"no resident {what.strip()} run"


def test_oclgrind_catches_known_faults(tmp_path):
    """The check itself: a kernel with an out-of-bounds read, an uninitialised
    read and a data race must give all three reports."""
    proc = run_driver(tmp_path, "--canary", timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    kinds = " ".join(k for k, _, _ in problems(proc.stderr))
    for expected in ("Invalid read", "data race", "Uninitialized"):
        assert expected in kinds, f"oclgrind did not report {expected!r}:\n{proc.stderr[-3000:]}"
