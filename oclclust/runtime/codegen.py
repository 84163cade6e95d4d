"""Kernel generation: frozen spec -> Mako template -> OpenCL source -> program.

A spec is the only route from a device profile and a problem shape to template
parameters.  Programs are memoised per (context, source, options) in this
process and cached on disk by pyopencl across processes.
"""
import contextlib
import contextvars
import dataclasses
import functools
import hashlib
import os
import re
import tempfile
import threading
import warnings
import weakref
from pathlib import Path

import numpy as np
import pyopencl as cl
from mako.lookup import TemplateLookup

from .resources import template_dirs

_LOOKUP = None
_PROGRAMS = {}
BUILD_OPTIONS = ("-cl-mad-enable", "-cl-no-signed-zeros")


class KernelBuildError(RuntimeError):
    """An OpenCL program failed to build; carries the log and the source file."""


def template_module_dir(directories):
    """Where Mako keeps the templates compiled to Python modules, so that a
    fresh process renders without lexing and compiling them again (compiling
    them was a good part of a cold fit):
    under $OCLCLUST_CACHE_DIR/mako, else the user's own cache folder (the
    modules are code this process runs: never a folder others can write), a
    folder per content of the template *directories* (another checkout or
    version never meets these modules, whatever its files' times).  None
    where it cannot be made (then templates compile in memory, as before)."""
    digest = hashlib.sha1()
    for top in directories:
        for path in sorted(Path(top).rglob("*.cl*")):
            digest.update(path.relative_to(top).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    root = os.environ.get("OCLCLUST_CACHE_DIR")
    if root:
        base = Path(root) / "mako"
    else:
        try:
            import platformdirs
            base = Path(platformdirs.user_cache_dir("oclclust")) / "mako"
        except ImportError:
            base = Path.home() / ".cache" / "oclclust" / "mako"
    path = base / digest.hexdigest()[:16]
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return str(path) if os.access(path, os.W_OK) else None


def lookup():
    """The templates' Mako lookup.  A spec's ``template`` is the file's path
    below the templates folder (templates/<folder>/<file>, the folders
    mirroring oclclust/passes/: "lloyd/lloyd_assign_accumulate.cl.mako"),
    and a template's ``<%inherit>`` / ``<%namespace>`` / ``<%include>``
    names an absolute URI ("/prelude.cl.mako", "/common/select.cl.mako");
    the plain-C helpers are the second directory's ("/tf32_split.cl").  A
    kernel is found from its pass's spec in one step; a bare file name is
    not searched for."""
    global _LOOKUP
    if _LOOKUP is None:
        dirs = template_dirs()
        _LOOKUP = TemplateLookup(directories=dirs, strict_undefined=True,
                                 input_encoding="utf-8",
                                 module_directory=template_module_dir(dirs))
    return _LOOKUP


def c_type(dtype):
    return {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}[np.dtype(dtype)]


@dataclasses.dataclass(frozen=True)
class Spec:
    """Base of every kernel spec: the template it renders (its path below the
    templates folder: lookup) and the value types.

    ``dtype`` is the data type, ``acc_double`` whether sums are accumulated in
    double (else in Kahan-compensated float, for devices without fp64).
    """
    template = None
    # a kernel whose results must be the host's bit for bit (float64 updates)
    # builds without -cl-mad-enable: a mad may round a * b + c once, or worse
    build_options = BUILD_OPTIONS
    dtype: str = "float32"
    acc_double: bool = True

    def template_args(self):
        args = dataclasses.asdict(self)
        args["real_t"] = c_type(self.dtype)
        args["fp64"] = self.dtype == "float64" or self.acc_double
        return args

    def render(self):
        for observe in _RENDER_OBSERVERS:
            observe(self)
        return lookup().get_template(self.template).render(**self.template_args())


_RENDER_OBSERVERS = []


@contextlib.contextmanager
def renders_seen_by(observer):
    """Call *observer(spec)* on every spec rendered while the block runs: a
    harness's record of the variants it exercised
    (tests/harness/oclgrind_driver.py --report)."""
    _RENDER_OBSERVERS.append(observer)
    try:
        yield
    finally:
        _RENDER_OBSERVERS.remove(observer)


# ------------------------------------------------- the kernels a fit records
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
        return kernel_records(kernel_record(spec, self.devices[ptr])
                              for ptr, spec in list(self.fetched))


def kernel_records(records):
    """*records* (kernel_record's) each once, ordered by device, pass,
    template, variant and key values."""
    unique = {repr(sorted(r.items())): r for r in records}
    return sorted(unique.values(), key=lambda r: (
        r["device"], r["pass"], r["template"], r["variant"], repr(r["key"])))


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


def _note_recorded(made):
    for recorder in _RECORDERS.get():
        recorder.take(made)


@contextlib.contextmanager
def _held_back():
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


def _rendered_file(source):
    cache = Path(os.environ.get("OCLCLUST_CACHE_DIR") or
                 Path(tempfile.gettempdir()) / "oclclust-sources")
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{hashlib.sha1(source.encode()).hexdigest()[:16]}.cl"
    path.write_text(source)
    return path


@contextlib.contextmanager
def quiet_build():
    """Silence a successful build's log (noise); a failed build still raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        yield


def build(context, spec, options=BUILD_OPTIONS, source=None):
    """The built program of *spec* (its rendered *source*, when the caller
    has it) in *context* (memoised)."""
    source = spec.render() if source is None else source
    key = (context.int_ptr, source, tuple(options))
    program = _PROGRAMS.get(key)
    if program is None:
        try:
            with quiet_build():
                program = cl.Program(context, source).build(options=list(options))
        except cl.RuntimeError as exc:
            path = _rendered_file(source)
            raise KernelBuildError(f"building {spec.template} for "
                                   f"{context.devices[0].name.strip()} failed; rendered "
                                   f"source: {path}\n{exc}") from exc
        _PROGRAMS[key] = program
    if _RECORDERS.get():
        note(context, spec)
    return program


_KERNELS = {}


class SharedKernel:
    """A memoised kernel object (or pyopencl scan), shared by every fit of
    the process: its arguments are set and the launch enqueued under its
    lock, so that two threads fitting at once never launch with each
    other's arguments (clSetKernelArg on one kernel object is not
    thread-safe; PoCL aborts on it).  Everything else is the raw object's."""
    __slots__ = ("raw", "lock")

    def __init__(self, raw):
        self.raw, self.lock = raw, threading.Lock()

    def __call__(self, *args, **kwargs):
        with self.lock:
            return self.raw(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.raw, name)


