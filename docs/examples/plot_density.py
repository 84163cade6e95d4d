"""
Density clustering: DBSCAN and HDBSCAN
======================================

:class:`oclclust.DBSCAN` and :class:`oclclust.HDBSCAN` find clusters of any
shape and leave the rows in no dense region as noise (label -1): here two
interleaved half moons, a blob and scattered noise, where k-means would cut
the moons in halves. DBSCAN takes one density (``eps``, ``min_samples``);
HDBSCAN finds clusters of different densities from ``min_cluster_size``
alone. Both give scikit-learn's labels.
"""
import matplotlib.pyplot as plt
import numpy as np

import oclclust as oc

rng = np.random.default_rng(6)
t = rng.uniform(0, np.pi, size=1_500)
moons = np.concatenate([np.c_[np.cos(t), np.sin(t)],
                        np.c_[1 - np.cos(t), 0.5 - np.sin(t)]]) * 3
blob = rng.normal([8, 3], 0.4, size=(500, 2))
noise = rng.uniform([-4, -3], [10, 5], size=(200, 2))
X = np.concatenate([moons + rng.normal(scale=0.15, size=moons.shape), blob, noise])

db = oc.DBSCAN(eps=0.3, min_samples=10).fit(X)
hd = oc.HDBSCAN(min_cluster_size=40).fit(X)
for name, model in (("DBSCAN", db), ("HDBSCAN", hd)):
    print(f"{name}: {model.labels_.max() + 1} clusters, "
          f"{np.count_nonzero(model.labels_ == -1)} noise rows")

fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for ax, name, model in zip(axes, ("DBSCAN(eps=0.3)", "HDBSCAN(min_cluster_size=40)"), (db, hd)):
    noise_rows = model.labels_ == -1
    ax.scatter(*X[~noise_rows].T, c=model.labels_[~noise_rows], s=3, cmap="tab10")
    ax.scatter(*X[noise_rows].T, c="lightgrey", s=3)
    ax.set_title(name)
plt.show()
