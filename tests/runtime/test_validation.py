"""Input and parameter validation helpers (oclclust.runtime.validation, oclclust.parallel.placement)."""
import dataclasses
import numbers

import numpy as np
import pyopencl.array as cla
import pytest

from oclclust.parallel.placement import compute_dtype
from oclclust.runtime import validation
from oclclust.runtime.validation import (as_dtype, check_data, check_params, check_random_state,
                                 check_sample_weight, skip_uniform)


class Toy:
    rules = {"n": [(numbers.Integral, 1, 10)], "mode": ["a", "b", None],
             "x": [(numbers.Real, 0, None), np.ndarray], "f": ["sum", callable],
             "r": [(numbers.Real, 0, 1, "neither")], "s": [(numbers.Real, 0, 1, "right")]}

    def __init__(self, n=1, mode="a", x=0.5, f="sum", r=0.5, s=1):
        self.n, self.mode, self.x, self.f, self.r, self.s = n, mode, x, f, r, s


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("params", [dict(), dict(n=10), dict(mode=None), dict(mode="b"),
                                    dict(x=np.zeros(2)), dict(x=0), dict(n=np.int64(3)),
                                    dict(f=np.max), dict(f=lambda a: a), dict(r=1e-300),
                                    dict(s=1.0)])
def test_check_params_accepts(params):
    check_params(Toy(**params), Toy.rules)


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("params, match", [
    (dict(n=0), r"'n' parameter of Toy must be one of Integral in \[1, 10\]. Got 0"),
    (dict(n=11), "Got 11"),
    (dict(n=2.0), "Got 2.0"),
    (dict(n=True), "Got True"),          # a bool is no count
    (dict(mode="c"), r"'mode' parameter of Toy must be one of 'a', 'b', None. Got 'c'"),
    (dict(x=-1), "Real in \\[0, None\\], an instance of ndarray"),
    (dict(x="1"), "Got '1'"),
    (dict(f="max"), r"'f' parameter of Toy must be one of 'sum', a callable. Got 'max'"),
    (dict(r=0), r"'r' parameter of Toy must be one of Real in \(0, 1\). Got 0"),
    (dict(r=1), "Got 1"),
    (dict(r=float("nan")), "Got nan"),
    (dict(s=0.0), r"Real in \(0, 1\]. Got 0.0"),
])
def test_check_params_rejects(params, match):
    with pytest.raises(ValueError, match=match):
        check_params(Toy(**params), Toy.rules)


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("X", [
    np.ones((3, 2), np.float32), np.ones((3, 2), np.int8), np.ones((3, 2), np.uint64),
    np.ones((3, 2), bool), [[1, 2], [3, 4]], np.array([["1", "2.5"]]),
    np.array([[1, 2.5]], dtype=object)])
def test_check_data_accepts_numbers(X):
    out = check_data(X)
    assert out.ndim == 2 and out.dtype.kind in "fiub"
    np.testing.assert_array_equal(out.astype(float), np.asarray(X, dtype=float))


@pytest.mark.one_runtime   # host code alone: the same on any runtime
def test_check_data_names_the_estimator():
    with pytest.raises(ValueError, match="minimum of 2 is required by Thing"):
        check_data(np.ones((1, 3)), "Thing", min_samples=2)


def test_device_array_checks(queue):
    X = cla.to_device(queue, np.ones((4, 3), np.float32))
    assert check_data(X) is X
    with pytest.raises(ValueError, match="got 1D pyopencl array"):
        check_data(cla.to_device(queue, np.ones(4)))
    with pytest.raises(ValueError, match="0 sample"):
        check_data(cla.to_device(queue, np.ones((0, 3))))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_as_dtype(queue, dtype):
    host = np.asfortranarray(np.arange(6, dtype=np.int64).reshape(3, 2))
    assert as_dtype(host, dtype) is host   # converted piece by piece on its way to a device
    dev = cla.to_device(queue, np.arange(6, dtype=np.float64).reshape(3, 2))
    conv = as_dtype(dev, dtype)
    assert isinstance(conv, cla.Array) and conv.dtype == dtype   # converted on the device
    assert (conv is dev) == (dtype == np.float64)
    np.testing.assert_array_equal(conv.get(), np.arange(6).reshape(3, 2))


