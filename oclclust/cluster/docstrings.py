"""The estimators' shared numpydoc entries, written once.

Every estimator class is completed as it is made (_base.RecordsKernels calls
``document``): the parameters its docstring's Parameters section leaves out
that every estimator shares (``devices``, ``dtype``, ``comm``, ...) are
added from SHARED_PARAMETERS, ``kernels_`` and ``n_features_in_`` to its
Attributes, and its standard methods (fit, predict, ...) that carry no
Parameters section get theirs from their signature (PARAMETERS) and their
Returns from METHODS; a method's own text stays, as its summary.  The
docstring test (tests/test_docstrings.py) checks the result.
"""
import inspect
import re

SHARED_PARAMETERS = {
    "max_iter": """max_iter : int
    The most iterations (EM or centre updates) a run makes.""",
    "tol": """tol : float
    Convergence tolerance, scikit-learn's: on the centres' shift relative
    to the data's mean variance (k-family), on the lower bound's change
    (GaussianMixture).""",
    "verbose": """verbose : int, default=0
    1: a progress bar on a terminal (the ``progress`` extra) and a line a
    run; every iteration is logged on the ``oclclust`` logger and kept in
    ``history_``.""",
    "random_state": """random_state : int, RandomState instance or None, default=None
    The random stream of the seeding (and of the mini-batches); an int
    makes fits repeatable, with scikit-learn's draws for the same value.""",
    "devices": """devices : str, DeviceProfile, pyopencl Device, list of them or DeviceManager, \
default=None
    Where the work runs: "all", "gpu", "cpu" or platform / device name
    substrings (comma-separated), profiles from
    :func:`oclclust.list_devices`, or a :class:`oclclust.DeviceManager`
    to control the split of the rows.  None: ``$OCLCLUST_DEVICES``, else
    "all" (:doc:`/guide/devices`).""",
    "dtype": """dtype : {None, "float32", "float64"} or numpy dtype, default=None
    The precision the fit computes in: None keeps float32 rows float32 and
    computes anything else in float64 where the devices have double
    precision (:doc:`/guide/precision`).""",
    "comm": """comm : mpi4py communicator, default=None
    Fit across MPI ranks: each rank passes its own rows, every rank ends
    with the model one process fits on all ranks' rows, ``labels_`` are
    the rank's own (:doc:`/guide/mpi`).""",
    "precision": """precision : {"float32", "tf32", "bf16"}, default="float32"
    The distance products' precision on NVIDIA tensor cores
    (:doc:`/guide/precision`); elsewhere, and in the passes with no
    tensor-core form, every mode runs as "float32", the same model bit
    for bit.""",
    "oversampling_factor": """oversampling_factor : float, default=0.5
    ``init="k-means||"``: the candidates drawn a round, times n_clusters.""",
    "init_max_iter": """init_max_iter : int or None, default=None
    ``init="k-means||"``: its rounds (None: 5).""",
    "checkpoint": """checkpoint : str, path or None, default=None
    Where the fit keeps its state (written atomically, every
    ``checkpoint_every``); a fit started with a checkpoint there that
    matches its data and parameters resumes from it and ends at the
    uninterrupted fit's model, bit for bit (:doc:`/guide/checkpoints`).""",
    "checkpoint_every": """checkpoint_every : int, float or str, default=1
    How often the checkpoint is written: an int counts iterations (EM
    iterations, mini-batch steps), a float or a string such as "30s",
    "5min", "1h" seconds.""",
    "spherical": """spherical : bool, default=False
    Compare rows by cosine (faiss' option): the rows are scaled to unit
    length (a copy; a row of norm 0 stays 0) and the centres are the
    renormalised means; predict, score and transform normalise their rows
    too.""",
}

SHARED_ATTRIBUTES = {
    "n_features_in_": """n_features_in_ : int
    Number of features seen during fit.""",
    "feature_names_in_": """feature_names_in_ : ndarray of shape (n_features,)
    Names of the features seen during fit, where X had string column names
    (a pandas DataFrame, say); rows given later must have the same.""",
    "kernels_": """kernels_ : list of dict
    The OpenCL kernels the fit ran, a record per kernel and device
    (``python -m oclclust explain`` prints a saved model's); under Dask,
    the client's only.""",
}

# the standard methods' parameters, by name
PARAMETERS = {
    "X": """X : array-like of shape (n_samples, n_features)
    The rows: a numpy array (any float or integer dtype, C or Fortran
    order, a memmap), a pyopencl array, and where the estimator takes them
    a scipy.sparse matrix, a dask array (:doc:`/guide/dask`) or, with
    ``metric="precomputed"``, the (n_samples, n_samples) distances.""",
    "y": """y : Ignored
    Not used, present for API consistency by convention.""",
    "sample_weight": """sample_weight : array-like of shape (n_samples,), default=None
    The weight of each row; None: every row weighs 1.""",
    "n_samples": """n_samples : int, default=1
    The number of samples to draw.""",
}

