"""Page-locked host memory: the staging of host <-> device copies.

A copy from pageable host memory is staged by the OpenCL runtime through a
bounce buffer of its own (on NVIDIA's, at a fraction of the link's speed,
and the in-order queue is held meanwhile); from page-locked memory it is
one DMA at the link's speed.  ALLOC_HOST_PTR buffers, mapped once
and kept mapped, are the portable way to get such memory from OpenCL: on
the CPU runtimes they are ordinary host memory and cost nothing extra.

``Staging`` moves rows through two such pieces: the host fill of piece
j+1 (several threads: one thread's memcpy is slower than the link)
overlaps the DMA of piece j, and a caller that streams chunks overlaps both
with the kernels of the chunk before (Shard.run).  The fill converts any
host source (numpy, np.memmap, F order, any dtype) to the device array's
dtype a piece at a time, so a memmap is read once and never whole.

The fill is what bounds a streamed pass (bench/stream.py timeline shows it:
the DMA and the kernels overlap, the fill threads never rest): numpy's
copy is glibc's memmove, whose cached stores below its non-temporal threshold
(which grows with the L3 cache; a fill thread copies a few MiB) read each
destination line before writing it, so a byte crosses host memory four times
with the DMA's read.  ``GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=
0x100000`` at the process's start (it cannot be set later) makes them
streaming stores, which skip that read: a faster fill, alone and beside the DMA.

``upload`` / ``write_rows`` (rows resident on a device) and ``download``
(per-row results back into the caller's array) use one Staging per queue,
made on first use and kept (at most 2 x PIECE_BYTES of page-locked memory:
each piece grows to the largest copy it has staged); copies under
DIRECT_BYTES go straight, where the staging would cost more, and so do
those of devices that share the host's memory (``straight``).
"""
import atexit
import collections
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

# a pinned piece: large enough that each piece's fixed cost (its fill's and its DMA's)
# is small against its copy, on one GPU or several (bench/devices.py upload)
PIECE_BYTES = 128 << 20
DIRECT_BYTES = 1 << 20   # below this a pageable copy costs less than the staging
FILL_SPLIT = 1 << 20     # bytes a fill thread takes at least
# the cores this process may run on (an MPI rank bound to one core: one thread)
FILL_THREADS = max(1, min(16, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                          else os.cpu_count() or 1))


def pinned_empty(queue, shape, dtype):
    """A host array in page-locked memory (kept mapped): a read into it is
    one DMA; into pageable memory NVIDIA's runtime stages it and holds the
    in-order queue meanwhile."""
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR,
                    max(1, int(np.prod(shape))) * np.dtype(dtype).itemsize)
    host, _ = cl.enqueue_map_buffer(queue, buf, cl.map_flags.READ | cl.map_flags.WRITE, 0,
                                    shape, dtype, is_blocking=True)
    with _mapped_lock:   # (the devices' threads make them at once)
        _mapped[:] = [(ref, q) for ref, q in _mapped if ref() is not None]
        _mapped.append((weakref.ref(host), queue))
    return host


# The page-locked arrays still mapped, each with its queue.  A mapped array
# freed as the interpreter shuts down enqueues its unmap and nothing waits
# for it: on Intel's CPU runtime the unmap then completed on a worker thread
# while the runtime was being torn down, and the process aborted after the
# script's work was done ("Pure virtual function called!": a crash in
# ContextModule::UnRegisterMappedMemoryObject under UnmapMemObjectCommand::
# CommandDone, from a core of plot_several_devices.py; 6 runs in 30 on the
# 2-core host under load).  So at exit every one is unmapped and waited for.
_mapped, _mapped_lock = [], threading.Lock()


@atexit.register
def _unmap_at_exit():
    queues = {}
    with _mapped_lock:
        mapped = list(_mapped)
    for ref, queue in mapped:
        host = ref()
        if host is not None:
            try:
                host.base.release(queue)
            except cl.Error:   # (unmapped already, or the queue gone)
                continue
            queues[queue.int_ptr] = queue
    for queue in queues.values():
        try:
            queue.finish()
        except cl.Error:
            pass
    _mapped.clear()


