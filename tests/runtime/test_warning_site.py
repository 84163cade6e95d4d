"""oclclust's warnings name the user's line that called into the package
(runtime/warning_site.py), however deep inside it they are raised: an
estimator's fit, its kernel recording and the fit's layers in between."""
import warnings

import numpy as np
import pytest

import oclclust as oc
from oclclust.runtime.warning_site import user_stacklevel

RNG_ROWS = np.random.RandomState(0).normal(size=(500, 3))
DUPLICATES = np.zeros((50, 2))
DUPLICATES[:10] += 1
NO_PATHS = np.full((6, 6), np.inf)
np.fill_diagonal(NO_PATHS, 0)
NO_PATHS[0, 1] = NO_PATHS[1, 0] = 1

CASES = {   # estimator, its rows, the warning's text
    "kmeans-duplicates": (lambda d: oc.KMeans(8, n_init=1, random_state=0, devices=d),
                          DUPLICATES, "distinct clusters"),
    "gmm-not-converged": (lambda d: oc.GaussianMixture(3, max_iter=1, random_state=0,
                                                       devices=d), RNG_ROWS, "did not converge"),
    "cmeans-not-converged": (lambda d: oc.FuzzyCMeans(3, max_iter=2, tol=1e-12, random_state=0,
                                                      devices=d), RNG_ROWS, "did not converge"),
    "hdbscan-infinite-edges": (lambda d: oc.HDBSCAN(min_cluster_size=2, metric="precomputed",
                                                    devices=d), NO_PATHS, "infinity"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_fits_warning_names_the_callers_line(devices, case):
    make, X, text = CASES[case]
    estimator = make(devices)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X)
    ours = [w for w in caught if text in str(w.message)]
    assert ours, [str(w.message) for w in caught]
    assert all(w.filename == __file__ for w in ours), [(w.filename, w.lineno) for w in ours]


def test_user_stacklevel_counts_the_frames_inside_the_package():
    """From a frame outside the package the warning names that frame."""
    assert user_stacklevel() == 1


def test_fuzzy_c_means_warns_only_when_it_stops_before_converging(devices):
    """ConvergenceWarning (scikit-learn's) at max_iter with the centres still
    moving more than tol allows; none for a fit that converged."""
    from sklearn.exceptions import ConvergenceWarning
    with pytest.warns(ConvergenceWarning, match="FuzzyCMeans did not converge in max_iter=2"):
        oc.FuzzyCMeans(3, max_iter=2, tol=1e-12, random_state=0, devices=devices).fit(RNG_ROWS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        converged = oc.FuzzyCMeans(3, random_state=0, devices=devices).fit(RNG_ROWS)
    assert converged.n_iter_ < converged.max_iter
