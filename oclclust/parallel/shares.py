"""Each device's share of a host's rows: the weights and memory budget a
DeviceManager is given, checked, and the split of rows by weights.  A
checked weight vector splits the rows as it says: no sum or product that
overflows to inf and leaves every row to the remainder rule."""
import numbers

import numpy as np

# bytes: past this a budget is no longer a byte count an OpenCL size holds
MAX_MEMORY_BUDGET = (1 << 63) - 1


def split_rows(n, weights, block_rows=1):
    """Row counts proportional to *weights* (largest remainder; sum is n),
    in whole blocks of *block_rows* (runtime.exact_sums: every share but
    the one holding the last, short block a multiple of it)."""
    w = np.asarray(weights, dtype=np.float64)
    blocks = -(-n // block_rows)
    exact = blocks * w / w.sum()
    counts = np.floor(exact).astype(np.int64)
    counts[np.argsort(-(exact - counts), kind="stable")[:blocks - counts.sum()]] += 1
    counts *= block_rows
    if blocks:   # the last block is short by blocks * block_rows - n rows
        counts[np.flatnonzero(counts)[-1]] -= blocks * block_rows - n
    return counts


def rank_rows(n, size, rank, block_rows=1):
    """Rank *rank*'s rows [start, stop) of *n* split over *size* ranks: in
    whole blocks of *block_rows* (an estimator's ``fit_block_rows(d,
    dtype)``) shared as evenly as they go (the later ranks the larger
    shares), the short last block on the last rank, so the ranks' fit is
    that of one process bit for bit (runtime.exact_sums: each rank counts
    its blocks from its first row).  With fewer blocks
    than ranks, the rows are split evenly instead (every rank must hold
    some: the fit is then right, not split-free).  *block_rows* 1: sizes
    that differ by at most one row."""
    n, size, rank, block_rows = int(n), int(size), int(rank), max(int(block_rows), 1)
    if not 0 <= rank < size:
        raise ValueError(f"rank {rank} is not one of {size} ranks")
    blocks = -(-n // block_rows)
    if blocks < size:
        block_rows, blocks = 1, n
    return (min(n, blocks * rank // size * block_rows),
            min(n, blocks * (rank + 1) // size * block_rows))


def checked_weights(weights, devices):
    """*weights* (one number per device) as float64, or a ValueError: every
    one finite and non-negative, their sum positive.  Weights far from 1
    are scaled by a power of two (exactly: the proportions are unchanged),
    so neither their sum nor rows x weight overflow, and subnormal ones do
    not lose their proportions."""
    want = f"weights must be {devices} non-negative numbers with a positive sum"
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{want}, got {weights!r}") from None
    if w.shape != (devices,):
        raise ValueError(want)
    if not np.all(np.isfinite(w)):
        raise ValueError(f"weights must be finite, got {weights!r}")
    if not np.all(w >= 0) or not np.any(w > 0):
        raise ValueError(want)
    largest = w.max()
    if not 2.0 ** -512 <= largest <= 2.0 ** 512:
        w = np.ldexp(w, -np.frexp(largest)[1])
    return w


def checked_memory_budget(budget):
    """*budget* as int bytes (None: each device's own budget), or a ValueError
    naming it: a positive finite number up to MAX_MEMORY_BUDGET."""
    if budget is None:
        return None
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, numbers.Real):
        raise TypeError(f"memory_budget must be a number of bytes, got {budget!r}")
    if not (np.isfinite(budget) and 1 <= budget <= MAX_MEMORY_BUDGET):
        raise ValueError(f"memory_budget must be a finite number of bytes in "
                         f"[1, {MAX_MEMORY_BUDGET}], got {budget!r}")
    return int(budget)


# A device whose measured rate is below this share of the devices' summed
# rate gets no rows.  Its rows would save the others at most that share of
# a pass, while it adds a fixed cost to every pass (its launches, the wake
# of its runtime's threads, its partial statistics read and reduced, one
# more thread hand-off) and a calibration error of the same order (a
# sample's rate on a shared host is good to a few percent).  Measured on
# this 2-core host, a Lloyd pass of 8 rows (k=1024, d=128; k=100, d=24):
# PoCL's CPU device 0.65 / 0.38 ms, Intel's 0.34 / 0.28 ms; against an
# H200's passes of the issue's fits (KMeans 10M x 128 x 1024 ~63 ms at
# 42.8 TFLOP/s, FuzzyCMeans 10M x 24 x 100 ~26 ms) that is 1-2.5% of a
# pass.  1/32 (3.1%) is above it, and leaving a device out below it costs
# at most 3.1% of the summed rate (the goal is 90%).  The GPU
# host's own CPU (PoCL, 16 cores) is ~0.1% of its H200 in a diagonal GMM
# pass: 10% of the rows took it 49.6 s, all of them the H200 0.40 s.
MIN_SHARE = 1.0 / 32


def alike(profiles):
    """Whether the devices are alike (one model of one vendor's runtime:
    identical GPUs, sub-devices of one CPU), so that compute units say how
    fast each is; else only a measurement does."""
    kinds = {(p.type, p.vendor, p.platform, p.name) for p in profiles}
    return len(kinds) <= 1


def measuring(manager):
    """Whether *manager*'s weights are measured (each device's rows per
    second, then its passes' timings) rather than fixed: "measured", or
    "auto" over devices that are not alike.  Once a measurement has left
    the slow ones out (``left_out``), "auto" over the alike devices left
    (the GPUs beside their host's CPU) splits by compute units again: the
    split, kernels and bits of a fit on those devices alone."""
    weights = manager.weights
    if not isinstance(weights, str):
        return False
    left_out = getattr(manager, "left_out", ())   # (a manager pickled before it had one)
    return weights == "measured" or weights == "auto" and not alike(
        [p for p in manager.profiles if p not in left_out])


def kept_rates(rates):
    """*rates* (rows per second, one a device) with those below MIN_SHARE
    of their sum set to 0 (the fastest device always kept): the devices
    whose rows would not pay for their per-pass fixed cost get none.
    Dropping a device only raises the others' shares, so one pass decides."""
    rates = np.asarray(rates, dtype=np.float64)
    kept = np.where(rates >= MIN_SHARE * rates.sum(), rates, 0.0)
    kept[np.argmax(rates)] = rates.max()
    return kept


def leave_aside_unlike(manager):
    """"auto" over devices that are not alike with nothing to measure them
    by (a fit without a calibration pass whose profiles know no rate, a
    predict): only the devices alike the first (GPUs first) take rows."""
    if measuring(manager) and manager.weights == "auto" and manager.measured is None:
        manager.left_out = [p for p in manager.profiles
                            if not alike([manager.profiles[0], p])]
