"""
A fit on a Dask cluster
=======================

With a ``distributed.Client`` active, ``fit`` takes a dask array: each block
of rows is uploaded once to the devices of the worker holding it, each pass
sends a small task per block, and only the statistics come back. The model
is the one a numpy fit of the same rows gives. Here a local cluster whose
workers are threads of this process stands for a real one
(``Client("scheduler:8786")``: the same code).
"""
import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster

import oclclust as oc

cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                       dashboard_address=None)
client = Client(cluster)

centres = np.random.default_rng(8).uniform(-10, 10, size=(5, 4))
labels = da.random.RandomState(8).randint(0, 5, size=40_000, chunks=10_000)
rows = da.random.RandomState(9).normal(size=(40_000, 4), chunks=(10_000, 4))
X = rows + da.from_array(centres)[labels]          # 4 blocks, made on the workers

km = oc.KMeans(5, random_state=0).fit(X)           # the passes run beside the blocks
local = oc.KMeans(5, random_state=0).fit(X.compute())
print("km.labels_ is a dask array:", isinstance(km.labels_, da.Array))
print("largest centre difference from the numpy fit:",
      np.abs(km.cluster_centers_ - local.cluster_centers_).max())

sizes = np.bincount(km.predict(X).compute(), minlength=5)   # computed on the workers
client.close()
cluster.close()

fig, ax = plt.subplots(figsize=(5, 3))
ax.bar(range(5), sizes)
ax.set_xlabel("cluster")
ax.set_ylabel("rows")
ax.set_title("KMeans on 4 blocks of a dask array")
plt.show()
