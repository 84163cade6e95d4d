"""Kernel generation: specs, strict templates, build errors, caching, fitting variants."""
import dataclasses
import re
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest
from mako.exceptions import TopLevelLookupException
from mako.lookup import TemplateLookup
from sklearn.cluster import KMeans as SKMeans

import oclclust as oc
from oclclust.runtime import codegen
from oclclust.runtime.codegen import KernelBuildError, Spec
from oclclust.passes.distances import PairwiseSpec
from oclclust.passes.kmeanspp import CandidateSpec, SearchSpec
from oclclust.passes.lloyd import LloydSpec, candidate_specs, plan
from oclclust.runtime.partition import MomentsSpec
from oclclust.runtime.reduce import ReduceSpec
from oclclust.runtime.resources import resource_dir, template_dirs

TEST_TEMPLATES = Path(__file__).parent / "templates"


@dataclasses.dataclass(frozen=True)
class BrokenSpec(Spec):
    template = "broken.cl.mako"   # tests/runtime/templates: compiles with an error
    d: int = 3


@pytest.fixture
def test_templates(monkeypatch):
    """The package's lookup, plus tests/templates."""
    shipped = codegen.lookup()
    lookup = type(shipped)(shipped.directories + [str(TEST_TEMPLATES)],
                           strict_undefined=True, input_encoding="utf-8")
    monkeypatch.setattr(codegen, "_LOOKUP", lookup)


def every_spec(profile, dtype, acc_double):
    """One spec of each kernel the package renders."""
    common = dict(dtype=np.dtype(dtype).name, acc_double=acc_double)
    tuned = dataclasses.replace(profile, fp64=acc_double)
    lloyd = {}
    for variant in ("tiled", "rowwise"):
        for spec in candidate_specs(tuned.replace(lloyd_variant=variant),
                              dtype, 3, 5, True, True):
            lloyd.setdefault(spec.variant, spec)
    return [*lloyd.values(), ReduceSpec(**common), MomentsSpec(d=3, wg=4, **common),
            CandidateSpec(d=3, trials=2, wg=8, weighted=True, **common), SearchSpec(**common),
            PairwiseSpec(d=3, **common)]


# --------------------------------------------------------------------- specs
def test_specs_are_frozen_values():
    spec = LloydSpec(d=3, k=4)
    assert spec == LloydSpec(d=3, k=4) and hash(spec) == hash(LloydSpec(d=3, k=4))
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.d = 5


def test_c_types():
    assert codegen.c_type(np.float32) == "float" and codegen.c_type("float64") == "double"
    with pytest.raises(KeyError):
        codegen.c_type(np.int32)


def test_strict_undefined():
    """A template variable the spec lacks is an error, never an empty string."""
    @dataclasses.dataclass(frozen=True)
    class NoD(Spec):
        template = "distances/pairwise_distances.cl.mako"   # reads d
    with pytest.raises(NameError, match="'d' is not defined"):
        NoD().render()
    assert "#define D 7" in PairwiseSpec(d=7).render()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_kernel_builds(profile, dtype):
    for spec in every_spec(profile, dtype, True):
        source = spec.render()
        assert "#pragma OPENCL EXTENSION cl_khr_fp64 : enable" in source
        assert f"typedef {codegen.c_type(dtype)} real_t;" in source
        codegen.build(profile.queue().context, spec)


def test_float_kernels_need_no_fp64(profile):
    """Without fp64 (float data, Kahan sums) no kernel mentions double."""
    for spec in every_spec(profile, "float32", False):
        code = re.sub(r"//.*", "", re.sub(r"/\*.*?\*/", "", spec.render(), flags=re.S))
        assert not re.search(r"\bdouble\d*\b|cl_khr_fp64", code), spec
        codegen.build(profile.queue().context, spec)


# -------------------------------------------------------------------- builds
def test_build_failure_carries_log_and_source(profile, test_templates, tmp_path, monkeypatch):
    monkeypatch.setenv("OCLCLUST_CACHE_DIR", str(tmp_path))
    spec = BrokenSpec()
    with pytest.raises(KernelBuildError) as info:
        codegen.build(profile.queue().context, spec)
    message = str(info.value)
    assert "broken.cl.mako" in message and profile.name in message
    assert "no_such_identifier" in message   # the compiler's log
    path = Path(message.split("rendered source: ")[1].split()[0])
    assert path.parent == tmp_path and path.read_text() == spec.render()
    assert isinstance(info.value, RuntimeError)   # catchable as pyopencl's failures are


def test_programs_and_kernels_are_memoised(profile):
    ctx = profile.queue().context
    spec = ReduceSpec(dtype="float32", acc_double=profile.fp64)
    program = codegen.build(ctx, spec)
    assert codegen.build(ctx, ReduceSpec(dtype="float32", acc_double=profile.fp64)) is program
    assert codegen.build(ctx, ReduceSpec(dtype="float64")) is not program
    kernel = codegen.kernel(ctx, spec, "reduce_partials")
    assert codegen.kernel(ctx, dataclasses.replace(spec), "reduce_partials") is kernel
    other = codegen.kernel(ctx, spec, "reduce_partials", instance=(1, 2))   # its own arguments
    assert other is not kernel and other.program.int_ptr == kernel.program.int_ptr
    assert codegen.kernel(ctx, spec, "reduce_partials", instance=(1, 2)) is other


