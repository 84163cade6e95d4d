"""
k-means on Gaussian blobs
=========================

Fits :class:`oclclust.KMeans` to 20,000 points drawn around eight centres,
then draws each point in its cluster's colour and the fitted centres as
crosses. From the same initial centres, scikit-learn's KMeans gives the
same model (compared at the end).
"""
import matplotlib.pyplot as plt
import numpy as np

import oclclust as oc

rng = np.random.default_rng(0)
centres = rng.uniform(-10, 10, size=(8, 2))
X = (centres[rng.integers(8, size=20_000)] + rng.normal(size=(20_000, 2))).astype(np.float32)

km = oc.KMeans(n_clusters=8, random_state=0).fit(X)
print(f"{km.n_iter_} iterations, inertia {km.inertia_:.1f}, rows per device {km.devices_}")

fig, ax = plt.subplots(figsize=(6, 5))
ax.scatter(X[:, 0], X[:, 1], c=km.labels_, s=2, cmap="tab10")
ax.scatter(*km.cluster_centers_.T, c="black", marker="x", s=80)
ax.set_title("oclclust.KMeans, k=8")
plt.show()

# %%
# The same fit by scikit-learn, from the centres oclclust started from
# (``init=`` an array), gives the same centres.
try:
    from sklearn.cluster import KMeans as SKKMeans
except ImportError:
    SKKMeans = None
if SKKMeans is not None:
    start = X[:8].astype(np.float64)
    ours = oc.KMeans(8, init=start, n_init=1, dtype="float64").fit(X)
    theirs = SKKMeans(8, init=start, n_init=1, algorithm="lloyd").fit(X.astype(np.float64))
    print("largest centre difference:", np.abs(ours.cluster_centers_ -
                                              theirs.cluster_centers_).max())
