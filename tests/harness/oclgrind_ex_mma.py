"""oclgrind plugin: templates/lloyd_mma/lloyd_mma_split.cl.mako, the split of the
centres into the "mma" Lloyd variant's fragment order, for odd and even
numbers of k8 steps (plain and swizzled rows) and ragged d and k, and the
bf16 layout of the "bf16" precision, against the layouts mma_layout.py
models.  The variant's own kernel (lloyd_mma_assign.cl.mako) is inline PTX
for NVIDIA GPUs: no simulator builds it, and tests/passes/test_lloyd_mma.py runs it on those GPUs.
"""
import numpy as np

from oclgrind_driver import mark
from mma_layout import check_split


def exercise_split(device, log):
    q = device.queue()
    # one k8 step (plain rows), two (swizzled), three; ragged chunks
    for d, k in ((5, 3), (16, 3), (19, 17)):
        mark(f"split d={d} k={k}")
        check_split(q, np.random.RandomState(d).randn(k, d).astype(np.float32))
    # bf16 (the "bf16" precision): one slot group (plain rows), two (swizzled)
    for d, k in ((5, 3), (40, 17)):
        mark(f"split bf16 d={d} k={k}")
        check_split(q, np.random.RandomState(d).randn(k, d).astype(np.float32), "bf16")
    log("mma split: 5 layouts")


EXERCISERS = {"lloyd_mma_split.cl.mako": [exercise_split]}