# ------------------------------------------------ variants that fit the device
FITS = {   # profile tweaks that shrink what a Lloyd kernel may use
    "shipped": {},
    "tiled": dict(lloyd_variant="tiled"),
    "tiled-chunked": dict(lloyd_variant="tiled", local_mem_size=1024, local_memory_fraction=1.0,
                          points_per_item=1, centroid_tile=4),
    # room for the work-group scratch only (64 work-items), on any device
    "tiled-tiny-local": dict(lloyd_variant="tiled", local_mem_size=800, local_memory_fraction=1.0),
    "tiled-no-local": dict(lloyd_variant="tiled", local_memory_fraction=0.0),
    "tiled-wg1": dict(lloyd_variant="tiled", work_group_size=1),
    "tiled-max-wg1": dict(lloyd_variant="tiled", max_work_group_size=1),
    "rowwise": dict(lloyd_variant="rowwise"),
}
K_FIT = 40


@pytest.fixture(scope="module")
def fit_data(make_blobs):
    X, _ = make_blobs(n=2000, d=3, k=K_FIT, seed=6, dtype=np.float32)
    return X, X[:K_FIT] + np.float32(0.5)


@pytest.mark.parametrize("tweak", FITS)
def test_plan_fits_a_small_device(profile, fit_data, tweak):
    """A spec too big for the device's budget is replaced by a smaller one
    (smaller work-group, centroids in chunks or in global memory, the
    row-wise variant), and the clustering does not change."""
    small = profile.replace(**FITS[tweak])
    X, init = fit_data
    spec, _ = plan(small, small.queue(), np.float32, 3, K_FIT, True, False)
    assert spec.local_bytes() <= small.local_memory_budget
    # the gemm and mma variants' work-groups follow from their tiles, not from
    # the fused kernels' work_group_size
    fused_limit = small.max_work_group_size if spec.labels_first else small.work_group_size
    assert spec.wg <= min(fused_limit, small.max_work_group_size)
    if tweak == "tiled-no-local":
        assert spec.variant == "rowwise"   # the variant that needs no local memory
    elif tweak.startswith("tiled"):
        assert spec.variant == "tiled"
    if tweak == "tiled-chunked":   # room for some centroids: staged a chunk at a time
        assert spec.stage_centers and spec.cchunk < K_FIT
    if tweak == "tiled-tiny-local":   # room for none: read from global memory
        assert not spec.stage_centers
    params = dict(n_clusters=K_FIT, init=init, n_init=1)
    ours = oc.KMeans(devices=[small], **params).fit(X)
    theirs = SKMeans(**params).fit(X)
    np.testing.assert_array_equal(ours.labels_, theirs.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, theirs.cluster_centers_, rtol=1e-5,
                               atol=1e-5 * np.abs(X).max())
    assert ours.inertia_ == pytest.approx(theirs.inertia_, rel=1e-5)
    assert ours.n_iter_ == theirs.n_iter_


def test_plan_is_cached_per_profile_and_context(profile):
    queue = profile.queue()
    first = plan(profile, queue, np.float32, 3, K_FIT, True, False)
    assert plan(dataclasses.replace(profile), queue, np.float32, 3, K_FIT, True, False) is first
    other = plan(profile.replace(work_group_size=2, lloyd_variant="tiled"),
             queue, np.float32, 3, K_FIT, True, False)
    assert other[0].wg <= 2
    ctx = cl.Context([profile.cl_device()])   # kept: Intel's runtime drops a context
    own = cl.CommandQueue(ctx)                # whose last Python reference goes
    in_own = plan(profile, own, np.float32, 3, K_FIT, True, False)
    assert in_own[0] == first[0] and in_own[1].context == own.context


def test_launches_set_arguments_only_when_another_set_them(profile, monkeypatch):
    """Two Launches of one kernel alternate correctly; one repeated sets its
    arguments once; a dead one's place is taken by the next (weak reference)."""
    q = profile.queue()
    kern = codegen.kernel(q.context, ReduceSpec(dtype="float32", acc_double=profile.fp64),
                          "reduce_partials")
    acc = np.float64 if profile.fp64 else np.float32
    parts = [cla.to_device(q, (np.arange(6) * (i + 1)).astype(acc)) for i in range(2)]
    outs = [cla.zeros(q, 3, acc) for _ in range(2)]
    launches = [codegen.Launch(kern, (3,), None, (p.data, np.int64(2), np.int64(3), o.data))
                for p, o in zip(parts, outs)]
    sets = []
    original = cl.Kernel.set_args
    monkeypatch.setattr(cl.Kernel, "set_args",
                        lambda self, *args: (sets.append(args), original(self, *args)))
    for which in (0, 0, 1, 0, 1, 1):
        outs[which].fill(0)
        launches[which](q)
        np.testing.assert_array_equal(outs[which].get(), [3 * (which + 1), 5 * (which + 1),
                                                          7 * (which + 1)])
    assert len(sets) == 4                  # 0, 1, 0, 1: each repeat sets nothing
    del launches[1]
    again = codegen.Launch(kern, (3,), None, (parts[1].data, np.int64(2), np.int64(3),
                                               outs[1].data))
    again(q)
    launches[0](q)
    assert len(sets) == 6


