"""Where measured device weights start (DeviceData's calibration): a
fit's Calibration (its pass, and the rates its devices' profiles know), and
the rates this process has measured, kept for its next fit of the same
pass and shape: a grid search or a repeated fit times its devices once."""
import threading
from typing import Callable, Hashable, NamedTuple

_MEASURED = {}   # (calibration key, d, dtype, device key) -> rows per second
_LOCK = threading.Lock()


class Calibration(NamedTuple):
    """What measured weights time, and what the devices' profiles may
    already know (DeviceManager.scatter's *calibration*).

    pass_on(partition) sets the fit's pass up over a sample *partition*
    and returns a function of no arguments that runs it once;
    known_rate(profile, d) is a device's rows per second in that pass
    over rows of *d* features where its profile knows it, else None;
    *key* names the pass and its shape (an estimator's class and clusters)
    for the rates this process measures: None, they are not kept."""

    pass_on: Callable
    known_rate: Callable = lambda profile, d: None
    key: Hashable = None

    @classmethod
    def of(cls, calibration):
        """*calibration*, a bare pass function taken as one with no known rates."""
        return calibration if isinstance(calibration, cls) else cls(calibration)


def recalled_rate(calibration, profile, d, dtype):
    """*profile*'s rows per second in *calibration*'s pass over rows of *d*
    features in *dtype*: its profile's, else this process's last
    measurement, else None."""
    rate = calibration.known_rate(profile, d)
    if rate is None and calibration.key is not None:
        with _LOCK:
            rate = _MEASURED.get((calibration.key, d, str(dtype), profile.key))
    return rate


def remember_rates(calibration, profiles, rates, d, dtype):
    """Keep the measured *rates* (rows per second, one for each of *profiles*)
    of *calibration*'s pass for the next fit of its shape."""
    if calibration.key is None:
        return
    with _LOCK:
        for profile, rate in zip(profiles, rates):
            if rate > 0:
                _MEASURED[(calibration.key, d, str(dtype), profile.key)] = float(rate)


def forget_rates():
    """Forget every rate this process has measured (the next fits time
    their devices again)."""
    with _LOCK:
        _MEASURED.clear()
