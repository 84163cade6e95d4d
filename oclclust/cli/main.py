"""Command line: ``python -m oclclust COMMAND ...`` (also the ``oclclust`` script).

    python -m oclclust devices            every OpenCL device and its resolved profile
    python -m oclclust example            k-means on generated blobs, on every device
    python -m oclclust fit DATA -k K      fit an algorithm, write the model (and labels)
    python -m oclclust predict MODEL DATA labels of new data from a saved model
    python -m oclclust explain MODEL      the kernels a saved model's fit ran, per device
    python -m oclclust compare ...        the strategy benchmark (oclclust.cli.compare)
    python -m oclclust tune ...           the kernel auto-tuner (oclclust.cli.tune)

A mistake on the command line (or a device selection that matches nothing)
ends with one line on stderr and exit status 2; bad data, a machine without
OpenCL or an optional package that is not installed, with one line and
status 1; a reader that stops early (``predict ... | head``), silently.
"""
import argparse
import dataclasses
import json
import os
import sys
import warnings

PROG = "oclclust"


class UsageError(Exception):
    """A user's mistake: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _int_at_least(low):
    def parse(text):
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value
    parse.__name__ = "integer"
    return parse


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text}")
    return value


# ------------------------------------------------------------------ devices
def cmd_devices(args):
    from ..runtime import devices as dv
    from ..runtime.device_report import device_report
    from ..runtime.profiles import ProfileError
    try:
        profiles = dv.list_devices()
    except ProfileError as exc:
        raise UsageError(str(exc)) from None
    errors = list(dv.DISCOVERY_ERRORS)
    if args.json:
        print(json.dumps({"devices": [dict(dataclasses.asdict(p), term_values=dict(p.term_values))
                                      for p in profiles],
                          "discovery_errors": errors}, indent=2))
        return 0 if profiles else 1
    print("\n".join(device_report(profiles, errors, verbose=args.verbose)))
    if not profiles:
        print(f"{PROG}: error: {dv.no_opencl_error()}", file=sys.stderr)
        return 1
    return 0


# ------------------------------------------------------------------ example
def cmd_example(args):
    import time

    from ..runtime.devices import select_devices
    from .example import fit_on_device, make_blobs
    from .outputs import outputs_problem, writing
    if args.k > args.n:
        raise UsageError(f"--k ({args.k}) must not exceed --n ({args.n})")
    problem = outputs_problem([("--json", args.json, (".json",))])
    if problem:
        raise UsageError(problem)
    try:
        profiles = select_devices(args.devices)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    start = time.perf_counter()
    X, truth, _ = make_blobs(args.n, args.d, args.k, args.seed, std=args.std)
    print(f"oclclust example: {args.n:,} x {args.d} float32 points in {args.k} Gaussian blobs "
          f"(std {args.std:g}, seed {args.seed}, made in {time.perf_counter() - start:.2f} s); "
          f"KMeans(n_clusters={args.k}, random_state=0) on {len(profiles)} device(s)",
          flush=True)
    results, failed = [], 0
    for i, profile in enumerate(profiles, 1):
        print(f"\n[{i}/{len(profiles)}] {profile.name} [{profile.platform}] ({profile.type}, "
              f"{profile.compute_units} compute units)", flush=True)
        try:
            r = fit_on_device(profile, X, args.k, truth, warm_up=not args.no_warmup)
        except Exception as exc:   # one broken runtime must not hide the others
            failed += 1
            print(f"    FAILED: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                  flush=True)
            results.append({"device": profile.name, "platform": profile.platform,
                            "error": f"{type(exc).__name__}: {exc}"})
            continue
        if "warmup_s" in r:
            print(f"    warm-up (kernel builds) {r['warmup_s']:.2f} s")
        print(f"    fit {r['fit_s']:.3f} s, {r['n_iter']} iterations, inertia {r['inertia']:.6g}, "
              f"adjusted Rand index vs true labels {r['ari']:.4f}", flush=True)
        results.append(r)
    ok = [r for r in results if "error" not in r]
    if ok:
        print("\n" + _table(ok))
    if args.json:
        with writing(args.json), open(args.json, "w") as fh:
            json.dump({"n": args.n, "d": args.d, "k": args.k, "std": args.std, "seed": args.seed,
                       "results": results}, fh, indent=2)
    return 1 if failed else 0


def _table(rows):
    head = ("device", "platform", "fit s", "iters", "inertia", "ARI")
    body = [(r["device"], r["platform"], f"{r['fit_s']:.3f}", str(r["n_iter"]),
             f"{r['inertia']:.6g}", f"{r['ari']:.4f}") for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    line = lambda cells: "  ".join(c.ljust(w) if i < 2 else c.rjust(w)   # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(b) for b in body])


# ----------------------------------------------------------------- parser
def build_parser():
    parser = _Parser(prog=PROG, description="Portable OpenCL clustering: devices, an "
                     "example, fitting data files and applying saved models.")
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("devices", help="list the OpenCL devices, one line each",
                       description="List the OpenCL devices, one line each, and any platform "
                       "that failed to load; with -v each device's details: what it "
                       "reports, the tuning profile resolved from devices.yaml (the "
                       "shipped one, the user's, $OCLCLUST_DEVICES_YAML) and which entries "
                       "matched.  Exit status 1 when there is no device.")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="every reported value, profile term and matched entry of each device")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_devices)

    p = sub.add_parser("example", help="k-means on generated Gaussian blobs, on every device",
                       description="Generate Gaussian blobs and cluster them with "
                       "oc.KMeans(n_clusters=k, random_state=0) on each selected OpenCL "
                       "device in turn; print the fit time, iterations, inertia and the "
                       "adjusted Rand index against the true labels.")
    p.add_argument("--n", type=_int_at_least(1), default=200_000,
                   help="number of points (default 200000)")
    p.add_argument("--d", type=_int_at_least(1), default=16,
                   help="number of features (default 16)")
    p.add_argument("--k", type=_int_at_least(1), default=32,
                   help="number of blobs and of clusters (default 32)")
    p.add_argument("--seed", type=_int_at_least(0), default=0,
                   help="seed of the generated data (default 0)")
    p.add_argument("--std", type=_positive_float, default=1.0,
                   help="standard deviation of each blob; centres lie in [-10, 10]^d "
                        "(default 1.0; larger values make blobs overlap)")
    p.add_argument("--devices", default="all",
                   help='devices to run on: "all" (default), "cpu", "gpu", or comma-separated '
                        'platform/device name substrings, e.g. "Portable Computing Language"')
    p.add_argument("--no-warmup", action="store_true",
                   help="time the first fit, kernel builds included")
    p.add_argument("--json", metavar="FILE", help="also write the results to FILE as JSON")
    p.set_defaults(func=cmd_example)

    from . import commands
    p = sub.add_parser("fit", help="fit an algorithm to a data file; write the model",
                       description="Fit one algorithm to the rows of a data file and write "
                       "the model (.npz with JSON metadata) and the labels.  Under mpiexec "
                       "the ranks join: each loads its slice of the file, rank 0 writes the "
                       "model.")
    commands.add_fit_arguments(p, _int_at_least, _positive_float)
    p.set_defaults(func=lambda args: commands.cmd_fit(args, UsageError))
    p = sub.add_parser("predict", help="label new data with a saved model",
                       description="Apply a model written by 'fit --out' to a data file.")
    commands.add_predict_arguments(p)
    p.set_defaults(func=lambda args: commands.cmd_predict(args, UsageError))
    from . import explain
    p = sub.add_parser("explain", help="the kernels a saved model's fit ran, per device",
                       description="Print the OpenCL kernels that fitting a saved model ran, "
                       "per device: each kernel's pass, variant, template (its path below "
                       "the templates folder and the installed file) and the spec's key "
                       "values.")
    explain.add_explain_arguments(p)
    p.set_defaults(func=explain.cmd_explain)
    for name, module, text in (
            ("compare", "compare", "time the ensemble strategies and KD-tree mappings "
             "on the devices (python -m oclclust compare)"),
            ("tune", "tune", "time kernel variants on each device and write the best as a "
             "devices.yaml profile (python -m oclclust tune)")):
        # listed for --help; main() hands their arguments over before parsing
        sub.add_parser(name, help=text, description=f"{text}; see its own --help.")
    return parser


DELEGATED = ("compare", "tune")


def _delegate(module, argv):
    """Run another module's own command line (its parser, its --help)."""
    import importlib
    try:
        target = importlib.import_module(f"oclclust.cli.{module}")
    except ModuleNotFoundError as exc:
        if exc.name != f"oclclust.cli.{module}":
            raise
        raise UsageError(f"'{module}' is not available in this oclclust") from None
    return target.main(argv)


