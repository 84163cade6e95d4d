"""program_cache: a fresh process loads its programs from their binaries on
disk (no source build), the model the same bit for bit; a damaged binary
is built again from source; the key tells apart what makes a binary.  It
reads the sources an earlier process rendered (no rendering), keyed by all
a rendering reads."""
import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import oclclust as oc
from oclclust.runtime import codegen, program_cache
from oclclust.runtime.reduce import ReduceSpec


@pytest.fixture
def fresh_process(monkeypatch, tmp_path):
    """An empty cache folder of its own and this process's programs, kernels
    and plans forgotten, as in a fresh process; the source builds counted."""
    monkeypatch.setenv("OCLCLUST_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("OCLCLUST_PROGRAM_BINARIES", "1")   # asked for (off by default)
    monkeypatch.delenv("PYOPENCL_NO_CACHE", raising=False)
    forget(monkeypatch)
    sources = []
    program = cl.Program

    def counted(*args):
        if len(args) == 2:   # (context, source): a source build
            sources.append(args[1])
        return program(*args)
    monkeypatch.setattr(codegen.cl, "Program", counted)
    return sources


def forget(monkeypatch):
    for memo in ("_PROGRAMS", "_KERNELS", "_PLANS", "_PLANS_FETCHED"):
        monkeypatch.setattr(codegen, memo, {})


def binaries(tmp_path):
    return sorted((tmp_path / program_cache.FOLDER).glob("*.bin"))


def reduced(context, queue, spec):
    """The reduce_partials kernel of *spec* run on a few partials (its result)."""
    knl = codegen.kernel(context, spec, "reduce_partials")
    parts = cla.to_device(queue, np.arange(1, 13, dtype=np.float64).reshape(4, 3))
    out = cla.zeros(queue, 3, np.float64)
    knl(queue, (3,), None, parts.data, 4, 3, out.data)
    return out.get(queue)


def test_a_fresh_process_loads_its_programs_from_their_binaries(profile, fresh_process,
                                                                 tmp_path, monkeypatch):
    spec = ReduceSpec(dtype="float64")
    queue = profile.queue()
    if not profile.fp64:
        pytest.skip("float64 partials")
    first = reduced(queue.context, queue, spec)
    assert len(fresh_process) == 1 and len(binaries(tmp_path)) == 1
    forget(monkeypatch)                   # the next process
    again = reduced(queue.context, queue, spec)
    assert len(fresh_process) == 1, "built from source again"
    np.testing.assert_array_equal(again, first)
    np.testing.assert_array_equal(first, [22, 26, 30])


def test_a_fit_from_binaries_is_the_fit_from_sources(devices, fresh_process, tmp_path,
                                                     monkeypatch):
    X = np.random.default_rng(5).standard_normal((3000, 7)).astype(np.float32)

    def fit():
        return oc.KMeans(6, n_init=2, max_iter=15, random_state=1, devices=devices).fit(X)
    built = fit()
    assert fresh_process and binaries(tmp_path)
    sources = len(fresh_process)
    forget(monkeypatch)
    loaded = fit()
    assert len(fresh_process) == sources, "a program was built from source again"
    np.testing.assert_array_equal(loaded.labels_, built.labels_)
    np.testing.assert_array_equal(loaded.cluster_centers_, built.cluster_centers_)
    assert loaded.inertia_ == built.inertia_ and loaded.n_iter_ == built.n_iter_


@pytest.mark.parametrize("damage", [b"", b"not a binary" * 100], ids=["empty", "garbage"])
def test_a_damaged_binary_is_built_again_from_source(profile, fresh_process, tmp_path,
                                                     monkeypatch, damage):
    spec = ReduceSpec(dtype="float32", acc_double=False)
    queue = profile.queue()
    codegen.build(queue.context, spec)
    [path] = binaries(tmp_path)
    good = path.read_bytes()
    path.write_bytes(damage)
    forget(monkeypatch)
    program = codegen.build(queue.context, spec)
    assert len(fresh_process) == 2            # built from source again ...
    assert path.read_bytes() == good          # ... and its binary kept anew
    assert "reduce_partials" in program.get_info(cl.program_info.KERNEL_NAMES)


def test_no_binary_is_kept_under_pyopencl_no_cache(profile, fresh_process, tmp_path,
                                                   monkeypatch):
    monkeypatch.setenv("PYOPENCL_NO_CACHE", "1")
    codegen.build(profile.queue().context, ReduceSpec(dtype="float32", acc_double=False))
    assert binaries(tmp_path) == []


def test_no_binary_is_kept_unless_asked_for(profile, fresh_process, tmp_path, monkeypatch):
    """Taking a binary costs PoCL a good part of a build: off by default."""
    monkeypatch.delenv("OCLCLUST_PROGRAM_BINARIES")
    codegen.build(profile.queue().context, ReduceSpec(dtype="float32", acc_double=False))
    assert binaries(tmp_path) == []


def test_the_key_tells_apart_what_makes_a_binary(profile):
    device = profile.cl_device()
    key = program_cache.program_key(device, "kernel void f() {}", ("-cl-mad-enable",))
    assert key == program_cache.program_key(device, "kernel void f() {}", ("-cl-mad-enable",))
    assert key != program_cache.program_key(device, "kernel void g() {}", ("-cl-mad-enable",))
    assert key != program_cache.program_key(device, "kernel void f() {}", ())
    others = [p.cl_device() for p in oc.list_devices() if p.name != profile.name]
    for other in others:
        assert key != program_cache.program_key(other, "kernel void f() {}",
                                                ("-cl-mad-enable",))


def test_an_unwritable_cache_folder_is_not_used(monkeypatch, tmp_path):
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv("OCLCLUST_CACHE_DIR", str(blocker))   # no folder can be made in it
    assert program_cache.cache_folder(program_cache.FOLDER) is None


# ---------------------------------------------------------------- sources
def test_a_fresh_process_reads_its_sources_rendered_by_an_earlier_one(fresh_process,
                                                                      monkeypatch):
    spec = ReduceSpec(dtype="float32", acc_double=False)
    rendered = spec.render()                       # rendered, and kept

    def no_mako():
        raise AssertionError("rendered again")
    monkeypatch.setattr(codegen, "lookup", no_mako)   # the next process: no rendering
    assert spec.render() == rendered
    with pytest.raises(AssertionError, match="rendered again"):
        ReduceSpec(dtype="float64").render()      # never rendered: not on disk


def test_what_a_rendering_reads_is_in_its_key(tmp_path):
    args = ReduceSpec(dtype="float32").template_args()
    key = codegen.source_key(ReduceSpec.template, args)
    assert key == codegen.source_key(ReduceSpec.template, dict(args))
    assert key != codegen.source_key(ReduceSpec.template, dict(args, dtype="float64"))
    assert key != codegen.source_key("runtime/count_labels.cl.mako", args)
    (tmp_path / "a.cl.mako").write_text("one")
    before = codegen.template_digest([str(tmp_path)])
    codegen._DIGESTS.clear()
    (tmp_path / "a.cl.mako").write_text("two")          # a template changed
    assert codegen.template_digest([str(tmp_path)]) != before


def test_a_lookup_of_a_callers_own_is_never_served_from_disk(monkeypatch):
    shipped = codegen.lookup()
    own = type(shipped)(shipped.directories, strict_undefined=True, input_encoding="utf-8")
    monkeypatch.setattr(codegen, "_LOOKUP", own)
    assert codegen.source_key(ReduceSpec.template, ReduceSpec().template_args()) is None
