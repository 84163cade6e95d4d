"""The ``fit`` and ``predict`` commands of ``python -m oclclust``.

``fit`` reads a data file, fits one algorithm and writes the model (.npz
with JSON metadata, io/modelio.py) and optionally the labels.  Launched by
mpiexec with several ranks it joins them (comm=COMM_WORLD): each rank loads
its own slice of the file, rank 0 writes the model, each rank may write its
own labels file ("{rank}" in the name).
"""
import sys
import time

import numpy as np

from ..cluster import checkpoint
from ..cluster.registry import ALGORITHMS, estimator_class
from .outputs import ARRAYS, labels_path, outputs_problem, write_array, writing

# flag dest -> estimator parameter (passed only when given, and only to an
# estimator that has it: a flag the algorithm lacks is a usage error)
PARAMS = {
    "max_iter": "max_iter", "tol": "tol", "init": "init", "n_init": "n_init",
    "random_state": "random_state", "devices": "devices", "dtype": "dtype",
    "fuzziness": "m", "covariance_type": "covariance_type", "reg_covar": "reg_covar",
    "min_components": "min_components", "linkage": "linkage", "metric": "metric",
    "distance_threshold": "distance_threshold", "n_models": "n_models",
    "strategy": "strategy", "kdtree": "kdtree", "verbose": "verbose",
    "spherical": "spherical", "oversampling_factor": "oversampling_factor", "eps": "eps",
    "checkpoint": "checkpoint", "checkpoint_every": "checkpoint_every",
}


def add_data_arguments(p):
    p.add_argument("--columns", help="comma-separated column indices or header names to use")
    p.add_argument("--key", help="the array's name in an .npz or HDF5 data file")


def read_data(args, comm=None, estimator=None, columns=None):
    """This rank's rows of args.data, with the --columns (else *columns*)
    and --key asked for; under MPI in whole blocks of *estimator*'s sums
    (when it has them: the ranks' model is one process's bit for bit).  In
    one process, rows of a file that names its columns come with their
    names (runtime.columns.NamedRows): a model records them, and a predict
    checks them."""
    from ..io.datafiles import column_names, load_data
    from ..runtime.columns import NamedRows
    columns = args.columns.split(",") if args.columns else columns
    blocks = estimator if hasattr(estimator, "fit_block_rows") else None
    X = load_data(args.data, columns=columns, key=args.key, comm=comm, block_rows=blocks)
    names = column_names(args.data, columns, args.key) if comm is None else None
    return NamedRows(X, names) if names is not None and isinstance(X, np.ndarray) else X


def model_columns(args, model):
    """The columns of args.data a model fitted on named columns reads when no
    --columns is given: its names, where the file names its columns too."""
    from ..io.datafiles import column_names
    names = getattr(model, "feature_names_in_", None)
    if args.columns or names is None or column_names(args.data, key=args.key) is None:
        return None
    return [str(name) for name in names]


def add_fit_arguments(p, int_at_least, positive_float):
    p.add_argument("data", help="data file: .npy, .npz, .csv, .tsv, .fvecs, .bvecs, .ivecs")
    p.add_argument("--algorithm", "-a", choices=sorted(ALGORITHMS), default="kmeans",
                   help="the estimator (default kmeans)")
    p.add_argument("-k", "--n-clusters", dest="k", type=int_at_least(1),
                   help="number of clusters (components for gmm; the smallest cluster for "
                        "hdbscan; min_samples for dbscan); needed except for hierarchical "
                        "with --distance-threshold, hdbscan and dbscan")
    p.add_argument("--out", "-o", metavar="MODEL.npz", help="write the fitted model here")
    p.add_argument("--labels", metavar="FILE", help="write the labels (.npy or .csv); under "
                   "MPI '{rank}' in the name is the rank (else .rankN is added)")
    p.add_argument("--tree", metavar="Z.npy", help="hierarchical: also write the whole tree "
                   "as scipy's linkage matrix Z")
    add_data_arguments(p)
    p.add_argument("--plot", metavar="OUT.png", help="write a figure: the clusters (PCA "
                   "projection for d > 2), the dendrogram, or the MDL path (matplotlib)")
    p.add_argument("--mpi", choices=("auto", "on", "off"), default="auto",
                   help="join MPI ranks: auto (when launched by mpiexec with >1 rank), "
                        "on, off (default auto)")
    g = p.add_argument_group("estimator parameters (each algorithm takes those it has)")
    g.add_argument("--max-iter", type=int_at_least(1))
    g.add_argument("--tol", type=float)
    g.add_argument("--init", help="k-means++, k-means||, random, ...")
    g.add_argument("--spherical", action="store_true", default=None,
                   help="k-means by cosine: unit rows, renormalised centres")
    g.add_argument("--oversampling-factor", type=positive_float,
                   help="k-means||'s candidates a round, times k (default 0.5)")
    g.add_argument("--n-init", type=int_at_least(1))
    g.add_argument("--random-state", type=int_at_least(0))
    g.add_argument("--devices", help='"all", "cpu", "gpu" or name substrings')
    g.add_argument("--dtype", choices=("float32", "float64"))
    g.add_argument("-m", "--fuzziness", type=positive_float, help="c-means fuzzifier m > 1")
    g.add_argument("--covariance-type", choices=("full", "diag", "tied", "spherical"))
    g.add_argument("--reg-covar", type=float)
    g.add_argument("--min-components", type=int_at_least(1),
                   help="gmm: MDL order selection down to this many components")
    g.add_argument("--linkage", choices=("single", "complete", "average", "weighted",
                                         "centroid", "median", "ward"))
    g.add_argument("--metric")
    g.add_argument("--eps", type=positive_float, help="dbscan: the neighbourhood radius")
    g.add_argument("--distance-threshold", type=float)
    g.add_argument("--n-models", type=int_at_least(1))
    g.add_argument("--strategy", choices=("auto", "task", "data", "concatenated"))
    g.add_argument("--kdtree", choices=("direct", "distributed", "replicated", "auto"))
    g.add_argument("--verbose", "-v", action="count")
    g.add_argument("--checkpoint", metavar="PATH",
                   help="write the fit's state here as it goes; a fit started again with "
                        "the same PATH, data and parameters resumes from it (under MPI: "
                        "rank 0 writes, every rank reads PATH)")
    g.add_argument("--checkpoint-every", metavar="EVERY", type=_every,
                   help="how often --checkpoint writes: N iterations (an integer, default "
                        "1), or seconds ('30s', '5min', '1h', or a decimal number)")


def _every(text):
    """--checkpoint-every's value: an int (iterations), else a float or a
    string the estimators read as seconds (checkpoint.parse_every)."""
    import argparse
    try:
        value = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            value = text
    try:
        checkpoint.parse_every(value, "--checkpoint-every")
        if isinstance(value, int) and value < 1:
            raise ValueError("an integer of iterations must be >= 1")
    except (ValueError, TypeError) as exc:
        raise argparse.ArgumentTypeError(str(exc).replace(
            "The 'checkpoint_every' parameter of --checkpoint-every", "it")) from None
    return value


def _comm(mode):
    from .launcher import launched_ranks, world
    if mode == "off" or (mode == "auto" and launched_ranks() < 2):
        return None
    return world()


def _estimator(args, usage_error, comm):
    cls_name, k_name = ALGORITHMS[args.algorithm]
    try:
        cls = estimator_class(cls_name)
    except (ImportError, AttributeError):
        raise usage_error(f"--algorithm {args.algorithm}: not available in this "
                          "oclclust") from None
    accepted = cls().get_params(deep=False)
    params = {}
    for dest, name in PARAMS.items():
        value = getattr(args, dest)
        if value is None:
            continue
        if name not in accepted:
            raise usage_error(f"--{dest.replace('_', '-')} does not apply to --algorithm "
                              f"{args.algorithm}")
        params[name] = value
    if args.k is not None:
        params[k_name] = args.k
    elif args.algorithm in ("hdbscan", "dbscan"):
        pass    # -k is the smallest cluster / core neighbourhood: the clusters are found
    elif args.algorithm != "hierarchical" or args.distance_threshold is None:
        raise usage_error(f"-k is needed for --algorithm {args.algorithm}")
    elif args.algorithm == "hierarchical":
        params[k_name] = None
    if comm is not None:
        if "comm" not in accepted:
            raise usage_error(f"--algorithm {args.algorithm} does not run under MPI")
        params["comm"] = comm
    return cls(**params)


def _fit_outputs_error(args, usage_error, r, n_ranks, labels_rank):
    """A usage error if this rank cannot write what it is asked to (else
    None): every rank its labels (*labels_rank*'s file), rank 0 the model,
    tree and figure."""
    outputs = [("--labels", args.labels and labels_path(args.labels, labels_rank, n_ranks),
                ARRAYS)]
    if r == 0:
        outputs += [("--out", args.out, (".npz",)), ("--tree", args.tree, (".npy",)),
                    ("--plot", args.plot, args.plot and _figure_formats(usage_error))]
    problem = outputs_problem(outputs)
    return problem and usage_error(problem)


def _figure_formats(usage_error):
    from ..io.plots import figure_formats
    try:
        return figure_formats()
    except ImportError as exc:
        raise usage_error(f"--plot: {exc}") from None


def cmd_fit(args, usage_error):
    from ..io.modelio import save_model
    from ..parallel.comm import raise_if_any_failed, rank, size
    from .launcher import launched_rank
    comm = _comm(args.mpi)
    estimator = _estimator(args, usage_error, comm)
    if args.tree and args.algorithm != "hierarchical":
        raise usage_error("--tree applies to --algorithm hierarchical")
    r, n_ranks = rank(comm), size(comm)
    # the labels file's "{rank}": the launcher's rank in a process that fits alone
    labels_rank = r if comm is not None else launched_rank()
    # before the fit: an output that cannot be written stops every rank now
    raise_if_any_failed(comm, _fit_outputs_error(args, usage_error, r, n_ranks, labels_rank))
    X = read_data(args, comm, estimator)
    start = time.perf_counter()
    estimator.fit(X)
    seconds = time.perf_counter() - start
    rows = getattr(X, "values", X)       # a NamedRows' (the linkage and plot take arrays)
    found = found_clusters(args.algorithm, estimator, comm)   # collective under MPI
    if r == 0:
        summary = [f"{type(estimator).__name__} on {args.data}",
                   f"{n_ranks} rank(s)" if comm is not None else None, f"{seconds:.3f} s"]
        for attr in ("n_iter_", "inertia_", "objective_", "lower_bound_", "n_components_"):
            if hasattr(estimator, attr):
                summary.append(f"{attr.rstrip('_')} {np.round(getattr(estimator, attr), 6)}")
        summary += found
        print(", ".join(s for s in summary if s))
        if not (args.out or args.labels or args.tree or args.plot):
            # (after the fit: a fit that fails is one line of error, as every mistake)
            print("oclclust: note: the fit was not saved: write it with --out MODEL.npz "
                  "(and --labels, --tree, --plot)", file=sys.stderr)
        if args.out:
            with writing(args.out):
                save_model(estimator, args.out)
            print(f"model written to {args.out}")
    if args.labels:
        labels = getattr(estimator, "labels_", None)
        if labels is None:   # a mixture keeps no labels: its most likely components
            labels = estimator.predict(X)
        write_array(labels_path(args.labels, labels_rank, n_ranks), labels)
    Z = None
    if args.tree or (args.plot and args.algorithm == "hierarchical" and r == 0):
        from ..cluster.hierarchy.agglomerative import SKLEARN_METRICS
        from ..cluster.hierarchy.linkage_matrix import linkage
        Z = linkage(rows, method=estimator.linkage, devices=estimator.devices,
                    metric=SKLEARN_METRICS.get(estimator.metric, estimator.metric))
    if args.tree:
        with writing(args.tree):
            np.save(args.tree, Z)
        print(f"linkage matrix (scipy's Z) written to {args.tree}")
    if args.plot and r == 0:
        with writing(args.plot):
            plot(args.plot, estimator, rows, Z)
        print(f"plot written to {args.plot}")
    return 0


# the algorithms whose clusters are found, not asked for: their fit says how many
FOUND = ("hierarchical", "dbscan", "hdbscan")


def found_clusters(algorithm, estimator, comm=None):
    """The summary's words on the clusters *estimator* found: how many, and
    the rows labelled noise (-1; HDBSCAN's -2 and -3: rows with infinite or
    missing values) -- for the algorithms that find their clusters.  Under
    MPI (DBSCAN's ranks: clusters numbered 0, 1, ... over all ranks' rows)
    every rank's, gathered."""
    if algorithm not in FOUND:
        return []
    labels = np.asarray(estimator.labels_)
    clusters, noise = len(np.unique(labels[labels >= 0])), int(np.count_nonzero(labels < 0))
    if comm is not None:
        every = comm.allgather((int(labels.max(initial=-1)) + 1, noise))
        clusters, noise = max(c for c, _ in every), sum(n for _, n in every)
    words = [f"{clusters} clusters"]
    if algorithm != "hierarchical":
        words.append(f"{noise} noise points")
    return words


def plot(path, estimator, X, Z=None):
    """The fit's figure: the dendrogram of a tree, the MDL path of an order
    selection beside the clusters, else the clusters (PCA for d > 2)."""
    from ..io import plots
    plt = plots._pyplot()
    if Z is not None or hasattr(estimator, "children_"):
        fig, ax = plt.subplots(figsize=(8, 4.5))
        plots.plot_dendrogram(Z if Z is not None else estimator, ax=ax, truncate_mode="lastp",
                              p=30, no_labels=False)
        ax.set_title(f"dendrogram ({estimator.linkage} linkage, last 30 merges)")
    else:
        labels = getattr(estimator, "labels_", None)
        labels = estimator.predict(X) if labels is None else labels
        centres = getattr(estimator, "cluster_centers_", getattr(estimator, "means_", None))
        mdl = bool(getattr(estimator, "mdl_path_", None))
        fig, axes = plt.subplots(1, 2 if mdl else 1, figsize=(12 if mdl else 6.4, 5),
                                 squeeze=False)
        plots.plot_clusters(X, labels, centres, ax=axes[0][0],
                            title=f"{type(estimator).__name__}: {len(np.unique(labels))} clusters")
        if mdl:
            plots.plot_mdl_path(estimator, ax=axes[0][1])
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def cmd_predict(args, usage_error):
    from ..io.modelio import load_model
    problem = outputs_problem([("--labels", args.labels, ARRAYS),
                               ("--proba", args.proba, ARRAYS)])
    if problem:
        raise usage_error(problem)
    model = load_model(args.model)
    if args.devices is not None and "devices" in model.get_params(deep=False):
        model.set_params(devices=args.devices)
    X = read_data(args, columns=model_columns(args, model))
    if args.proba:
        if not hasattr(model, "predict_proba"):
            raise usage_error(f"--proba: {type(model).__name__} models have no memberships "
                              "(cmeans and gmm have)")
        write_array(args.proba, model.predict_proba(X))
    if not hasattr(model, "predict"):
        raise usage_error(f"{type(model).__name__} models cannot label new data")
    labels = model.predict(X)
    if args.labels:
        write_array(args.labels, labels)
    else:
        print("\n".join(map(str, labels)))
    return 0


def add_predict_arguments(p):
    p.add_argument("model", help="a model file written by 'fit --out'")
    p.add_argument("data", help="data file (same formats as fit)")
    p.add_argument("--labels", metavar="FILE", help="write labels (.npy or .csv); default: "
                   "print one per line")
    p.add_argument("--proba", metavar="FILE", help="also write memberships / "
                   "responsibilities (c-means, gmm)")
    add_data_arguments(p)
    p.add_argument("--devices", help='devices to run on ("all", "cpu", "gpu", names)')
