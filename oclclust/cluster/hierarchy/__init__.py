"""Hierarchical clustering: scipy's ``linkage`` (``linkage_matrix.py``: its Z) and
scikit-learn's AgglomerativeClustering (``agglomerative.py``) on a
device.  The merge tree they share with HDBSCAN is one level up
(cluster/merge_tree.py)."""
from .agglomerative import AgglomerativeClustering
from .linkage_matrix import linkage

__all__ = ["AgglomerativeClustering", "linkage"]
