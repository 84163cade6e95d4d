"""
Mini-batch k-means on a stream
==============================

:class:`oclclust.MiniBatchKMeans` learns from chunks of rows as they come:
``partial_fit`` takes one chunk at a time (rows read from a file or a socket,
say), each assigned on the devices, and the centres follow the stream. Its
``fit`` on all the rows at once draws scikit-learn's batches from the same
``random_state``.
"""
import matplotlib.pyplot as plt
import numpy as np

import oclclust as oc

rng = np.random.default_rng(4)
centres = rng.uniform(-10, 10, size=(6, 2))


def chunk(n=2_000):
    """The next rows of the stream."""
    return (centres[rng.integers(6, size=n)] + rng.normal(size=(n, 2))).astype(np.float32)


mbk = oc.MiniBatchKMeans(n_clusters=6, random_state=0)
held_out = chunk()
scores = []
for _ in range(20):
    mbk.partial_fit(chunk())
    scores.append(-mbk.score(held_out) / len(held_out))
print(f"after 20 chunks: {mbk.n_steps_} steps, mean squared distance {scores[-1]:.3f}")

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
left.plot(np.arange(1, 21), scores, "o-")
left.set_xlabel("chunks seen")
left.set_ylabel("mean squared distance, held-out rows")
right.scatter(*held_out.T, c=mbk.predict(held_out), s=2, cmap="tab10")
right.scatter(*mbk.cluster_centers_.T, c="black", marker="x", s=80)
right.set_title("held-out rows and the learnt centres")
plt.show()
