"""Data sets of DBSCAN's split tests (tests/cluster/density/test_dbscan_devices.py,
the MPI cases of mpi_script.py): clusters that cross the cuts of the grid's
slabs, border rows equidistant from two clusters near them, noise."""
import numpy as np


def crossing(seed=0):
    """Long thin clusters along the first feature (the grid's slowest: the
    slabs cut across them), a chain 0.9 apart, and uniform noise."""
    rng = np.random.default_rng(seed)
    bands = [np.column_stack([rng.uniform(0, 40, 300), rng.normal(y, 0.2, 300)])
             for y in (0.0, 3.0, 6.5)]
    chain = np.column_stack([np.arange(0, 40, 0.9), np.full(45, 10.0)])
    noise = rng.uniform([0, -5], [40, 15], (150, 2))
    X = np.vstack([*bands, chain, noise])
    return X[rng.permutation(len(X))]


def borders(seed=1):
    """Integer lattice motifs along the first feature: two dense blocks 2
    apart, the row between them exactly eps = 1 from an edge row of each
    (a border row of both: the least numbered cluster takes it), motif
    after motif (rows shuffled, so either block may number first), and
    lone rows (noise)."""
    rng = np.random.default_rng(seed)
    motif = [(x, y) for x in range(3) for y in range(3)] + [(3, 1)] + \
        [(x, y) for x in range(4, 7) for y in range(3)] + [(8.5, 1)]
    X = np.vstack([np.asarray(motif, float) + [10.0 * m, 0] for m in range(12)])
    return X[rng.permutation(len(X))]


def one_cell(seed=2):
    """Every row in one cell of the grid (a slab holds them all, the others none)."""
    return np.random.default_rng(seed).uniform(0, 0.1, (200, 2))


# name: (rows, eps, min_samples)
DATA = {"crossing": (crossing, 0.5, 5), "crossing_dense": (crossing, 1.0, 12),
        "borders": (borders, 1.0, 4), "one_cell": (one_cell, 1.0, 3)}
