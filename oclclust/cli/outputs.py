"""The files the commands write: each output flag's formats, the checks
every output path passes before any work starts (a known extension, a
folder that exists, not a folder itself), and the writers, whose OSError
(permissions, a full disk) names the file."""
import contextlib
import os

import numpy as np

ARRAYS = (".npy", ".csv")   # labels, memberships: write_array's formats


def output_problem(flag, path, formats):
    """Why *path*, given to *flag*, cannot take a file of *formats* (or None)."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in formats:
        return (f"{flag} {path}: " + (f"unknown extension {ext}" if ext else "no extension")
                + f" (use {', '.join(formats)})")
    if os.path.isdir(path):
        return f"{flag} {path}: is a folder, not a file"
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"{flag} {path}: no folder {folder}"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{flag} {path}: cannot write in {folder}"
    return None


def outputs_problem(outputs):
    """Why the first of *outputs* ((flag, path or None, formats)) that cannot
    be written cannot be (None: all can)."""
    for flag, path, formats in outputs:
        problem = path and output_problem(flag, path, formats)
        if problem:
            return problem
    return None


@contextlib.contextmanager
def writing(path):
    """An OSError while *path* is written, as one line naming it."""
    try:
        yield
    except OSError as exc:
        raise OSError(f"{path}: cannot write it ({exc.strerror or exc})") from exc


def labels_path(template, rank, size):
    if "{rank}" in template:
        return template.replace("{rank}", str(rank))
    if size == 1:
        return template
    root, ext = os.path.splitext(template)
    return f"{root}.rank{rank}{ext}"


def write_array(path, values):
    with writing(path):
        if path.lower().endswith(".csv"):
            np.savetxt(path, values, delimiter=",",
                       fmt="%d" if np.issubdtype(values.dtype, np.integer) else "%.9g")
        else:
            np.save(path, values)
