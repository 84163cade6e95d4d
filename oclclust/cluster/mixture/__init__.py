"""Soft clustering: GaussianMixture (EM, every covariance type, with MDL
order selection by merging) and FuzzyCMeans, each with the sharded pass
that runs it over a fit's rows.

- ``gmm.py``: GaussianMixture; ``mdl.py``: its M-step and the MDL merge;
  ``gmm_shards.py``: the E-step pass over every device, chunk and rank;
- ``cmeans.py``: FuzzyCMeans; ``cmeans_shards.py``: its pass and the
  memberships it leaves on the devices.
"""
from .cmeans import FuzzyCMeans
from .gmm import GaussianMixture

__all__ = ["FuzzyCMeans", "GaussianMixture"]
