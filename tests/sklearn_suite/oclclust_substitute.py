"""pytest plugin: scikit-learn's own test modules with oclclust's estimators
in place of scikit-learn's.

Loaded with ``-p oclclust_substitute`` (this folder on PYTHONPATH) before
the test modules are imported, so their ``from sklearn.cluster import
KMeans`` binds ours; scikit-learn's own helpers that build an estimator
(``k_means``, ``dbscan``) find ours too.  The devices are those of
$OCLCLUST_TEST_PLATFORM (as the suite's), through $OCLCLUST_DEVICES.

Tests of scikit-learn's private internals (its Cython helpers, private
attributes of its estimators) cannot run against another implementation:
excluded.yaml names each with its reason, and they are deselected, never
skipped silently.  known_failures.yaml names what we do not do yet, each
with its reason: strict xfails, so one that starts passing fails the run
until it leaves the list.
"""
import os
from pathlib import Path

import pytest
import yaml

EXCLUDED = Path(__file__).with_name("excluded.yaml")
KNOWN = Path(__file__).with_name("known_failures.yaml")


def _substitute():
    import sklearn.cluster
    import sklearn.cluster._dbscan
    import sklearn.cluster._hdbscan.hdbscan
    import sklearn.cluster._kmeans
    import sklearn.mixture
    import sklearn.mixture._gaussian_mixture

    import oclclust as oc
    for module, names in (
            (sklearn.cluster, ("KMeans", "MiniBatchKMeans", "DBSCAN", "HDBSCAN")),
            (sklearn.cluster._kmeans, ("KMeans", "MiniBatchKMeans")),
            (sklearn.cluster._dbscan, ("DBSCAN",)),
            (sklearn.cluster._hdbscan.hdbscan, ("HDBSCAN",)),
            (sklearn.mixture, ("GaussianMixture",)),
            (sklearn.mixture._gaussian_mixture, ("GaussianMixture",))):
        for name in names:
            setattr(module, name, getattr(oc, name))


def pytest_configure(config):
    platform = os.environ.get("OCLCLUST_TEST_PLATFORM")
    if platform:
        os.environ["OCLCLUST_DEVICES"] = platform
    _substitute()
    config.addinivalue_line("markers", "oclclust_excluded: a test of scikit-learn's internals")


def _rules(path):
    """{test name: reason} of a YAML file of {module: {test name: reason}};
    a name "module.py::test" covers every parametrization of the test, a
    name with "[params]" only that one."""
    entries = yaml.safe_load(path.read_text()) or {}
    return {name: reason for module in entries.values() for name, reason in module.items()}


def _rule(rules, nodeid):
    """The reason of the rule that covers test *nodeid*, or None."""
    name = nodeid.split("/")[-1]
    return rules.get(name) or rules.get(name.split("[")[0])


def pytest_collection_modifyitems(config, items):
    excluded, known = _rules(EXCLUDED), _rules(KNOWN)
    keep, dropped = [], []
    for item in items:
        if _rule(excluded, item.nodeid):
            dropped.append(item)
            continue
        reason = _rule(known, item.nodeid)
        if reason:   # strict: a test that starts passing must leave the list
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
        keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(
        f"oclclust_substitute: scikit-learn's estimators replaced by oclclust's; "
        f"{len(_rules(EXCLUDED))} test(s) of scikit-learn's internals left out "
        f"({EXCLUDED.name}), {len(_rules(KNOWN))} known failure(s) ({KNOWN.name})")
