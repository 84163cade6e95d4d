"""The page-locked staging pipeline: exact copies both ways, whatever the
source (layout, dtype, memmap), the piece size and the row count."""
import collections
import gc

import numpy as np
import pyopencl.array as cla
import pytest

from oclclust.runtime import transfer
from oclclust.runtime.transfer import Staging, copy_rows, download, upload, write_rows


def source(kind, n, d, tmp_path):
    rng = np.random.RandomState(n + d)
    X = rng.randn(n, d) * 1e3
    if kind == "F":
        return np.asfortranarray(X)
    if kind == "int16":
        return (X * 10).astype(np.int16)
    if kind == "strided":   # every other row of a larger array
        return np.repeat(X, 2, axis=0)[::2]
    if kind == "memmap":
        path = tmp_path / "rows.npy"
        np.save(path, X)
        return np.load(path, mmap_mode="r")
    return X


KINDS = ["C", "F", "int16", "strided", "memmap"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
# rows a piece holds: one row, odd, all rows in one piece, more than all rows
@pytest.mark.parametrize("piece_rows", [1, 7, 61, 1000])
def test_to_device_then_to_host_is_exact(queue, tmp_path, kind, dtype, piece_rows):
    n, d = 61, 5
    src = source(kind, n, d, tmp_path)
    want = np.asarray(src).astype(dtype)
    staging = Staging(queue, piece_rows * d * np.dtype(dtype).itemsize)
    dst = cla.to_device(queue, np.full((n + 3, d), -1, dtype))   # rows around stay
    event = staging.to_device(queue, dst, src, dst_row=2)
    event.wait()
    got = dst.get()
    np.testing.assert_array_equal(got[2:n + 2], want)
    assert (got[:2] == -1).all() and (got[n + 2:] == -1).all()
    back = np.full((n, d), 7.0)   # converted to the caller's float64 on the way back
    staging.to_host(queue, dst[2:n + 2], back)
    np.testing.assert_array_equal(back, want)


def test_a_last_partial_piece_and_a_view_with_offset(queue):
    n, d = 10, 3
    X = np.arange(n * d, dtype=np.float32).reshape(n, d)
    staging = Staging(queue, 4 * d * 4)   # pieces of 4 rows: 4 + 4 + 2
    dst = cla.zeros(queue, (n + 5, d), np.float32)
    staging.to_device(queue, dst[5:], X).wait()
    np.testing.assert_array_equal(dst.get()[5:], X)
    out = np.zeros((n, d), np.float32)
    staging.to_host(queue, dst[5:], out)
    np.testing.assert_array_equal(out, X)
    assert staging.to_device(queue, dst, X[:0]) is None   # no rows: no copy


def test_a_piece_is_refilled_only_after_its_copy(queue):
    """Many pieces through two buffers with no wait between them: each
    piece's copy must be done before its buffer takes the next piece."""
    n, d = 1000, 16
    X = np.random.RandomState(1).randn(n, d).astype(np.float32)
    staging = Staging(queue, 3 * d * 4)
    dst = cla.empty(queue, (n, d), np.float32)
    staging.to_device(queue, dst, X)
    queue.finish()
    np.testing.assert_array_equal(dst.get(), X)


def test_reserved_pieces_serve_the_copies_after_their_own(queue):
    """reserve (warm_up's) makes both pieces at their size at once, after any
    copy still reading them; the copies then reuse them, not made again."""
    n, d = 100, 4
    X = np.arange(n * d, dtype=np.float32).reshape(n, d)
    staging = Staging(queue, 10 * d * 4)
    dst = cla.empty(queue, (n, d), np.float32)
    staging.to_device(queue, dst, X[:30])
    staging.reserve(10 * d * 4)
    made = [id(piece) for piece in staging.pieces]
    assert all(len(piece) >= 10 * d * 4 for piece in staging.pieces)
    staging.to_device(queue, dst, X)
    queue.finish()
    np.testing.assert_array_equal(dst.get(), X)
    assert [id(piece) for piece in staging.pieces] == made


def test_copy_rows_splits_over_threads(monkeypatch):
    monkeypatch.setattr(transfer, "FILL_SPLIT", 64)   # 1 KiB pieces split by 64 bytes
    src = np.asfortranarray(np.random.RandomState(2).randn(97, 5))
    dst = np.empty((97, 5), np.float32)
    copy_rows(dst, src)
    np.testing.assert_array_equal(dst, src.astype(np.float32))


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "staged"])
def test_upload_download_and_write_rows(queue, monkeypatch, direct):
    """Small copies go straight; the others through the queue's shared staging."""
    monkeypatch.setattr(transfer, "_shared", {})
    if not direct:
        monkeypatch.setattr(transfer, "DIRECT_BYTES", 0)
        monkeypatch.setattr(transfer, "PIECE_BYTES", 40)   # several pieces
    X = np.asfortranarray(np.random.RandomState(3).randn(33, 4))
    x = upload(queue, X, np.float32)
    assert x.dtype == np.float32 and x.shape == X.shape
    np.testing.assert_array_equal(x.get(), X.astype(np.float32))
    write_rows(queue, x, X[:5] * 2, dst_row=28)
    out = np.empty((33, 4), np.float64)
    assert download(queue, x, out) is out
    want = X.astype(np.float32)
    want[28:] = (X[:5] * 2).astype(np.float32)
    np.testing.assert_array_equal(out, want)
    labels = cla.to_device(queue, np.arange(33, dtype=np.int32))
    np.testing.assert_array_equal(download(queue, labels), np.arange(33))
    assert bool(transfer._shared) != direct   # a staging made only when needed
    with pytest.raises(ValueError, match="download of"):
        download(queue, labels, np.empty(32, np.int32))


