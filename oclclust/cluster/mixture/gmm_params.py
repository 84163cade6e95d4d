"""GaussianMixture's covariances and precisions: scikit-learn's shapes per
covariance_type, the device layout (tied and spherical broadcast to every
component, or feature), and the given initial parameters checked as
scikit-learn checks them."""
import numpy as np


def checked_inits(est, d):
    """weights_init, means_init, precisions_init as float64 (None stays None),
    checked as scikit-learn checks them."""
    k, kind = est.n_components, est.covariance_type
    full = kind in ("full", "tied")
    out = []
    for name, value, shape in (("weights", est.weights_init, (k,)),
                               ("means", est.means_init, (k, d)),
                               (f"{kind} precision", est.precisions_init,
                                covariance_shape(kind, k, d))):
        if value is None:
            out.append(None)
            continue
        value = np.array(value, dtype=np.float64)
        if value.ndim > 2 and kind != "full":   # scikit-learn's check_array
            raise ValueError(f"Found array with dim {value.ndim}, while dim <= 2 is "
                             "required.")
        if value.shape != shape:
            raise ValueError(f"The parameter '{name}' should have the shape of {shape}, "
                             f"but got {value.shape}")
        if not np.all(np.isfinite(value)):
            raise ValueError(f"The parameter '{name}' contains NaN or infinity.")
        out.append(value)
    w, _, p = out
    if w is not None:
        if np.any(w < 0) or np.any(w > 1):
            raise ValueError("The parameter 'weights' should be in the range [0, 1], but "
                             f"got max value {w.max():.5f}, min value {w.min():.5f}")
        if not abs(1.0 - w.sum()) <= 1e-6:
            raise ValueError("The parameter 'weights' should be normalized, but got "
                             f"sum(weights) = {w.sum():.5f}")
    if p is not None:
        if full:
            sym = np.allclose(p, np.swapaxes(p, -1, -2))
            if not sym or np.any(np.linalg.eigvalsh(p) <= 0):
                raise ValueError(f"'{kind} precision' should be symmetric, "
                                 "positive-definite")
        elif np.any(p <= 0):
            raise ValueError(f"'{kind} precision' should be positive")
        out[2] = broadcast(kind, p, k, d)   # the device layout
    return out


def covariance_shape(kind, k, d):
    """scikit-learn's shape of covariances / precisions of each type."""
    return {"full": (k, d, d), "diag": (k, d), "tied": (d, d), "spherical": (k,)}[kind]


def broadcast(kind, value, k, d):
    """A tied / spherical array in the device layout (k copies of the tied
    matrix, each spherical value over d features); full / diag as they are."""
    if kind == "tied":
        return np.broadcast_to(value, (k, d, d)).copy()
    if kind == "spherical":
        return np.broadcast_to(value[:, None], (k, d)).copy()
    return value


def compact(kind, value):
    """The inverse of broadcast: scikit-learn's shape of the device layout."""
    if kind == "tied":
        return value[0]
    if kind == "spherical":
        return value[:, 0]
    return value
