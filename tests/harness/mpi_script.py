"""Run by tests/parallel/test_mpi.py under ``mpiexec -n R``: one SPMD case per call.

    mpiexec -n 3 python tests/harness/mpi_script.py CASE OUTDIR [--estimator KMeans]
                                            [--init k-means++] [--weighted]

``--covariance-type``: GaussianMixture's.  ``--spherical``: the estimator's
spherical=True (KMeans, EnsembleKMeans); ``--sparse``: each rank's rows as
a scipy CSR matrix (KMeans's sparse fit).
``--init``: the estimator's initialisation (GaussianMixture's init_params;
without it, GaussianMixture starts from a whole given model); "repeated"
(KMeans, EnsembleKMeans): one iteration from given centres of which two are
equal, so a row fills the empty cluster and stays its centre.

Every rank writes OUTDIR/rank<r>.json: what it fitted, or the error it
raised (type and message), and the fit's seconds.  ``--plan PLAN.json``
runs a list of fit and mismatch cases in this one launch instead (each
entry: run_case's
keywords: case, estimator_name, init, weighted, dtype, covariance_type,
spherical, sparse, fault), entry i writing rank<r>_<i>.json:
the process's start, imports and kernels once for them all.  Cases:
fit (each rank fits its slice of one data set), mismatch (rank 1's shard
has a feature fewer), empty (rank 1 has no rows), fault (``--fault
ACTION@PHASE``, a plan entry's ``fault``: rank 1 fails as
rank_faults.Fault says, which its result records as "fired"; a rank that
dies writes it to OUTDIR/fault1.json), shards (each rank loads its slice
of three .npy files), split_free (every
estimator of split_free_models.py on rows shared in whole blocks of its
sums, parallel.shares.rank_rows: each rank pickles its models to
OUTDIR/split_free<r>.pkl), checkpoint (a KMeans fit with OUTDIR/fit.ckpt:
with ``--kill-after N`` rank 0 kills itself after its N-th write; without,
each rank resumes, fits again without a checkpoint and writes whether the
two agree, its writes and the iteration it resumed at), dbscan (every fit
of DBSCAN_FITS, each rank its rows; rank<r>.json lists what each fitted),
dbscan_mismatch / dbscan_nan / dbscan_eps / dbscan_empty (rank 1's rows
have a feature fewer, a NaN, rank 1 another eps, no rows), dbscan_metric
(every rank a metric the ranks' grid cannot cut), dbscan_fail_mid (rank 1
raises in its union-find, the others already in the next exchange): what
each rank raised, and how long it took.
"""
import argparse
import contextlib
import json
import os
import pickle
import signal
import sys
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

import oclclust as oc
from oclclust.io.shards import load_shard, shard_range
from oclclust.parallel.shares import rank_rows

# beside this script (CI runs with PYTHONSAFEPATH: its folder is not on sys.path)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import density_data  # noqa: E402
import split_free_models  # noqa: E402
from rank_faults import Fault  # noqa: E402

N, D, K = 601, 3, 5


def data(n=N, d=D, seed=0):
    rng = np.random.RandomState(seed)
    centres = rng.uniform(-10, 10, size=(K, d))
    X = centres[np.arange(n) % K] + rng.normal(scale=2.0, size=(n, d))
    w = rng.uniform(0.5, 2.0, size=n)
    return X, w