def kernel(context, spec, name, instance=0):
    """The memoised kernel *name* of *spec*'s program (one retrieval each),
    a SharedKernel; another *instance* is another kernel object of the same
    program, for a caller that keeps several argument sets bound (a Launch
    each)."""
    key = (context.int_ptr, spec, name, instance)
    if key not in _KERNELS:
        # cl.Kernel, not getattr: specs that render the same source share a
        # program, and pyopencl warns when getattr retrieves a kernel twice
        source = spec.render()
        kern = cl.Kernel(build(context, spec, spec.build_options, source), name)
        dtypes = scalar_arg_dtypes(source, name, spec)
        if dtypes is not None:
            kern.set_scalar_arg_dtypes(dtypes)
        _KERNELS.setdefault(key, SharedKernel(kern))
    for recorder in _RECORDERS.get():   # per launch for some passes: kept to a set insert
        recorder.add(context, key[0], spec)
    return _KERNELS[key]


def own_kernel(context, spec, name):
    """A new kernel object *name* of *spec*'s (memoised) program, typed as
    kernel()'s, for one owner alone: it sets the arguments once and
    enqueues it with cl.enqueue_nd_range_kernel, no lock and no argument
    setting per launch (a pooled per-fit state: passes.lloyd_update; it
    notes its kernels again when a later fit uses them: note)."""
    source = spec.render()
    kern = cl.Kernel(build(context, spec, spec.build_options, source), name)
    dtypes = scalar_arg_dtypes(source, name, spec)
    if dtypes is not None:
        kern.set_scalar_arg_dtypes(dtypes)
    return kern


_LAST_SET = {}     # id(kernel) -> weak reference to the Launch that last set its arguments


class Launch:
    """A kernel launch repeated with the same arguments (a pass's plan): they
    are set on the kernel (a SharedKernel) only when another Launch set it
    last -- setting them costs more than the enqueue on some runtimes.  A
    kernel launched through a Launch is launched only through Launches."""
    __slots__ = ("kernel", "global_size", "local_size", "args", "__weakref__")

    def __init__(self, kern, global_size, local_size, args):
        self.kernel, self.global_size, self.local_size = kern, global_size, local_size
        self.args = args

    def __call__(self, queue):
        with self.kernel.lock:
            last = _LAST_SET.get(id(self.kernel))
            if last is None or last() is not self:     # a dead reference: not this one
                self.kernel.raw.set_args(*self.args)
                _LAST_SET[id(self.kernel)] = weakref.ref(self)
            return cl.enqueue_nd_range_kernel(queue, self.kernel.raw, self.global_size,
                                              self.local_size)


