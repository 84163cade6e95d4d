"""A data set spread over the devices of this host (DeviceManager.scatter):
the host's implementation of sharded_data.ShardedData.

Rows are split into one contiguous shard per device in proportion to the
manager's weights.  A shard that fits its device's memory budget is copied
there once and stays resident; a larger one is streamed in chunks, the next
chunk's upload overlapping the current one's kernels.  A pass runs every
device's chunks on its own thread (all queues busy at once) and returns the
per-chunk results in row order, so the caller reduces them in a fixed order
whatever the split.
"""
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ..runtime.codegen import KernelBuildError
from ..runtime.exact_fold import host_magnitudes
from ..runtime.exact_sums import block_rows_for
from ..runtime.partition import DevicePartition
from .calibration import Calibration, recalled_rate, remember_rates
from .shard import Shard
from .shares import kept_rates, leave_aside_unlike, measuring, split_rows
from .sharded_data import ShardedData, combined_magnitudes, combined_mean_var_finite

DEVICE_ERRORS = (cl.Error, KernelBuildError)
# host rows up to this many: their magnitudes taken on the host, where a
# device's kernel and read cost a small fit more than the rows' own scan
HOST_MAGNITUDE_ROWS = 1 << 16


class DeviceFailure(RuntimeError):
    """A device failed to build or run a kernel during a pass.

    A fit drops the device with a warning and starts over on the others
    from the same random state; this error reaches users only where no
    device is left.

    Parameters
    ----------
    profile : DeviceProfile
        The device.
    cause : BaseException
        What it raised.

    Attributes
    ----------
    profile, cause
        As given.

    See Also
    --------
    DeviceManager : the devices a fit runs on.
    """

    def __init__(self, profile, cause):
        super().__init__(f"OpenCL device {profile} failed: {type(cause).__name__}: {cause}")
        self.profile, self.cause = profile, cause



class _CompletedFuture:
    """A call run at once, answering like the pool's futures (its exception
    raised by result())."""

    def __init__(self, fn, *args):
        try:
            self.value, self.error = fn(*args), None
        except Exception as exc:   # re-raised where a future's would be
            self.value, self.error = None, exc

    def result(self):
        if self.error is not None:
            raise self.error
        return self.value


