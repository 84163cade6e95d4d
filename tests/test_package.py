"""A plain (non-editable) ``pip install .`` into a fresh virtual environment works.

The kernel sources (templates/, kernels_cl/) and devices.yaml sit at the top of
the repository; an installed oclclust must find its own copies inside
site-packages, not the checkout's.  The repository's packaging files are
copied to a temporary folder and installed from there into a new venv, whose
runtime dependencies (numpy, pyopencl, mako, pyyaml) are borrowed from the
environment running the tests; the installed package is then imported from a
neutral folder and fits a small KMeans.
"""
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = ["setup.cfg", "pyproject.toml", "README.md", "devices.yaml", "LICENSE",
           "oclclust", "templates", "kernels_cl"]

pytestmark = [pytest.mark.one_runtime,
              pytest.mark.skipif(not (REPO / "setup.cfg").is_file(),
                                 reason="not run from a source checkout")]


def _run(cmd, timeout=300, **kwargs):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_WARN_SCRIPT_LOCATION="1")
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                          timeout=timeout, env=env, **kwargs)


def _has(module):
    import importlib.util
    return importlib.util.find_spec(module) is not None


@pytest.fixture(scope="session")   # once per run, however pytest orders the tests
def installed(tmp_path_factory):
    """(venv python, its site-packages) with oclclust installed from a copy of the repo."""
    tmp = tmp_path_factory.mktemp("package")
    src = tmp / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        elif path.is_file():
            shutil.copy2(path, src / name)

    venv = tmp / "venv"
    proc = _run([sys.executable, "-m", "venv", venv])
    assert proc.returncode == 0, proc.stderr
    py = venv / "bin" / "python"
    site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
                .stdout.strip())
    # runtime dependencies from the test environment, after the venv's own packages
    outer = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "_outer_dependencies.pth").write_text("\n".join(outer) + "\n")

    cmd = [py, "-m", "pip", "install", "--no-deps", "-q"]
    if _has("setuptools") and _has("wheel"):   # build offline with what is here
        cmd.append("--no-build-isolation")
    proc = _run(cmd + [src])
    if proc.returncode and "No matching distribution found" in proc.stderr \
            and os.environ.get("CI") != "true":   # CI reaches PyPI: there it must work
        pytest.skip(f"the build requirements cannot be fetched here: {proc.stderr[-300:]}")
    assert proc.returncode == 0, f"pip install . failed:\n{proc.stdout}\n{proc.stderr}"
    shutil.rmtree(src)          # nothing may be found in the source copy afterwards
    return py, site, tmp


CHECK = textwrap.dedent("""
    import json, sys
    import numpy as np
    import oclclust, oclclust.runtime.resources as r
    from pathlib import Path
    X = np.concatenate([np.random.RandomState(0).normal(c, 0.3, (60, 3)) for c in (0, 5, 10)])
    km = oclclust.KMeans(3, random_state=0, devices=sys.argv[1]).fit(X.astype(np.float32))
    out = dict(file=oclclust.__file__, templates=r.template_dirs(),
               profiles=str(r.shipped_profiles_path()), n_iter=int(km.n_iter_),
               sizes=sorted(np.bincount(km.labels_).tolist()), devices=km.devices_,
               n_devices=len(oclclust.list_devices()))
    print(json.dumps(out))
""")


def test_installed_package_finds_its_kernels_and_profiles(installed, devices):
    py, site, tmp = installed
    neutral = tmp / "elsewhere"
    neutral.mkdir(exist_ok=True)
    proc = _run([py, "-c", CHECK, devices[0].platform], cwd=neutral)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    site = site.resolve()

    def inside(path):
        return Path(path).resolve().is_relative_to(site)
    assert inside(out["file"]), f"imported {out['file']}, not the installed package"
    templates, kernels = (Path(p) for p in out["templates"])
    assert inside(templates) and inside(kernels)
    assert (templates / "lloyd" / "lloyd_assign_accumulate.cl.mako").is_file()
    assert (templates / "prelude.cl.mako").is_file()
    assert sorted(p.relative_to(templates) for p in templates.rglob("*.cl.mako")) == \
        sorted(p.relative_to(REPO / "templates") for p in (REPO / "templates").rglob("*.cl.mako"))
    assert (kernels / "accumulate.cl").is_file()
    assert inside(out["profiles"]) and Path(out["profiles"]).is_file()
    assert out["sizes"] == [60, 60, 60] and out["n_iter"] >= 1
    assert out["devices"] and all(devices[0].platform in name for name in out["devices"])
    assert sum(out["devices"].values()) == 180