# ----------------------------------------------------------- templates by path
def spec_classes():
    """Every Spec subclass of the package (its modules imported)."""
    import importlib
    import pkgutil
    for info in pkgutil.walk_packages(oc.__path__, "oclclust."):
        if info.name.split(".")[1] in ("runtime", "passes"):
            importlib.import_module(info.name)
    found, todo = [], [Spec]
    while todo:
        for cls in todo.pop().__subclasses__():
            todo.append(cls)
            if cls.__module__.startswith("oclclust."):
                found.append(cls)
    return found


def test_templates_are_found_by_their_path():
    """A spec names its template by the path below templates/ (a folder per
    pass module): one step from the pass to the file, no search."""
    folder = resource_dir("templates")
    paths = [cls.template for cls in spec_classes() if isinstance(cls.template, str)]
    paths += [LloydSpec(variant=v).template for v in ("tiled", "rowwise", "blocked", "gemm",
                                                      "mma")]
    assert len(paths) > 40
    for path in paths:
        assert "/" in path and (folder / path).is_file(), path
    assert isinstance(codegen.lookup(), TemplateLookup)
    assert codegen.lookup().get_template("lloyd/lloyd_assign_accumulate.cl.mako")


def test_a_bare_template_name_is_not_searched_for():
    @dataclasses.dataclass(frozen=True)
    class BareName(Spec):
        template = "pairwise_distances.cl.mako"   # distances/pairwise_distances.cl.mako's name
        d: int = 3
    with pytest.raises(TopLevelLookupException):
        BareName().render()
    for uri in ("select.cl.mako", "/select.cl.mako", "tf32_split.cl.mako"):
        with pytest.raises(TopLevelLookupException):
            codegen.lookup().get_template(uri)


def test_template_references_are_absolute_paths():
    """<%inherit> / <%namespace> / <%include> name a file by its absolute
    URI: below templates/, or below kernels_cl/ for the plain-C helpers."""
    found = 0
    for top in (resource_dir("templates"), TEST_TEMPLATES):
        for path in top.rglob("*.cl.mako"):
            for uri in re.findall(r'<%(?:inherit|namespace|include)\b[^>]*\bfile="([^"]+)"',
                                  path.read_text()):
                found += 1
                assert uri.startswith("/"), (path, uri)
                assert any((Path(d) / uri[1:]).is_file() for d in template_dirs()), (path, uri)
    assert found > 90


def test_quiet_builds_of_several_threads_stay_quiet():
    """Builds under way on several threads at once (a DeviceData pass's
    first run on each device): the first one to finish leaves the others
    silenced, and the last one restores the filters as they were."""
    import threading
    import warnings
    first_in, second_in, first_done = (threading.Event() for _ in range(3))

    def first():
        with codegen.quiet_build():
            first_in.set()
            second_in.wait(10)
        first_done.set()
    with warnings.catch_warnings():
        warnings.simplefilter("error", cl.CompilerWarning)
        before = list(warnings.filters)
        thread = threading.Thread(target=first)
        thread.start()
        first_in.wait(10)
        with codegen.quiet_build():
            second_in.set()
            first_done.wait(10)
            warnings.warn("a build's log", cl.CompilerWarning)   # after the first build
        thread.join()
        assert warnings.filters == before
        with pytest.raises(cl.CompilerWarning):
            warnings.warn("a log of no build", cl.CompilerWarning)


NO_COMPILER_WARNING = """
import sys, warnings
import numpy as np
import pyopencl as cl
import oclclust as oc
X = np.random.RandomState(0).normal(size=(200, 3))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for est in (oc.KMeans(3, n_init=1, random_state=0, devices=sys.argv[1]),
                oc.MiniBatchKMeans(3, batch_size=32, random_state=0, devices=sys.argv[1]),
                oc.AgglomerativeClustering(3, linkage="average", devices=sys.argv[1])):
        est.fit(X)
    oc.linkage(X, "median", devices=sys.argv[1])   # scipy's generic algorithm
logs = [f"{w.filename}:{w.lineno}" for w in caught if issubclass(w.category, cl.CompilerWarning)]
sys.exit(f"CompilerWarning from {logs}" if logs else 0)
"""


def test_no_compiler_warning_reaches_the_user(profile):
    """Every program a fit builds (its own, and none of pyopencl's: a fill
    is a command, not pyopencl's fill kernel) is built with the logs of a
    successful build silenced: a process with no kernel cache (every
    program compiled, Intel's runtime logs each) sees no CompilerWarning."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, PYOPENCL_NO_CACHE="1")
    proc = subprocess.run([sys.executable, "-c", NO_COMPILER_WARNING, profile.platform],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
