"""Fixed-order reduction of per-work-group partial statistics on the device.

Pairs with templates/runtime/reduce_partials.cl.mako.  Only the reduced values travel
to the host, where they become float64.  Also the rows per label
(count_labels.cl.mako): integer atomics, exact in any order.
"""
import dataclasses
import functools

import numpy as np
import pyopencl.array as cla

from .codegen import Spec, kernel, kernel_work_group_limit
from .exact_sums import ExactWords


@dataclasses.dataclass(frozen=True)
class ReduceSpec(Spec):
    template = "runtime/reduce_partials.cl.mako"


def acc_dtype(acc_double):
    return np.float64 if acc_double else np.float32


def partial_buffer(queue, groups, size, acc_double):
    """A slab buffer for *groups* partials of *size* values (Kahan: twice)."""
    return cla.empty(queue, groups * size * (1 if acc_double else 2), acc_dtype(acc_double))


def enqueue_reduce(queue, part, groups, size, dtype, acc_double, out):
    """Enqueue the sum of the *groups* slabs of *part* elementwise into the
    device array *out* (*size* values; Kahan: then their compensations)."""
    reduce = kernel(queue.context, ReduceSpec(dtype=np.dtype(dtype).name, acc_double=acc_double),
                    "reduce_partials")
    wg = 64
    global_size = (size + wg - 1) // wg * wg
    return reduce(queue, (global_size,), (wg,), part.data, np.int64(groups), np.int64(size),
                  out.data)


def reduce_partials(queue, part, groups, size, dtype, acc_double):
    """Sum the *groups* slabs of *part* elementwise; float64 array of *size*."""
    out = partial_buffer(queue, 1, size, acc_double)
    enqueue_reduce(queue, part, groups, size, dtype, acc_double, out)
    return totals_of(out.get(queue), size, acc_double)


def totals_of(host, size, acc_double):
    """The *size* float64 totals of enqueue_reduce's output read to *host*
    (Kahan: the sums plus their compensations)."""
    got = np.asarray(host[:size * (1 if acc_double else 2)], np.float64)
    return got if acc_double else got[:size] + got[size:]


@functools.lru_cache(maxsize=None)
def _class_fields(cls):
    """dataclasses.fields of a statistics class, asked once (several times
    an iteration otherwise)."""
    return dataclasses.fields(cls)


