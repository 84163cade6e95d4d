"""Density clustering: DBSCAN (``dbscan/``) and HDBSCAN (``hdbscan/``),
scikit-learn's estimators with their device passes (passes/dbscan.py,
passes/neighbours.py, passes/mst.py) and the host's trees."""
from .dbscan import DBSCAN
from .hdbscan import HDBSCAN

__all__ = ["DBSCAN", "HDBSCAN"]
