"""Optional packages: the import of each optional feature's package, and
the one-line error that names the extra installing it.

``pip install oclclust`` gives every algorithm; MPI, Dask, progress bars,
plots and the flow-cytometry and HDF5 readers need packages of their own,
installed by the extras of setup.cfg.  A feature used without its package
raises MissingExtraError, an ImportError whose message says what to
install (the command line prints it as its one error line).
"""
import importlib

# an optional feature's top-level package -> the extra (setup.cfg) that installs it
EXTRAS = {"mpi4py": "mpi", "dask": "dask", "distributed": "dask", "cloudpickle": "dask",
          "tqdm": "progress",
          "matplotlib": "plot", "flowio": "formats", "h5py": "formats"}


class MissingExtraError(ImportError):
    """An optional feature was asked for, and its package is not installed:
    the message names the package and the ``pip install 'oclclust[extra]'``
    that installs it.

    See Also
    --------
    NoOpenCLError : no OpenCL runtime to run on.
    """


def install_hint(package):
    """The pip command that installs the optional *package* with oclclust."""
    return f"pip install 'oclclust[{EXTRAS[package]}]'"


def require(module, feature):
    """The module *module* (``"dask.array"``, ``"h5py"`` ...), imported for
    *feature* (the words the error begins with: "reading HDF5 files"), or
    MissingExtraError: "<feature> requires <package>: pip install 'oclclust[extra]'"."""
    package = module.partition(".")[0]
    if package not in EXTRAS:
        raise KeyError(f"{package!r} is not one of oclclust's optional packages")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        # the package itself missing; a package that is there but fails to
        # import (a broken build, its own missing dependency) says so itself
        if exc.name is None or exc.name.partition(".")[0] != package:
            raise
        raise MissingExtraError(f"{feature} requires {package}: {install_hint(package)}",
                                name=package) from exc
