"""What the benchmarks share: this checkout's oclclust, the anchor harnesses'
data (../shared/bench/, or this module's copy of it), timing, tables, and
the choice of a measurement.

A bench script answers one question (bench/fit.py: the whole fit,
bench/stream.py: streaming, ...) and runs as
``python bench/NAME.py [MEASUREMENT] [flags]``: MEASUREMENT picks one of
its measurements (the first where it is left out; ``--help`` lists them),
the flags are that measurement's.  Python puts bench/ first on sys.path, so
``import _common`` finds this module.
"""
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_BASELINES = REPO.parent / "shared" / "bench" / "baselines.py"


def import_oclclust():
    """This checkout's oclclust (not an older installed one): what a bench times."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import oclclust
    return oclclust


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def baselines(path):
    """(the module with baselines.py's make_blobs, init_centers and gmm_init,
    where they came from): *path*, or this module's identical copy where it
    is absent (the GPU host) or unusable."""
    path = Path(path)
    if path.is_file():
        try:
            return load_module(path, "_oclclust_bench_baselines"), str(path)
        except Exception as exc:  # a broken or foreign file: say so and use the copy
            print(f"bench: cannot use {path} ({type(exc).__name__}: {exc}); "
                  "using bench/_common.py's copy", file=sys.stderr)
    return sys.modules[__name__], f"{HERE / '_common.py'} (copy; {path} not found)"


# The copy of ../shared/bench/baselines.py's make_blobs, init_centers and
# gmm_init that baselines() falls back on where that file is absent (the GPU
# host): the same data and initial parameters as the baseline measurements.
# Keep it in step with baselines.py.
DEFAULT_SEED = 12345


def make_blobs(n, d, k_true, seed=DEFAULT_SEED):
    """Gaussian blobs, float32, shape (n, d).  Returns (X, labels, centers)."""
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-10.0, 10.0, size=(k_true, d))
    labels = rng.integers(0, k_true, size=n)
    X = centers[labels] + rng.standard_normal((n, d))
    perm = rng.permutation(n)
    X = np.ascontiguousarray(X[perm], dtype=np.float32)
    return X, labels[perm], centers


def init_centers(X, k):
    """First k points of the (already shuffled) data set, float32 copy."""
    return np.array(X[:k], dtype=np.float32, copy=True)


def gmm_init(X, K, covariance_type):
    """Fixed GMM start: equal weights, means = first K points, unit covariance."""
    d = X.shape[1]
    weights = np.full(K, 1.0 / K)
    means = np.array(X[:K], dtype=np.float64)
    if covariance_type == "full":
        precisions = np.broadcast_to(np.eye(d), (K, d, d)).copy()
    elif covariance_type == "diag":
        precisions = np.ones((K, d))
    else:
        raise ValueError(covariance_type)
    return weights, means, precisions


def random_rows(X, k, seed=1):
    """k distinct rows of X drawn by default_rng(seed), a copy: the whole-fit
    benches' initial centres (../shared/bench/gpu_user.py's choice)."""
    return X[np.random.default_rng(seed).choice(len(X), k, replace=False)].copy()


def data_functions(path):
    """(make_blobs, init_centers, where they came from), as baselines()."""
    module, source = baselines(path)
    return module.make_blobs, module.init_centers, source


def blobs(n, d, k, seed=0, centres=None):
    """../shared/bench/gpu_host_anchors.py's float32 blobs: k centres uniform
    in [-10, 10]^d, each row one of them plus unit normal noise (drawn by
    numpy's default_rng(seed)); *centres* (k x d) given: rows about those."""
    rng = np.random.default_rng(seed)
    if centres is None:
        centres = blob_centres(k, d, rng)
    return centres[rng.integers(0, k, n)] + rng.standard_normal((n, d), dtype=np.float32)


def large_blobs(n, d, k, out=None):
    """blobs(n, d, k); past 20M rows, or written into *out* (an n x d float32
    array: an np.memmap), the noise repeats every 4M rows (making 50 GB of
    normal draws would take minutes) and the rows are made 4M at a time
    (never the whole array in memory besides *out*).  Returns the rows."""
    if n <= 20_000_000 and out is None:
        return blobs(n, d, k)
    rng = np.random.default_rng(0)
    centres = blob_centres(k, d, rng)
    noise = rng.standard_normal((min(n, 1 << 22), d), dtype=np.float32)
    X = np.empty((n, d), np.float32) if out is None else out
    for s in range(0, n, 1 << 22):
        e = min(n, s + (1 << 22))
        np.add(centres[rng.integers(0, k, e - s)], noise[:e - s], out=X[s:e])
    return X


def blob_centres(k, d, rng):
    return rng.uniform(-10, 10, (k, d)).astype(np.float32)


def add_devices_argument(ap):
    ap.add_argument("--devices", default=None,
                    help='OpenCL devices: "all" (default), "cpu", "gpu", or comma-separated '
                         'platform/device name substrings ("NVIDIA", "Intel(R) OpenCL")')


def select_profiles(oc, devices):
    """The DeviceProfiles of --devices ("all" or None: every device); ValueError
    where it matches none."""
    profiles = oc.list_devices() if devices in (None, "all") else oc.select_devices(devices)
    if not profiles:
        raise ValueError("no OpenCL device found")
    return profiles


def version(module_name):
    try:
        return __import__(module_name).__version__
    except Exception:
        return None


def torch_cuda_missing():
    """None where PyTorch and a CUDA device are usable (the PyTorch anchors
    run), else why not: a bench prints it and goes on without them."""
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed"
    try:
        import torch
        if not torch.cuda.is_available():
            return "torch finds no CUDA device"
    except Exception as exc:   # noqa: BLE001 -- a broken torch: no anchor, the run goes on
        return f"torch does not load ({type(exc).__name__}: {exc})"
    return None


def torch_release():
    """Give PyTorch's cached CUDA memory back (after an anchor's run, its
    tensors gone): the OpenCL fits after it get the device's memory."""
    import torch
    torch.cuda.empty_cache()


def has_cuda():
    return torch_cuda_missing() is None


def names(text):
    """The items of a comma-separated flag, blanks dropped."""
    return [v.strip() for v in (text or "").split(",") if v.strip()]


# ------------------------------------------------------------------ timing
def _busy_seconds():
    """CPU seconds all processes have been busy (None where /proc/stat is absent)."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _own_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


FOREIGN = []   # cores other processes kept busy during each timed run


def timed(fn, repeats=1):
    """(min seconds, all seconds, last result) of *repeats* calls of fn(); the
    cores that other processes used during each call are appended to FOREIGN
    (a busy machine skews ratios).  Warm up (kernel builds) before."""
    times, result = [], None
    FOREIGN.clear()
    for _ in range(repeats):
        busy, own = _busy_seconds(), _own_seconds()
        start = time.perf_counter()
        result = fn()
        wall = time.perf_counter() - start
        times.append(wall)
        if busy is not None:
            other = (_busy_seconds() - busy) - (_own_seconds() - own)
            FOREIGN.append(max(0.0, other / wall))
    return min(times), times, result


def time_calls(owner, name, record):
    """owner.name replaced by a wrapper that calls record(start, end)
    (time.perf_counter) after each call, raised or not."""
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            record(start, time.perf_counter())
    setattr(owner, name, wrapper)


def seconds(fn, *args, **kwargs):
    """(wall seconds, result) of one call fn(*args, **kwargs)."""
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - start, out


def fresh_process(script, argv, rows, timeout=1800):
    """The last stdout line, as JSON, of ``python script *argv --rows PATH``
    run in a new process, PATH a temporary .npy of *rows* (in /dev/shm where
    there is one; written and removed outside the child's timing).  What a
    bench's cold figures run through: the child's first fit is a fresh
    process's first (import, device discovery, programs from the on-disk
    cache).  RuntimeError with the child's last stderr line where it fails."""
    folder = tempfile.mkdtemp(prefix="oclclust_bench",
                              dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    path = os.path.join(folder, "rows.npy")
    try:
        np.save(path, rows)
        cmd = [sys.executable, str(script), *argv, "--rows", path]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    finally:
        if os.path.exists(path):
            os.unlink(path)
        os.rmdir(folder)
    if out.returncode:
        err = out.stderr.strip().splitlines()
        raise RuntimeError(err[-1] if err else f"exit status {out.returncode}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def load_rows(path):
    """The rows fresh_process saved, in memory as a user's array."""
    return np.ascontiguousarray(np.load(path, mmap_mode="r"))


# ------------------------------------------------------------------ tables
def table(head, rows, left=3):
    """Columns as wide as their widest cell; the first *left* flush left, the
    rest right; a rule under the head."""
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]

    def line(cells):
        return "  ".join(c.ljust(w) if i < left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows])


class Figures:
    """A run's figures: each printed as one JSON line when it is recorded
    (``{"bench": .., key fields.., "figure": .., "value": .., extra..}``,
    for quoting), and a table of them at the end: a row per key, a column
    per figure name: *columns*' order, then any other in the order first
    recorded."""

    def __init__(self, bench, key_names, columns=()):
        self.bench, self.key_names = bench, list(key_names)
        self.rows, self.order, self.columns = {}, list(columns), []

    def add(self, key, figure, value, **extra):
        fields = dict(zip(self.key_names, key))
        print(json.dumps(dict(bench=self.bench, **fields, figure=figure, value=value, **extra)),
              flush=True)
        self.rows.setdefault(tuple(key), {})[figure] = value
        if figure not in self.columns:
            self.columns.append(figure)
            rank = {name: i for i, name in enumerate(self.order)}
            self.columns.sort(key=lambda name: rank.get(name, len(rank)))

    def table(self, fmt=lambda figure, value: f"{value:.4g}"):
        """The table; *fmt* (figure, value) -> a cell, "-" where a row lacks a figure."""
        head = self.key_names + self.columns
        rows = [[str(k) for k in key] + ["-" if f not in figs or figs[f] is None
                                         else fmt(f, figs[f]) for f in self.columns]
                for key, figs in self.rows.items()]
        return table(head, rows, left=len(self.key_names))


# ------------------------------------------------------------------ measurements
def run_measurement(measurements, doc, argv=None):
    """Run the measurement that argv[0] names (the first of *measurements*,
    {name: (main, its docstring)}, where argv[0] is a flag or absent) with
    the rest of argv as its flags; its main parses sys.argv, which is set to
    them.  ``--help`` alone prints the script's *doc* and the measurements."""
    argv = sys.argv[1:] if argv is None else list(argv)
    script = Path(sys.argv[0]).name
    if argv[:1] in (["-h"], ["--help"], ["help"]):
        print(doc.rstrip())
        print(f"\nmeasurements (python bench/{script} NAME --help for one's flags; "
              f"default {next(iter(measurements))}):")
        for name, (_, text) in measurements.items():
            print(f"  {name:15s} {text.strip().splitlines()[0]}")
        return 0
    if argv and argv[0] in measurements:
        name, argv = argv[0], argv[1:]
    elif argv and not argv[0].startswith("-"):
        print(f"{script}: no measurement {argv[0]!r}; one of {', '.join(measurements)}",
              file=sys.stderr)
        return 2
    else:
        name = next(iter(measurements))
    main = measurements[name][0]
    sys.argv = [f"{script} {name}"] + argv
    return main()
