"""Kernel generation: frozen spec -> Mako template -> OpenCL source -> program.

A spec is the only route from a device profile and a problem shape to template
parameters.  Programs are memoised per (context, source, options) in this
process; their rendered sources and binaries are kept on disk across
processes (program_cache).
"""
import contextlib
import dataclasses
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

from . import program_cache
from .kernel_recorder import (KernelRecorder, active_recorders, held_back, note, note_recorded,
                              recording_kernels)
from .program_cache import cache_folder
from .resources import template_dirs

_LOOKUP = None
_PROGRAMS = {}
BUILD_OPTIONS = ("-cl-mad-enable", "-cl-no-signed-zeros")


class EmulatedBuild:
    """A spec with an ``emulate`` field: the tensor-core kernel with its
    products in plain OpenCL, which tests run on any device to check the
    fragment logic (never a fit).  Built unoptimised on a CPU: its unrolled
    fragments are most of a CPU runtime's compile time, which is most of
    the test (PoCL, 2 cores: 283 -> 52 s for GaussianMixture's E and M
    kernels at d 37, k 33, on a cold cache).  Not on a GPU: NVIDIA's
    compiler unoptimised leaves the fragments' inline functions unresolved
    (ptxas: "Unresolved extern function"), and compiles them fast anyway."""

    @property
    def cpu_build_options(self):
        return ("-cl-opt-disable",) if self.emulate else ()


class KernelBuildError(RuntimeError):
    """An OpenCL program failed to build.

    Its message carries the compiler's log and the path of the rendered
    source file, to read beside it.

    See Also
    --------
    DeviceFailure : a device failing during a fit (dropped, the fit goes on).
    """


_DIGESTS = {}


def template_digest(directories):
    """The hex digest of the template *directories*' files, their names and
    contents (read once a process): what the compiled templates and the
    rendered sources on disk are kept under."""
    key = tuple(directories)
    if key not in _DIGESTS:
        digest = hashlib.sha1()
        for top in directories:
            for path in sorted(Path(top).rglob("*.cl*")):
                digest.update(path.relative_to(top).as_posix().encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
        _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]


def template_module_dir(directories):
    """Where Mako keeps the templates compiled to Python modules, so that a
    fresh process renders without lexing and compiling them again (compiling
    them was a good part of a cold fit): in the cache's folder "mako"
    (program_cache.cache_folder), a folder per content of the template
    *directories* (another checkout or version never meets these modules,
    whatever its files' times).  None where it cannot be made (then
    templates compile in memory, as before)."""
    base = cache_folder("mako")
    if base is None:
        return None
    path = base / template_digest(directories)[:16]
    try:
        path.mkdir(exist_ok=True)
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
        # Mako on first use: `import oclclust` need not import it (and pygments, which
        # its exceptions module pulls in where installed)
        from mako.lookup import TemplateLookup
        dirs = template_dirs()
        _LOOKUP = TemplateLookup(directories=dirs, strict_undefined=True,
                                 input_encoding="utf-8",
                                 module_directory=template_module_dir(dirs))
        _LOOKUP.shipped = True   # the shipped templates alone: source_key covers them
    return _LOOKUP


def source_key(template, args):
    """The key of the source rendered from *template* with *args* (a
    spec's template_args) on disk: the template, the arguments, the
    shipped templates' contents and Mako's version -- all a rendering reads.
    None while a lookup of a caller's own is in use (tests' templates)."""
    if _LOOKUP is not None and not getattr(_LOOKUP, "shipped", False):
        return None
    import mako   # its package alone: its version, not its compiler
    digest = hashlib.sha256()
    for part in (template, repr(sorted(args.items())), template_digest(template_dirs()),
                 mako.__version__):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


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
        """The kernel source: read from disk where an earlier process
        rendered it (a fresh process's first fit then neither imports Mako's
        compiler nor renders), else rendered and kept there."""
        for observe in _RENDER_OBSERVERS:
            observe(self)
        args = self.template_args()
        key = source_key(self.template, args)
        source = None if key is None else program_cache.load_source(key)
        if source is None:
            source = lookup().get_template(self.template).render(**args)
            if key is not None:
                program_cache.store_source(key, source)
        return source


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


def _rendered_file(source):
    cache = Path(os.environ.get("OCLCLUST_CACHE_DIR") or
                 Path(tempfile.gettempdir()) / "oclclust-sources")
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{hashlib.sha1(source.encode()).hexdigest()[:16]}.cl"
    path.write_text(source)
    return path


_QUIET_LOCK = threading.Lock()
_QUIET = {"builds": 0, "filters": None}   # builds under way; the filters they installed


@contextlib.contextmanager
def quiet_build():
    """Silence a successful build's log (noise); a failed build still raises.
    The warning filters are the process's, not a thread's, and a
    catch_warnings restores them on exit: devices' threads building at once
    (a DeviceData pass's first run) would each restore them under the
    others' builds, letting their logs through (Intel's list each kernel's
    vectorisation).  So the first of the builds under way sets the filter
    and the last one restores the filters."""
    with _QUIET_LOCK:
        if not _QUIET["builds"]:
            _QUIET["filters"] = warnings.catch_warnings()
            _QUIET["filters"].__enter__()
            warnings.simplefilter("ignore", cl.CompilerWarning)
        _QUIET["builds"] += 1
    try:
        yield
    finally:
        with _QUIET_LOCK:
            _QUIET["builds"] -= 1
            if not _QUIET["builds"]:
                _QUIET["filters"].__exit__(None, None, None)


def build(context, spec, options=BUILD_OPTIONS, source=None):
    """The built program of *spec* (its rendered *source*, when the caller
    has it) in *context* (memoised)."""
    source = spec.render() if source is None else source
    extra = getattr(spec, "cpu_build_options", ())
    if extra and context.devices[0].type & cl.device_type.CPU:
        options = tuple(options) + tuple(extra)
    key = (context.int_ptr, source, tuple(options))
    program = _PROGRAMS.get(key)
    if program is None:
        with quiet_build():
            program = program_cache.load(context, source, options)
        if program is None:
            try:
                with quiet_build():
                    program = cl.Program(context, source).build(options=list(options))
            except cl.RuntimeError as exc:
                path = _rendered_file(source)
                raise KernelBuildError(f"building {spec.template} for "
                                       f"{context.devices[0].name.strip()} failed; rendered "
                                       f"source: {path}\n{exc}") from exc
            program_cache.store(context, program, source, options)
        _PROGRAMS[key] = program
    if active_recorders():
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
    for recorder in active_recorders():   # per launch for some passes: kept to a set insert
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
    elif active_recorders():
        note_recorded(_PLANS_FETCHED.get(memo, KernelRecorder()))
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
            with held_back() as tried:
                knl = kernel(queue.context, spec, name(spec) if callable(name) else name)
                fits = kernel_work_group_limit(knl, queue.device) >= spec.wg and (
                    also is None or also(spec))
        except KernelBuildError as exc:
            errors.append(exc)
            continue
        if fits:
            note_recorded(tried)
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
