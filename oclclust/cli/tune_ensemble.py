"""The tuner's ensemble part: EnsembleKMeans' profile terms timed on a device.

    python -m oclclust tune --kernels ensemble [--ensemble-shapes 1000000,2,10,32]

A configuration is a set of EnsembleTerms (model order, 32-bit word atomics,
the statistics pass's work-group size and groups a compute unit); it is
timed as ``python -m oclclust compare`` times a strategy (compare.time_run:
the estimator's own iterations on resident blobs, then the statistics pass
alone, then its kernels by profiling events).  The concatenated strategy is
timed over every candidate, data and task parallelism over those that
concern them (the order is concatenated's alone; task runs a work-group a
model).  Within a strategy the winner has the least kernels' time (what the
terms change; the host's part is the same for all); "auto" takes the
strategy whose winner has the least time per iteration (what a fit sees).
"""
import itertools

import numpy as np

from .compare import FULL, make_blobs, time_run
from .tune_results import relative_score

# the paper's setting as compare runs it (N=1M, d=2, K=10) at its largest ensemble
PAPER_SHAPE = (FULL["n"][0], FULL["d"][0], FULL["k"][0], max(FULL["models"]))
QUICK_SHAPE = (4000, 2, 10, 4)
ORDERS = ("distributed", "uniform")
FIGURES = ("iteration", "pass", "kernels")   # time_run's first three, in its order


def work_groups(profile, quick=False):
    """(work-group size, groups a compute unit) candidates of the statistics
    pass on *profile*'s kind of device (0: the profile's generic value)."""
    if quick:
        return [(0, 0)]
    if profile.type == "gpu":
        # more, larger groups hide the local-memory atomics' latency (H100:
        # 256 x 16 the best of 128 / 256 x 4 .. 32: devices.yaml, NVIDIA)
        return list(itertools.product((128, 256, 512), (4, 8, 16, 32)))
    # CPU runtimes: a group is a core's SIMD loop; a few groups a core
    # balance the cores, more only add statistics to merge
    return list(itertools.product((64, 256), (1, 4)))


def candidates(profile, quick=False):
    """``{strategy: [terms]}``: the EnsembleTerms configurations (by their
    devices.yaml keys) timed for each strategy on *profile*."""
    groups = work_groups(profile, quick)

    def terms(atomics, wg, per_unit, order=None):
        out = {} if order is None else {"ensemble_order": order}
        return {**out, "ensemble_word_atomics": atomics, "ensemble_work_group_size": wg,
                "ensemble_groups_per_compute_unit": per_unit}
    return {
        "concatenated": [terms(a, wg, g, o) for o in ORDERS for a in (0, 1) for wg, g in groups],
        "data": [terms(a, wg, g) for a in (0, 1) for wg, g in groups],
        "task": [terms(a, wg, 0) for a in (0, 1) for wg in sorted({wg for wg, _ in groups})],
    }


def time_terms(profile, X, models, k, strategy, terms, iters):
    """(seconds per iteration, per pipelined pass, of the pass's kernels),
    or (None, why) where the device refuses the configuration."""
    import pyopencl as cl
    from ..runtime.codegen import KernelBuildError
    try:
        return time_run(profile.replace(**terms), X, models, k, strategy, None, iters,
                        None)[:3], None
    except (KernelBuildError, cl.Error, MemoryError) as exc:
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}"


def label(terms):
    """One line of the terms, their keys without "ensemble_"."""
    return " ".join(f"{k.replace('ensemble_', '')}={v}" for k, v in terms.items())


def tune_ensemble(profile, shapes, quick=False, iters=10, log=print):
    """The ensemble's terms for *profile* and their figures.

    Parameters
    ----------
    profile : DeviceProfile
        The device to time.
    shapes : list of (n, d, k, models)
        Rows, features, clusters a model and models of the ensembles timed.
    quick : bool
        Orders and atomics alone, at the profile's work-groups.
    iters : int
        Iterations (and passes) timed per configuration.
    log : callable
        Takes each timing's line.

    Returns
    -------
    terms : dict
        ``ensemble_strategy`` and the winning EnsembleTerms, by devices.yaml key.
    notes : list of str
        The figures, as the entry's comment lines (each starts "ensemble").
    """
    configs = candidates(profile, quick)
    times = {s: np.full((len(c), len(shapes), len(FIGURES)), np.nan) for s, c in configs.items()}
    for j, (n, d, k, models) in enumerate(shapes):
        X = make_blobs(n, d, k)
        for strategy, tried in configs.items():
            for i, terms in enumerate(tried):
                seconds, why = time_terms(profile, X, models, k, strategy, terms, iters)
                if seconds is not None:
                    times[strategy][i, j] = seconds
                log(f"  {strategy:12s} {label(terms):58s} {n},{d},{k},{models}: " + (
                    " ".join(f"{t:.3e}" for t in seconds) + " s/iteration, pass, kernels"
                    if seconds else f"skipped ({why})"))
    best = {}     # strategy -> its winner's row: the least kernels' time
    for strategy, t in times.items():
        ok = ~np.isnan(t).any(axis=(1, 2))
        if ok.any():
            best[strategy] = int(np.flatnonzero(ok)[np.argmin(relative_score(t[ok, :, 2]))])
    if "concatenated" not in best:
        raise RuntimeError(f"no concatenated configuration ran on every shape on {profile}")
    ran = list(best)
    per_iteration = np.array([times[s][best[s], :, 0] for s in ran])
    strategy = ran[int(np.argmin(relative_score(per_iteration)))]
    chosen = configs[strategy][best[strategy]]
    terms = {"ensemble_strategy": strategy,
             "ensemble_order": configs["concatenated"][best["concatenated"]]["ensemble_order"],
             **{key: v for key, v in chosen.items() if key != "ensemble_order"}}
    figures = {s: times[s][best[s]] for s in ran}
    return terms, notes(shapes, figures)


def notes(shapes, figures):
    """The entry's comment lines: per shape, concatenated over data
    parallelism (per iteration, pipelined pass, kernels) and each
    strategy's seconds per iteration at its winning terms.  *figures*:
    ``{strategy: shapes x FIGURES}``."""
    lines = []
    for j, (n, d, k, models) in enumerate(shapes):
        shape = f"ensemble {n}x{d} k={k} M={models}"
        if "data" in figures:
            data, concatenated = figures["data"][j], figures["concatenated"][j]
            ratio = data / concatenated
            lines.append(f"{shape}: concatenated over data: {ratio[0]:.2f}x "
                         f"(pass {ratio[1]:.2f}x, kernels {ratio[2]:.2f}x)")
        lines.append(f"{shape}, s/iteration: " + ", ".join(
            f"{s} {t[j, 0]:.3e}" for s, t in figures.items()))
    return lines