def estimator(name, devices, comm, init=None):
    """The estimator *name* as every case fits it (comm=None: one process)."""
    common = dict(devices=devices, comm=comm)
    if name == "GaussianMixture" and init is not None:   # a start drawn from the data
        return oc.GaussianMixture(n_components=K, init_params=init, tol=0, max_iter=8,
                                  random_state=0, **common)
    if isinstance(init, str) and init == "repeated":
        centres = data()[0][:K * 40:40]
        centres[1] = centres[0]
        if name == "EnsembleKMeans":
            centres = np.stack([centres] * 3)
        return estimator(name, devices, comm, centres).set_params(max_iter=1)
    init = "k-means++" if init is None else init
    if name == "KMeans":
        return oc.KMeans(n_clusters=K, init=init, n_init=1, random_state=0, tol=0,
                         max_iter=50, **common)
    if name == "FuzzyCMeans":
        return oc.FuzzyCMeans(n_clusters=K, init=init, random_state=0, tol=0, max_iter=15,
                              **common)
    if name == "GaussianMixture":   # a whole given start
        return oc.GaussianMixture(n_components=K, weights_init=np.full(K, 1.0 / K),
                                  means_init=data()[0][:K * 40:40],
                                  precisions_init=np.repeat(np.eye(D)[None], K, axis=0),
                                  tol=0, max_iter=8, random_state=0, **common)
    if name == "EnsembleKMeans":
        return oc.EnsembleKMeans(n_clusters=K, n_models=3, init=init, random_state=0,
                                 tol=0, max_iter=30, **common)
    raise ValueError(name)


def model_of(est):
    for attr in ("models_", "means_", "cluster_centers_"):
        if hasattr(est, attr):
            return getattr(est, attr)
    raise AttributeError("no model attribute")


SHARED_STEPS = "shared steps"   # split_free's: {estimator: its shared update's steps}


def split_free(comm, platform, dtype, out):
    """Each estimator of split_free_models fitted on this rank's whole blocks."""
    sf = split_free_models
    devices = sf.one_device([p for p in oc.list_devices() if p.platform == platform])
    X, models, shared = sf.data(dtype), {}, {}
    from oclclust.cluster.kmeans.lloyd_shards import LloydShards
    from oclclust.cluster.mixture.cmeans_shards import CMeansShards

    def counted(step):   # the ranks' update shared on their devices
        def count(self, *args, **kwargs):
            shared[name] = shared.get(name, 0) + 1
            return step(self, *args, **kwargs)
        return count
    for shards in (LloydShards, CMeansShards):
        shards._shared_step = counted(shards._shared_step)
    for name in sf.MPI_ESTIMATORS:
        est = sf.ESTIMATORS[name](devices, comm=comm)
        start, stop = rank_rows(len(X), comm.Get_size(), comm.Get_rank(),
                                est.fit_block_rows(X.shape[1], X.dtype))
        try:
            models[name] = (start, sf.model(est.fit(X[start:stop])))
        except Exception as exc:   # noqa: BLE001 -- the test reports it
            models[name] = (start, f"{type(exc).__name__}: {exc}")
    models[SHARED_STEPS] = shared
    (out / f"split_free{comm.Get_rank()}.pkl").write_bytes(pickle.dumps(models))


def checkpointed(comm, devices, out, kill_after):
    """Case checkpoint (see the module)."""
    from oclclust.cluster import checkpoint
    X, _ = data()
    start, stop = shard_range(len(X), comm)
    real, writes = checkpoint.Checkpoint.write, []

    def write(self, state):
        writes.append(state["iteration"])
        real(self, state)
        if len(writes) == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
    checkpoint.Checkpoint.write = write
    km = estimator("KMeans", devices, comm).set_params(checkpoint=str(out / "fit.ckpt"))
    resumed_at = checkpoint.read(out / "fit.ckpt")[1]["iteration"] \
        if (out / "fit.ckpt").exists() and kill_after is None else None
    km.fit(X[start:stop])
    checkpoint.Checkpoint.write = real
    ref = estimator("KMeans", devices, comm).fit(X[start:stop])
    same = all(np.array_equal(getattr(km, a), getattr(ref, a))
               for a in ("cluster_centers_", "labels_", "inertia_", "n_iter_"))
    (out / f"rank{comm.Get_rank()}.json").write_text(json.dumps(dict(
        same=same, writes=len(writes), resumed_at=resumed_at, n_iter=int(km.n_iter_))))