class AdditiveStats:
    """Base of a pass's per-chunk statistics (a dataclass): they add field
    by field, as Python adds them (``sum`` over chunks in their order; a
    field None on every chunk stays None), and cross ranks as one float64
    vector.  A field may be an exact sum (exact_sums.ExactWords: the same
    total for any split of the rows) until ``settled``.  A field marked ``metadata={"same": True}`` is the same on
    every chunk (carried, not added)."""

    def _fields(self):
        return [(f, getattr(self, f.name)) for f in _class_fields(type(self))]

    @classmethod
    def total(cls, parts):
        """*parts* (one per chunk, in chunk order) summed: sum()'s order and
        result, an exact sum's words added at once (ExactWords.total: one
        carry, not one an addition; several GPUs' k x d words an iteration)."""
        if len(parts) < 2 or cls.__add__ is not AdditiveStats.__add__:
            return sum(parts)
        for p in parts[1:]:
            parts[0].check_addable(p)
        values = []
        for f, first in parts[0]._fields():
            if f.metadata.get("same") or first is None:
                values.append(first)
            elif isinstance(first, ExactWords):
                values.append(ExactWords.total([getattr(p, f.name) for p in parts]))
            else:
                value = 0 + first
                for p in parts[1:]:
                    value = value + getattr(p, f.name)
                values.append(value)
        return cls(*values)

    def check_addable(self, other):
        """Raise where *other* may not be added to these (a class's own
        rule: ValueError naming why); every addition asks."""

    def __add__(self, other):
        self.check_addable(other)
        return type(self)(*[a if f.metadata.get("same") or a is None else a + b
                            for (f, a), (_, b) in zip(self._fields(), other._fields())])

    def __radd__(self, start):
        """``start + self``: sum()'s start (0), added to every field as before."""
        return type(self)(*[a if f.metadata.get("same") or a is None else start + a
                            for f, a in self._fields()])

    def flat(self):
        """The float64 vector the ranks sum (the added fields, None left out)."""
        parts = [a.flat() if isinstance(a, ExactWords) else np.asarray(a, np.float64).ravel()
                 for f, a in self._fields() if not f.metadata.get("same") and a is not None]
        return np.concatenate(parts) if parts else np.zeros(0)

    def order_free(self):
        """Whether ``flat()`` holds only whole numbers that add exactly in
        any order (every added field an exact sum's words or an integer
        count): the ranks may sum them in any order, with the same bits."""
        if type(self).flat is not AdditiveStats.flat:
            return False   # its own vector: its class says
        return all(isinstance(a, (ExactWords, int, np.integer))
                   or (isinstance(a, np.ndarray) and a.dtype.kind in "iub")
                   for f, a in self._fields() if not f.metadata.get("same") and a is not None)

    def from_flat(self, vector):
        """Statistics shaped and typed as these, their values from *vector*
        (the rank sum of ``flat()``)."""
        values, at = [], 0
        for f, a in self._fields():
            if f.metadata.get("same") or a is None:
                values.append(a)
                continue
            if isinstance(a, ExactWords):
                size = a.flat().size
                values.append(a.from_flat(vector[at:at + size]))
                at += size
                continue
            part, at = vector[at:at + np.size(a)], at + np.size(a)
            values.append(part.reshape(np.shape(a)) if isinstance(a, np.ndarray)
                          else type(a)(part[0]))
        return type(self)(*values)

    def alone(self):
        """``from_flat(flat())`` on one rank -- the same values, types and
        carried words -- without the flat vector's copies: arrays made
        float64, the exact sums' words carried in place.  A class with
        its own flat / from_flat (other types across the ranks) goes
        through them."""
        if (type(self).flat is not AdditiveStats.flat
                or type(self).from_flat is not AdditiveStats.from_flat):
            return self.from_flat(self.flat())
        values = []
        for f, a in self._fields():
            if isinstance(a, ExactWords):
                a = a.carried()
            elif isinstance(a, np.ndarray) and not f.metadata.get("same"):
                a = np.asarray(a, np.float64)
            values.append(a)
        return type(self)(*values)

    def settled(self):
        """These statistics with every exact sum (ExactWords) rounded to
        float64: what the estimators read, once all chunks and ranks are in."""
        return type(self)(*[a.value() if isinstance(a, ExactWords) else a
                            for _, a in self._fields()])


@dataclasses.dataclass(frozen=True)
class CountSpec(Spec):
    """count_labels.cl.mako: rows per label.  No sums: no fp64 asked."""
    template = "runtime/count_labels.cl.mako"
    acc_double: bool = False


# the count's work-group, where the kernel allows it: any size counts the
# same (atomics); a multiple of every runtime's preferred multiple
COUNT_WG = 64


def count_labels(queue, labels, counts, n):
    """counts[labels[i]] += 1 for the first *n* labels (int32 device arrays;
    integer atomics: exact, in any order).  Our own kernel, not a pyopencl
    ElementwiseKernel: its program comes from the on-disk binary cache in a
    fresh process (pyopencl builds its own from source on PoCL and NVIDIA's
    runtime: 30 ms of a first 1k-row fit on PoCL)."""
    if not n:
        return
    knl = kernel(queue.context, CountSpec(), "count_labels")
    wg = min(COUNT_WG, kernel_work_group_limit(knl, queue.device))
    knl(queue, (-(-n // wg) * wg,), (wg,), labels.data, np.int64(n), counts.data)