_LABELS = """labels : ndarray of shape (n_samples,)
    Each row's cluster (a dask array for a dask array X)."""
# name: (summary where the method has no text of its own, Returns)
METHODS = {
    "fit": ("Fit the model to the rows X.", """self : object
    The fitted estimator."""),
    "partial_fit": ("Update the model with one chunk of rows X.", """self : object
    The updated estimator."""),
    "predict": ("The nearest cluster of each row of X.", _LABELS),
    "fit_predict": ("Fit the model to X and give each row's cluster (``labels_``).",
                    _LABELS),
    "transform": ("Each row's distance to each cluster centre.",
                  """distances : ndarray of shape (n_samples, n_clusters)
    The Euclidean distances (a dask array for a dask array X)."""),
    "score": ("The score of X under the model (higher is better).", """score : float
    The score its summary describes (a dask array X: the blocks' scores,
    each made on its worker, added)."""),
    "predict_proba": ("Each row's membership in each cluster.",
                      """proba : ndarray of shape (n_samples, n_clusters)
    The memberships or posterior probabilities; each row sums to 1 (a dask
    array for a dask array X)."""),
    "score_samples": ("Each row's log-likelihood under the model.",
                      """log_prob : ndarray of shape (n_samples,)
    The log of the probability density at each row."""),
    "bic": ("Bayesian information criterion of the model on X (lower is better).",
            """bic : float
    -2 log L + P log N, of P free parameters."""),
    "aic": ("Akaike information criterion of the model on X (lower is better).",
            """aic : float
    -2 log L + 2 P, of P free parameters."""),
    "mdl": ("Rissanen's minimum description length of the model on X (lower is better).",
            """mdl : float
    -log L + P/2 log(N D), of P free parameters."""),
    "sample": ("Random samples from the fitted mixture.",
               """X : ndarray of shape (n_samples, n_features)
    The samples.
y : ndarray of shape (n_samples,)
    Each sample's component."""),
}

HEADER = re.compile(r"^(\w[\w ]*)\n-{3,}\n", re.M)


def sections(doc):
    """{section title: its body} of a cleaned numpydoc docstring."""
    found = list(HEADER.finditer(doc))
    return {m.group(1): doc[m.end():found[i + 1].start() if i + 1 < len(found) else len(doc)]
            for i, m in enumerate(found)}


def entry_names(body):
    """The names an Attributes or Parameters section documents ("a, b : t" gives both)."""
    names = []
    for line in body.splitlines():
        if line and not line[0].isspace():
            names += [n.strip() for n in line.split(" : ")[0].split(",") if n.strip()]
    return names


def _with_entries(doc, title, entries):
    """*doc* with *entries* (numpydoc entries) appended to its section *title*
    (made, before See Also / Examples / Notes, where it has none)."""
    if not entries:
        return doc
    text = "\n".join(entries)
    found = list(HEADER.finditer(doc))
    own = [i for i, m in enumerate(found) if m.group(1) == title]
    if own:
        i = own[0]
        end = found[i + 1].start() if i + 1 < len(found) else len(doc)
        return doc[:end].rstrip("\n") + "\n" + text + "\n\n" + doc[end:].lstrip("\n")
    later = [m for m in found if m.group(1) in ("Methods", "See Also", "Notes", "References",
                                                 "Examples")]
    at = later[0].start() if later else len(doc)
    head = doc[:at].rstrip("\n")
    return f"{head}\n\n{title}\n{'-' * len(title)}\n{text}\n\n" + doc[at:].lstrip("\n")


def document_method(function):
    """*function* (a standard method) with its Parameters and Returns, where
    its docstring has none."""
    summary, returns = METHODS[function.__name__]
    doc = inspect.cleandoc(function.__doc__ or summary)
    have = sections(doc)
    if "Parameters" not in have:
        params = [p for p in inspect.signature(function).parameters if p != "self"]
        doc = _with_entries(doc, "Parameters", [PARAMETERS[p] for p in params
                                                if p in PARAMETERS])
    if "Returns" not in have:
        doc = _with_entries(doc, "Returns", [returns])
    function.__doc__ = doc
    return function


def document(cls):
    """Completes *cls*'s docstring and its standard methods' (module docstring)."""
    for name in METHODS:
        function = vars(cls).get(name)
        if inspect.isfunction(function):
            document_method(function)
    if not cls.__doc__ or "Parameters" not in sections(inspect.cleandoc(cls.__doc__)):
        return cls   # a base class, not an estimator users make
    doc = inspect.cleandoc(cls.__doc__)
    have = sections(doc)
    documented = entry_names(have["Parameters"])
    params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    doc = _with_entries(doc, "Parameters", [SHARED_PARAMETERS[p] for p in params
                                            if p in SHARED_PARAMETERS and p not in documented])
    attributes = entry_names(sections(doc).get("Attributes", ""))
    doc = _with_entries(doc, "Attributes", [text for name, text in SHARED_ATTRIBUTES.items()
                                            if name not in attributes])
    cls.__doc__ = doc
    return cls
