"""oclgrind plugin: 2-byte rows widened to float32 (passes/widen.py) -- every
float16 and bfloat16 bit pattern from an offset, against numpy; and a KMeans
fit of float16 rows kept packed on the device.

Run:  cd /tmp && PYOPENCL_NO_CACHE=1 oclgrind --data-races --uninitialized \
      --check-api --build-options -cl-opt-disable python tests/harness/oclgrind_driver.py --only widen
"""
import ml_dtypes
import numpy as np
import pyopencl.array as cla

import oclclust as oc
from oclgrind_driver import close, device_manager, mark, profile_for
from oclclust.passes.widen import widen_rows


def exercise_widen(device, log):
    q = device.queue()
    bits = np.arange(0, 1 << 16, 97, dtype=np.uint16)
    for kind in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)):
        mark(f"widen {kind.name}")
        dst = cla.empty(q, bits.size - 1, np.float32)
        widen_rows(q, cla.to_device(q, bits), 1, bits.size - 1, dst, kind.name).wait()
        want = bits[1:].view(kind).astype(np.float32)
        got = dst.get()
        if not np.array_equal(np.isnan(got), np.isnan(want)) or \
                not np.array_equal(got[~np.isnan(want)], want[~np.isnan(want)]):
            raise AssertionError(f"widen {kind.name}: differs from numpy")
    log("widen: ok")


def exercise_packed_fit(device, log):
    mark("widen packed fit")
    rng = np.random.RandomState(0)
    X = (rng.randn(40, 3) + rng.randint(0, 3, (40, 1)) * 6).astype(np.float16)
    init = X[[0, 1, 2]].astype(np.float64)
    packed = oc.KMeans(3, init=init, n_init=1, max_iter=3, tol=0, devices=device_manager(
        profile_for(device, True), memory_budget=40 * 3 * 3)).fit(X)
    resident = oc.KMeans(3, init=init, n_init=1, max_iter=3, tol=0, devices=device_manager(
        profile_for(device, True))).fit(X.astype(np.float32))
    close(packed.cluster_centers_, resident.cluster_centers_, "packed fit", 1e-6)
    log("widen packed fit: ok")


EXERCISERS = {"widen_rows.cl.mako": [exercise_widen, exercise_packed_fit]}
