"""Every example of the README and the documentation runs, each in under 30 s.

A page's Python blocks (README.md's ```python blocks, the ``.. code-block::
python`` blocks of docs/index.rst and docs/guide/*.rst) run in turn in one
fresh process, as a reader pastes them (tests/harness/doc_blocks.py), on the
platform under test; the MPI page's under ``mpiexec -n 2`` beside the files it
reads.  The gallery's scripts (docs/examples/*.py, which the docs build runs
too) run one a process.  The README's test command is the one ``.ci/run``
runs.
"""
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from conftest import mpiexec

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
HARNESS = Path(__file__).resolve().parent / "harness" / "doc_blocks.py"
LIMIT_S = 30   # the longest an example may take (issue 38)

pytestmark = [pytest.mark.one_runtime,
              pytest.mark.skipif(not (DOCS / "conf.py").is_file(),
                                 reason="not run from a source checkout")]

# what a page's examples import beyond the library (its extras; tools/setup.sh --test
# installs them all)
NEEDS = {"quickstart.rst": ["sklearn"], "dask.rst": ["dask", "distributed"],
         "mpi.rst": ["mpi4py"], "plot_dask.py": ["dask", "distributed"]}
MPI_RANKS = {"mpi.rst": 2}


def python_blocks(path):
    """The Python code blocks of a Markdown or reStructuredText page, in order."""
    text = path.read_text()
    if path.suffix == ".md":
        return re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S)
    blocks, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() != ".. code-block:: python":
            continue
        body = []
        for following in lines[i + 1:]:
            if following.strip() and not following.startswith((" ", "\t")):
                break
            body.append(following)
        code = textwrap.dedent("\n".join(body)).strip("\n")
        blocks.append("\n".join(ln for ln in code.splitlines()
                                if not ln.startswith(":")) + "\n")   # no directive options
    return blocks


PAGES = [p for p in [REPO / "README.md", DOCS / "index.rst",
                     *sorted((DOCS / "guide").glob("*.rst"))]
         if p.is_file() and python_blocks(p)]
GALLERY = sorted((DOCS / "examples").glob("*.py"))


def _needs(name):
    for module in NEEDS.get(name, []):
        pytest.importorskip(module)


def _env(devices):
    env = dict(os.environ, OCLCLUST_DEVICES=devices[0].platform, MPLBACKEND="Agg",
               PYTHONWARNINGS="ignore")
    env.pop("OCLCLUST_TEST_PLATFORM", None)
    return env


def _parts(folder):
    """The files mpi.rst's example reads: two .npy parts of blob rows."""
    rng = np.random.default_rng(0)
    centres = rng.uniform(-10, 10, size=(10, 4))
    for i in range(2):
        rows = centres[rng.integers(10, size=3000)] + rng.normal(size=(3000, 4))
        np.save(folder / f"part{i}.npy", rows)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_examples_run(page, devices, tmp_path):
    _needs(page.name)
    blocks = python_blocks(page)
    source = tmp_path / "blocks.json"
    source.write_text(json.dumps(blocks))
    command = [sys.executable, str(HARNESS), str(source), page.name]
    ranks = MPI_RANKS.get(page.name)
    if ranks:
        _parts(tmp_path)
        command = [mpiexec(), "-n", str(ranks), *command]
    proc = subprocess.run(command, cwd=tmp_path, env=_env(devices), capture_output=True,
                          text=True, timeout=LIMIT_S * len(blocks) + 60)
    assert proc.returncode == 0, f"{page.name}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    # (the ranks share one pipe: a rank's line may land inside another's output)
    timings = [json.loads(found) for found in re.findall(r"BLOCK_SECONDS (\[[^\]]*\])",
                                                           proc.stdout)]
    assert len(timings) == (ranks or 1)   # every rank ran every block
    assert all(len(seconds) == len(blocks) for seconds in timings)
    slowest = max(max(seconds) for seconds in timings)
    assert slowest < LIMIT_S, f"{page.name}: a block took {slowest:.1f} s"


# Intel's CPU runtime with sub-devices at times aborted as the process exited,
# after the script's work was done ("libc++abi: Pure virtual function called!";
# 1 run in 12-24 of plot_several_devices.py on the 2-core CI host, 6 in 30
# under load; twice in a row in stop 71's retry).  A core showed an unmap of a
# page-locked array completing during the runtime's teardown: runtime/
# transfer.py now unmaps them at exit (0 in 30 under the same load).  Such a
# run is still run once more.
INTEL_EXIT_ABORT = "Pure virtual function called!"


@pytest.mark.parametrize("script", GALLERY, ids=lambda p: p.name)
def test_gallery_example_runs(script, devices, tmp_path):
    _needs(script.name)
    for _ in range(2):
        proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(devices),
                              capture_output=True, text=True, timeout=LIMIT_S)
        if not (proc.returncode in (-6, 134) and INTEL_EXIT_ABORT in proc.stderr
                and devices[0].platform.startswith("Intel")):
            break
    assert proc.returncode == 0, f"{script.name}:\n{proc.stderr[-4000:]}"


def test_every_family_has_a_gallery_example():
    """Each family's estimators appear in some gallery script (issue 38)."""
    text = "\n".join(p.read_text() for p in GALLERY)
    for names in (["KMeans", "EnsembleKMeans", "MiniBatchKMeans"], ["GaussianMixture",
                  "FuzzyCMeans"], ["DBSCAN", "HDBSCAN"], ["linkage", "AgglomerativeClustering"], ["DeviceManager"],
                  ["LocalCluster"]):
        for name in names:
            assert re.search(rf"\b{name}\b", text), f"no gallery example uses {name}"


def test_readme_test_command_is_the_ci_command():
    """.ci/run runs exactly the README's test command (its header: keep the two in sync)."""
    command = "bash tools/setup.sh --test && bash tools/test.sh"
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"^```bash\n(.*?)^```", readme, flags=re.M | re.S)
    assert any(command in block.splitlines() for block in blocks)
    ci = [ln.strip() for ln in (REPO / ".ci" / "run").read_text().splitlines()
          if ln.strip() and not ln.lstrip().startswith("#")]
    assert ci[-1] == command


def test_readme_links_resolve():
    """Every relative link of the README names a file of the repository (anchors aside)."""
    readme = (REPO / "README.md").read_text()
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    assert links
    missing = [link for link in links if "://" not in link and not (REPO / link).exists()]
    assert not missing, missing