def test_installed_console_script(installed):
    py, _, tmp = installed
    script = py.parent / "oclclust"
    assert script.is_file()
    proc = _run([script, "devices", "-v"], cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "OpenCL devices:" in proc.stdout and "devices.yaml#0" in proc.stdout


def test_without_dask_every_fit_runs_and_nothing_asks_for_dask(devices):
    """The [dask] extra is optional: with dask and distributed not installed
    (an import of either fails, and is recorded) the package imports, every
    iterative estimator fits and predicts numpy rows, and no import of dask
    was even tried."""
    code = textwrap.dedent("""
        import sys
        import numpy as np
        tried = []

        class NoDask:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("dask", "distributed"):
                    tried.append(name)
                    raise ModuleNotFoundError(f"No module named {name!r}")
        sys.meta_path.insert(0, NoDask())
        import oclclust as oc
        devices = [p for p in oc.list_devices() if p.platform == sys.argv[1]][:1]
        X = np.random.RandomState(0).normal(size=(300, 3))
        for est in (oc.KMeans(3, n_init=2, random_state=0, devices=devices),
                    oc.MiniBatchKMeans(3, batch_size=64, random_state=0, devices=devices),
                    oc.EnsembleKMeans([2, 3], n_models=2, random_state=0, devices=devices),
                    oc.FuzzyCMeans(3, random_state=0, devices=devices),
                    oc.GaussianMixture(3, random_state=0, devices=devices)):
            assert est.fit(X).predict(X).shape == (300,)
        sys.exit(f"tried to import {tried}" if tried else 0)
    """)
    proc = subprocess.run([sys.executable, "-c", code, devices[0].platform],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


# ----------------------------------------------------------- the metadata
def test_every_algorithm_is_an_install_requirement():
    """scipy (HDBSCAN, DBSCAN, linkage, AgglomerativeClustering) is installed
    with oclclust, not by an extra; the optional features' packages only by
    their extras."""
    import importlib.metadata
    import re
    requires = importlib.metadata.requires("oclclust")
    plain = {re.split(r"[ <>=!~;\[]", r, maxsplit=1)[0].lower() for r in requires
             if "extra ==" not in r}
    assert plain == {"pyopencl", "numpy", "mako", "pyyaml", "scipy"}, requires
    extras = set(importlib.metadata.metadata("oclclust").get_all("Provides-Extra"))
    assert {"mpi", "dask", "progress", "plot", "formats", "test", "docs"} <= extras


def test_the_namespace_is_its_public_names():
    """__all__ lists every public name, each of which resolves; modules
    imported for the package's own use are not names of it."""
    import oclclust
    assert set(oclclust.ESTIMATORS) <= set(oclclust.__all__)
    assert {"linkage", "show_devices", "list_devices", "select_devices", "DeviceManager",
            "NoOpenCLError", "MissingExtraError", "kmeans_plusplus"} <= set(oclclust.__all__)
    for name in oclclust.__all__:
        assert getattr(oclclust, name).__name__ == name
    for leaked in ("importlib", "sys", "types"):
        assert not hasattr(oclclust, leaked), leaked
    assert set(oclclust.__all__) <= set(dir(oclclust))
    namespace = {}
    exec("from oclclust import *", namespace)
    assert set(oclclust.__all__) <= set(namespace)


def test_the_sdist_carries_the_licence_tests_and_docs(tmp_path):
    """The source distribution (setuptools' build_sdist from a copy of the
    checkout, as ``python -m build --sdist`` runs it): the package with its
    kernel sources and profiles, LICENSE, CHANGELOG.md, the tests and the
    documentation's sources, not a documentation build."""
    import tarfile
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", "*.pyc",
        ".pytest_cache", ".hypothesis"))
    code = "from setuptools import build_meta; print(build_meta.build_sdist('dist'))"
    proc = _run([sys.executable, "-c", code], cwd=src)
    if proc.returncode and "No module named 'setuptools'" in proc.stderr:
        pytest.skip("setuptools is not installed here")
    assert proc.returncode == 0, proc.stderr[-3000:]
    archive = src / "dist" / proc.stdout.strip().splitlines()[-1]
    with tarfile.open(archive) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
        licence = tar.extractfile(next(m for m in tar.getmembers()
                                       if m.name.endswith("/LICENSE"))).read().decode()
    assert licence.startswith("MIT License")
    for path in ("LICENSE", "CHANGELOG.md", "README.md", "devices.yaml", "setup.cfg",
                 "oclclust/__init__.py", "templates/prelude.cl.mako", "kernels_cl/accumulate.cl",
                 "tests/conftest.py", "tests/test_package.py", "docs/conf.py", "docs/index.rst",
                 "tools/setup.sh", "tools/docs.sh"):
        assert path in names, path
    tracked = {p.relative_to(REPO).as_posix() for p in (REPO / "tests").rglob("*.py")
               if "__pycache__" not in p.parts}
    assert tracked <= names
    assert not any(n.startswith(("docs/_build/", "docs/api/", "docs/auto_examples/"))
                   for n in names)
