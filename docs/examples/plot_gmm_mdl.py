"""
Gaussian mixture with MDL order selection
=========================================

:class:`oclclust.GaussianMixture` with ``min_components`` fits a mixture of
``n_components``, then merges the closest pair of components again and again
down to ``min_components``, keeping the order of least description length
(MDL). The figure shows the MDL of each order and the chosen mixture.
"""
import matplotlib.pyplot as plt
import numpy as np

import oclclust as oc

rng = np.random.default_rng(1)
means = np.array([[-6, 0], [0, 5], [6, -1], [1, -6]])
X = np.concatenate([rng.multivariate_normal(m, np.eye(2) * s, size=2_000)
                    for m, s in zip(means, [1.0, 0.6, 1.5, 0.8])])

gmm = oc.GaussianMixture(n_components=8, min_components=1, covariance_type="full",
                         random_state=0).fit(X)
print(f"chosen: {gmm.n_components_} components")

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
orders, mdl = zip(*gmm.mdl_path_)   # (components, MDL) of every order tried
left.plot(orders, mdl, "o-")
left.set_xlabel("components")
left.set_ylabel("MDL")
right.scatter(X[:, 0], X[:, 1], c=gmm.predict(X), s=2, cmap="tab10")
right.scatter(*gmm.means_.T, c="black", marker="x", s=80)
right.set_title(f"{gmm.n_components_} components")
plt.show()
