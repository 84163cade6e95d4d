"""The ShardedData protocol (oclclust/parallel/sharded_data.py): the rows on
this host's devices (DeviceData, a DeviceManager's scatter) and on a Dask
cluster's workers (DaskData, on a LocalCluster of 2 worker processes) each
implement every member it declares, with the protocol's parameters."""
import inspect

import numpy as np
import pytest

import oclclust as oc
from conftest import split_or_skip
from oclclust.parallel.device_data import DeviceData
from oclclust.runtime.exact_sums import block_rows_for
from oclclust.parallel.sharded_data import RemoteShardedData, ShardedData


def declared(protocol):
    """(attributes, methods) that *protocol* and the protocols it extends
    declare: their annotations and the functions of their bodies."""
    attributes, methods = set(), {}
    for cls in protocol.__mro__:
        if cls is object or not getattr(cls, "_is_protocol", False):
            continue
        attributes |= set(getattr(cls, "__annotations__", {}))
        methods.update({name: value for name, value in vars(cls).items()
                        if inspect.isfunction(value) and not name.startswith("_")})
    return attributes, methods


def test_the_protocols_declare_what_the_passes_use():
    attributes, methods = declared(ShardedData)
    assert attributes == {"n", "d", "dtype", "chunks", "source", "manager",
                          "rows_per_device", "remote"}
    assert set(methods) == {"map", "map_enqueued", "row", "rows", "mean_var_finite",
                            "magnitudes", "rebalance", "reshard", "close"}
    remote_attributes, remote_methods = declared(RemoteShardedData)
    assert remote_attributes == attributes
    assert set(remote_methods) - set(methods) == {"map_states", "rows_states", "fold_rows"}


def check_implements(data, protocol):
    """*data* answers every member *protocol* declares: the attributes set,
    the methods its class's own (not the protocol's empty bodies) and
    taking the protocol's parameters by their names, in their order."""
    attributes, methods = declared(protocol)
    assert isinstance(data, protocol)
    for name in attributes:
        assert hasattr(data, name), name
    for name, declaration in methods.items():
        own = getattr(type(data), name)
        assert own is not declaration, f"{type(data).__name__}.{name} is the protocol's"
        wanted = list(inspect.signature(declaration).parameters)
        given = list(inspect.signature(own).parameters)
        assert given[:len(wanted)] == wanted, (name, given, wanted)
    # what a device failure is reported to (parallel.manager.surviving)
    assert callable(data.manager.drop) and isinstance(data.manager.reshards, int)
    assert data.n == sum(c.n for c in data.chunks) and data.d == 3
    assert [c.offset for c in data.chunks] == list(np.cumsum([0] + [c.n for c in
                                                                    data.chunks])[:-1])
    assert sum(data.rows_per_device.values()) == data.n


def test_device_data_implements_the_protocol(profile):
    X = np.random.RandomState(0).randn(500, 3)
    # three streamed chunks: several chunks on any device
    data = oc.DeviceManager([profile], memory_budget=2 * 167 * 24).scatter(X)
    try:
        assert type(data) is DeviceData and len(data.chunks) == 3 and not data.remote
        check_implements(data, ShardedData)
        assert not isinstance(data, RemoteShardedData)
        mean, var, finite = data.mean_var_finite()
        assert finite and np.allclose(mean, X.mean(0)) and np.allclose(var, X.var(0))
        np.testing.assert_array_equal(data.rows([4, 2]), X[[4, 2]])
    finally:
        data.close()


def test_dask_data_implements_the_remote_protocol(devices):
    pytest.importorskip("dask")   # the [dask] extra: tools/setup.sh installs it
    import dask.array as da
    from distributed import Client, LocalCluster
    from oclclust.parallel.dask import DaskData, dask_fit_data
    block = block_rows_for(3, 8, 1)   # dask chunks of whole blocks stay as they are
    X = np.random.RandomState(1).randn(4 * block, 3)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        data, _ = dask_fit_data(da.from_array(X, chunks=(block, 3)), None, devices, None,
                                None, "KMeans")
        try:
            assert type(data) is DaskData and len(data.chunks) == 4 and data.remote
            check_implements(data, RemoteShardedData)
            mean, var, finite = data.mean_var_finite()
            assert finite and np.allclose(mean, X.mean(0)) and np.allclose(var, X.var(0))
            np.testing.assert_array_equal(data.rows([3 * block + 5, 4]), X[[3 * block + 5, 4]])
            assert data.map(lambda chunk: chunk.n, rows=False) == [block] * 4
        finally:
            data.close()


def _layouts(profile, d, itemsize):
    """Managers of one device, two sub-devices, and one streaming whole blocks."""
    block = 512   # (stat_values 1: the smallest blocks)
    return {"one": oc.DeviceManager([profile]),
            "sub-devices": oc.DeviceManager(split_or_skip(profile)),
            "streamed": oc.DeviceManager([profile], memory_budget=2 * block * d * itemsize)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_moments_are_the_same_bits_on_every_split(profile, dtype):
    rng = np.random.default_rng(5)
    X = (rng.standard_normal((5000, 3)) * [1e-3, 1, 1e4] + [0, 1e3, -7]).astype(dtype)
    got = {name: manager.scatter(X, None, dtype=dtype).mean_var_finite()
           for name, manager in _layouts(profile, X.shape[1], X.itemsize).items()}
    mean, var, finite = got.pop("one")
    assert finite
    np.testing.assert_allclose(mean, X.astype(np.float64).mean(axis=0), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(var, X.astype(np.float64).var(axis=0), rtol=1e-9)
    for other in got.values():
        assert np.array_equal(other[0], mean) and np.array_equal(other[1], var)
