"""Every public name has numpydoc sections, and its examples run (issue 38).

The public names are those the API pages document (docs/conf.py's
public_names: ``oclclust.__all__``, the estimators, ``linkage``).  A class
has Parameters (every constructor argument), Attributes, See Also and
Examples; an exception a summary and See Also; a function Parameters (every
argument), Returns, See Also and Examples.  Every public method oclclust
defines on them (scikit-learn's own are scikit-learn's to document) has its
Parameters (every argument) and Returns.  The Examples are doctests, run
here on the platform under test.
"""
import doctest
import inspect

import pytest

import oclclust as oc

pytestmark = pytest.mark.one_runtime   # the docstrings themselves: one runtime checks them

docscrape = pytest.importorskip("numpydoc.docscrape")   # the [docs] extra

NAMES = sorted(set(oc.__all__) | set(oc.ESTIMATORS) | {"linkage"})
# made by list_devices / select_devices, never by hand: its fields are Attributes
NO_PARAMETERS = {"DeviceProfile"}
RETURNS_NOTHING = {("DeviceManager", "drop")}


def parsed(obj):
    return docscrape.NumpyDocString(inspect.getdoc(obj) or "")


def documented(section):
    """The names a Parameters / Attributes section documents ("a, b" gives both)."""
    return {name.strip().lstrip("*") for entry in section for name in entry.name.split(",")}


def arguments(function, skip=("self",)):
    return [name.lstrip("*") for name, p in inspect.signature(function).parameters.items()
            if name not in skip]


def own_methods(cls):
    """The public methods oclclust defines on *cls* or its oclclust bases."""
    for name, member in inspect.getmembers(cls, inspect.isfunction):
        if not name.startswith("_") and member.__module__.startswith("oclclust"):
            yield name, member


def test_public_names_are_listed():
    assert {"KMeans", "MiniBatchKMeans", "EnsembleKMeans", "FuzzyCMeans", "GaussianMixture",
            "AgglomerativeClustering", "linkage", "DBSCAN", "HDBSCAN", "DeviceManager",
            "list_devices"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_sections(name):
    obj = getattr(oc, name)
    doc = parsed(obj)
    assert doc["Summary"], f"{name}: no summary line"
    assert doc["See Also"], f"{name}: no See Also section"
    if isinstance(obj, type) and issubclass(obj, Exception):
        return
    assert doc["Examples"], f"{name}: no Examples section"
    if isinstance(obj, type):
        assert doc["Attributes"], f"{name}: no Attributes section"
        if name not in NO_PARAMETERS:
            missing = set(arguments(obj.__init__)) - documented(doc["Parameters"])
            assert not missing, f"{name}: parameters without a description: {sorted(missing)}"
    else:
        missing = set(arguments(obj, ())) - documented(doc["Parameters"])
        assert not missing, f"{name}: parameters without a description: {sorted(missing)}"
        assert doc["Returns"], f"{name}: no Returns section"


@pytest.mark.parametrize("name", [n for n in NAMES if isinstance(getattr(oc, n), type)])
def test_method_sections(name):
    """fit, predict, transform, score, partial_fit, ... (cluster/docstrings.py
    writes the standard methods' sections once for every estimator)."""
    methods = dict(own_methods(getattr(oc, name)))
    if name in oc.ESTIMATORS:
        assert "fit" in methods and "fit_predict" in dir(getattr(oc, name))
    for method, function in methods.items():
        doc = parsed(function)
        assert doc["Summary"], f"{name}.{method}: no docstring"
        missing = set(arguments(function)) - documented(doc["Parameters"])
        assert not missing, f"{name}.{method}: parameters without a description: " \
                            f"{sorted(missing)}"
        if (name, method) not in RETURNS_NOTHING:
            assert doc["Returns"], f"{name}.{method}: no Returns section"


def test_estimators_share_the_standard_entries():
    """The shared entries reach each estimator once, after its own."""
    for name in oc.ESTIMATORS:
        doc = parsed(getattr(oc, name))
        params = [n for entry in doc["Parameters"] for n in entry.name.split(", ")]
        assert len(params) == len(set(params)), f"{name}: a parameter described twice"
        assert "kernels_" in documented(doc["Attributes"])
    assert "sample_weight" in documented(parsed(oc.KMeans.fit)["Parameters"])
    assert "sample_weight" not in documented(parsed(oc.GaussianMixture.fit)["Parameters"])


@pytest.mark.parametrize("name", NAMES)
def test_examples_run(name, devices, monkeypatch):
    """Each name's Examples (its class's and methods') as doctests, on the
    platform under test."""
    monkeypatch.setenv("OCLCLUST_DEVICES", devices[0].platform)
    obj = getattr(oc, name)
    tests = [t for t in doctest.DocTestFinder().find(obj, name, globs={}) if t.examples]
    if not (isinstance(obj, type) and issubclass(obj, Exception)):
        assert tests, f"{name}: no examples"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