# page-locked arrays of passes that are gone, by (context, dtype), for the
# next pass's staging: a warm fit makes no page-locked memory of its own
# (H200 host: ~10 ms an array, nine arrays a GaussianMixture fit); at most
# POOL_BYTES kept.  Given back through a deque without the lock: a
# staging's finalizer may run inside the locked block (the collector runs
# where it likes), and a lock there would wait on itself
POOL_BYTES = 256 << 20
_pool_arrays, _pool_lock, _pool_returned = {}, threading.Lock(), collections.deque()
_pool_held = [0]   # bytes in _pool_arrays (under the lock)


def _pool_take(queue, count, dtype):
    """A page-locked array of at least *count* values of *dtype* for
    *queue*'s context: the smallest pooled one that fits (once its last
    copy is done), else a new one."""
    key = (queue.context.int_ptr, np.dtype(dtype).str)
    with _pool_lock:
        while _pool_returned:
            context, array, last = _pool_returned.popleft()
            if _pool_held[0] + array.nbytes <= POOL_BYTES:
                _pool_arrays.setdefault((context, array.dtype.str), []).append((array, last))
                _pool_held[0] += array.nbytes
        free = _pool_arrays.get(key, [])
        fits = [i for i, (a, _) in enumerate(free) if a.size >= count]
        got = free.pop(min(fits, key=lambda i: free[i][0].size)) if fits else None
        if got is not None:
            _pool_held[0] -= got[0].nbytes
    if got is None:
        return pinned_empty(queue, (max(int(count), 1),), dtype)
    array, last = got
    wait([last])
    return array


def _pool_give(context, arrays, events):
    """A staging's arrays back to the pool, each with its last copy's event."""
    for name, array in list(arrays.items()):
        _pool_returned.append((context, array, events.get(name)))


class PinnedStaging:
    """A pass's page-locked host arrays on one queue, by name, for its
    small uploads (centres, parameters) and reads (statistics): each copy
    non-blocking, so several devices' passes are enqueued from one thread,
    then collected (from pageable memory a copy blocks and, with several
    devices driven at once, NVIDIA's runtime holds them all).  An array
    grows when more is asked of it; a caller writes one again only after
    its last copy is done (its pass collected).  The arrays come from and
    go back to a process-wide pool (a pass's staging gone: its arrays,
    once their last copies are done, serve the next)."""

    def __init__(self, queue):
        self.queue, self.arrays, self._last = queue, {}, {}
        weakref.finalize(self, _pool_give, queue.context.int_ptr, self.arrays, self._last)

    def host(self, name, count, dtype):
        """The first *count* values of array *name* (made or grown)."""
        have = self.arrays.get(name)
        if have is None or have.size < count or have.dtype != np.dtype(dtype):
            if have is not None:   # the smaller one to the pool, once its copy is done
                _pool_give(self.queue.context.int_ptr, {name: have}, self._last)
            have = self.arrays[name] = _pool_take(self.queue, count, dtype)
            self._last.pop(name, None)
        return have[:count]

    def put(self, name, device, values):
        """*values* into the start of the device array *device*, not waited
        on: the copy's event (None for no value)."""
        values = np.asarray(values).ravel()
        if not values.size:
            return None
        self.host(name, values.size, device.dtype)[:] = values
        return self.send(name, device, values.size)

    def send(self, name, device, count):
        """The first *count* values of array *name*, as the caller wrote
        them through host() (no copy of its own), into the start of the
        device array *device*, not waited on: the copy's event."""
        host = self.host(name, count, device.dtype)
        event = self._last[name] = cl.enqueue_copy(self.queue, device.data, host,
                                                   is_blocking=False)
        return event

    def get(self, name, device, count=None, at=0):
        """The first *count* values of the device array *device* (all: None)
        into array *name* from its value *at* on (a slot of an array
        host() made large enough first: a copy that grows it loses the
        others), not waited on: the copy's event (None for none);
        read(name, count, at) once it is done."""
        count = device.size if count is None else int(count)
        if not count:
            return None
        host = self.host(name, at + count, device.dtype)[at:]
        event = self._last[name] = cl.enqueue_copy(self.queue, host, device.data,
                                                   is_blocking=False)
        return event

    def read(self, name, count, at=0):
        return self.arrays[name][at:at + count]


