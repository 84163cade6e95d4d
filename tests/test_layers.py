"""The package's layers: each sub-package imports only from the layers below it
(imports inside functions included), and the documented module paths of the
flat layout that came before still import."""
import ast
import importlib
from pathlib import Path

import pytest

import oclclust

PACKAGE = Path(oclclust.__file__).resolve().parent
LAYERS = ["runtime", "passes", "parallel", "cluster", "io", "cli"]   # lowest first


def modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def imported_layers(source, here):
    """The layers that a module's *source* imports from (absolute or relative
    imports, at the top or inside functions); *here*: its package's parts
    below oclclust, e.g. ("runtime",)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = list(here[:len(here) - node.level + 1]) + \
                    (node.module.split(".") if node.module else [])
                names = [parts] if parts else [[a.name] for a in node.names]
            elif (node.module or "").startswith("oclclust."):
                names = [node.module.split(".")[1:]]
            else:
                continue
        elif isinstance(node, ast.Import):
            names = [a.name.split(".")[1:] for a in node.names
                     if a.name.startswith("oclclust.")]
        else:
            continue
        found |= {parts[0] for parts in names if parts and parts[0] in LAYERS}
    return found


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
])
def test_documented_paths_of_the_flat_layout_still_import(path, names):
    module = importlib.import_module(path)
    for name in names:
        assert callable(getattr(module, name)), f"{path}.{name}"
