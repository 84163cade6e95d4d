"""The package's layers: each sub-package imports only from the layers below it
(imports inside functions included), and the documented module paths of the
flat layout that came before still import."""
import ast
import importlib
from pathlib import Path

import pytest

import oclclust

pytestmark = pytest.mark.one_runtime   # host code only: one runtime runs it

PACKAGE = Path(oclclust.__file__).resolve().parent
LAYERS = ["runtime", "passes", "parallel", "cluster", "io", "cli", "compare"]   # lowest first;
# compare/ is an entry point (python -m oclclust.compare) over cli's compare


def modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def imported_modules(source, here):
    """The module paths (parts below oclclust, e.g. ["cluster", "kmeans",
    "lloyd_loop"], or a package's) that a module's *source* imports from
    (absolute or relative imports, at the top or inside functions); *here*:
    its package's parts below oclclust, e.g. ("runtime",)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = list(here[:len(here) - node.level + 1]) + \
                    (node.module.split(".") if node.module else [])
                found += [parts + [a.name] for a in node.names] if parts else \
                    [[a.name] for a in node.names]
            elif (node.module or "").startswith("oclclust."):
                found += [node.module.split(".")[1:] + [a.name] for a in node.names]
        elif isinstance(node, ast.Import):
            found += [a.name.split(".")[1:] for a in node.names
                      if a.name.startswith("oclclust.")]
    return [parts for parts in found if parts]


def imported_layers(source, here):
    """The layers that a module's *source* imports from (see imported_modules)."""
    return {parts[0] for parts in imported_modules(source, here) if parts[0] in LAYERS}


FAMILIES = sorted(p.name for p in (PACKAGE / "cluster").iterdir()
                  if (p / "__init__.py").is_file())


def family(parts):
    """The algorithm family (a package of cluster/) that module *parts*
    (below oclclust: a file's path, or an imported name's) belong to, or None."""
    if len(parts) > 1 and parts[0] == "cluster" and parts[1] in FAMILIES:
        return parts[1]
    return None


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_layer_imports_only_from_below(path):
    parts = path.relative_to(PACKAGE).parts
    if len(parts) == 1:
        assert parts[0] in ("__init__.py", "__main__.py"), f"{parts[0]} outside the layers"
        return
    assert parts[0] in LAYERS, f"{parts[0]}/ is not a layer"
    level = LAYERS.index(parts[0])
    imported = imported_layers(path.read_text(), parts[:-1])
    above = {layer for layer in imported if LAYERS.index(layer) > level}
    assert not above, f"{'/'.join(parts)} imports from the layers above it: {sorted(above)}"


def test_the_families_are_the_design_cards():
    assert FAMILIES == ["density", "hierarchy", "kmeans", "mixture"]


@pytest.mark.parametrize("path", [p for p in modules() if p.relative_to(PACKAGE).parts[0] ==
                                  "cluster"], ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_family_imports_no_other_family(path):
    """Inside cluster/, a family's package imports no other family's, and the
    modules the families share (cluster/*.py: the k-family base, seeding,
    the merge tree, the registry) import none: what two families share
    lives in a lower layer or among those shared modules."""
    parts = path.relative_to(PACKAGE).parts
    own = family(parts)
    imported = {family(m) for m in imported_modules(path.read_text(), parts[:-1])}
    others = sorted(imported - {own, None})
    assert not others, f"{'/'.join(parts)} imports the families {others}"


@pytest.mark.parametrize("source, here, families", [
    ("from ..kmeans.lloyd_shards import LloydShards", ("cluster", "mixture"), {"kmeans"}),
    ("from ...cluster.mixture import gmm", ("cluster", "kmeans"), {"mixture"}),
    ("def f():\n    from oclclust.cluster.hierarchy import linkage", ("cluster",), {"hierarchy"}),
    ("from .. import _base\nfrom ..inits import draw_centers", ("cluster", "kmeans"), set()),
    ("from . import mdl", ("cluster", "mixture"), {"mixture"}),
])
def test_the_family_check_reads_every_form_of_import(source, here, families):
    found = {family(m) for m in imported_modules(source, here)}
    assert found - {None} == families


@pytest.mark.parametrize("source, layers", [
    ("from ..passes import lloyd", {"passes"}),
    ("def f():\n    from ..cluster.kmeans import KMeans", {"cluster"}),
    ("from oclclust.io import shards", {"io"}),
    ("import oclclust.cli.main", {"cli"}),
    ("from .codegen import Spec\nfrom . import reduce", {"runtime"}),
])
def test_the_check_reads_every_form_of_import(source, layers):
    """The check is not vacuous: each way of writing an import is seen
    (from a module of runtime/)."""
    assert imported_layers(source, ("runtime",)) == layers


@pytest.mark.parametrize("path, names", [
    ("oclclust.mpi", ["load_shard", "RankError", "Ranks"]),
    ("oclclust.plots", ["plot_clusters"]),
    ("oclclust.modelio", ["save_model", "load_model"]),
    ("oclclust.cluster.kmeans", ["KMeans", "MiniBatchKMeans", "EnsembleKMeans"]),
    ("oclclust.cluster.minibatch", ["MiniBatchKMeans"]),
    ("oclclust.cluster.ensemble", ["EnsembleKMeans"]),
    ("oclclust.cluster.gmm", ["GaussianMixture"]),
    ("oclclust.cluster.cmeans", ["FuzzyCMeans"]),
    ("oclclust.cluster.dbscan", ["DBSCAN"]),
    ("oclclust.cluster.hdbscan", ["HDBSCAN"]),
    ("oclclust.cluster.hierarchical", ["linkage", "AgglomerativeClustering"]),
])
def test_documented_paths_of_the_flat_layout_still_import(path, names):
    module = importlib.import_module(path)
    for name in names:
        assert callable(getattr(module, name)), f"{path}.{name}"
        exec(f"from {path} import {name}", {})   # the form users write
