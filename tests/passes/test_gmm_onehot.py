"""The initialisations' responsibilities on the device (passes/gmm.py's
GmmPass.onehot, templates/gmm/gmm_onehot.cl.mako; GmmPass.set_resp of a block
of rows): the same buffer as the host's one-hot matrix uploaded whole."""
import numpy as np
import pyopencl.array as cla
import pytest

from oclclust.passes import gmm as gmm_pass
from oclclust.runtime.partition import DevicePartition
from oclgrind_ex_gmm import onehot_reference as host_onehot   # the harness's, on sys.path


def device_resp(gp, k):
    n = gp.part.n
    return gp.resp[:k * n].get(gp.part.queue).reshape(k, n).T


@pytest.fixture(params=[np.float32, np.float64], ids=lambda t: t.__name__)
def part(request, profile):
    X = np.random.RandomState(0).normal(size=(1001, 3)).astype(request.param)
    return DevicePartition(profile, X)


def whole(gp, rows):
    """The old upload: the host matrix, component-major, in one copy."""
    gp._resp(rows.shape[1])[:rows.size].set(
        np.ascontiguousarray(rows.T, gp.part.dtype).ravel(), gp.part.queue)
    return device_resp(gp, rows.shape[1])


@pytest.mark.parametrize("k", [1, 7, 64])
def test_onehot_from_labels_is_the_hosts(part, k):
    n = part.n
    labels = np.random.RandomState(k).randint(-1, k + 1, n).astype(np.int32)  # -1, k: none
    gp = gmm_pass.GmmPass(part, k, False)
    gp.onehot(k, labels=cla.to_device(part.queue, labels))
    got = device_resp(gp, k)
    ref = host_onehot(n, k, labels=labels)
    assert got.dtype == part.dtype and np.array_equal(got, ref)
    assert np.array_equal(got, whole(gp, ref))


@pytest.mark.parametrize("k", [1, 5, 64])
def test_onehot_from_rows_is_the_hosts(part, k):
    n = part.n
    rng = np.random.RandomState(k)
    rows = rng.randint(-n, 2 * n, k)          # rows of other chunks or ranks too
    rows[::3] = rows[0] if k > 1 else n - 1   # one row for several components
    gp = gmm_pass.GmmPass(part, k, True)
    gp.resp = cla.empty(part.queue, k * n, part.dtype).fill(7)   # every entry written
    gp.onehot(k, rows=rows)
    got = device_resp(gp, k)
    ref = host_onehot(n, k, rows=rows)
    assert np.array_equal(got, ref) and np.array_equal(got, whole(gp, ref))
    # each row's own component: the first whose row it is, -1 (none) for the rest
    own = np.where(ref.any(axis=1), ref.argmax(axis=1), -1)
    assert np.array_equal(gp.own.get(part.queue)[:n], own)


def test_blocks_of_rows_land_in_their_columns(part):
    """set_resp of blocks (the "random" init, a block of rows at a time)
    leaves the buffer the whole matrix leaves, and the M statistics agree."""
    k, n = 6, part.n
    resp = np.random.RandomState(1).uniform(size=(n, k))
    gp = gmm_pass.GmmPass(part, k, False)
    for start in range(0, n, 97):             # ragged last block
        gp.set_resp(resp[start:start + 97], start)
    got = device_resp(gp, k)
    means = np.zeros((k, 3))
    stats = gp.mstep(means)
    assert np.array_equal(got, whole(gp, resp))
    assert np.array_equal(stats, gp.mstep(means))
