"""The k-means family: KMeans (dense and sparse rows, spherical), its
mini-batch form and the ensemble of many k-means models, with their Lloyd
loop and the sharded passes that run it over a fit's rows.

Where each part is:

- ``kmeans.py``: KMeans; ``sparse.py``: its fit on scipy.sparse rows;
- ``lloyd_loop.py``: the loop every k-means fit runs, over a backend
  protocol; ``lloyd_shards.py``: the Lloyd pass over every device, chunk
  and rank (the backend's device side);
- ``minibatch.py``: MiniBatchKMeans; ``minibatch_rows.py``: where its
  batches' rows come from; ``minibatch_sums.py``: the batches' running
  sums; ``sampling.py``: its weighted draws of rows;
- ``ensemble.py``: EnsembleKMeans (and KMeans' n_init > 1);
  ``ensemble_shards.py``: the ensemble's pass over the shards.

The seeding (k-means++, k-means||) and the spherical helpers are shared
with the other k-family estimators, one level up (cluster/inits.py,
cluster/spherical.py).
"""
from .ensemble import EnsembleKMeans
from .kmeans import KMeans
from .minibatch import MiniBatchKMeans
from ..inits import kmeans_plusplus

__all__ = ["EnsembleKMeans", "KMeans", "MiniBatchKMeans", "kmeans_plusplus"]