@pytest.mark.parametrize("unified", [True, False], ids=["host memory", "own memory"])
def test_a_device_on_host_memory_copies_straight(queue, monkeypatch, unified):
    """Past DIRECT_BYTES, rows that need no conversion go straight where the
    device shares the host's memory (one memcpy, not two), through the
    staging elsewhere; a conversion always stages, a piece at a time."""
    monkeypatch.setattr(transfer, "_shared", {})
    monkeypatch.setattr(transfer, "DIRECT_BYTES", 0)
    monkeypatch.setattr(transfer, "PIECE_BYTES", 64)

    class Device:   # the queue's device as the other kind of device reports it
        host_unified_memory = unified

    class Queue:
        device = Device()

    X = np.random.RandomState(4).rand(40, 3).astype(np.float32)
    assert transfer.straight(Queue, X, np.dtype(np.float32), X.nbytes) == unified
    assert not transfer.straight(Queue, X, np.dtype(np.float64), X.nbytes)
    assert not transfer.straight(Queue, np.asfortranarray(X), np.dtype(np.float32), X.nbytes)
    if unified and queue.device.host_unified_memory:   # the CPU runtimes: the real queue
        x = upload(queue, X)
        np.testing.assert_array_equal(x.get(), X)
        write_rows(queue, x, X[:7] + 1, dst_row=33)
        out = download(queue, x)
        assert not transfer._shared                 # no staging made
        np.testing.assert_array_equal(out[:33], X[:33])
        np.testing.assert_array_equal(out[33:], X[:7] + 1)


def _address(array):
    return array.__array_interface__["data"][0]


def test_pinned_staging_takes_the_arrays_of_gone_ones(queue, monkeypatch):
    """A staging gone, its page-locked arrays serve the next staging on the
    context (the smallest that fits, after its last copy), a larger ask
    makes a new one, and the pool keeps at most POOL_BYTES."""
    monkeypatch.setattr(transfer, "_pool_arrays", {})
    monkeypatch.setattr(transfer, "_pool_held", [0])
    monkeypatch.setattr(transfer, "_pool_returned", collections.deque())
    gc.collect()   # earlier tests' stagings go to the deque this test no longer reads
    monkeypatch.setattr(transfer, "_pool_returned", collections.deque())
    dev = cla.zeros(queue, 1000, np.float32)
    first = transfer.PinnedStaging(queue)
    transfer.wait([first.put("small", dev, np.arange(10)), first.put("big", dev, np.arange(500))])
    small, big = _address(first.arrays["small"]), _address(first.arrays["big"])
    del first
    gc.collect()
    second = transfer.PinnedStaging(queue)
    transfer.wait([second.put("x", dev, np.full(8, 3.0))])
    assert _address(second.arrays["x"]) == small
    np.testing.assert_array_equal(dev.get()[:10], [3] * 8 + [8, 9])
    transfer.wait([second.get("y", dev, 400)])
    assert _address(second.arrays["y"]) == big
    np.testing.assert_array_equal(second.read("y", 400)[8:], np.arange(8, 400))
    transfer.wait([second.get("z", dev, 1000)])   # none pooled fits: a new one
    assert _address(second.arrays["z"]) not in (small, big)
    monkeypatch.setattr(transfer, "POOL_BYTES", 1024)
    del second
    gc.collect()
    transfer._pool_take(queue, 1, np.float32)      # the pool takes in what it may keep
    kept = [a.nbytes for free in transfer._pool_arrays.values() for a, _ in free]
    assert sum(kept) <= 1024 and transfer._pool_held == [sum(kept)]   # the running total


def test_pinned_staging_reads_into_slots_of_one_array(queue):
    """get(..., at=): several reads in flight into slots of one page-locked
    array made once (passes/cmeans_update.py: an iteration a slot), each
    read back by read(name, count, at)."""
    staging = transfer.PinnedStaging(queue)
    made = staging.host("slots", 3 * 5, np.float64)
    events = []
    for slot in range(3):
        dev = cla.to_device(queue, np.arange(5, dtype=np.float64) + 10 * slot)
        events.append(staging.get("slots", dev, at=5 * slot))
    transfer.wait(events)
    assert _address(staging.arrays["slots"]) == _address(made)
    for slot in (2, 0, 1):
        np.testing.assert_array_equal(staging.read("slots", 5, 5 * slot),
                                      np.arange(5) + 10 * slot)


AT_EXIT = """
import atexit, sys
import pyopencl as cl

def last():   # registered first: runs after oclclust's own exit hook
    print("mapped left", len(transfer._mapped))
    try:
        host.base.release(queue)
        print("still mapped")
    except cl.Error:
        print("unmapped")

atexit.register(last)
import numpy as np
import oclclust as oc
from oclclust.runtime import transfer
queue = [p for p in oc.list_devices() if p.platform == sys.argv[1]][0].queue()
host = transfer.pinned_empty(queue, (1000,), np.float64)
host[:] = 1
"""


def test_page_locked_arrays_are_unmapped_before_the_process_exits(devices):
    """An array still mapped at exit is unmapped and waited for by
    oclclust's exit hook (an unmap left to the interpreter's teardown
    aborted Intel's runtime as the process exited)."""
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-c", AT_EXIT, devices[0].platform],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[:2] == ["mapped left 0", "unmapped"], proc.stdout
