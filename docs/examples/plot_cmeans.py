"""
Fuzzy c-means: soft memberships
===============================

:class:`oclclust.FuzzyCMeans` gives every row a membership in every cluster
(``u_``, rows summing to 1) rather than one label. Rows between two clusters
share their membership; the figure shades each row by its largest
membership, so the borders between clusters show as pale bands.
"""
import matplotlib.pyplot as plt
import numpy as np

import oclclust as oc

rng = np.random.default_rng(5)
centres = np.array([[-4, 0], [4, 0], [0, 6]])
X = (centres[rng.integers(3, size=6_000)] + rng.normal(scale=1.6, size=(6_000, 2)))

fcm = oc.FuzzyCMeans(n_clusters=3, m=2.0, random_state=0).fit(X)
strength = fcm.u_.max(axis=1)
print(f"{fcm.n_iter_} iterations; rows with no membership above 0.6: "
      f"{np.count_nonzero(strength < 0.6)}")

fig, ax = plt.subplots(figsize=(6, 5))
colours = plt.get_cmap("tab10")(fcm.labels_)
colours[:, 3] = (strength - strength.min()) / np.ptp(strength)   # alpha: certainty
ax.scatter(*X.T, c=colours, s=3)
ax.scatter(*fcm.cluster_centers_.T, c="black", marker="x", s=80)
ax.set_title("fuzzy c-means, m=2: faded where memberships are shared")
plt.show()
