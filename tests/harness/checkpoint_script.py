"""Run by tests/faults/test_checkpoint_faults.py in a subprocess: a fit
with a checkpoint that is killed (SIGKILL, by the process itself: no
Python cleanup runs) once it has written KILL_AFTER checkpoints, or with
--torn in the middle of writing that one (half its bytes in the temporary
file, before the rename).

    python checkpoint_script.py ESTIMATOR PATH KILL_AFTER [--torn]

The estimators and data are this module's (the test imports them), on
the platform $OCLCLUST_TEST_PLATFORM.
"""
import argparse
import io
import os
import signal
import sys
from pathlib import Path

import oclclust as oc
from oclclust.cluster import checkpoint

# beside this script (CI runs with PYTHONSAFEPATH: its folder is not on sys.path)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import split_free_models as sf  # noqa: E402

K = 3
# name -> make(devices, **kw): small fits of several iterations (written every one)
ESTIMATORS = {
    "KMeans": lambda devices, **kw: oc.KMeans(K, n_init=1, max_iter=6, tol=0, random_state=0,
                                              devices=devices, **kw),
    "MiniBatchKMeans": lambda devices, **kw: oc.MiniBatchKMeans(
        K, batch_size=256, max_iter=2, random_state=0, devices=devices, **kw),
    "EnsembleKMeans": lambda devices, **kw: oc.EnsembleKMeans(
        K, n_models=3, max_iter=6, tol=0, random_state=0, devices=devices, **kw),
    "FuzzyCMeans": lambda devices, **kw: oc.FuzzyCMeans(K, max_iter=6, tol=0, random_state=0,
                                                        devices=devices, **kw),
    "GaussianMixture": lambda devices, **kw: oc.GaussianMixture(
        K, n_init=2, max_iter=4, tol=0, random_state=0, devices=devices, **kw),
}


def data():
    return sf.data("float64")


def kill():
    os.kill(os.getpid(), signal.SIGKILL)


def dying_after(n, torn):
    """Checkpoint writes that end the process at the *n*-th: after it, or
    (torn) halfway through its temporary file."""
    real_write, real_atomic, writes = checkpoint.Checkpoint.write, checkpoint.write_atomically, []

    def torn_atomic(path, write):
        whole = io.BytesIO()
        write(whole)

        def half(fh):
            fh.write(whole.getvalue()[:len(whole.getvalue()) // 2])
            fh.flush()
            os.fsync(fh.fileno())
            kill()
        real_atomic(path, half)

    def write(self, state):
        writes.append(1)
        if torn and len(writes) == n:
            checkpoint.write_atomically = torn_atomic
        real_write(self, state)
        if len(writes) == n:
            kill()
    checkpoint.Checkpoint.write = write


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("estimator")
    ap.add_argument("path")
    ap.add_argument("kill_after", type=int)
    ap.add_argument("--torn", action="store_true")
    args = ap.parse_args()
    platform = os.environ["OCLCLUST_TEST_PLATFORM"]
    devices = sf.one_device([p for p in oc.list_devices() if p.platform == platform])
    dying_after(args.kill_after, args.torn)
    ESTIMATORS[args.estimator](devices, checkpoint=args.path).fit(data())
    return 0   # not reached: the fit writes more checkpoints than KILL_AFTER


if __name__ == "__main__":
    sys.exit(main())
