"""
Several devices at once
=======================

A fit spreads its rows over every device it is given and runs each pass on
all of them at once; their statistics are summed in the same order whatever
the split, so the model is the one a single device fits, bit for bit. A
:class:`oclclust.DeviceManager` says how the rows are split. Here one CPU is
split into two sub-devices (:func:`oclclust.sub_devices`), which a fit uses
as it would two GPUs; on a machine whose device cannot be split, every device
found serves.
"""
import matplotlib.pyplot as plt
import numpy as np

import oclclust as oc

rng = np.random.default_rng(7)
centres = rng.uniform(-10, 10, size=(12, 8))
X = centres[rng.integers(12, size=30_000)] + rng.normal(size=(30_000, 8))

device = oc.select_devices()[0]        # the first device of $OCLCLUST_DEVICES, else of all
try:
    several = oc.sub_devices(device, [1, 1]) if device.type == "cpu" else None
except ValueError:                     # one compute unit
    several = None
several = several or oc.select_devices()
manager = oc.DeviceManager(several, weights=[3, 1][:len(several)] or None)

one = oc.KMeans(12, random_state=0, dtype="float64", devices=several[:1]).fit(X)
split = oc.KMeans(12, random_state=0, dtype="float64", devices=manager).fit(X)
print("rows per device:", split.devices_)
print("the same centres, bit for bit:",
      np.array_equal(one.cluster_centers_, split.cluster_centers_))

fig, ax = plt.subplots(figsize=(7, 3))
ax.barh([name[:40] for name in split.devices_], list(split.devices_.values()))
ax.set_xlabel("rows")
ax.set_title("one KMeans fit, rows split 3 : 1")
plt.tight_layout()
plt.show()
