"""Where and how one rank fails in a fit (tests/harness/mpi_script.py's
fault cases; tests/faults/test_mpi_faults.py reads what happened).

A fit's phases, each found by the methods the fit runs in it, so that a
fault fires in that phase and nowhere else:
- load: this rank's rows placed on its devices (parallel.placement's
  _local_fit_data), before the ranks' check of their shards;
- check: that check (parallel.comm.Ranks), the fit's first collective,
  the others in it already;
- start: the estimator's initialisation (k-means++ over every rank's rows;
  GaussianMixture's from its k-means++ responsibilities), at its second
  device pass: the others have joined its first sums and wait in the next;
- mid: the first device pass of the third iteration (two iterations done,
  counted by the loops' runtime.progress.Progress.step);
- between: in the third iteration, after this rank's device pass, before
  the sum over the ranks that joins it (outside any pass: the others are
  in the sum already);
- end: after the last iteration, in the estimator's final step (KMeans's
  and EnsembleKMeans's finish: the final inertia and labels; FuzzyCMeans's
  memberships pass; GaussianMixture's final model, set on the host after
  the last lower bound), at its first device pass, else on leaving it.

How: raise (a ValueError: every rank's RankError must keep its type),
interrupt (KeyboardInterrupt), exit (os._exit: no MPI_Finalize) or kill
(SIGKILL).  What fired, and where, is kept in ``Fault.fired``; before its
process ends a dying rank writes it to OUTDIR/fault<rank>.json.
"""
import json
import os
import signal
from pathlib import Path

import oclclust as oc
from oclclust.cluster.kmeans.ensemble import EnsembleModels
from oclclust.cluster.kmeans.kmeans import LloydModel
from oclclust.cluster.mixture.cmeans_shards import CMeansShards
from oclclust.parallel import placement
from oclclust.parallel.comm import Ranks
from oclclust.parallel.device_data import DeviceData
from oclclust.runtime.progress import Progress

PHASES = ("load", "check", "start", "mid", "between", "end")
ACTIONS = ("raise", "interrupt", "exit", "kill")

# (class, method) a phase runs in, per estimator
WINDOWS = {
    "start": {"KMeans": (oc.KMeans, "_init_centers"),
              "FuzzyCMeans": (oc.FuzzyCMeans, "_init_centers"),
              "EnsembleKMeans": (oc.EnsembleKMeans, "_inits"),
              "GaussianMixture": (oc.GaussianMixture, "_initial_model")},
    "end": {"KMeans": (LloydModel, "finish"),
            "FuzzyCMeans": (CMeansShards, "memberships"),
            "EnsembleKMeans": (EnsembleModels, "finish"),
            "GaussianMixture": (oc.GaussianMixture, "_set_model")},
}
START_PASS = 2    # the start's device pass that fails (its first sums done)
MID_ITERATIONS = 2


class Fault:
    """``with Fault(action, phase, estimator_name, out): est.fit(X)``: this
    process fails once as *action* says, in *phase*; the methods patched
    for it are restored on leaving."""

    def __init__(self, action, phase, estimator_name, out):
        if action not in ACTIONS or phase not in PHASES:
            raise ValueError(f"no fault {action!r} at {phase!r}")
        self.action, self.phase, self.out = action, phase, Path(out)
        self.window = WINDOWS.get(phase, {}).get(estimator_name)
        self.fired, self.iterations = None, 0
        self.inside, self.passes, self.depth = False, 0, 0
        self._saved = []

    # ------------------------------------------------------------- firing
    def fire(self, where):
        """Fail here (once); *where*: what the fault interrupted."""
        if self.fired is not None:
            return
        self.fired = dict(phase=self.phase, where=where, iterations=self.iterations,
                          action=self.action)
        rank = _world_rank()
        if self.action in ("exit", "kill"):
            (self.out / f"fault{rank}.json").write_text(json.dumps(self.fired))
            if self.action == "exit":
                os._exit(3)
            os.kill(os.getpid(), signal.SIGKILL)
        message = f"injected failure at {self.phase} ({where}) on rank {rank}"
        if self.action == "interrupt":
            raise KeyboardInterrupt(message)
        raise ValueError(message)

    def on_pass(self):
        """A device pass is about to run on this rank's rows."""
        if self.phase == "mid" and not self.inside and self.iterations == MID_ITERATIONS:
            self.fire(f"a pass of iteration {self.iterations + 1}")
        if self.inside:
            self.passes += 1
            if self.phase == "end" or self.passes == START_PASS:
                self.fire(f"pass {self.passes} of {self.window[1]}")

    # ------------------------------------------------------------ patching
    def _patch(self, owner, name, make):
        self._saved.append((owner, name, owner.__dict__.get(name)))
        setattr(owner, name, make(getattr(owner, name)))

    def __enter__(self):
        fault = self

        def counting_passes(real):
            def run(data, *args, **kwargs):
                fault.depth += 1   # map_enqueued may run as map: one pass
                try:
                    if fault.depth == 1:
                        fault.on_pass()
                    return real(data, *args, **kwargs)
                finally:
                    fault.depth -= 1
            return run
        self._patch(DeviceData, "map", counting_passes)
        self._patch(DeviceData, "map_enqueued", counting_passes)

        def counting_iterations(real):
            def step(bar, *args, **kwargs):
                fault.iterations += 1
                return real(bar, *args, **kwargs)
            return step
        self._patch(Progress, "step", counting_iterations)
        if self.phase == "load":
            def loading(real):
                def load(*args, **kwargs):
                    fault.fire("the shard's placement")
                    return real(*args, **kwargs)
                return load
            self._patch_module(placement, "_local_fit_data", loading)
        if self.phase == "check":
            def checking(real):
                def agree(ranks, *args, **kwargs):
                    fault.fire("the ranks' check of their shards")
                    return real(ranks, *args, **kwargs)
                return agree
            self._patch(Ranks, "_agree", checking)
        if self.phase == "between":
            def summing(real):
                def sum_(ranks, *args, **kwargs):
                    if fault.iterations == MID_ITERATIONS:
                        fault.fire(f"before a sum over the ranks in iteration "
                                   f"{fault.iterations + 1}")
                    return real(ranks, *args, **kwargs)
                return sum_
            self._patch(Ranks, "sum", summing)
        if self.window is not None:
            def windowed(real):
                def method(*args, **kwargs):
                    fault.inside, fault.passes = True, 0
                    try:
                        out = real(*args, **kwargs)
                    finally:
                        fault.inside = False
                    # a step of no device pass (GaussianMixture's final model)
                    fault.fire(f"leaving {fault.window[1]}")
                    return out
                return method
            self._patch(*self.window, windowed)
        return self

    def _patch_module(self, module, name, make):
        self._saved.append((module, name, getattr(module, name)))
        setattr(module, name, make(getattr(module, name)))

    def __exit__(self, *exc):
        for owner, name, value in reversed(self._saved):
            if isinstance(owner, type) and value is None:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
        self._saved = []


def _world_rank():
    from mpi4py import MPI
    return MPI.COMM_WORLD.Get_rank()
