"""HDBSCAN (scikit-learn's, and its ``_hdbscan`` package's parts):
``hdbscan.py`` the estimator, ``metrics.py`` which metric runs where,
``host_mst.py`` the mutual-reachability MST of precomputed and sparse
distances on the host, ``tree.py`` the single-linkage tree, stabilities,
selection and labels, ``condensed.py`` the condensed tree, ``traversal.py``
scipy's walks of their trees."""
from .hdbscan import HDBSCAN

__all__ = ["HDBSCAN"]
