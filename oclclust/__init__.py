"""oclclust: portable OpenCL clustering on any OpenCL device."""
import importlib

from .codegen import KernelBuildError
from .devices import DeviceProfile, list_devices, select_devices, sub_devices
from .kmeans import KMeans
from .kmeanspp import kmeans_plusplus
from .manager import DeviceFailure, DeviceManager

__version__ = "0.1.0"

# estimators of their own modules, imported on first use (a fast `import oclclust`)
_LAZY = {
    "EnsembleKMeans": "ensemble",
    "FuzzyCMeans": "cmeans",
    "GaussianMixture": "gmm",
    "AgglomerativeClustering": "hierarchical",
    "linkage": "hierarchical",
}


def __getattr__(name):
    if name in _LAZY:
        try:
            module = importlib.import_module(f".{_LAZY[name]}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{_LAZY[name]}":
                raise
            raise AttributeError(f"module 'oclclust' has no attribute {name!r}") from exc
        return getattr(module, name)
    raise AttributeError(f"module 'oclclust' has no attribute {name!r}")


__all__ = ["DeviceFailure", "DeviceManager", "DeviceProfile", "KMeans", "KernelBuildError",
           "kmeans_plusplus", "list_devices", "select_devices", "sub_devices"]
