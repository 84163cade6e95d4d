"""
Hierarchical clustering: scipy's linkage matrix
===============================================

:func:`oclclust.linkage` returns scipy's linkage matrix ``Z`` (the same
merges and heights as ``scipy.cluster.hierarchy.linkage``), so scipy's tools
read it: here its dendrogram, and ``fcluster`` to cut the tree.
:class:`oclclust.AgglomerativeClustering` cuts the same tree for you, as
scikit-learn's does.
"""
import matplotlib.pyplot as plt
import numpy as np
from scipy.cluster.hierarchy import dendrogram, fcluster, linkage

import oclclust as oc

rng = np.random.default_rng(2)
X = np.concatenate([rng.normal(c, 0.6, size=(40, 2)) for c in ([0, 0], [4, 4], [0, 5])])

Z = oc.linkage(X, method="ward")
print("equal to scipy's:", np.array_equal(Z[:, :2], linkage(X, "ward")[:, :2]),
      "heights within", np.abs(Z[:, 2] - linkage(X, "ward")[:, 2]).max())
cut = fcluster(Z, 3, criterion="maxclust")
print("three clusters:", np.bincount(cut)[1:])
hc = oc.AgglomerativeClustering(n_clusters=3, linkage="ward").fit(X)
print("AgglomerativeClustering's clusters:", np.bincount(hc.labels_),
      "the same partition:", len(set(zip(cut, hc.labels_))) == 3)

fig, ax = plt.subplots(figsize=(8, 4))
dendrogram(Z, ax=ax, no_labels=True, color_threshold=Z[-3, 2])
ax.set_title("ward linkage of 120 points")
plt.show()
