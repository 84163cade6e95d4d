#!/usr/bin/env python3
"""GaussianMixture's data-driven starts on Dask workers: what an init costs
and what travels between the client and the workers.

    python bench/dask_gmm_init.py [--workers 2] [--n 400000] [--d 8] [--k 16] \
        [--blocks 8] [--inits random kmeans k-means++] [--platform NAME]

A LocalCluster of --workers worker processes; the rows (blobs) are made on
the workers in --blocks blocks.  Each init is fitted with max_iter=1 (the
start and one EM pass); reported: the fit's wall time (the median of
--repeat fits after one that builds the kernels) and the largest object
the client sent with a task and received from a gather (bytes pickled).
"""
import argparse
import statistics
import sys
import time

import numpy as np

from _common import import_oclclust


def rows(n, d, k, blocks):
    import dask.array as da
    centres = np.random.RandomState(0).uniform(-20, 20, size=(k, d))
    x = da.random.RandomState(0).normal(size=(n, d), chunks=(-(-n // blocks), d))
    return x + da.from_array(centres)[da.arange(n, chunks=x.chunks[0]) % k]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--n", type=int, default=400_000)
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--inits", nargs="+", default=["random", "kmeans", "k-means++"])
    ap.add_argument("--platform", default=None, help="OpenCL platform name (default: any)")
    args = ap.parse_args()
    oc = import_oclclust()
    import cloudpickle
    from distributed import Client, LocalCluster
    devices = None if args.platform is None else [
        p for p in oc.list_devices() if p.platform == args.platform][:1]
    with LocalCluster(n_workers=args.workers, threads_per_worker=1,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        X = rows(args.n, args.d, args.k, args.blocks).persist()
        most = {"sent": 0, "received": 0}
        submit, gather_remote = client.submit, client._gather_remote

        def submitting(fn, *a, **kw):
            size = len(cloudpickle.dumps((a, {k: v for k, v in kw.items() if k != "workers"})))
            most["sent"] = max(most["sent"], size)
            return submit(fn, *a, **kw)

        async def gathering(*a, **kw):
            response = await gather_remote(*a, **kw)
            for value in response.get("data", {}).values():
                most["received"] = max(most["received"], len(cloudpickle.dumps(value)))
            return response
        client.submit, client._gather_remote = submitting, gathering
        print(f"{args.workers} workers, {args.n} x {args.d} rows in {args.blocks} blocks, "
              f"K={args.k}; rows' bytes {args.n * args.d * 8}")
        for init in args.inits:
            times = []
            for _ in range(args.repeat + 1):
                start = time.perf_counter()
                oc.GaussianMixture(args.k, init_params=init, max_iter=1, random_state=0,
                                   covariance_type="diag", devices=devices).fit(X)
                times.append(time.perf_counter() - start)
            print(f"{init:>12}: fit {statistics.median(times[1:]):.3f} s; largest sent "
                  f"{most['sent']} B, received {most['received']} B", flush=True)
            most.update(sent=0, received=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
