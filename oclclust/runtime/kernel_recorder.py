"""The kernels a fit runs, recorded: what an estimator's ``kernels_`` says.

A fit (cluster/_base.py: RecordsKernels) runs inside recording_kernels();
codegen notes every kernel fetched while a recorder is active (kernel,
own_kernel, build, a plan made or reused), and an owner of kernel objects
kept across fits notes them again when a fit reuses them (note).  Pools
made by recorded_on_workers carry the recorders to their threads, so a
fit's passes on a device manager's threads are the fit's.  A record names
the pass, the variant, the spec's class, the template's path below the
templates folder and the spec's key values (kernel_record).
"""
import contextlib
import contextvars
import dataclasses
import functools

import numpy as np

# the KernelRecorders active in this thread (innermost last): a fit's, and
# any fit's it runs inside (GaussianMixture's k-means init)
_RECORDERS = contextvars.ContextVar("oclclust_kernel_recorders", default=())


def _plain(value):
    """A spec field's value as JSON / YAML data (tuples as lists, numpy
    scalars as Python's)."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def pass_of(spec):
    """The pass a spec's kernel belongs to: its module below
    oclclust/passes/ ("lloyd"), else below oclclust/ ("runtime.reduce")."""
    module = type(spec).__module__
    for prefix in ("oclclust.passes.", "oclclust."):
        if module.startswith(prefix):
            return module[len(prefix):]
    return module


def kernel_record(spec, device):
    """What ``kernels_`` says of *spec*'s kernel run on *device* (its name):
    the pass, the variant (the spec's ``variant`` field where it has one,
    else its class's name), the spec's class, its template's path below the
    templates folder, and the spec's key values (its fields)."""
    fields = {f.name: _plain(getattr(spec, f.name)) for f in dataclasses.fields(spec)}
    variant = fields.get("variant")
    return {"device": device, "pass": pass_of(spec),
            "variant": variant if isinstance(variant, str) else type(spec).__name__,
            "spec": type(spec).__name__, "template": spec.template, "key": fields}


class KernelRecorder:
    """The kernels fetched (kernel, own_kernel, build, or a plan made or
    reused) while it is active: recording_kernels."""

    def __init__(self):
        self.fetched = set()   # (context pointer, spec)
        self.devices = {}      # context pointer -> its devices' names

    def add(self, context, ptr, spec):
        """*spec*'s kernel fetched in *context* (whose int_ptr *ptr* is)."""
        if ptr not in self.devices:
            self.devices[ptr] = " + ".join(d.name.strip() for d in context.devices)
        self.fetched.add((ptr, spec))

    def take(self, other):
        """What *other* recorded, recorded here too."""
        for ptr, names in other.devices.items():
            self.devices.setdefault(ptr, names)
        self.fetched |= other.fetched

    def records(self):
        """kernel_record of every kernel fetched (kernel_records' order)."""
        unique = {}
        for ptr, spec in list(self.fetched):
            record, same, order = _known_record(spec, self.devices[ptr])
            unique[same] = order, record
        return [_fresh(record) for _, record in sorted(unique.values(), key=lambda e: e[0])]


def _identity(record):
    """What kernel_records tells records apart by."""
    return repr(sorted(record.items()))


def _order(record):
    """kernel_records' order: device, pass, template, variant, key values."""
    return (record["device"], record["pass"], record["template"], record["variant"],
            repr(record["key"]))


@functools.lru_cache(maxsize=4096)
def _known_record(spec, device):
    """(kernel_record, its identity, its order) of *spec* on *device*, made
    once: a fit records the same few kernels as the last (building them
    took ~0.1 ms of a small fit); callers copy the record (_fresh)."""
    record = kernel_record(spec, device)
    return record, _identity(record), _order(record)


def _fresh(value):
    """A copy of a record's plain data (a dict or a list: its dicts and lists new)."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    copied = {} if isinstance(value, dict) else [None] * len(value)
    for k, v in items:
        copied[k] = _fresh(v) if isinstance(v, (dict, list)) else v
    return copied


def kernel_records(records):
    """*records* (kernel_record's) each once, ordered by device, pass,
    template, variant and key values."""
    unique = {_identity(r): r for r in records}
    return sorted(unique.values(), key=_order)


def active_recorders():
    """The KernelRecorders active in this thread (a tuple: empty when no fit
    records)."""
    return _RECORDERS.get()


@contextlib.contextmanager
def recording_kernels():
    """A KernelRecorder of the kernels this thread (and the pools made by
    recorded_on_workers that it hands work to) fetches while the block
    runs; the recorders already active see them too."""
    recorder = KernelRecorder()
    token = _RECORDERS.set(_RECORDERS.get() + (recorder,))
    try:
        yield recorder
    finally:
        _RECORDERS.reset(token)


def recorded_contexts():
    """The int_ptr of every context whose kernels the innermost active
    recorder (the fit under way) saw, in no order; () outside a recording."""
    recorders = _RECORDERS.get()
    return tuple(recorders[-1].devices) if recorders else ()


def note(context, *specs):
    """Record that *specs*' kernels run in *context* (for each active
    recorder): what fetches them calls it, and so does an owner of kernel
    objects kept across fits (a pooled state) when a fit uses them again."""
    recorders = _RECORDERS.get()
    if recorders:
        ptr = context.int_ptr
        for recorder in recorders:
            for spec in specs:
                recorder.add(context, ptr, spec)


def note_recorded(made):
    """What the KernelRecorder *made* recorded, recorded by each active recorder."""
    for recorder in _RECORDERS.get():
        recorder.take(made)


@contextlib.contextmanager
def held_back():
    """The kernels fetched in the block recorded by the recorder yielded
    alone (a candidate tried: first_fitting passes them on if it is chosen)."""
    trial = KernelRecorder()
    token = _RECORDERS.set((trial,))
    try:
        yield trial
    finally:
        _RECORDERS.reset(token)


def _with_recorders(recorders, fn, *args, **kwargs):
    token = _RECORDERS.set(recorders)
    try:
        return fn(*args, **kwargs)
    finally:
        _RECORDERS.reset(token)


class _RecordedPool:
    """A pool whose tasks run with the submitting thread's recorders (only
    those: the rest of its context, numpy's error state among it, stays the
    worker's as before)."""

    def __init__(self, pool):
        self.pool = pool

    def submit(self, fn, *args, **kwargs):
        recorders = _RECORDERS.get()
        if not recorders:
            return self.pool.submit(fn, *args, **kwargs)
        return self.pool.submit(_with_recorders, recorders, fn, *args, **kwargs)

    def map(self, fn, *iterables, **kwargs):
        recorders = _RECORDERS.get()
        if recorders:
            fn = functools.partial(_with_recorders, recorders, fn)
        return self.pool.map(fn, *iterables, **kwargs)

    def __enter__(self):
        self.pool.__enter__()
        return self

    def __exit__(self, *exc):
        return self.pool.__exit__(*exc)

    def __getattr__(self, name):
        return getattr(self.pool, name)


class _RecordedExecutor:
    """A pool maker whose pools are _RecordedPools (a class, not a closure:
    a device manager holding it pickles and copies)."""

    def __init__(self, executor):
        self.executor = executor

    def __call__(self, *args, **kwargs):
        return _RecordedPool(self.executor(*args, **kwargs))


def recorded_on_workers(executor):
    """*executor* (a pool maker: executor(max_workers) -> pool) whose pools
    run each task with the recorders of the thread that submits it: the
    kernels a fit's passes fetch on a device manager's threads are the
    fit's (parallel/manager.py)."""
    if isinstance(executor, _RecordedExecutor):
        return executor
    return _RecordedExecutor(executor)
