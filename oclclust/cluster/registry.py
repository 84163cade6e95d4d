"""The estimators, one registry: the package's names, model files and the
command line all read it.  Each is imported on first use (a fast
``import oclclust``)."""
import importlib
from typing import NamedTuple


class Entry(NamedTuple):
    module: str       # its module below oclclust.cluster (family.module)
    algorithm: str    # its name on the command line (``--algorithm``)
    size_param: str   # its parameter for the number of clusters (``-k``)


ESTIMATORS = {
    "KMeans": Entry("kmeans.kmeans", "kmeans", "n_clusters"),
    "MiniBatchKMeans": Entry("kmeans.minibatch", "minibatch", "n_clusters"),
    "EnsembleKMeans": Entry("kmeans.ensemble", "ensemble", "n_clusters"),
    "FuzzyCMeans": Entry("mixture.cmeans", "cmeans", "n_clusters"),
    "GaussianMixture": Entry("mixture.gmm", "gmm", "n_components"),
    "AgglomerativeClustering": Entry("hierarchy.agglomerative", "hierarchical", "n_clusters"),
    # no number of clusters: -k is the smallest cluster it keeps
    "HDBSCAN": Entry("density.hdbscan.hdbscan", "hdbscan", "min_cluster_size"),
    "DBSCAN": Entry("density.dbscan.dbscan", "dbscan", "min_samples"),
}
# algorithm -> (estimator class name, its parameter for the number of clusters)
ALGORITHMS = {e.algorithm: (name, e.size_param) for name, e in ESTIMATORS.items()}


def estimator_class(name):
    """The estimator class *name* (KeyError if there is none)."""
    return getattr(importlib.import_module(f"{__package__}.{ESTIMATORS[name].module}"), name)
