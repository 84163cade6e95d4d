"""oclclust: portable OpenCL clustering on any OpenCL device.

The layers, each importing only from those before it: ``runtime`` (devices,
profiles, kernel generation), ``passes`` (one module per device pass),
``parallel`` (the devices of a host, MPI ranks), ``cluster`` (the
estimators, one package per family), ``io`` (data and model files, plots) and ``cli``.
"""
import importlib as _importlib   # (underscored: not names of the package)
import sys as _sys
import types as _types

from . import passes  # noqa: F401  (declares every pass's devices.yaml terms)
from .cluster.inits import kmeans_plusplus
from .cluster.registry import ESTIMATORS, estimator_class
from .cluster.warm_up import warm_up
from .parallel.manager import DeviceFailure, DeviceManager
from .runtime.codegen import KernelBuildError
from .runtime.device_report import show_devices
from .runtime.devices import (DeviceProfile, NoOpenCLError, list_devices, select_devices,
                              sub_devices)
from .runtime.extras import MissingExtraError

__version__ = "0.1.0"


def __getattr__(name):
    # the estimators (and scipy's linkage), imported on first use: a fast `import oclclust`
    # (the estimators' modules import scikit-learn's base classes where it is installed)
    if name in ESTIMATORS:
        return estimator_class(name)
    if name == "linkage":
        return _importlib.import_module(f"{__name__}.cluster.hierarchy.linkage_matrix").linkage
    raise AttributeError(f"module 'oclclust' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


class _FormerModule(_types.ModuleType):
    """A module path of an earlier layout (``oclclust.mpi``, ``oclclust.plots``,
    ``oclclust.modelio``; the flat ``oclclust.cluster.gmm`` and the other
    estimators' modules before the family packages): its names, looked up in
    the modules that hold them now, imported on first use."""

    def __init__(self, name, homes):
        super().__init__(name)
        self._homes = homes

    def __getattr__(self, attr):
        for home in self._homes:
            module = _importlib.import_module(f"{__name__}.{home}")
            if hasattr(module, attr):
                return getattr(module, attr)
        raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")


FORMER_MODULES = {
    "mpi": ("parallel.comm", "io.shards"), "plots": ("io.plots",), "modelio": ("io.modelio",),
    "cluster.minibatch": ("cluster.kmeans.minibatch",),
    "cluster.ensemble": ("cluster.kmeans.ensemble",),
    "cluster.gmm": ("cluster.mixture.gmm",),
    "cluster.cmeans": ("cluster.mixture.cmeans",),
    "cluster.dbscan": ("cluster.density.dbscan.dbscan",),
    "cluster.hdbscan": ("cluster.density.hdbscan.hdbscan",),
    "cluster.hierarchical": ("cluster.hierarchy.linkage_matrix",
                             "cluster.hierarchy.agglomerative"),
}
for _old, _homes in FORMER_MODULES.items():
    _sys.modules.setdefault(f"{__name__}.{_old}", _FormerModule(f"{__name__}.{_old}", _homes))
del _old, _homes

# every public name: the estimators and linkage are imported on first use (__getattr__)
__all__ = sorted(["DeviceFailure", "DeviceManager", "DeviceProfile", "KernelBuildError",
                  "MissingExtraError", "NoOpenCLError", "kmeans_plusplus", "linkage",
                  "list_devices", "select_devices", "show_devices", "sub_devices", "warm_up",
                  *ESTIMATORS])
