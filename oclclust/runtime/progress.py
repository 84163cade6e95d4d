"""Progress of long fits and benchmarks: a bar on a terminal, logging always.

A bar (tqdm, the optional ``progress`` extra) is shown only when the caller
asks (``verbose``) and stderr is a terminal; every step is also logged on the
``oclclust`` logger at DEBUG level, so batch jobs can record it with logging.
"""
import logging
import sys
import time

log = logging.getLogger("oclclust")


def _terminal():
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """``with Progress(total, "k-means", enabled) as p: p.step(inertia=...)``."""

    def __init__(self, total, desc, enabled=True, unit="it"):
        self.desc, self.start, self.count = desc, time.perf_counter(), 0
        self.bar = None
        if enabled and _terminal():
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, desc=desc, unit=unit, leave=False)

    def step(self, n=1, **stats):
        """One more step done; *stats* (objective, shift ...) shown and logged."""
        self.count += n
        if self.bar is None and not log.isEnabledFor(logging.DEBUG):
            return
        shown = {k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in stats.items()}
        if self.bar is not None:
            self.bar.set_postfix(shown, refresh=False)
            self.bar.update(n)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s %d: %s (%.3f s)", self.desc, self.count,
                      ", ".join(f"{k} {v}" for k, v in shown.items()),
                      time.perf_counter() - self.start)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def history_entry(iteration, start, data, **stats):
    """One row of an estimator's ``history_``: the iteration, its statistics,
    its seconds and the rows each device held (the balance)."""
    return dict(iteration=iteration, **stats, seconds=time.perf_counter() - start,
                rows_per_device=list(data.rows_per_device.values()))