class DeviceData(ShardedData):
    """A data set spread over a manager's devices, one shard a device (see
    the module): the ShardedData of this host.  Beyond the protocol,
    ``shards`` (parallel.shard.Shard, one a device, in row order; none for
    a device array used in place) tell how the rows are held."""

    remote = False

    def __init__(self, manager, X, sample_weight, calibration=None, dtype=None,
                 stat_values=1):
        self.manager, self.sample_weight = manager, sample_weight
        self.n, self.d = X.shape
        self.dtype = np.dtype(dtype or X.dtype)
        # every split falls on these blocks (split-free sums: runtime.exact_sums)
        self.block_rows = block_rows_for(self.d, self.dtype.itemsize, stat_values)
        if isinstance(X, cla.Array) and X.dtype != self.dtype:
            raise ValueError(f"a device array of {X.dtype} used as {self.dtype}")
        self.source = X
        self.last_times = None
        self.pass_rates = False
        self.move_overhead = 0.0   # measured by the first re-split
        # the pass measured weights time (its joint passes' rates are kept too)
        self.calibration = None if calibration is None else Calibration.of(calibration)
        if calibration is not None and manager.measured is None:
            self._calibrate(self.calibration)
        self._layout()

    def _layout(self, previous=()):
        start = time.perf_counter()
        previous = {id(s.profile): s for s in previous}
        X, w, m = self.source, self.sample_weight, self.manager
        if isinstance(X, cla.Array):   # already on its device: used in place
            self.shards, self.chunks = [], [DevicePartition(m.profiles[0], X, w,
                                                            block_rows=self.block_rows)]
        else:
            leave_aside_unlike(m)
            counts = split_rows(self.n, m.current_weights(), self.block_rows)
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            # a device without rows takes no part (no shard, no thread, no pass)
            held = [i for i, rows in enumerate(counts) if rows or len(counts) == 1]

            def shard(profile, start, rows):
                return Shard(profile, X[start:start + rows],
                             None if w is None else w[start:start + rows],
                             int(start), m.budget(profile, self.d, self.dtype),
                             previous.get(id(profile)),
                             self.dtype, m.executor, self.block_rows)
            profiles = [m.profiles[i] for i in held]
            if len(held) == 1:   # no thread (a small fit's fixed cost)
                self.shards = [shard(profiles[0], starts[held[0]], counts[held[0]])]
            else:   # every device's upload at once: the copies to several devices overlap
                with m.executor(len(held)) as pool:
                    self.shards = list(pool.map(shard, profiles, starts[held], counts[held]))
            self.chunks = [c for s in self.shards for c in s.chunks]
        self.starts = np.array([c.offset for c in self.chunks])
        self.passes, self.lost = 0, 0.0
        for shard in self.shards:
            shard.queue.finish()   # the uploads are part of the layout's cost
        self.layout_seconds = time.perf_counter() - start
        if not previous:   # a full layout: what moving a row costs
            self.row_seconds = self.layout_seconds / max(self.n, 1)
        self._pool = m.executor(len(self.shards)) if len(self.shards) > 1 else None

    @property
    def rows_per_device(self):
        """{device: rows}, a device that holds none (measured too slow) at 0;
        like-named devices (two GPUs of a model) told apart by their index
        on the platform."""
        cached = getattr(self, "_rows_per_device", None)
        if cached is not None and cached[0] is self.shards:   # each iteration's history_
            return dict(cached[1])
        profiles = self.manager.profiles if self.shards else []
        names = [str(p) for p in profiles]
        rows = {(f"{name} #{p.device_index}" if names.count(name) > 1 else name): int(held)
                for name, p, held in zip(names, profiles, self._shard_rows())}
        self._rows_per_device = (self.shards, rows)
        return dict(rows)

    def map(self, fn, timed=False, rows=True):
        """[fn(chunk) for every chunk] in row order, all devices at once.
        *timed*: the pass is the algorithm's main one, whose per-device
        times guide rebalancing.  *rows* False: fn reads only the chunks'
        own state, not their rows (a streamed shard streams nothing)."""
        if not self.shards:
            return [fn(self.chunks[0])]
        if len(self.shards) == 1:   # no thread hand-off (tens of us) for one device
            futures = [_CompletedFuture(self.shards[0].run, fn, rows)]
        else:
            futures = [self._pool.submit(shard.run, fn, rows) for shard in self.shards]
        results, times, failure = [], [], None
        for shard, future in zip(self.shards, futures):
            try:
                res, seconds = future.result()
            except DEVICE_ERRORS as exc:
                failure = failure or DeviceFailure(shard.profile, exc)
                continue
            results += res
            times.append(seconds)
        if failure:
            raise failure
        if timed:   # a layout's first pass also sets its chunks up: not speed
            self.last_times = times if self.passes else None
            self.passes += 1
        return results

    def map_enqueued(self, launch, collect, timed=False):
        """[collect(chunk, launch(chunk))] for every chunk in row order, as
        map does, for a pass whose *launch* only enqueues (returns without
        waiting) and whose *collect* waits for it and reads its results.
        Over several devices that each hold their rows in one resident
        chunk (weights not measured: no per-device time is wanted), every
        launch comes first, from this thread, then every collect: no thread
        hand-off, and no pass's host work waits for the others' under the
        GIL (a noticeable part of a short pass on several GPUs).  Else
        map's threads."""
        shards = self.shards
        if (len(shards) < 2 or measuring(self.manager)
                or not all(s.single_resident for s in shards)):
            return self.map(lambda chunk: collect(chunk, launch(chunk)), timed)
        launched, results = [], []
        try:
            for step, args in ((launch, ()), (collect, None)):
                for i, shard in enumerate(shards):
                    try:
                        if args is None:
                            results.append(step(shard.chunks[0], launched[i]))
                        else:
                            launched.append(step(shard.chunks[0]))
                    except DEVICE_ERRORS as exc:
                        raise DeviceFailure(shard.profile, exc) from exc
        except BaseException:   # nothing may still run on a device the fit leaves
            for shard in shards:
                try:
                    shard.queue.finish()
                except DEVICE_ERRORS:
                    pass
            raise
        if timed:
            self.last_times = None
            self.passes += 1
        return results

    def locate(self, i):
        c = int(np.searchsorted(self.starts, i, side="right") - 1)
        return self.chunks[c], int(i - self.starts[c])

    def row(self, i):
        """Row *i* to the host (from the host copy where there is one)."""
        if not isinstance(self.source, cla.Array):
            return np.asarray(self.source[int(i)], dtype=self.dtype)
        chunk, local = self.locate(i)
        return chunk.row(local)

    def rows(self, indices):
        """Rows *indices* to the host, at once where there is a host copy
        (k-means|| fetches thousands a round)."""
        if not isinstance(self.source, cla.Array):
            return np.asarray(self.source[np.asarray(indices, np.int64)], dtype=self.dtype)
        return np.array([self.row(i) for i in indices], dtype=self.dtype).reshape(-1, self.d)

    def mean_var_finite(self):
        """(column means, column variances, all finite) over all rows, in float64."""
        return combined_mean_var_finite(self)

    def magnitudes(self):
        """(max |x| of each column, max weight) over all rows (one pass, kept)."""
        if getattr(self, "_magnitudes", None) is None:
            X, w = self.source, self.sample_weight
            on_host = isinstance(X, np.ndarray) and 0 < self.n <= HOST_MAGNITUDE_ROWS
            self._magnitudes = (host_magnitudes(X, w, self.dtype) if on_host else
                                combined_magnitudes(self))
        return self._magnitudes

    def reshard(self):
        """Lay the rows out anew after the device list or weights changed."""
        if isinstance(self.source, cla.Array):
            raise RuntimeError("data given as a device array cannot move to other devices")
        self.manager.reshards += 1
        self.close()
        self._layout(previous=self.shards)

    def close(self):
        if self._pool is not None:
            self._pool.shutdown()
        for shard in self.shards:
            shard.close()

    def _calibrate(self, calibration, rows=None):
        """Measured weights before the rows are laid out: each device's
        rate as its profile knows it (*calibration*'s known_rate) or as
        this process last measured it in the same pass and shape
        (calibration.recalled_rate), else from short passes of
        *calibration*'s pass (see DeviceManager.scatter) on the same first
        rows on every such device at once (once to build, then timed); a
        device under MIN_SHARE of the summed rate gets none
        (shares.kept_rates).  The sample (n/64, within 64 Ki and 256 Ki
        rows) keeps a big GPU busy, so launch latency does not pass for
        slowness."""
        m = self.manager
        if not measuring(m) or len(m.profiles) < 2 or isinstance(self.source, cla.Array):
            return
        rates = [recalled_rate(calibration, p, self.d, self.dtype) for p in m.profiles]
        unknown = [p for p, rate in zip(m.profiles, rates) if rate is None]
        if unknown:
            timed = self._timed_rates(calibration.pass_on, unknown, rows)
            remember_rates(calibration, unknown, timed, self.d, self.dtype)
            timed = iter(timed)
            rates = [next(timed) if rate is None else rate for rate in rates]
        self._keep(rates)

    def _keep(self, rates):
        """Measured *rates* (rows per second, one a device) as the manager's,
        the devices too slow to pay for their passes left out."""
        m = self.manager
        m.measured = kept_rates(rates)
        m.left_out = [p for p, rate in zip(m.profiles, m.measured) if rate == 0]

    def _timed_rates(self, fn, profiles, rows=None):
        """Rows per second of *profiles* in the pass *fn* sets up (see
        Calibration), all timed at once."""
        rows = min(self.n, rows or int(np.clip(self.n // 64, 1 << 16, 1 << 18)))
        sample = np.ascontiguousarray(self.source[:rows], dtype=self.dtype)
        w = None if self.sample_weight is None else self.sample_weight[:rows]

        def timed(profile, least=0.25):
            """Rows per second over passes of at least *least* seconds in all:
            one short pass is too noisy to split gigabytes by."""
            one_pass = fn(DevicePartition(profile, sample, w))
            one_pass()
            passes, start = 0, time.perf_counter()
            while passes < 1 or time.perf_counter() - start < least:
                one_pass()
                passes += 1
            return passes * rows / max(time.perf_counter() - start, 1e-9)
        # all devices at once, as they will run their shares: they share the
        # host's cores and memory, and the time is the slowest one's, not the sum
        with self.manager.executor(len(profiles)) as pool:
            return list(pool.map(timed, profiles))

    def _held(self):
        """Each shard's device's index among the manager's profiles."""
        keys = [p.key for p in self.manager.profiles]
        return [keys.index(s.profile.key) for s in self.shards]

    def _shard_rows(self):
        """Rows of each of the manager's devices (0: it holds no shard)."""
        rows = np.zeros(len(self.manager.profiles), dtype=np.int64)
        rows[self._held()] = [sum(c.n for c in s.chunks) for s in self.shards]
        return rows

    def _measured_split(self):
        return split_rows(self.n, self.manager.measured, self.block_rows)

    def _moves(self):
        """Whether the measured rates split the rows otherwise than now (in
        whole blocks, a rate's change may leave every block where it is)."""
        return not np.array_equal(self._shard_rows(), self._measured_split())

    def _move_seconds(self):
        """What laying the rows out by the measured rates would cost: only
        the rows that change device, when every shard is one resident chunk
        (the rest are copied on the device); else every row again."""
        old = np.cumsum(self._shard_rows())[:-1]
        new = np.cumsum(self._measured_split())[:-1]
        moved = np.abs(new - old).sum() if all(s.single_resident for s in self.shards) \
            else self.n
        return self.row_seconds * moved + self.move_overhead if moved else 0.0

    def rebalance(self, save=lambda: True, min_gain=0.05):
        """With measured weights: re-split between passes when it pays.
        The rates of the last pass (smoothed with the earlier ones) predict a
        pass time for an ideal split; the rows move once the time this
        layout has lost over its passes so far exceeds what moving them
        costs (rent-or-buy: never more than twice the better choice), and
        the predicted gain is at least *min_gain* of a pass.  Returns
        save()'s value, taken before the chunks (and their state) are laid
        out anew, or None."""
        m = self.manager
        if not measuring(m) or not self.last_times or len(self.shards) < 2:
            return None
        times = np.array(self.last_times)
        held = self._held()
        rows = self._shard_rows()[held].astype(np.float64)
        if not (rows > 0).all():
            return None
        # a device without rows keeps the rate it had (0: left out, it stays out)
        rate = np.zeros(len(m.profiles)) if m.measured is None else m.measured.copy()
        rate[held] = rows / np.maximum(times, 1e-9)
        if self.calibration is not None:   # the next fit of this shape starts from them
            remember_rates(self.calibration, [m.profiles[i] for i in held], rate[held],
                           self.d, self.dtype)
        # a calibration times each device alone; passes time them together
        # (sharing the host's cores and memory), which is what counts
        self._keep(rate if not self.pass_rates else 0.5 * m.measured + 0.5 * rate)
        self.pass_rates = True
        lost = times.max() - self.n / m.measured.sum()
        self.lost += max(lost, 0.0)
        if lost < min_gain * times.max() or not self._moves() \
                or self.lost < self._move_seconds():
            return None
        start = time.perf_counter()
        moving = self._move_seconds() - self.move_overhead
        saved = save()
        self.reshard()
        # what a re-split costs beyond its rows (allocations, saved state):
        # the next one must pay for it too, so noise does not re-split each pass
        self.move_overhead = max(0.0, time.perf_counter() - start - moving)
        return saved
