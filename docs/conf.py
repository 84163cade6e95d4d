"""Sphinx configuration of the oclclust documentation.

Built with warnings as errors by tools/test.sh (``python -m sphinx -W``).
The API reference has one page per public name, written here at every
build from the package's own lists (``oclclust.__all__``, the estimator
registry, the documented modules), so a new public name gets its page
without anyone remembering to add it.  The examples in docs/examples run
at every build (sphinx-gallery) and their figures are kept.
"""
import os
from pathlib import Path

import oclclust

HERE = Path(__file__).resolve().parent
project = "oclclust"
author = "the oclclust developers"
copyright = "2026, " + author
version = release = oclclust.__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.intersphinx", "numpydoc",
              "sphinx_gallery.gen_gallery"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
autodoc_member_order = "bysource"
autodoc_typehints = "none"
numpydoc_show_class_members = True
numpydoc_show_inherited_class_members = True
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()
intersphinx_mapping = {}

# the examples fit on every device unless the build says otherwise (tools/test.sh
# points them at one CPU runtime)
os.environ.setdefault("OCLCLUST_DEVICES", "all")
sphinx_gallery_conf = {
    "examples_dirs": str(HERE / "examples"),
    "gallery_dirs": str(HERE / "auto_examples"),
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
}
exclude_patterns += ["examples/README.rst"]

# ---------------------------------------------------------------- the API pages
FUNCTIONS = {"linkage": "oclclust.linkage"}
MODULES = ["oclclust.io.datafiles", "oclclust.io.modelio", "oclclust.io.shards",
           "oclclust.io.plots", "oclclust.parallel.comm", "oclclust.parallel.dask",
           "oclclust.runtime.columns", "oclclust.cluster.checkpoint"]


def public_names():
    """(name, directive, target) of every public name of the package."""
    names = sorted(set(oclclust.__all__) | set(oclclust.ESTIMATORS) | set(FUNCTIONS))
    for name in names:
        obj = getattr(oclclust, name)
        kind = "autoclass" if isinstance(obj, type) else "autofunction"
        yield name, kind, FUNCTIONS.get(name, f"oclclust.{name}")


def write_api_pages(app):
    out = HERE / "api"
    out.mkdir(exist_ok=True)
    entries = []
    for name, kind, target in public_names():
        options = "   :members:\n   :inherited-members:\n" if kind == "autoclass" else ""
        page = f"{name}\n{'=' * len(name)}\n\n.. {kind}:: {target}\n{options}"
        _write(out / f"{name}.rst", page)
        entries.append(f"api/{name}")
    for module in MODULES:
        page = f"{module}\n{'=' * len(module)}\n\n.. automodule:: {module}\n   :members:\n"
        _write(out / f"{module}.rst", page)
        entries.append(f"api/{module}")
    toc = "\n".join(f"   {e}" for e in entries)
    _write(HERE / "api.rst", "API reference\n=============\n\nEvery public name of "
           "``oclclust``, and the modules users import from.\n\n"
           f".. toctree::\n   :maxdepth: 1\n\n{toc}\n")


def _write(path, text):
    """Writes *text* unless the file holds it already (Sphinx rebuilds what changed)."""
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def skip_sklearn_members(app, what, name, obj, skip, options):
    """Members the estimators inherit from scikit-learn's base classes
    (get_params, set_output, the metadata-routing setters) are documented
    by scikit-learn, in its own cross-references."""
    if getattr(obj, "__module__", None) and obj.__module__.startswith("sklearn."):
        return True
    return None


def setup(app):
    app.connect("builder-inited", write_api_pages)
    app.connect("autodoc-skip-member", skip_sklearn_members)
