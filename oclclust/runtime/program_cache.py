"""Built programs on disk: a fresh process loads its programs' binaries
rather than building them from source again, and reads their rendered
sources rather than rendering them (codegen.Spec.render).

pyopencl keeps binaries on disk itself, except on the runtimes it assumes
cache source builds themselves (PoCL, NVIDIA's: pyopencl.characterize
.has_src_build_cache).  There a fresh process still pays a source build per
program: PoCL hashes and re-reads each from its kernel cache (a 1k x 2 x 3
KMeans's 8 programs: 183 ms from source, 8 ms from their binaries, 2
cores), NVIDIA's compiler turns each source into PTX again.  So every
single-device program's binary can be kept here (OCLCLUST_PROGRAM_BINARIES=1:
taking a binary has its own cost, see _enabled), under a key of everything
that makes the binary: the source, the build options (pyopencl's
included), the device, its driver and platform versions, pyopencl's.
"""
import hashlib
import os
import tempfile
from pathlib import Path

import pyopencl as cl

FOLDER = "programs"   # the binaries
SOURCES = "sources"   # the rendered kernel sources


def cache_folder(name):
    """The folder *name* of oclclust's cache (made here), or None where it
    cannot be made or written: under $OCLCLUST_CACHE_DIR, else the user's
    own cache folder.  What it holds is code this process runs (compiled
    templates, program binaries): never a folder others can write."""
    root = os.environ.get("OCLCLUST_CACHE_DIR")
    if root:
        base = Path(root)
    else:
        try:
            import platformdirs
            base = Path(platformdirs.user_cache_dir("oclclust"))
        except ImportError:
            base = Path.home() / ".cache" / "oclclust"
    path = base / name
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None


def _enabled(context):
    # asked for (OCLCLUST_PROGRAM_BINARIES=1): taking a built program's binary
    # costs PoCL ~0.14 s a program (a 1k KMeans's 13: 1.8 s of a 5.7 s cold
    # fit on 2 cores; CI's PoCL suite, cold, ran twice as long), paid once for
    # every later process's ~20 ms; NVIDIA's driver keeps its own builds (a
    # fresh process's first fit on an H200: 0.80-0.84 s over the warm fit with
    # these binaries, 0.80-0.87 without).  One device a context (a binary is a
    # device's); PYOPENCL_NO_CACHE turns off every on-disk program cache
    no_cache = os.environ.get("PYOPENCL_NO_CACHE", "").strip().lower()
    wanted = os.environ.get("OCLCLUST_PROGRAM_BINARIES", "").strip().lower()
    return (len(context.devices) == 1 and no_cache not in ("1", "true", "yes", "on")
            and wanted in ("1", "true", "yes", "on"))


def program_key(device, source, options):
    """The hex digest naming the binary of *source* built with *options* (a
    sequence of str) for *device*."""
    platform = device.platform
    identity = [platform.name, platform.version, device.name, device.vendor, device.version,
                device.driver_version, str(device.max_compute_units),
                str(device.parent_device is not None), cl.VERSION_TEXT,
                os.environ.get("PYOPENCL_BUILD_OPTIONS", ""), *options, source]
    digest = hashlib.sha256()
    for part in identity:
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def _path(context, source, options):
    folder = cache_folder(FOLDER)
    if folder is None:
        return None
    return folder / f"{program_key(context.devices[0], source, options)[:40]}.bin"


def load(context, source, options):
    """The program of *source* built with *options* in the one-device
    *context* from its binary on disk, or None where there is none (or it no
    longer loads: it is removed, and the caller builds from source)."""
    if not _enabled(context):
        return None
    path = _path(context, source, options)
    if path is None or not path.is_file():
        return None
    try:
        binary = path.read_bytes()
        return cl.Program(context, context.devices, [binary]).build(options=list(options))
    except (OSError, cl.Error):
        # a truncated file, or a binary the runtime no longer takes
        _remove(path)
        return None


def store(context, program, source, options):
    """Keep the binary of *program* (built from *source* with *options* in
    the one-device *context*) for later processes."""
    if not _enabled(context):
        return
    path = _path(context, source, options)
    if path is None:
        return
    try:
        binary = program.get_info(cl.program_info.BINARIES)[0]
    except cl.Error:
        return
    if binary:
        _write(path, binary)


def load_source(key):
    """The kernel source kept under *key* (codegen.source_key), or None."""
    folder = cache_folder(SOURCES)
    if folder is None:
        return None
    try:
        return (folder / f"{key[:40]}.cl").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def store_source(key, source):
    """Keep the kernel *source* rendered under *key* for later processes."""
    folder = cache_folder(SOURCES)
    if folder is not None:
        _write(folder / f"{key[:40]}.cl", source.encode("utf-8"))


def _write(path, data):
    """*data* written to a temporary file and renamed to *path*: a process
    reading it meanwhile (an MPI rank, another fit) sees the old file or the
    whole new one, never a part."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except OSError:
        _remove(tmp)


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass
