"""Many fits in one process: the per-process state (programs, kernels, plans,
queues) is made once, and a fit's device buffers and pools go with it, so
the resident memory stays flat."""
import numpy as np

import oclclust as oc


def _rss_mib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024


def test_resident_memory_stays_flat_over_many_fits(devices):
    X = np.random.default_rng(0).standard_normal((2000, 4)).astype(np.float32)
    makes = [lambda: oc.KMeans(4, n_init=1, random_state=0, devices=devices),
             lambda: oc.KMeans(4, n_init=2, random_state=0, devices=devices),
             lambda: oc.FuzzyCMeans(3, random_state=0, devices=devices),
             lambda: oc.GaussianMixture(3, covariance_type="diag", random_state=0,
                                        devices=devices),
             lambda: oc.EnsembleKMeans(3, n_models=2, random_state=0, devices=devices)]

    def fits(count):
        for i in range(count):
            est = makes[i % len(makes)]().fit(X)
            est.predict(X)
    fits(30)          # every kernel built, the allocators warm
    before = _rss_mib()
    fits(75)
    grown = _rss_mib() - before
    assert grown < 8, f"resident memory grew {grown:.1f} MiB over 75 fits"
