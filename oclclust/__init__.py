"""oclclust: portable OpenCL clustering (k-means on any OpenCL device)."""
from .codegen import KernelBuildError
from .devices import DeviceProfile, list_devices, select_devices, sub_devices
from .kmeans import KMeans
from .kmeanspp import kmeans_plusplus
from .manager import DeviceFailure, DeviceManager

__version__ = "0.1.0"
__all__ = ["DeviceFailure", "DeviceManager", "DeviceProfile", "KMeans", "KernelBuildError",
           "kmeans_plusplus", "list_devices", "select_devices", "sub_devices"]