def wait(events):
    """Wait for the events that are not None."""
    events = [e for e in events if e is not None]
    if events:
        cl.wait_for_events(events)


_fill_pool, _fill_lock = None, threading.Lock()


def _pool():
    """The process's host-copy threads (numpy copies release the GIL)."""
    global _fill_pool
    with _fill_lock:
        if _fill_pool is None:
            _fill_pool = ThreadPoolExecutor(FILL_THREADS, thread_name_prefix="oclclust-fill")
        return _fill_pool


def by_rows(fn, n, parts):
    """fn(rows) for *parts* (at most FILL_THREADS) consecutive slices of
    range(n) on the fill threads (numpy's copies and ufuncs release the
    GIL), waited for, the first exception raised; in this thread alone
    where one part."""
    parts = min(FILL_THREADS, parts, n)
    if parts <= 1:
        fn(slice(0, n))
        return
    cuts = np.linspace(0, n, parts + 1).astype(np.int64)
    futures = [_pool().submit(fn, slice(a, b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    for f in futures:
        f.result()


def copy_rows(dst, src):
    """dst[:] = src (same first dimension), converted to dst's dtype, split
    by rows over the fill threads when it is large."""
    by_rows(lambda rows: np.copyto(dst[rows], src[rows], casting="unsafe"), len(dst),
            max(1, dst.nbytes // FILL_SPLIT))


class Staging:
    """Two page-locked pieces of *piece_bytes* (at most) in *queue*'s context,
    and the DMA event of each: a piece is refilled once its last copy is done.
    A piece is made on first use as large as that copy needs and grows with
    later ones (small copies pin little memory).  One user at a time
    (``lock``)."""

    def __init__(self, queue, piece_bytes=None):
        self.queue = queue
        self.piece_bytes = max(1, int(piece_bytes or PIECE_BYTES))
        self.pieces = [None, None]
        self.events = [None, None]
        self.turn = 0
        self.lock = threading.Lock()

    def _piece(self, rows, row_shape, dtype):
        """The next pinned piece as *rows* rows of *dtype*, once it is free."""
        j = self.turn
        self.turn ^= 1
        nbytes = rows * int(np.prod(row_shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return j, self._free(j, nbytes)[:nbytes].view(dtype).reshape((rows,) + tuple(row_shape))

    def _free(self, j, nbytes):
        """Piece *j* once its last DMA is done, made anew where smaller than *nbytes*."""
        if self.events[j] is not None:
            self.events[j].wait()
            self.events[j] = None
        if self.pieces[j] is None or len(self.pieces[j]) < nbytes:
            self.pieces[j] = pinned_empty(self.queue, (int(nbytes),), np.uint8)
        return self.pieces[j]

    def reserve(self, nbytes):
        """Both pieces made now at *nbytes* at least (page-locking memory
        takes milliseconds a piece: warm_up's, ahead of the first upload)."""
        with self.lock:
            for j in (0, 1):
                self._free(j, nbytes)

    def rows_per_piece(self, row_bytes):
        return max(1, self.piece_bytes // max(1, row_bytes))

    def to_device(self, queue, dst, src, dst_row=0, wait_for=None):
        """Enqueue src (host rows, any layout or dtype) into device array *dst*
        from row *dst_row* on, without blocking on the last DMA; the first
        waits for *wait_for* (events: the kernels still reading *dst*).
        Returns the last copy's event (None for no rows)."""
        n = len(src)
        row_shape, dtype = dst.shape[1:], dst.dtype
        row_bytes = int(np.prod(row_shape, dtype=np.int64)) * dtype.itemsize
        step = self.rows_per_piece(row_bytes)
        event = None
        for start in range(0, n, step):
            stop = min(n, start + step)
            j, piece = self._piece(stop - start, row_shape, dtype)
            copy_rows(piece, src[start:stop])
            event = cl.enqueue_copy(queue, dst.base_data, piece,
                                    dst_offset=dst.offset + (dst_row + start) * row_bytes,
                                    is_blocking=False, wait_for=wait_for)
            queue.flush()   # submitted now: it runs while the next piece fills
            self.events[j] = event
        return event

    def to_host(self, queue, src, out, wait_for=None):
        """out[:] = device array *src* (rows), converted to out's dtype: the
        read of piece j+1 overlaps the host copy of piece j."""
        n = len(src)
        row_shape = src.shape[1:]
        row_bytes = int(np.prod(row_shape, dtype=np.int64)) * src.dtype.itemsize
        step = self.rows_per_piece(row_bytes)
        starts = list(range(0, n, step))

        def read(start):
            stop = min(n, start + step)
            j, piece = self._piece(stop - start, row_shape, src.dtype)
            self.events[j] = cl.enqueue_copy(queue, piece, src.base_data,
                                             src_offset=src.offset + start * row_bytes,
                                             is_blocking=False, wait_for=wait_for)
            queue.flush()   # submitted now: it runs while the last piece is copied out
            return j, piece
        pending = read(starts[0]) if starts else None
        for i, start in enumerate(starts):
            j, piece = pending
            if i + 1 < len(starts):
                pending = read(starts[i + 1])
            self.events[j].wait()
            copy_rows(out[start:start + len(piece)], piece)
        return out


_shared, _shared_lock = {}, threading.Lock()


def shared_staging(queue):
    """The process's Staging of *queue* (made on first use), for one-time
    uploads and downloads; hold its ``lock`` while using it."""
    key = queue.int_ptr
    with _shared_lock:
        if key not in _shared:
            _shared[key] = (queue, Staging(queue))
        return _shared[key][1]


def straight(queue, src, dtype, nbytes):
    """Whether a copy of *nbytes* from host array *src* to (or from) a
    *dtype* device array goes straight, not through the staging: a small
    one, or on a device that shares the host's memory (the CPU runtimes: a
    pageable copy there is one memcpy, the staging two: the pageable
    copy is the faster on both runtimes) where *src* needs no conversion
    (else the staging converts it a piece at a time, never a whole copy)."""
    if nbytes < DIRECT_BYTES:
        return True
    return (isinstance(src, np.ndarray) and src.dtype == dtype and src.flags.c_contiguous
            and bool(queue.device.host_unified_memory))


def write_rows(queue, dst, src, dst_row=0):
    """Host rows *src* (any layout or dtype) into device array *dst* from row
    *dst_row* on, enqueued on *queue*: small ones (and any that ``straight``
    allows) by a pageable copy, the others in pieces through the queue's
    pinned staging, the last DMA possibly still running (the caller's
    commands on *queue* follow it)."""
    if straight(queue, src, dst.dtype, len(src) * dst[:1].nbytes):
        row_bytes = dst[:1].nbytes
        return cl.enqueue_copy(queue, dst.base_data, np.ascontiguousarray(src, dtype=dst.dtype),
                               dst_offset=dst.offset + dst_row * row_bytes, is_blocking=False)
    staging = shared_staging(queue)
    with staging.lock:
        return staging.to_device(queue, dst, src, dst_row)


def upload(queue, src, dtype=None):
    """A new device array of host rows *src* (any layout; converted to
    *dtype*, default src's): see write_rows."""
    dtype = np.dtype(dtype or src.dtype)
    if straight(queue, src, dtype, src.size * dtype.itemsize):
        return cla.to_device(queue, np.ascontiguousarray(src, dtype=dtype))
    dst = cla.empty(queue, src.shape, dtype)
    write_rows(queue, dst, src)
    return dst


def download(queue, src, out=None):
    """Device array *src* into host array *out* (new when None; any
    layout, converted to its dtype) through a pinned bounce buffer."""
    if out is None:
        out = np.empty(src.shape, src.dtype)
    if out.shape != src.shape:
        raise ValueError(f"download of {src.shape} into {out.shape}")
    if straight(queue, out, src.dtype, src.nbytes):
        if out.flags.c_contiguous and out.dtype == src.dtype:
            src.get(queue, ary=out)
        else:
            np.copyto(out, src.get(queue), casting="unsafe")
        return out
    staging = shared_staging(queue)
    with staging.lock:
        return staging.to_host(queue, src, out)
