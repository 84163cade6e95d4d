"""The kernels a fit ran (runtime/kernel_recorder.py): each fetched kernel
recorded once, plans reused by later fits recorded again, and pools that
carry the recorders to their threads."""
import numpy as np

from oclclust.passes.distances import PairwiseSpec
from oclclust.passes.lloyd import plan
from oclclust.runtime import codegen, kernel_recorder
from oclclust.runtime.partition import MomentsSpec
from oclclust.runtime.reduce import ReduceSpec


def test_recording_kernels_notes_each_kernel_once(profile):
    ctx = profile.queue().context
    spec = ReduceSpec(dtype="float32", acc_double=profile.fp64)
    codegen.kernel(ctx, spec, "reduce_partials")   # already built: a fetch is enough
    with kernel_recorder.recording_kernels() as outer:
        codegen.kernel(ctx, spec, "reduce_partials")
        with kernel_recorder.recording_kernels() as inner:
            codegen.kernel(ctx, spec, "reduce_partials")
            codegen.own_kernel(ctx, PairwiseSpec(d=3), "pairwise_euclidean")
    codegen.kernel(ctx, MomentsSpec(d=3, wg=4), "partition_moments")   # recorded by none
    assert [r["template"] for r in inner.records()] == ["distances/pairwise_distances.cl.mako",
                                                        "runtime/reduce_partials.cl.mako"]
    assert outer.records() == inner.records()
    reduce = outer.records()[1]
    assert reduce == {"device": profile.cl_device().name.strip(), "pass": "runtime.reduce",
                      "variant": "ReduceSpec", "spec": "ReduceSpec",
                      "template": "runtime/reduce_partials.cl.mako",
                      "key": {"dtype": "float32", "acc_double": profile.fp64}}


def test_records_are_each_recordings_own(profile):
    """The records of a kernel are made once a process, but each recording
    gives copies: a fit's kernels_ changed leaves the next fit's alone."""
    ctx = profile.queue().context
    spec = ReduceSpec(dtype="float32", acc_double=profile.fp64)
    made = []
    for _ in range(2):
        with kernel_recorder.recording_kernels() as recorder:
            codegen.kernel(ctx, spec, "reduce_partials")
        made.append(recorder.records())
    assert made[0] == made[1]
    made[0][0]["key"]["dtype"] = "changed"
    with kernel_recorder.recording_kernels() as recorder:
        codegen.kernel(ctx, spec, "reduce_partials")
    assert recorder.records() == made[1] and made[1][0]["key"]["dtype"] == "float32"


def test_a_reused_plan_records_its_kernels_again(profile):
    """A plan is made once per process; each fit that reuses it records
    the kernels it fetched, not the candidates it tried and refused."""
    queue = profile.queue()
    small = profile.replace(lloyd_variant="tiled", max_work_group_size=1)
    with kernel_recorder.recording_kernels() as first:
        spec, _ = plan(small, queue, np.float32, 3, 6, True, False)
    with kernel_recorder.recording_kernels() as again:
        assert plan(small, queue, np.float32, 3, 6, True, False)[0] is spec
    lloyd = [r for r in again.records() if r["pass"] == "lloyd"]
    assert first.records() == again.records() and len(lloyd) == 1
    assert lloyd[0]["key"]["wg"] == spec.wg and lloyd[0]["variant"] == spec.variant


def test_pools_of_recorded_on_workers_see_the_submitters_recorders(profile):
    from concurrent.futures import ThreadPoolExecutor
    ctx = profile.queue().context
    spec = ReduceSpec(dtype="float32", acc_double=profile.fp64)
    fetch = lambda _=None: codegen.kernel(ctx, spec, "reduce_partials")   # noqa: E731
    with kernel_recorder.recording_kernels() as recorder:
        with kernel_recorder.recorded_on_workers(ThreadPoolExecutor)(2) as pool:
            pool.submit(fetch).result()
    assert len(recorder.records()) == 1
    with kernel_recorder.recording_kernels() as recorder:
        with kernel_recorder.recorded_on_workers(ThreadPoolExecutor)(2) as pool:
            list(pool.map(fetch, range(3)))
    assert len(recorder.records()) == 1
    with kernel_recorder.recording_kernels() as recorder:
        with ThreadPoolExecutor(1) as plain:   # no recorder there
            plain.submit(fetch).result()
    assert recorder.records() == []
