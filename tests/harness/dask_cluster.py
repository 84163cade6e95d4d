"""The Dask tests' data (tests/parallel/test_dask*.py; their cluster is
the ``client`` fixture of tests/conftest.py): blob rows made on the
workers, in blocks of BLOCK rows."""
import numpy as np

N, D, K, BLOCK = 2400, 4, 5, 600   # 4 blocks: 2 on each worker


def blobs(dtype=np.float64, seed=0, n=N):
    """A dask array made on the workers (the client never has its rows)."""
    import dask.array as da
    centres = np.random.RandomState(seed).uniform(-20, 20, size=(K, D))
    rows = da.random.RandomState(seed).normal(size=(n, D), chunks=(BLOCK, D))
    labels = da.arange(n, chunks=BLOCK) % K
    return (rows + da.from_array(centres)[labels]).astype(dtype)
