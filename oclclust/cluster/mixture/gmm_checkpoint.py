"""GaussianMixture's EM state in a checkpoint (cluster/checkpoint.py): the
init under way, the random stream after its draws, its EM run's Fitted
and the best Fitted of the inits before it, as a checkpoint's arrays and
plain values, and back."""
import numpy as np

from ..checkpoint import rng_state, set_rng_state
from .mdl import Fitted, Model

MODEL_ARRAYS = ("weights", "means", "covariances", "prec_chol")


def fitted_state(fitted, prefix):
    """*fitted* (a Fitted, or None) as a checkpoint state's entries named *prefix*..."""
    if fitted is None:
        return {}
    state = {prefix + name: np.asarray(getattr(fitted.model, name)) for name in MODEL_ARRAYS}
    state.update({prefix + "lower_bound": float(fitted.lower_bound),
                  prefix + "n_iter": int(fitted.n_iter),
                  prefix + "converged": bool(fitted.converged),
                  prefix + "lower_bounds": [float(b) for b in fitted.lower_bounds]})
    return state


def saved_fitted(state, prefix):
    """The Fitted that fitted_state saved in *state* under *prefix*, or None."""
    if prefix + "means" not in state:
        return None
    return Fitted(Model(*(state[prefix + name] for name in MODEL_ARRAYS)),
                  state[prefix + "lower_bound"], state[prefix + "n_iter"],
                  state[prefix + "converged"], lower_bounds=list(state[prefix + "lower_bounds"]))


class EmCheckpoint:
    """A GaussianMixture fit's checkpoint (a checkpoint.Checkpoint, or None):
    what its EM iterations write (step), and the state it resumes from."""

    def __init__(self, checkpoint):
        self.checkpoint, self.run = checkpoint, None
        self.saved = None if checkpoint is None else checkpoint.saved

    def start(self, init, rng=None, best=None):
        """EM of init *init* (None: none that writes) starts: the random
        stream is where its draws left it; *best*: the inits' before."""
        self.run = None if init is None else dict(rng=rng_state(rng), init=init,
                                                  **fitted_state(best, "best_"))

    def resume(self, rng):
        """(the init to go on with, the best Fitted before it, its own saved
        Fitted, the history) of the saved state; *rng* set where it was."""
        saved = self.saved
        set_rng_state(rng, saved["rng"])
        self.run = {k: v for k, v in saved.items() if k == "rng" or k == "init"
                    or k.startswith("best_")}
        return saved["init"], saved_fitted(saved, "best_"), saved_fitted(saved, ""), \
            saved["history"]

    def step(self, current):
        """An EM iteration's end: current() -> (history, Fitted so far)."""
        if self.checkpoint is not None and self.run is not None:
            self.checkpoint.step(lambda: self._state(*current()))

    def _state(self, history, fitted):
        return {**self.run, "history": history, **fitted_state(fitted, "")}