_SCALARS = {"char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16,
            "int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64,
            "float": np.float32, "double": np.float64}
_QUALIFIERS = {"const", "restrict", "volatile", "__private", "private"}
_POINTEES = {"__global", "global", "__local", "local", "__constant", "constant"}


def scalar_arg_dtypes(source, name, spec):
    """The types of kernel *name*'s by-value arguments in *source* (None for
    buffers and local memory), or None where a type is not a plain scalar.
    A typed kernel launches at once; pyopencl's untyped path sets every
    scalar through the buffer protocol, a cost per scalar that dominates
    short passes (ensemble k-means).  Read
    from the source, not the runtime's argument info: a program loaded from
    pyopencl's binary cache has none."""
    aliases = {"real_t": c_type(spec.dtype), "acc_t": "double" if spec.acc_double else "float"}
    code = re.sub(r"/\*.*?\*/|//[^\n]*", " ", source, flags=re.S)
    match = re.search(r"\bvoid\s+%s\s*\(([^)]*)\)" % re.escape(name), code)
    if match is None:
        return None
    dtypes = []
    for param in match.group(1).split(","):
        words = re.findall(r"\w+|\*", param)
        if "*" in words or _POINTEES & set(words):
            dtypes.append(None)
            continue
        words = [w for w in words if w not in _QUALIFIERS][:-1]   # the type, less the name
        c_name = aliases.get(" ".join(words), " ".join(words))
        if c_name not in _SCALARS:
            return None
        dtypes.append(np.dtype(_SCALARS[c_name]))
    return dtypes


_PLANS = {}
_PLANS_FETCHED = {}   # memo -> a KernelRecorder of the kernels its make() fetched


def plan(kind, context, key, make):
    """What *make()* builds for a pass of *kind* (its name: "lloyd",
    "cmeans", ...) and *key* in *context* -- the chosen spec and kernel, or
    kernels of fixed build options -- made once per process; the kernels
    it fetched are recorded again each time it is reused."""
    memo = (kind, context.int_ptr, key)
    if memo not in _PLANS:
        with recording_kernels() as made:
            value = make()
        # what it fetched first: another thread finding the plan finds that too
        _PLANS_FETCHED[memo] = made
        _PLANS[memo] = value
    elif _RECORDERS.get():
        _note_recorded(_PLANS_FETCHED.get(memo, KernelRecorder()))
    return _PLANS[memo]


def plans(kind):
    """{key: plan} of every plan of *kind* made so far (in any context)."""
    return {key: value for (k, _, key), value in _PLANS.items() if k == kind}


def forget_plans(kind):
    """Drop the plans of *kind*: the next pass plans anew (after a change
    to the candidates or profiles the plans were chosen from)."""
    for memo in [m for m in _PLANS if m[0] == kind]:
        del _PLANS[memo]
        _PLANS_FETCHED.pop(memo, None)


def first_fitting(profile, queue, specs, name, what, also=None):
    """(spec, kernel) of the first of *specs* whose local memory fits the
    profile's budget, whose program builds and whose work-group the device
    runs (*also(spec)*: a further check, which may build kernels of its own);
    KernelBuildError naming *what* when none does.  *name*: the kernel's name,
    or a function of the spec that gives it."""
    errors, built = [], False
    for spec in specs:
        if spec.local_bytes() > profile.local_memory_budget:
            continue
        built = True
        try:
            # a candidate's kernels are the fit's only if it is chosen
            with _held_back() as tried:
                knl = kernel(queue.context, spec, name(spec) if callable(name) else name)
                fits = kernel_work_group_limit(knl, queue.device) >= spec.wg and (
                    also is None or also(spec))
        except KernelBuildError as exc:
            errors.append(exc)
            continue
        if fits:
            _note_recorded(tried)
            return spec, knl
    # none built: the planners offer only what fits the local memory budget,
    # so that budget is the setting to name
    raise KernelBuildError(f"no {what} kernel variant fits {profile}"
                           + (f"; last error: {errors[-1]}" if errors else "")
                           + ("" if built else
                              f"; none fits its local memory budget of "
                              f"{profile.local_memory_budget} bytes (local_memory_fraction="
                              f"{profile.local_memory_fraction} of local_mem_size="
                              f"{profile.local_mem_size})"))


def kernel_work_group_limit(kernel, device):
    return kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device)
