"""
Ensemble k-means: many models in one pass
=========================================

:class:`oclclust.EnsembleKMeans` fits ``n_models`` k-means models at once,
with every model's distances computed in the same pass over the rows. With a
list of cluster counts it fits several k side by side: here k = 2 ... 9, four
restarts each, and the elbow of the best inertia per k.
"""
import matplotlib.pyplot as plt
import numpy as np

import oclclust as oc

rng = np.random.default_rng(3)
centres = rng.uniform(-8, 8, size=(5, 3))
X = (centres[rng.integers(5, size=10_000)] + rng.normal(size=(10_000, 3))).astype(np.float32)

ks = np.repeat(np.arange(2, 10), 4)
ens = oc.EnsembleKMeans(n_clusters=list(ks), n_models=len(ks), random_state=0).fit(X)
best = [ens.inertias_[ks == k].min() for k in np.unique(ks)]

fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(np.unique(ks), best, "o-")
ax.set_xlabel("k")
ax.set_ylabel("best inertia of 4 restarts")
ax.set_title(f"{len(ks)} models in one fit")
plt.show()
