"""GaussianMixture's EM state in a checkpoint (cluster/checkpoint.py): an
EM run's Fitted (the current init's, and the best of the inits before it)
as a checkpoint's arrays and plain values, and back."""
import numpy as np

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
