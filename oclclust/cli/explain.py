"""``python -m oclclust explain MODEL``: the kernels a fitted model ran.

A fitted estimator records the kernels its fit ran (``kernels_``: one record
per kernel and device, runtime.kernel_recorder.kernel_record), and a model file
keeps them.  ``explain`` prints them per device: each kernel's pass, its
variant, its template's path below the templates folder and where that
file is in this installation, and the spec's key values, the one step from
an estimator to the source of the kernels it ran.
"""
import os
import textwrap

from ..runtime.resources import resource_dir

WIDTH = 100   # the key values' lines are wrapped at this width


def kernels_of(model):
    """(the estimator's class name, its ``kernels_``) of *model*: a fitted
    estimator or the path of a model file.  ValueError (one line) for a
    path that is no file or no model, an estimator not fitted, or a model
    without recorded kernels (its file was written before fits kept them)."""
    if isinstance(model, (str, os.PathLike)):
        from ..io.datafiles import not_a_file
        from ..io.modelio import load_model
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise ValueError(not_a_file(path))
        estimator, where = load_model(path), f"{path}: the {{}} model it holds"
    else:
        estimator, where = model, "this {}"
    name = type(estimator).__name__
    kernels = getattr(estimator, "kernels_", None)
    if kernels is None:
        if not any(k.endswith("_") and not k.startswith("_") for k in vars(estimator)):
            raise ValueError(f"{where.format(name)} is not fitted: no kernels ran")
        raise ValueError(f"{where.format(name)} has no record of the kernels its fit ran "
                         "(written before fits kept them: fit it again)")
    return name, kernels


def _installed(template):
    """Where *template* (a path below the templates folder) is in this
    installation, or a note that it is not there."""
    folder = resource_dir("templates").resolve()
    path = (folder / template).resolve()
    if folder not in path.parents or not path.is_file():
        return "(not in this installation)"
    return str(path)


def explain(model):
    """The kernels *model* ran (a fitted estimator or a model file's path)
    as text, grouped by device: pass, variant, template (its path below the
    templates folder and the installed file) and the spec's key values.
    ValueError as kernels_of."""
    name, kernels = kernels_of(model)
    devices = list(dict.fromkeys(k["device"] for k in kernels))
    lines = [f"{name}: {len(kernels)} kernel(s) on {len(devices)} device(s); templates below "
             f"{resource_dir('templates').resolve()}"]
    for device in devices:
        lines += ["", f"device: {device}"]
        for k in (k for k in kernels if k["device"] == device):
            variant = k["variant"] if k["variant"] == k["spec"] else f"{k['variant']} ({k['spec']})"
            values = " ".join(f"{key}={value}" for key, value in k["key"].items())
            lines += [f"  pass {k['pass']}, variant {variant}",
                      f"    template  {k['template']}",
                      f"    file      {_installed(k['template'])}",
                      *textwrap.wrap(values, WIDTH, initial_indent="    key       ",
                                     subsequent_indent=" " * 14)]
    return "\n".join(lines)


def add_explain_arguments(p):
    p.add_argument("model", help="a model file written by 'fit --out' (or save_model)")


def cmd_explain(args):
    print(explain(args.model))
    return 0
