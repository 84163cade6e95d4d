"""``import oclclust`` imports no optional or heavy package (scikit-learn,
scipy, Dask, MPI, plotting, file formats, Mako), in a fresh process; every
public name still resolves, the estimators with scikit-learn's base classes
and exceptions where it is installed."""
import json
import subprocess
import sys

import pytest

import oclclust

pytestmark = pytest.mark.one_runtime   # host code only: one runtime runs it

# what a fit needs no sooner than its estimator's module (scikit-learn, for
# the base classes), its kernels' rendering (mako), or never (the rest)
NOT_AT_IMPORT = ["sklearn", "scipy", "dask", "distributed", "mpi4py", "matplotlib", "h5py",
                 "flowio", "tqdm", "pandas", "mako", "pygments", "oclclust.io", "oclclust.cli",
                 "oclclust.parallel.dask", "oclclust.cluster.kmeans"]


def fresh(code):
    """What *code* prints (JSON) in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_oclclust_imports_no_heavy_module():
    loaded = fresh("import json, sys, oclclust; print(json.dumps(sorted(sys.modules)))")
    heavy = [name for name in loaded if name.partition(".")[0] in NOT_AT_IMPORT
             or any(name == m or name.startswith(m + ".") for m in NOT_AT_IMPORT)]
    assert heavy == []


@pytest.mark.parametrize("name", oclclust.__all__)
def test_every_public_name_resolves_in_a_fresh_process(name):
    assert fresh(f"import json, oclclust; print(json.dumps(callable(oclclust.{name})))")


def test_the_estimators_are_scikit_learns_where_it_is_installed():
    pytest.importorskip("sklearn")
    from sklearn.base import BaseEstimator
    from sklearn.exceptions import NotFittedError

    from oclclust.runtime import validation
    assert validation.NotFittedError is NotFittedError
    assert issubclass(oclclust.KMeans, BaseEstimator)
    with pytest.raises(NotFittedError):
        oclclust.KMeans(2).predict([[0.0, 1.0]])


def test_without_scikit_learn_the_names_are_oclclusts_own():
    """scikit-learn blocked in a fresh process: the package and its
    estimators import and NotFittedError is oclclust's."""
    found = fresh("import json, sys\n"
                  "sys.modules['sklearn'] = None\n"
                  "import oclclust\n"
                  "from oclclust.runtime.validation import NotFittedError\n"
                  "print(json.dumps([oclclust.KMeans.__name__,\n"
                  "                  f'{NotFittedError.__module__}.{NotFittedError.__name__}',\n"
                  "                  issubclass(NotFittedError, ValueError),\n"
                  "                  sys.modules['sklearn'] is None]))")
    assert found == ["KMeans", "oclclust.runtime.validation.NotFittedError", True, True]
