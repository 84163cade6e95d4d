"""Split-free sums: the same bits however the rows are split.

A pass's statistics are sums over rows.  Here they are summed in two steps:

1. **Fixed blocks.**  The rows are cut into blocks of ``block_rows`` counted
   from the first row (block_rows_for: fixed by the data's shape and the
   statistics' size, never by the devices), and each block's float64
   partial is summed by one work-group in that kernel's own fixed order.
   Every split of the rows (devices, sub-devices, streamed chunks, measured
   weights, MPI ranks, Dask workers) falls on block boundaries, so a block's
   partial is the same whoever holds it.
2. **Exact folding.**  The block partials are added exactly: each is cut,
   on a grid fixed per element (lsb_for_bounds: 100 bits under a bound of
   any block's partial), into three 40-bit integer words that are added as
   integers (runtime/exact_fold.py on the device); one value
   a block (a distance or log-density sum) is folded on the host over the
   whole float64 range (ExactWords.of_values).  Integer sums do not depend
   on grouping or order, so the chunks', ranks' and workers' words add in
   any order to the same total, rounded to float64 once (ExactWords.value).

Words are kept in float64 (integers below 2^53, carried to 40 bits after
every addition): they cross MPI ranks as the float64 vectors they always
did, and sum exactly there too.  Devices without fp64 keep Kahan sums,
which are not split-free (``exact_device``).
"""
import contextlib
import fractions
import math
import sys

import numpy as np

WORD_BITS = 40
ARRAY_WORDS = 3
HEADROOM = 100                 # grid bits under the bound of one block's partial
WIDE_LSB = -1074               # the wide (host) fold: float64's smallest bit ...
WIDE_WORDS = 55                # ... to past its largest, 40 bits a word
MIN_BLOCK_ROWS, MAX_BLOCK_ROWS = 512, 1 << 20
SCATTER_PIECE = 1 << 22       # values a host fold adds before carrying (int64 words)
# values a host fold sums as Python integers instead (the same carried words:
# a total has one form with its lower words in [0, 2^40)): numpy's 55-word
# bincounts and carry took ~1 ms a call, a small fit's every iteration
FEW_VALUES = 64
TOTAL_PARTS = 1 << 12          # carried sums (words under 2^40) added before carrying
PARTIALS_SHARE = 8             # the partials take at most 1/8 of their rows' bytes

_ENABLED = [True]


@contextlib.contextmanager
def disabled():
    """Today's float64 reduction of persistent work-groups' slabs instead
    (faster where blocks are few; not split-free): bench/split_free.py's
    baseline."""
    _ENABLED.append(False)
    try:
        yield
    finally:
        _ENABLED.pop()


def enabled():
    return _ENABLED[-1]


def exact_device(part):
    """Whether a DevicePartition's passes sum split-free (on by default;
    needs fp64, as the partials are float64)."""
    return enabled() and part.acc_double


def block_rows_for(d, itemsize, stat_values):
    """Rows a block: a power of two, the partials (*stat_values* float64 a
    block) at most 1/PARTIALS_SHARE of the block's rows' bytes, between
    MIN_BLOCK_ROWS and MAX_BLOCK_ROWS.  Depends on the data's shape and the
    statistics alone, so every split of the rows agrees on it."""
    rows = PARTIALS_SHARE * 8 * max(int(stat_values), 1) / max(d * itemsize, 1)
    rows = 1 << max(0, math.ceil(math.log2(max(rows, 1))))
    return int(min(MAX_BLOCK_ROWS, max(MIN_BLOCK_ROWS, rows)))


