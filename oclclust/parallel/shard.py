"""One device's share of the rows: resident, or streamed through
page-locked, double-buffered staging (runtime.transfer)."""
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..passes.widen import widen_rows
from ..runtime.validation import packed_type
from ..runtime import transfer
from ..runtime.partition import DevicePartition
from ..runtime.transfer import Staging, upload, write_rows

# a packed shard's float32 chunk: at most this, and a sixteenth of the budget
# (the two chunks leave 7/8 of it to the rows: 1.75x the float32 rows, ~2x on a GPU)
PACKED_STAGE_BYTES = 128 << 20
# a streamed chunk: at most this, the rest of the budget kept resident (the tail).
# None: two chunks of half the budget each, nothing resident
STREAM_CHUNK_BYTES = 512 << 20


class Shard:
    """One device's rows: resident in one chunk (or several, when one buffer
    would pass the device's largest allocation), or streamed in several.

    The budget is the bytes of rows the device holds at once: all of them
    when they fit, else two staging buffers of half of it each (one, when
    only one row fits), or, where half the budget is over
    STREAM_CHUNK_BYTES, two staging buffers of STREAM_CHUNK_BYTES and the
    rest of the budget as a resident *tail*: the shard's last rows, copied
    once and never streamed (the link carries only the other rows each
    pass; the tail's kernels run while the next pass's first chunk comes).
    The passes' per-row state (labels, distances, weights, memberships)
    lives beside it, per chunk, and is not counted: it is what the
    algorithm needs whatever the rows' place.  A streamed
    chunk is filled through two page-locked host pieces (runtime.transfer),
    several threads at once and converted to *dtype* there, then copied on
    a transfer queue while the kernels of the chunk before run.

    Rows of 2-byte floats (float16; bfloat16 from ml_dtypes) computed in
    float32 that would stream as float32 but fit the budget at 2 bytes a
    value are *packed*: they stay on the device as they are, and each chunk
    is widened there into float32 staging (passes.widen) instead of copied
    from the host: twice the rows resident, the link crossed once."""

    def __init__(self, profile, X, w, offset, budget, previous=None, dtype=None,
                 executor=ThreadPoolExecutor, block_rows=1):
        self.profile = profile
        self.queue = profile.queue()
        self.offset = offset
        self.dtype = np.dtype(dtype or X.dtype)
        n, d = X.shape
        row = d * self.dtype.itemsize
        self.streamed = n * row > budget
        tail = 0   # the last rows, resident in a streamed shard
        # one buffer may not exceed the device's largest allocation either;
        # every chunk but the last holds whole blocks (runtime.exact_sums)
        self.block_rows = block_rows
        largest = _whole_blocks(max(1, profile.max_alloc_size // row), block_rows)
        self.packed = None
        if self.streamed:
            stage = self._pack(X, budget)   # rows per chunk, when the rows stay packed
            if stage:
                buffers, rows = 2, _whole_blocks(stage, block_rows)
            else:
                if budget < row:
                    raise MemoryError(f"{n} rows do not fit {profile}'s memory budget of "
                                      f"{budget} bytes even streamed: one row takes {row} "
                                      "bytes")
                buffers = 2 if budget >= 2 * row else 1
                rows = _whole_blocks(min(largest, budget // (buffers * row)), block_rows)
                # chunks of whole blocks keep the sums split-free (runtime.exact_sums);
                # a budget under two blocks streams smaller chunks (each its own block)
                whole = rows >= block_rows
                if buffers == 2 and STREAM_CHUNK_BYTES and rows * row > STREAM_CHUNK_BYTES:
                    # a soft cap: a chunk holds a block at least, where two fit the budget
                    rows = _whole_blocks(max(block_rows if whole else 1,
                                             STREAM_CHUNK_BYTES // row), block_rows)
                    tail = min(n - 1, largest, (budget - 2 * rows * row) // row)
                    if whole:   # the streamed rows end on a block boundary
                        tail = max(0, n - -(-(n - tail) // block_rows) * block_rows)
                self.pinned = Staging(self.queue, min(transfer.PIECE_BYTES, min(rows, n) * row))
            self.transfers = cl.CommandQueue(self.queue.context)
            self.staging = [cla.empty(self.queue, (min(rows, n - tail), d), self.dtype)
                            for _ in range(buffers)]
            self.released = [None] * buffers   # the last kernels reading each buffer
            self.feeder = executor(1)          # fills and copies the next chunk
            self.ahead = {}                    # the next pass's first chunks, under way
        else:
            rows = max(1, min(n, largest))
        self.host = X
        self.chunks = []
        for start in range(0, n - tail, rows):
            stop = min(n - tail, start + rows)
            data = (self.staging[len(self.chunks) % len(self.staging)][:stop - start]
                    if self.streamed else X[start:stop])
            if not self.streamed and rows >= n and previous is not None:
                data = self._moved(previous, X) if previous.single_resident else data
            part = DevicePartition(profile, data, None if w is None else w[start:stop],
                                   offset + start, self.dtype, block_rows)
            part.host_rows = (start, stop)
            self.chunks.append(part)
        self.fed = len(self.chunks)   # the chunks that stream (the tail's follow)
        if tail:
            part = DevicePartition(profile, X[n - tail:], None if w is None else w[n - tail:],
                                   offset + n - tail, self.dtype, block_rows)
            part.host_rows = (n - tail, n)
            self.chunks.append(part)

    def _pack(self, X, budget):
        """Rows per float32 chunk when X's rows stay on the device at 2 bytes
        a value (``self.packed``, a uint16 array): they and two chunks fit
        the budget.  0 otherwise."""
        kind = None if isinstance(X, cla.Array) else packed_type(X.dtype)
        if kind is None or self.dtype != np.float32:
            return 0
        n, d = X.shape
        stage = min(n, max(1, min(PACKED_STAGE_BYTES, budget // 16) // (4 * d)))
        if n * d * 2 + 2 * stage * d * 4 > budget or n * d * 2 > self.profile.max_alloc_size:
            return 0
        self.packed, self.packed_type = upload(self.queue, X.view(np.uint16)), kind
        return stage

    @property
    def single_resident(self):
        return not self.streamed and len(self.chunks) == 1

    def _moved(self, previous, X):
        """This shard's rows as a device array made from *previous* (the same
        device's shard of the last layout): the rows both hold are copied on
        the device, only the others come from the host.  A rebalance that
        moves the boundary by a few rows costs a few rows' upload."""
        old = previous.chunks[0]
        n, d = X.shape
        row = d * self.dtype.itemsize
        lo, hi = max(self.offset, old.offset), min(self.offset + n, old.offset + old.n)
        if hi <= lo or old.queue.context != self.queue.context:
            return X
        x = cla.empty(self.queue, (n, d), self.dtype)
        cl.enqueue_copy(self.queue, x.data, old.x.data, byte_count=(hi - lo) * row,
                        src_offset=(lo - old.offset) * row, dst_offset=(lo - self.offset) * row)
        for a, b in ((self.offset, lo), (hi, self.offset + n)):   # the rows new to it
            if b > a:
                write_rows(self.queue, x, X[a - self.offset:b - self.offset], a - self.offset)
        return x

    def _feed(self, i):
        """Chunk i's rows into its staging buffer once the kernels that read
        it last are done: the last copy's event (on the feeder's thread)."""
        part = self.chunks[i]
        start, stop = part.host_rows
        last = self.released[i % len(self.staging)]
        if self.packed is not None:   # widened on the device, from its own copy
            d = part.d
            event = widen_rows(self.transfers, self.packed, start * d, (stop - start) * d,
                               part.x, self.packed_type, None if last is None else [last])
            self.transfers.flush()
            return event
        return self.pinned.to_device(self.transfers, part.x, self.host[start:stop],
                                     wait_for=None if last is None else [last])

    def run(self, fn, rows=True):
        """fn on each chunk in order; a streamed chunk i+1 is filled and
        copied while chunk i's kernels run (with one staging buffer, after),
        and the first chunks of the next pass (the same rows; one per
        staging buffer) as soon as their buffers are free: while the last
        streamed chunk runs when that one is in the other buffer, and while
        the tail's kernels and the host's work between passes run.  *rows*
        False: fn reads none of the rows (only the chunks' own state, such
        as their labels): nothing streams.

        The commands of chunk i (buffer b = i % buffers): the feeder thread
        waits (host) for each pinned piece's last DMA, fills it (the fill
        threads) and enqueues its DMA on the transfer queue, waiting (device)
        for ``released[b]``, the marker after the kernels that read b last;
        this thread waits (host) for chunk i's last DMA, enqueues fn's
        kernels on the shard's queue, then the marker ``released[b]``, and
        flushes it so that the transfer queue sees it at once."""
        start = time.perf_counter()
        if not self.streamed or not rows:
            return [fn(part) for part in self.chunks], time.perf_counter() - start
        results, count, buffers = [], self.fed, len(self.staging)
        ahead = buffers > 1
        pending, self.ahead = self.ahead, {}
        if 0 not in pending:
            pending[0] = self.feeder.submit(self._feed, 0)
        try:
            for i, part in enumerate(self.chunks):
                if i >= count:   # the resident tail
                    results.append(fn(part))
                    continue
                if ahead and i + 1 < count:   # its buffer was released by chunk i-1
                    if i + 1 not in pending:
                        pending[i + 1] = self.feeder.submit(self._feed, i + 1)
                elif ahead and i % buffers:   # the last chunk is not in the first's buffer
                    self.ahead[0] = self.feeder.submit(self._feed, 0)
                copied = pending.pop(i).result()
                if copied is not None:
                    copied.wait()
                results.append(fn(part))
                self.released[i % buffers] = cl.enqueue_marker(self.queue)
                self.queue.flush()   # the transfer queue's copies wait for it
                if not ahead and i + 1 < count:
                    pending[i + 1] = self.feeder.submit(self._feed, i + 1)
                elif i + 1 == count:   # every buffer free: the next pass's first chunks
                    for j in range(min(buffers, count)):   # during the tail, if any
                        if j not in self.ahead:
                            self.ahead[j] = self.feeder.submit(self._feed, j)
        finally:   # no copy may still be filling a buffer when a failure leaves
            for future in pending.values():
                future.exception()
        return results, time.perf_counter() - start

    def close(self):
        if self.streamed:
            self.feeder.shutdown()   # after the next pass's first chunks: nothing in flight
            self.ahead = {}


def _whole_blocks(rows, block_rows):
    """*rows* down to whole blocks of *block_rows*; fewer rows than a block
    as they are (a limit under one block: chunks that are not whole
    blocks, and sums that are not split-free)."""
    return rows // block_rows * block_rows if rows >= block_rows else rows
