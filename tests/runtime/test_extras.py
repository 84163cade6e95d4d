"""Optional packages (runtime/extras.py): a feature used without its
package raises MissingExtraError, an ImportError naming the extra that
installs it; every extra named is one the package declares."""
import importlib.metadata
import sys

import pytest

from oclclust.runtime.extras import EXTRAS, MissingExtraError, install_hint, require

pytestmark = pytest.mark.one_runtime   # host code only: one runtime runs it


@pytest.mark.parametrize("module,extra", [("h5py", "formats"), ("mpi4py.MPI", "mpi"),
                                          ("distributed", "dask"), ("dask.array", "dask"),
                                          ("matplotlib.pyplot", "plot"), ("tqdm", "progress")])
def test_a_missing_package_names_its_extra(module, extra, monkeypatch):
    package = module.partition(".")[0]
    for name in {package, module}:   # its import fails, as if not installed
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingExtraError) as caught:
        require(module, "doing it")
    assert isinstance(caught.value, ImportError) and caught.value.name == package
    assert str(caught.value) == f"doing it requires {package}: pip install 'oclclust[{extra}]'"


def test_an_installed_package_is_returned():
    pytest.importorskip("tqdm")
    assert require("tqdm", "progress bars") is sys.modules["tqdm"]


def test_a_package_that_fails_inside_says_so_itself(monkeypatch, tmp_path):
    """A package that is there but imports a module that is not (its own
    dependency) is not reported as the missing extra."""
    (tmp_path / "tqdm").mkdir()
    (tmp_path / "tqdm" / "__init__.py").write_text("import no_such_module_here\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "tqdm", raising=False)
    with pytest.raises(ModuleNotFoundError) as caught:
        require("tqdm", "progress bars")
    assert not isinstance(caught.value, MissingExtraError)
    assert caught.value.name == "no_such_module_here"


def test_only_optional_packages_are_required():
    with pytest.raises(KeyError, match="numpy"):
        require("numpy", "arrays")


def _installed():
    try:
        return importlib.metadata.metadata("oclclust") is not None
    except importlib.metadata.PackageNotFoundError:
        return False


# (the GPU host runs the suite from the source tree, where no metadata is installed;
# tools/setup.sh installs the package, so CI runs it)
@pytest.mark.skipif(not _installed(), reason="oclclust is not installed (a source tree)")
def test_every_extra_named_is_declared_by_the_package():
    declared = set(importlib.metadata.metadata("oclclust").get_all("Provides-Extra"))
    assert set(EXTRAS.values()) <= declared
    requires = importlib.metadata.requires("oclclust")
    for package, extra in EXTRAS.items():
        if package == "cloudpickle":   # comes with dask and distributed
            continue
        assert any(r.startswith(package) and f'extra == "{extra}"' in r for r in requires), \
            (package, extra)
    assert install_hint("h5py") == "pip install 'oclclust[formats]'"
