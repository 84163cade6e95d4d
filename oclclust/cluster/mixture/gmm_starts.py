"""GaussianMixture's starts: its initial model from init_params, as
scikit-learn's _initialize_parameters makes it.

The data-driven starts leave their responsibilities on the devices and take
their M pass there: one-hot rows made from k-means' labels (a KMeans fit of
these same rows); "random" draws them on the rows' host, a block of rows at
a time (on a Dask worker from the random stream moved to its rows: no
per-row value travels).  The one-hot starts on k rows ("random_from_data",
"k-means++") need no responsibilities: each component's statistics are its
row's (mdl.row_stats).
"""
import numpy as np

from .mdl import (Model, cholesky_of_precisions, covariances_of, m_step, raw_second_moment,
                  row_stats)
from ..inits import kmeans_plusplus
from ..registry import estimator_class
from ...runtime.validation import skip_uniform

# "random" init: responsibilities drawn and uploaded this many values at a time
RANDOM_BLOCK = 1 << 20


class GmmStarts:
    """GaussianMixture's initial model (a base of the estimator: its
    parameters, ``_ranks``, ``_data_mean``, ``_eps`` and the fit's devices
    as the fit sets them)."""

    def _initial_model(self, gm, data, given, rng, host_w):
        full, k = self._full, self.n_components
        w0, m0, p0 = given
        if w0 is None or m0 is None or p0 is None:
            # the rows' mean (the same bits however they are split), the
            # shift of the first statistics
            center = np.broadcast_to(self._data_mean, (k, data.d))
            xtx = None
            if self.covariance_type == "tied" and self.init_params in ("k-means++",
                                                                        "random_from_data"):
                # one-hot on k rows is no partition: scikit-learn's tied
                # covariance counts every row's x x' (X'X, all in component 0)
                gm.resp_in_first()
                xtx = raw_second_moment(gm.resp_stats(center)[:1], center[:1])
            stats_about = self._initial_stats(gm, data, rng, host_w)
            # means first (about the data mean), then the scatter about them
            stats = stats_about(center)
            nk = stats[:, 0] + 10 * self._eps
            means = (stats[:, 1:1 + data.d] + stats[:, :1] * center) / nk[:, None]
            stats = stats_about(means)
            extra = None if xtx is None else xtx - raw_second_moment(stats, means)
            est = m_step(stats, means, self.reg_covar, full, self._eps, self._float32,
                         self._pooled, extra)
            est.weights = (stats[:, 0] + 10 * self._eps) / self._ranks.n
            w0 = est.weights if w0 is None else w0
            m0 = est.means if m0 is None else m0
            if p0 is None:
                return Model(w0, m0, est.covariances, est.prec_chol)
        prec_chol = cholesky_of_precisions(p0, full)
        return Model(w0, m0, covariances_of(prec_chol, full), prec_chol)

    def _initial_stats(self, gm, data, rng, host_w):
        """The initial responsibilities' M statistics about given means, as
        a function of them: of one-hot rows on k rows ("random_from_data",
        "k-means++"), each component's row alone (mdl.row_stats: no pass
        over n x k responsibilities, two M passes that took 2 x 30 ms of a
        1M x 128 x 1024 fit's 0.28 s on an H200); else the M pass of the
        responsibilities _initial_resp leaves on the devices."""
        if self.init_params in ("random_from_data", "k-means++"):
            rows = self._ranks.rows(data, self._initial_rows(data, rng, host_w))
            return lambda about: row_stats(rows, about, self._full)
        self._initial_resp(gm, data, rng, host_w)
        return gm.resp_stats

    def _initial_resp(self, gm, data, rng, host_w):
        """The initial responsibilities ("random", "kmeans") of this rank's
        rows, left on the devices (gm: the fit's GmmShards); drawn from all
        ranks' rows, as one process would.  "random" draws on a host (a
        block of rows at a time, where the rows are); "kmeans" makes one-hot
        rows of its labels on the devices."""
        k, ranks = self.n_components, self._ranks
        if self.init_params == "random":   # all ranks' draws, in row order
            def skip(stream, rows):
                skip_uniform(stream, rows * k, RANDOM_BLOCK)
            skip(rng, ranks.offset)
            gm.resp_from_stream(rng, lambda own, rows: _uniform_resp(own, rows, k), skip,
                                max(1, RANDOM_BLOCK // k))
            skip(rng, ranks.n - ranks.offset - data.n)
        elif self.init_params == "kmeans":   # a fit of all ranks' rows, on these devices
            kmeans = estimator_class("KMeans")(n_clusters=k, n_init=1, random_state=rng,
                                               devices=self.devices, dtype=data.dtype,
                                               comm=self.comm)
            lloyd = kmeans._fit_leaving_labels(data, host_w, rng, ranks)
            # its labels, still on the devices (as its labels_, this rank's rows)
            gm.resp_from_lloyd(lloyd)

    def _initial_rows(self, data, rng, host_w):
        """The k rows (global indices) of the one-hot inits: drawn
        ("random_from_data", scikit-learn's draw) or k-means++'s (on the
        devices, unit weights)."""
        k, ranks = self.n_components, self._ranks
        if self.init_params == "random_from_data":
            return rng.choice(ranks.n, size=k, replace=False)
        return np.asarray(kmeans_plusplus(data, k, rng, host_w, ranks=ranks))


def _uniform_resp(rng, rows, k):
    """The "random" init's next *rows* responsibilities from *rng*
    (scikit-learn's: uniform draws, each row normalised)."""
    resp = rng.uniform(size=(rows, k))
    resp /= resp.sum(axis=1)[:, None]
    return resp
