"""The rates a device's profile may know for the fits' main passes: what
measured device weights take instead of timing a calibration pass
(parallel.device_data.Calibration; ``python bench/devices.py hetero``
prints them for a host's devices as devices.yaml lines).

A rate is work per second, the work of a row being the values it meets in
the pass (rows x clusters x features; a full-covariance GMM's rows meet
each component's d (d + 3) / 2 values: its mean and triangular factor), so
that one figure serves every shape roughly: the joint passes' own timings
correct the split once the fit runs.  0: not known (time the pass)."""
import dataclasses

from ..runtime.profiles import declare_terms, term

# the largest rate devices.yaml takes: 50x an H200's Lloyd pass (2e13 values
# a second at 40 TFLOP/s), and a number YAML reads as a float
MAX_RATE = 1e15


@declare_terms
@dataclasses.dataclass(frozen=True)
class PassRates:
    """lloyd: KMeans' (and EnsembleKMeans') Lloyd pass; cmeans: fuzzy
    c-means' updating pass; gmm: GaussianMixture's E+M pass; each in work
    per second (the module), 0 where not known."""
    lloyd: float = term("lloyd_rate", 0.0, MAX_RATE)
    cmeans: float = term("cmeans_rate", 0.0, MAX_RATE)
    gmm: float = term("gmm_rate", 0.0, MAX_RATE)


def known_rate(profile, pass_name, work_per_row):
    """Rows per second of *profile* in pass *pass_name* ("lloyd", "cmeans",
    "gmm") whose rows are *work_per_row* values each, or None where its
    profile does not know the rate."""
    rate = getattr(profile.terms(PassRates), pass_name)
    return rate / work_per_row if rate > 0 else None