@pytest.mark.one_runtime   # host code alone: the same on any runtime
def test_check_sample_weight():
    assert check_sample_weight(None, 5, np.float32) is None
    w = check_sample_weight(2, 3, np.float32)
    assert w.dtype == np.float32 and list(w) == [2, 2, 2]
    assert check_sample_weight([0, 1, 0], 3, np.float64).dtype == np.float64
    assert list(check_sample_weight(np.array([1, 2], object), 2, np.float64)) == [1, 2]
    # signed (DBSCAN's): negative weights and a zero sum pass, all zeros does not
    assert list(check_sample_weight([1, -1, 0], 3, np.float64, signed=True)) == [1, -1, 0]
    with pytest.raises(ValueError, match="at least one non-zero"):
        check_sample_weight([0, 0, 0], 3, np.float64, signed=True)


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("weights, message", [
    (np.ones(3) + 1j, "Complex data not supported"), (np.array([1, 1 + 0j, 2]), "Complex"),
    (["a", "b", "c"], "must be numbers"), ([1, None, 2], "NaN or infinity"),
    ([1, np.inf, 2], "NaN or infinity"), ([1, -1, 2], "Negative"),
    ([0, 0, 0], "at least one non-zero"), ([1, 2], "expected")])
def test_bad_sample_weight_is_a_value_error(weights, message):
    with pytest.raises(ValueError, match=message):
        check_sample_weight(weights, 3, np.float64)


@pytest.mark.parametrize("dtype, data, fp64, expected", [
    (None, np.float32, True, np.float32), (None, np.float64, True, np.float64),
    (None, np.int32, True, np.float64), (None, np.uint8, True, np.float64),
    ("float32", np.float64, True, np.float32), (np.float64, np.float32, True, np.float64),
    (None, np.float32, False, np.float32), ("float32", np.float64, False, np.float32)])
def test_compute_dtype(profile, dtype, data, fp64, expected):
    assert compute_dtype(dtype, np.zeros((1, 1), data),
                         [dataclasses.replace(profile, fp64=fp64)]) == expected
    # over several devices the dtype is the one all of them can compute in
    assert compute_dtype(dtype, np.zeros((1, 1), data),
                         [dataclasses.replace(profile, fp64=True),
                          dataclasses.replace(profile, fp64=fp64)]) == expected


@pytest.mark.parametrize("others", [0, 1], ids=["alone", "beside-fp64"])
def test_compute_dtype_without_fp64(profile, others):
    no_fp64 = dataclasses.replace(profile, fp64=False, name="No-FP64 device")
    profiles = [dataclasses.replace(profile, fp64=True)] * others + [no_fp64]
    with pytest.warns(RuntimeWarning, match=r"No-FP64 device .*no fp64: computing in float32"):
        assert compute_dtype(None, np.zeros((1, 1)), profiles) == np.float32
    with pytest.raises(ValueError, match=r"No-FP64 device .*does not support float64 "
                                         r"\(cl_khr_fp64\)"):
        compute_dtype("float64", np.zeros((1, 1), np.float32), profiles)
    with pytest.raises(ValueError, match="dtype must be float32 or float64, got float16"):
        compute_dtype(np.float16, np.zeros((1, 1)), [profile])


@pytest.mark.one_runtime   # host code alone: the same on any runtime
def test_check_random_state():
    assert check_random_state(None) is np.random.mtrand._rand
    assert check_random_state(np.random) is np.random.mtrand._rand
    rs = np.random.RandomState(0)
    assert check_random_state(rs) is rs
    assert check_random_state(3).randint(1000) == np.random.RandomState(3).randint(1000)
    with pytest.raises(ValueError, match="cannot be used to seed"):
        check_random_state("seed")


@pytest.mark.one_runtime   # host code alone: the same on any runtime
@pytest.mark.parametrize("kind", ["MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64", None])
@pytest.mark.parametrize("values", [0, 1, 7, 1000, 4099])
def test_skip_uniform_leaves_the_stream_where_the_draws_would(kind, values, monkeypatch):
    """Past *values* uniform doubles without drawing them: every later draw
    (doubles, 32- and 64-bit integers, normals) is the drawn stream's.
    (None: a bit generator it does not know, whose values it draws and drops.)"""
    if kind is None:
        monkeypatch.setattr(validation, "_RAWS_PER_DOUBLE", {})

    def stream():
        bits = np.random.MT19937(7) if kind is None else getattr(np.random, kind)(7)
        rng = np.random.RandomState(bits)
        rng.randint(10, size=3), rng.standard_normal()   # a buffered 32 bits, a cached normal
        return rng
    drawn, skipped = stream(), stream()
    drawn.uniform(size=values)
    skip_uniform(skipped, values, block=100)
    assert np.array_equal(drawn.uniform(size=50), skipped.uniform(size=50))
    assert np.array_equal(drawn.randint(1 << 30, size=9), skipped.randint(1 << 30, size=9))
    assert np.array_equal(drawn.randint(1 << 60, size=9, dtype=np.int64),
                          skipped.randint(1 << 60, size=9, dtype=np.int64))
    assert drawn.standard_normal() == skipped.standard_normal()
