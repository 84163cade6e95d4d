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


class Transfers:
    """What a Client sends with the tasks it submits and what it receives
    (every key's value a gather brings, also through compute() and a
    future's result()): each object's pickled size and its largest numpy
    array (elements).  Client.submit and Client._gather_remote patched."""

    def __init__(self, client, monkeypatch):
        import cloudpickle
        self.sent, self.received = [], []
        submit, gather_remote = client.submit, client._gather_remote

        def measured(obj):
            return len(cloudpickle.dumps(obj)), largest_array(obj)

        def submitting(fn, *args, **kwargs):
            self.sent.append(measured((args, {k: v for k, v in kwargs.items()
                                              if k not in ("workers", "key")})))
            return submit(fn, *args, **kwargs)

        async def gathering(*args, **kwargs):
            response = await gather_remote(*args, **kwargs)
            if response.get("status") == "OK":
                self.received += [measured(v) for v in response["data"].values()]
            return response
        monkeypatch.setattr(client, "submit", submitting)
        monkeypatch.setattr(client, "_gather_remote", gathering)

    def most(self, which):
        """(the largest pickled size, the largest array) of what went that way."""
        got = getattr(self, which)
        return max((b for b, _ in got), default=0), max((a for _, a in got), default=0)


def largest_array(obj, seen=None):
    """The most elements of a numpy array in *obj* (through containers and
    objects' attributes)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return obj.size
    if isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        items = list(obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        items = list(vars(obj).values())
    else:
        return 0
    return max((largest_array(i, seen) for i in items), default=0)