def blocks_of(n, block_rows):
    """The blocks of a chunk of *n* rows that starts on a block boundary."""
    return -(-int(n) // int(block_rows))


def block_rows_of(part, stat_values):
    """The blocks of a pass on DevicePartition *part*: the fit's (every
    chunk of a ShardedData carries them) or, for a partition of its own,
    block_rows_for its statistics."""
    return part.block_rows or block_rows_for(part.d, part.dtype.itemsize, stat_values)


def lsb_for_bounds(bounds):
    """Each element's grid exponent (int32): HEADROOM bits under the power
    of two above *bounds* (a bound of |any one block's partial| of the
    element).  A zero or non-finite bound gets the grid of 1.0 (the
    element's partials are zero, or the fit stops on them)."""
    bounds = np.asarray(bounds, np.float64)
    shape, bounds = bounds.shape, np.ascontiguousarray(bounds).reshape(-1)
    # frexp's exponent from the bits (np.frexp and its temporaries took ~1 ms
    # for a full GMM's 60k bounds an iteration, most of it page faults on
    # fresh arrays): a normal double's biased exponent - 1022, from its high
    # 32-bit word in one int32 array; subnormals by frexp
    if sys.byteorder == "little":
        exponent = bounds.view(np.int32)[1::2] >> 20
    else:
        exponent = (bounds.view(np.int64) >> 52).astype(np.int32)
    exponent &= 0x7FF
    tiny = exponent == 0
    if tiny.any():
        exponent[tiny] = np.frexp(bounds[tiny])[1] + 1022
    exponent[(exponent == 0x7FF) | ~(bounds > 0)] = 1 + 1022    # frexp(1.0)'s
    exponent -= 1022 + HEADROOM
    return exponent.reshape(shape)


def _carry(words):
    """*words* (nwords x size, float64 integers) with each lower word in
    [0, 2^40), its excess carried up (exact: every value under 2^53; one
    scratch array: several GPUs' k x d words are carried between passes)."""
    unit, inverse = float(1 << WORD_BITS), 2.0 ** -WORD_BITS
    lower = words[:-1]
    if ((lower >= 0) & (lower < unit)).all():   # carried already: nothing moves (a sum of
        return words                             # one process's; 55 wide words took ~0.15 ms)
    carry = np.empty(words.shape[1:])
    for i in range(words.shape[0] - 1):
        np.floor(np.multiply(words[i], inverse, out=carry), out=carry)
        words[i + 1] += carry
        carry *= unit
        words[i] -= carry
    return words


def _cut(s):
    """s (float64 on its grid: under 2^93 in magnitude) as three signed
    40-bit words, cut toward zero at 2^80 and 2^40 (exact: each remainder
    keeps s's own bits and sign) and the rest rounded to the nearest
    integer, halves away from zero: exact_fold.cl.mako's steps, the same
    IEEE operations (the device's words equal these)."""
    h2 = np.trunc(s * 2.0 ** -80)
    r = s - h2 * 2.0 ** 80
    h1 = np.trunc(r * 2.0 ** -40)
    low = r - h1 * 2.0 ** 40
    return np.trunc(low + np.copysign(0.5, low)), h1, h2


class ExactWords:
    """Values summed exactly: integer words on a per-element grid
    (``words``: nwords x size float64, word i worth 2^(lsb + 40 i)) and
    the non-finite partials' float sum (``special``).  Adding two adds
    their words (then carries); ``value()`` rounds the exact total to
    float64.  ``shape``: the values' shape (() for one value)."""

    __slots__ = ("words", "lsb", "special", "shape")

    def __init__(self, words, lsb, special, shape):
        self.words, self.lsb, self.special, self.shape = words, lsb, special, tuple(shape)

    @classmethod
    def from_device(cls, out, lsb, shape, copy=True):
        """exact_fold's output (4 x size doubles, host) on grid *lsb*;
        *copy* False: the words are views of *out* (a fresh array no one
        reads again: carried in place later)."""
        size = int(np.prod(shape, dtype=np.int64))
        out = np.asarray(out, np.float64).reshape(ARRAY_WORDS + 1, size)
        words, special = out[:ARRAY_WORDS], out[ARRAY_WORDS]
        return cls(words.copy() if copy else words, np.asarray(lsb, np.int32),
                   special.copy() if copy else special, shape)

    @classmethod
    def of_partials(cls, part, lsb, shape):
        """The host's exact_fold: *part* (blocks x size float64 partials) on
        grid *lsb*, the same words as the device's."""
        part = np.asarray(part, np.float64).reshape(-1, int(np.prod(shape, dtype=np.int64)))
        finite = np.isfinite(part)
        special = np.where(finite, 0.0, part).sum(axis=0)
        v = np.where(finite, part, 0.0)
        shift = -np.asarray(lsb, np.int32)[None, :]   # 2^shift as the device's two factors
        first = np.fix(shift / 2).astype(np.int32)      # (C's division: toward zero)
        s = v * np.ldexp(1.0, first) * np.ldexp(1.0, shift - first)
        words = np.stack([h.astype(np.int64).sum(axis=0) for h in _cut(s)])
        return cls(_carry_int(words), np.asarray(lsb, np.int32), special, shape)

    @classmethod
    def of_values(cls, values):
        """The exact sums of float64 *values* down their first axis (one
        value a block: a 1-D array gives one value, blocks x m gives m) on
        the wide grid: any float64 is a whole number of 2^-1074."""
        v = np.asarray(values, np.float64)
        shape = v.shape[1:]
        v = v.reshape(v.shape[0], -1)
        rows, cols = np.nonzero(v != 0)
        return cls.of_scattered(v[rows, cols], cols, v.shape[1], shape)

    @classmethod
    def of_scattered(cls, values, columns, size, shape=None):
        """The exact sums of float64 *values* into *size* elements, value i
        into element *columns*[i] (a weighted bincount, exact: its total
        does not depend on the values' order or grouping), on the wide grid."""
        v = np.asarray(values, np.float64).ravel()
        cols = np.asarray(columns, np.int64).ravel()
        if v.size > SCATTER_PIECE:   # int64 words: at most 2^22 words of 2^40 added at once
            return sum(cls.of_scattered(v[i:i + SCATTER_PIECE], cols[i:i + SCATTER_PIECE],
                                        size, shape) for i in range(0, v.size, SCATTER_PIECE))
        finite = np.isfinite(v)
        special = np.zeros(size)
        np.add.at(special, cols[~finite], v[~finite])
        words = np.zeros(WIDE_WORDS * size, np.int64)
        keep = finite & (v != 0)
        shape = (size,) if shape is None else shape
        if np.count_nonzero(keep) <= FEW_VALUES:
            return cls(_wide_words_of_few(v[keep], cols[keep], size),
                       np.full(size, WIDE_LSB, np.int32), special, shape)
        if keep.any():
            v, cols = v[keep], cols[keep]
            last = np.frexp(v)[1] - 53           # the exponent of each one's last bit
            word = (np.maximum(last, WIDE_LSB) - WIDE_LSB) // WORD_BITS
            s = np.ldexp(v, -(WIDE_LSB + WORD_BITS * word))   # under 2^93, whole
            at = word * size + cols
            for i, h in enumerate(_cut(s)):
                words += _whole_bincount(at + i * size, h, words.size)
        return cls(_carry_int(words.reshape(WIDE_WORDS, size)),
                   np.full(size, WIDE_LSB, np.int32), special, shape)

    @classmethod
    def total(cls, parts):
        """``sum(parts)``'s words (*parts* in order, each carried, as every
        ExactWords is), their words added at once and carried once: the
        same integers, so the same words (adding 2^12 words under 2^40 at
        a time stays exact in float64)."""
        parts = list(parts)
        if len(parts) > TOTAL_PARTS:
            return cls.total([cls.total(parts[i:i + TOTAL_PARTS])
                              for i in range(0, len(parts), TOTAL_PARTS)])
        first = parts[0]
        if len(parts) == 1:
            return first
        for other in parts[1:]:
            first._same_grid(other)
        words, special = first.words + parts[1].words, first.special + parts[1].special
        for other in parts[2:]:
            words += other.words
            special = special + other.special   # floats (non-finite): in order
        return cls(_carry(words), first.lsb, special, first.shape)

    @property
    def size(self):
        return self.words.shape[1]

    def __add__(self, other):
        if isinstance(other, (int, float)) and other == 0:   # sum()'s start
            return self
        self._same_grid(other)
        return ExactWords(_carry(self.words + other.words), self.lsb,
                          self.special + other.special, self.shape)

    __radd__ = __add__

    def _same_grid(self, other):
        if self.words.shape != other.words.shape or not np.array_equal(self.lsb, other.lsb):
            raise ValueError("exact sums on different grids cannot be added")

    def flat(self):
        """The float64 vector the ranks sum (exactly: whole numbers under 2^53)."""
        return np.concatenate([self.words.ravel(), self.special])

    def carried(self):
        """These sums with each lower word in [0, 2^40) (as from_flat gives
        them): carried in place, the same total."""
        _carry(self.words)
        return self

    def from_flat(self, vector):
        n = self.words.size
        return ExactWords(_carry(np.asarray(vector[:n], np.float64).reshape(self.words.shape)),
                          self.lsb, np.asarray(vector[n:n + self.size], np.float64), self.shape)

    def _exactly(self, i):
        """Element *i*'s total rounded once (Python's integers and fractions)."""
        if self.special[i] != 0:
            return float(self.special[i])
        whole = sum(int(w) << (WORD_BITS * j) for j, w in enumerate(self.words[:, i]))
        try:
            return float(fractions.Fraction(whole) * fractions.Fraction(2) ** int(self.lsb[i]))
        except OverflowError:   # past float64's range: as a float sum overflows
            return math.inf if whole > 0 else -math.inf

    def value(self):
        """The total rounded to float64 (the words from the top down: the
        same words give the same bits); a non-finite partial's sum wins."""
        if self.shape == () or self.words.shape[0] > ARRAY_WORDS:   # the wide grid: each
            total = np.array([self._exactly(i) for i in range(self.size)])   # rounded once
            return float(total[0]) if self.shape == () else total.reshape(self.shape)
        total = np.zeros(self.size)
        for i in range(self.words.shape[0] - 1, -1, -1):
            total += np.ldexp(self.words[i], self.lsb + WORD_BITS * i)
        return np.where(self.special != 0, self.special, total).reshape(self.shape)


def rounded_sum(values):
    """``settle(ExactWords.of_values(values))`` -- the exact sums of float64
    *values* down their first axis (a 1-D array gives one value, blocks x m
    gives m), each rounded once to nearest-even -- fast: math.fsum rounds
    so where a column's values are finite and its sum stays in range (~10
    us for a few hundred block sums where the words take ~0.7 ms, an
    iteration's host work on the H200 host), else the words.  For a fit's
    only partition, whose sums no other chunk or rank adds to."""
    v = np.asarray(values, np.float64)
    if v.ndim > 1:
        return np.array([rounded_sum(column) for column in v.reshape(v.shape[0], -1).T]
                        ).reshape(v.shape[1:])
    if np.isfinite(v).all():
        try:
            return math.fsum(v.tolist()) + 0.0   # (+ 0.0: the words' zero has no sign)
        except OverflowError:
            pass
    return ExactWords.of_values(v).value()


def settle(value):
    """*value* rounded to float64 where it is an exact sum (ExactWords), else
    as it is: what a caller of one pass on one partition reads."""
    return value.value() if isinstance(value, ExactWords) else value


def _whole_bincount(index, h, length):
    """The sums of whole numbers *h* (float64, under 2^40 in magnitude) into
    *length* int64 bins by *index*: numpy's bincount (far faster than
    np.add.at) on their 20-bit halves, whose float64 sums stay exact for up
    to 2^33 values; the same integers in any order."""
    high = np.floor(h * 2.0 ** -20)
    low = h - high * 2.0 ** 20                   # [0, 2^20): exact
    return ((np.bincount(index, high, length).astype(np.int64) << 20)
            + np.bincount(index, low, length).astype(np.int64))


def _wide_words_of_few(values, columns, size):
    """The carried wide-grid words (WIDE_WORDS x *size*, float64) of finite
    *values* summed into elements *columns*: each total a Python integer of
    2^WIDE_LSB units, cut into 40-bit words from the bottom (floor shifts:
    a negative total's lower words in [0, 2^40) too, as _carry_int's)."""
    totals = [0] * size
    for value, column in zip(values.tolist(), columns.tolist()):
        num, den = value.as_integer_ratio()              # den: a power of two
        totals[column] += num * ((1 << -WIDE_LSB) // den)
    words = np.zeros((WIDE_WORDS, size))
    mask = (1 << WORD_BITS) - 1
    for column, total in enumerate(totals):
        if total:
            for i in range(WIDE_WORDS - 1):
                words[i, column] = total & mask
                total >>= WORD_BITS
            words[WIDE_WORDS - 1, column] = total
    return words


def _carry_int(words):
    """int64 words carried (floor division: signed words too) as float64."""
    for i in range(words.shape[0] - 1):
        carry = words[i] >> WORD_BITS
        words[i] -= carry << WORD_BITS
        words[i + 1] += carry
    return words.astype(np.float64)
