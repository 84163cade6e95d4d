"""Plots of clustering results (matplotlib, imported only when a plot is asked for)."""
import numpy as np


def _matplotlib_axes(ax):
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("plotting needs matplotlib, which is not installed: "
                          "pip install matplotlib") from exc
    return plt.gca() if ax is None else ax


def linkage_matrix(model):
    """scipy's linkage matrix Z of a fitted AgglomerativeClustering (or any
    model with children_ and distances_, as scikit-learn's)."""
    if not hasattr(model, "children_"):
        raise ValueError("the model is not fitted: call fit first")
    if not hasattr(model, "distances_"):
        raise ValueError("the model has no distances_: fit it with compute_distances=True "
                         "or a distance_threshold")
    children = np.asarray(model.children_)
    n = children.shape[0] + 1
    counts = np.zeros(n - 1)
    for k, (a, b) in enumerate(children):
        counts[k] = ((1 if a < n else counts[a - n]) + (1 if b < n else counts[b - n]))
    return np.column_stack([children, model.distances_, counts]).astype(np.float64)


def plot_dendrogram(Z_or_model, ax=None, **kwargs):
    """Draw the dendrogram of a linkage matrix (oclclust.linkage's or
    scipy's) or of a fitted AgglomerativeClustering on *ax* (default: the
    current axes).  *kwargs* go to scipy.cluster.hierarchy.dendrogram, whose
    result is returned."""
    from scipy.cluster.hierarchy import dendrogram
    Z = Z_or_model
    if not isinstance(Z, np.ndarray):
        Z = linkage_matrix(Z_or_model) if hasattr(Z_or_model, "children_") else np.asarray(Z)
    ax = _matplotlib_axes(ax)
    return dendrogram(Z, ax=ax, **kwargs)
