"""Whether the command line runs under an MPI launcher, and its world."""
import os


def launched_ranks():
    """The rank count an MPI launcher announced in the environment (1 if none):
    the command line joins the ranks only when launched under mpiexec."""
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS",
                "SLURM_NTASKS"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 1


def launched_rank():
    """This process's rank as an MPI launcher announced it (0 if none): the
    "{rank}" of a file name in a process that does not join the ranks
    (--mpi off under mpiexec: each process fits alone, each writes its own)."""
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


def world():
    """MPI.COMM_WORLD (imports mpi4py: only for a caller that wants MPI)."""
    from ..runtime.extras import require
    return require("mpi4py.MPI", "MPI (--mpi)").COMM_WORLD
