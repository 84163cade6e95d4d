"""Run by tests/test_mpi.py under ``mpiexec -n R``: one SPMD case per call.

    mpiexec -n 3 python tests/mpi_script.py CASE OUTDIR [--init k-means++] [--weighted]

Every rank writes OUTDIR/rank<r>.json: what it fitted, or the error it
raised (type and message).  Cases:
fit (each rank fits its slice of one data set), mismatch (rank 1's shard
has a feature fewer), empty (rank 1 has no rows), fail_mid (rank 1 raises
in its third pass), shards (each rank loads its slice of three .npy files).
"""
import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

import oclclust as oc
from oclclust import lloyd
from oclclust.mpi import load_shard, shard_range

N, D, K = 601, 3, 5


def data(n=N, d=D, seed=0):
    rng = np.random.RandomState(seed)
    centres = rng.uniform(-10, 10, size=(K, d))
    X = centres[np.arange(n) % K] + rng.normal(scale=2.0, size=(n, d))
    w = rng.uniform(0.5, 2.0, size=n)
    return X, w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("out")
    ap.add_argument("--init", default="k-means++")
    ap.add_argument("--weighted", action="store_true")
    ap.add_argument("--dtype", default="float64")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    out = Path(args.out)
    devices = os.environ.get("OCLCLUST_TEST_PLATFORM") or None
    X, w = data()
    start, stop = shard_range(len(X), comm)
    X, w = X[start:stop].astype(args.dtype), w[start:stop]
    if args.case == "shards":
        X = load_shard(sorted(str(p) for p in out.glob("part*.npy")), comm)
        np.save(out / f"shard{rank}.npy", X)
        return 0
    if args.case == "mismatch" and rank == 1:
        X = X[:, :-1]
    if args.case == "empty" and rank == 1:
        X, w = X[:0], w[:0]
    if args.case == "fail_mid" and rank == 1:
        original, calls = lloyd.ShardedLloyd.run, []

        def failing(self, centers, update=True):
            calls.append(1)
            if len(calls) == 3:
                raise RuntimeError("injected failure on rank 1")
            return original(self, centers, update)
        lloyd.ShardedLloyd.run = failing
    km = oc.KMeans(n_clusters=K, init=args.init, n_init=1, random_state=0, tol=0,
                   max_iter=50, devices=devices, comm=comm)
    try:
        km.fit(X, sample_weight=w if args.weighted else None)
    except Exception as exc:   # noqa: BLE001 -- the test reads what each rank raised
        result = {"error": type(exc).__name__, "message": str(exc)}
    else:
        result = {"centers": km.cluster_centers_.tolist(), "inertia": km.inertia_,
                  "n_iter": km.n_iter_, "labels": km.labels_.tolist(), "start": start}
    (out / f"rank{rank}.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
