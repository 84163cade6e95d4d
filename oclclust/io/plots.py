"""Plots of clustering results (matplotlib, imported only when a plot is asked for)."""
import numpy as np

from ..runtime.extras import require


def _matplotlib_axes(ax):
    return _pyplot().gca() if ax is None else ax


def linkage_matrix(model):
    """scipy's linkage matrix Z of a fitted AgglomerativeClustering (or any
    model with ``children_`` and ``distances_``, as scikit-learn's)."""
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


def plot_dendrogram(Z_or_model, ax=None, path=None, **kwargs):
    """Draw the dendrogram of a linkage matrix (oclclust.linkage's or
    scipy's) or of a fitted AgglomerativeClustering on *ax* (default: the
    current axes), saved to *path* when given.  *kwargs* go to
    scipy.cluster.hierarchy.dendrogram, whose result is returned."""
    from scipy.cluster.hierarchy import dendrogram
    Z = Z_or_model
    if not isinstance(Z, np.ndarray):
        Z = linkage_matrix(Z_or_model) if hasattr(Z_or_model, "children_") else np.asarray(Z)
    ax = _matplotlib_axes(ax)
    result = dendrogram(Z, ax=ax, **kwargs)
    if path is not None:
        ax.figure.savefig(path, dpi=120, bbox_inches="tight")
    return result


def _pyplot():
    return require("matplotlib.pyplot", "plotting")


def figure_formats():
    """The extensions matplotlib writes figures in (.png, .pdf, .svg, ...)."""
    _pyplot()   # ImportError naming the package when matplotlib is missing
    from matplotlib.backend_bases import FigureCanvasBase
    return tuple(sorted(f".{ext}" for ext in FigureCanvasBase.get_supported_filetypes()))


def project_2d(X, centers=None):
    """X (and centres) in 2-D: as they are for d <= 2, else on X's first two
    principal axes (PCA by SVD of the centred data, in float64)."""
    X = np.asarray(X, dtype=np.float64)
    if X.shape[1] <= 2:
        pad = lambda a: np.pad(a, ((0, 0), (0, 2 - a.shape[1])))   # noqa: E731
        return pad(X), (None if centers is None else pad(np.asarray(centers, np.float64))), \
            ("x0", "x1")
    mean = X.mean(axis=0)
    sample = X if len(X) <= 100_000 else X[np.random.RandomState(0).choice(len(X), 100_000,
                                                                         replace=False)]
    _, s, vt = np.linalg.svd(sample - mean, full_matrices=False)
    axes = vt[:2].T
    share = s[:2] ** 2 / (s ** 2).sum()
    names = tuple(f"PC{i + 1} ({100 * v:.0f}% of variance)" for i, v in enumerate(share))
    return (X - mean) @ axes, (None if centers is None else
                               (np.asarray(centers, np.float64) - mean) @ axes), names


def plot_clusters(X, labels, centers=None, ax=None, path=None, title=None, max_points=50_000):
    """Scatter of the points coloured by label (PCA projection for d > 2),
    centres as crosses; written to *path* when given.  Returns the axes."""
    plt = _pyplot()
    X = np.asarray(X)
    labels = np.asarray(labels)
    if len(X) > max_points:   # a readable, fast plot: an even sample
        keep = np.random.RandomState(0).choice(len(X), max_points, replace=False)
        X, labels = X[keep], labels[keep]
    xy, cxy, names = project_2d(X, centers)
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 5.2))
    ax.scatter(xy[:, 0], xy[:, 1], c=labels, s=4, cmap="tab20", alpha=0.6, linewidths=0)
    if cxy is not None:
        ax.scatter(cxy[:, 0], cxy[:, 1], marker="x", s=60, c="black", linewidths=1.5,
                   label="centres")
        ax.legend(loc="best")
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    ax.set_title(title or f"{len(np.unique(labels))} clusters")
    if path is not None:
        (fig or ax.figure).savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig or ax.figure)
    return ax


def plot_mdl_path(model, ax=None, path=None):
    """MDL against the number of components along GaussianMixture's order
    selection (``mdl_path_``), the chosen order marked."""
    plt = _pyplot()
    if not getattr(model, "mdl_path_", None):
        raise ValueError("the model has no mdl_path_: fit GaussianMixture with min_components")
    ks, mdl = zip(*model.mdl_path_)
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(ks, mdl, "o-")
    best = int(np.argmin(mdl))
    ax.plot([ks[best]], [mdl[best]], "r*", markersize=14, label=f"chosen: K={ks[best]}")
    ax.set_xlabel("number of components K")
    ax.set_ylabel("MDL")
    ax.invert_xaxis()   # the path runs from many components down to few
    ax.legend(loc="best")
    ax.set_title("MDL order selection (merging the closest pair)")
    if path is not None:
        (fig or ax.figure).savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig or ax.figure)
    return ax
