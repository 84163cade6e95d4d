"""scikit-learn's column contract on every estimator: a fit records the
names of X's columns (``feature_names_in_``, runtime/columns.py), a later
partial_fit and every method that takes rows of a fitted model check them,
before any work.  RecordsKernels (cluster/_base.py) wraps the methods.
"""
import functools

from ..runtime.columns import check_feature_names, feature_names, fit_feature_names


def _rows_argument(args, kwargs):
    return args[0] if args else kwargs.get("X")


def records_columns(fit):
    """*fit* (an estimator's fit or partial_fit) that keeps scikit-learn's
    column contract (runtime.columns): a fit records the names of X's
    columns in ``feature_names_in_`` (or removes it); a partial_fit after
    the first checks them against the model's first, before any work."""
    continues = fit.__name__ == "partial_fit"

    @functools.wraps(fit)
    def recorded(self, *args, **kwargs):
        X = _rows_argument(args, kwargs)
        if continues and hasattr(self, "n_features_in_"):
            check_feature_names(self, X)
            return fit(self, *args, **kwargs)
        names = feature_names(X)
        fitted = fit(self, *args, **kwargs)
        fit_feature_names(self, names)
        return fitted
    return recorded


# the methods that take rows of a fitted model
TAKE_ROWS = ("predict", "transform", "score", "predict_proba", "score_samples")


def checks_columns(method):
    """*method* (one of TAKE_ROWS) that first checks X's column names against
    the fit's (runtime.columns.check_feature_names); not fitted, it says so
    itself."""
    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        if hasattr(self, "n_features_in_"):
            check_feature_names(self, _rows_argument(args, kwargs))
        return method(self, *args, **kwargs)
    return checked