# DBSCAN across ranks: (density_data's set, metric, weighted, split of the rows,
# each rank's devices: the platform's, or its first device's two halves)
DBSCAN_FITS = [("crossing", "euclidean", False, "even", "one"),
               ("crossing", "manhattan", True, "even", "one"),
               ("crossing_dense", "chebyshev", False, "uneven", "one"),
               ("borders", "euclidean", False, "even", "one"),
               ("borders", "euclidean", True, "sorted", "one"),
               ("crossing", "euclidean", False, "sorted", "one"),
               ("one_cell", "euclidean", False, "even", "one"),
               ("crossing", "euclidean", True, "even", "halves"),
               ("borders", "chebyshev", False, "uneven", "halves")]


def dbscan_rows(name, weighted, split, on=None):
    """(rows, weights or None, eps, min_samples) of a DBSCAN_FITS entry: the
    set's rows, sorted along the first feature for split "sorted" (each
    rank's rows then near its slab)."""
    make, eps, min_samples = density_data.DATA[name]
    X = make()
    if split == "sorted":
        X = X[np.argsort(X[:, 0], kind="stable")]
    w = np.random.default_rng(9).integers(-1, 4, len(X)).astype(float) if weighted else None
    return X, w, eps, min_samples


def dbscan_range(n, comm, split):
    """This rank's rows: shard_range's, or "uneven": the first rank 7 rows,
    the last half of them."""
    if split != "uneven":
        return shard_range(n, comm)
    size, rank = comm.Get_size(), comm.Get_rank()
    cuts = np.concatenate([[0, 7], np.linspace(7, n // 2, size - 1)[1:].astype(int), [n]]) \
        if size > 1 else np.array([0, n])
    return int(cuts[rank]), int(cuts[rank + 1])


def dbscan_fits(comm, devices, out):
    """Case dbscan (see the module); each fit says the rows its rank held
    (its slab's with their halo)."""
    from oclclust.cluster.density.dbscan import ranks
    held, made = [], ranks.HeldSlab.__init__

    def holding(self, *args):
        made(self, *args)
        held.append(self.grid.n)
    ranks.HeldSlab.__init__ = holding
    fits = []
    profile = oc.select_devices(devices)[0]
    halves = oc.sub_devices(profile, [1, 1])
    try:
        halves[0].cl_device()
    except ValueError:   # a GPU (NVIDIA's): its "halves" fits are None, skipped
        if profile.type == "cpu":
            raise
        halves = None
    for name, metric, weighted, split, on in DBSCAN_FITS:
        if on == "halves" and halves is None:
            fits.append(None)
            continue
        X, w, eps, min_samples = dbscan_rows(name, weighted, split)
        start, stop = dbscan_range(len(X), comm, split)
        est = oc.DBSCAN(eps, min_samples=min_samples, metric=metric,
                        devices=devices if on == "one" else halves,
                        comm=comm).fit(X[start:stop],
                                       sample_weight=None if w is None else w[start:stop])
        fits.append(dict(start=start, labels=est.labels_.tolist(),
                         core=est.core_sample_indices_.tolist(),
                         components=est.components_.tolist(), devices=est.devices_,
                         held=held[-1]))
    (out / f"rank{comm.Get_rank()}.json").write_text(json.dumps(fits))


def dbscan_refused(comm, devices, out, case):
    """The dbscan_* cases of bad input (see the module)."""
    X, _, eps, min_samples = dbscan_rows("crossing", False, "even")
    start, stop = shard_range(len(X), comm)
    X, metric = X[start:stop].copy(), "euclidean"
    if comm.Get_rank() == 1:
        if case == "dbscan_mismatch":
            X = X[:, :-1]
        if case == "dbscan_nan":
            X[3, 0] = np.nan
        if case == "dbscan_eps":
            eps *= 2
        if case == "dbscan_empty":
            X = X[:0]
    if case == "dbscan_metric":
        metric = "cosine"
    if case == "dbscan_fail_mid" and comm.Get_rank() == 1:
        from oclclust.passes.dbscan_grid import GridSlab

        def roots(self, core):
            raise RuntimeError("injected failure in rank 1's union-find")
        GridSlab.roots = roots
    began = time.perf_counter()
    try:
        oc.DBSCAN(eps, min_samples=min_samples, metric=metric, devices=devices,
                  comm=comm).fit(X)
        result = {}
    except Exception as exc:   # noqa: BLE001 -- the test reads what each rank raised
        result = {"error": type(exc).__name__, "message": str(exc),
                  "value_error": isinstance(exc, ValueError)}
    result["seconds"] = time.perf_counter() - began
    (out / f"rank{comm.Get_rank()}.json").write_text(json.dumps(result))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("out")
    ap.add_argument("--init")
    ap.add_argument("--weighted", action="store_true")
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--estimator", default="KMeans")
    ap.add_argument("--covariance-type")   # GaussianMixture's, when not its default
    ap.add_argument("--plan")
    ap.add_argument("--spherical", action="store_true")
    ap.add_argument("--sparse", action="store_true")
    ap.add_argument("--kill-after", type=int)
    ap.add_argument("--fault", help="ACTION@PHASE of rank 1 (rank_faults)")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    out = Path(args.out)
    devices = os.environ.get("OCLCLUST_TEST_PLATFORM") or None
    if args.case == "split_free":
        split_free(comm, devices, args.dtype, out)
        return 0
    if args.case == "checkpoint":
        checkpointed(comm, devices, out, args.kill_after)
        return 0
    if args.case == "dbscan":
        dbscan_fits(comm, devices, out)
        return 0
    if args.case.startswith("dbscan_"):
        dbscan_refused(comm, devices, out, args.case)
        return 0
    if args.case == "shards":
        X = load_shard(sorted(str(p) for p in out.glob("part*.npy")), comm)
        np.save(out / f"shard{comm.Get_rank()}.npy", X)
        return 0
    if args.plan:
        for i, entry in enumerate(json.loads(Path(args.plan).read_text())):
            run_case(comm, devices, out / f"rank{comm.Get_rank()}_{i}.json", **entry)
        return 0
    run_case(comm, devices, out / f"rank{comm.Get_rank()}.json", args.case, args.estimator,
             args.init, args.weighted, args.dtype, args.covariance_type, args.spherical,
             args.sparse, args.fault)
    return 0


def run_case(comm, devices, path, case, estimator_name="KMeans", init=None, weighted=False,
             dtype="float64", covariance_type=None, spherical=False, sparse=False,
             fault=None):
    """One case's fit on this rank; what it fitted or raised to *path*."""
    rank = comm.Get_rank()
    X, w = data()
    start, stop = shard_range(len(X), comm)
    X, w = X[start:stop].astype(dtype), w[start:stop]
    if case == "mismatch" and rank == 1:
        X = X[:, :-1]
    if case == "empty" and rank == 1:
        X, w = X[:0], w[:0]
    km = estimator(estimator_name, devices, comm, init)
    if covariance_type:
        km.set_params(covariance_type=covariance_type)
    if spherical:
        km.set_params(spherical=True)
    if sparse:
        from scipy.sparse import csr_matrix
        X = csr_matrix(X)
    failing = Fault(*fault.split("@"), estimator_name, path.parent) \
        if case == "fault" and rank == 1 else contextlib.nullcontext()
    began = time.monotonic()
    try:
        with failing:
            if weighted:
                km.fit(X, sample_weight=w)
            else:
                km.fit(X)
    except BaseException as exc:   # noqa: BLE001 -- the test reads what each rank raised
        result = {"error": type(exc).__name__, "message": str(exc),
                  "value_error": isinstance(exc, ValueError)}
    else:
        result = {"model": np.asarray(model_of(km)).tolist(), "start": start,
                  "labels": km.predict(X).tolist() if estimator_name == "GaussianMixture"
                  else km.labels_.tolist()}
        if estimator_name == "GaussianMixture":
            result.update(covariances=km.covariances_.tolist())
        if estimator_name == "KMeans":
            result.update(centers=km.cluster_centers_.tolist(), inertia=km.inertia_,
                          n_iter=km.n_iter_)
    result["seconds"] = time.monotonic() - began   # a fit's time on this rank
    if isinstance(failing, Fault):
        result["fired"] = failing.fired
    path.write_text(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