def _run(parser, argv):
    if argv and argv[0] in DELEGATED:
        return _delegate(argv[0], argv[1:])
    args = parser.parse_args(argv)
    if args.command is None:
        raise UsageError(f"a command is needed: devices, example, fit, predict, explain, "
                         f"compare or tune (see '{PROG} --help')")
    status = args.func(args)
    sys.stdout.flush()   # a closed pipe is found here, not at the interpreter's exit
    return status


def _stdout_to_devnull():
    """After a BrokenPipeError: what is left in stdout's buffer goes nowhere
    (the interpreter's flush at exit would fail again, with a message)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):   # no real stdout (captured in tests)
        pass


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    """A warning as the command line shows it: one line naming its kind,
    not the line of code that raised it (a library user's concern)."""
    first = str(message).splitlines()[0] if str(message) else ""
    print(f"{PROG}: warning: {first} ({category.__name__})", file=file or sys.stderr)


def main(argv=None):
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        with warnings.catch_warnings():   # (restores how warnings show on return)
            warnings.showwarning = _one_line_warning
            return _run(parser, argv)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader stopped (``predict ... | head``): not an error of ours;
        # the status a process killed by SIGPIPE has, as other Unix tools
        _stdout_to_devnull()
        return 128 + 13
    except (ValueError, MemoryError, RuntimeError, OSError, ImportError) as exc:
        # an optional package that is not installed (MissingExtraError names
        # the extra that installs it), bad data, a bad model file, a failed
        # rank, a file that could not be written: one line, not a traceback
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"{PROG}: error: {first}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130

