"""DBSCAN: ``dbscan.py`` the estimator, ``graph.py`` the eps-neighbourhood
graph of metrics the device does not compute, ``rules.py`` the labels
from a neighbourhood graph (core points, components, border points)."""
from .dbscan import DBSCAN

__all__ = ["DBSCAN"]
