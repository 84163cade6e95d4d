"""The fuzzy c-means centre update on the device (oclclust/passes/
cmeans_update.py): from packed c x (d + 1) statistics the new centres are
centers_update's bit for bit (a centre of no weight keeps its place), the
pass's next input is what CMeansPass.upload writes for them, and the shift
is ``((new - old) ** 2).sum()``'s bits; the tensor-core pass and a pass
without the update keep the host's update."""
import contextlib

import numpy as np
import pyopencl.array as cla
import pytest

from oclclust.cluster.empty_clusters import centers_update
from oclclust.passes import cmeans, cmeans_update
from oclclust.passes.cmeans import CMeansPass
from oclclust.runtime import exact_sums
from oclclust.runtime.exact_sums import ExactWords
from oclclust.runtime.partition import DevicePartition


def needs_fp64(profile):
    if not profile.fp64:
        pytest.skip("the device update needs double precision; this device has none")


# (d, c): the shift one block of numpy's pairwise sum; split over several
SHAPES = [(3, 4), (7, 13), (24, 100)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda t: t.__name__)
@pytest.mark.parametrize("shared", ["device's sums", "host's totals", "devices' words"])
def test_update_is_the_host_update_and_upload(profile, dtype, shape, shared):
    """The update from statistics on the device, from the host's totals
    (a shared update without split-free sums), and from two devices'
    split-free words added on the device (their host total's value)."""
    needs_fp64(profile)
    d, c = shape
    rng = np.random.RandomState(d * c)
    X = rng.randn(200, d).astype(dtype)
    with contextlib.ExitStack() as stack:
        if shared == "host's totals":
            stack.enter_context(exact_sums.disabled())
        cpass = CMeansPass(DevicePartition(profile, X), c, 2.0)
    old = rng.randn(c, d) * np.exp(rng.uniform(-20, 20, (c, 1)))
    stats = rng.randn(c, d + 1) * np.exp(rng.uniform(-20, 20, (c, d + 1)))
    stats[:, d] = np.abs(stats[:, d])
    stats[[1, c - 1], d] = 0                 # no weight: they keep their place
    stats[0, :d] = -0.0                      # 0 + -0.0: the host's sum of one chunk
    q = cpass.part.queue
    host = 0 + stats
    if shared == "device's sums":
        update = cmeans_update.CentersOnDevice(cpass, ring=2, slots=1)
        update.start(old)
        update.enqueue_update(cla.to_device(q, stats.ravel()), 0).wait()
    elif shared == "host's totals":
        update = cmeans_update.SharedCMeans(cpass)
        assert update.shared_stats is None
        update.start(old)
        update.update(stats, summarize=True).wait()
    else:   # two devices' blocks of partials, the words of each
        update = cmeans_update.SharedCMeans(cpass)
        update.start(old)
        fold = cpass.fold
        fold.set_bounds(4 * np.abs(stats) + 1e-300)
        part = rng.uniform(-1, 1, (2, c, d + 1)) * stats
        parts = [ExactWords.of_partials(p[None], fold.lsb, stats.shape) for p in
                 (part, stats - part[0] - part[1])]
        host = ExactWords.total(parts).value()
        words = [np.ascontiguousarray(w.flat()) for w in parts]
        update.update(words, summarize=True, own=None).wait()
    new = centers_update(host[:, :d], host[:, d], old)
    got = update.centers_to_host()
    np.testing.assert_array_equal(got, new)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(new))
    np.testing.assert_array_equal(got[[1, c - 1]], old[[1, c - 1]])
    assert update.shift(0) == float(((new - old) ** 2).sum())
    np.testing.assert_array_equal(update.moved.get(q).reshape(c, d), (new - old) ** 2)
    written = cpass.centers.get(q)
    cpass.upload(new).wait()
    np.testing.assert_array_equal(written, cpass.centers.get(q))


def test_the_tensor_core_pass_and_no_update_keep_the_hosts(profile):
    """can_update: the portable pass with the update and fp64 only (the
    tensor-core pass's centres are operands the host derives)."""
    d, c = 24, 10
    X = np.random.RandomState(0).randn(300, d).astype(np.float32)
    part = DevicePartition(profile, X)
    assert cmeans_update.can_update(CMeansPass(part, c, 2.0)) == profile.fp64
    assert not cmeans_update.can_update(CMeansPass(part, c, 2.0, update=False, write_u=True))
    spec = next(cmeans.mma_specs(profile, np.float32, d, c, True, False, False, True,
                                 emulate=True))
    assert not cmeans_update.can_update(CMeansPass(part, c, 2.0, spec=spec))
    no_fp64 = DevicePartition(profile.replace(fp64=False), X)
    assert not cmeans_update.can_update(CMeansPass(no_fp64, c, 2.0))
