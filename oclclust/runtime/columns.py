"""scikit-learn's column contract: the names of the columns a model was fit on.

A fit on a table with string column names (a pandas DataFrame, an object of
the dataframe interchange protocol, or any array-like with ``columns``) sets
``feature_names_in_``; a fit on anything else removes it.  Rows given later
(predict, transform, score, partial_fit) must carry the same names in the
same order: other or reordered names raise scikit-learn's ValueError, names
on only one side give its UserWarning.  The messages are scikit-learn's
(``sklearn.utils.validation._check_feature_names``), so code that catches
them keeps working.
"""
import warnings

import numpy as np

from .warning_site import user_stacklevel


def feature_names(X):
    """The string column names of *X* as an object array, else None (numeric
    or no names).  Mixed string and other names raise TypeError, as in
    scikit-learn."""
    names = None
    columns = getattr(X, "columns", None)
    if columns is not None and hasattr(X, "__array__") and not isinstance(X, np.ndarray):
        names = np.asarray(list(columns), dtype=object)
    elif hasattr(X, "__dataframe__"):   # the dataframe interchange protocol (polars, ...)
        names = np.asarray(list(X.__dataframe__().column_names()), dtype=object)
    if names is None or len(names) == 0:
        return None
    types = sorted(t.__qualname__ for t in {type(name) for name in names})
    if len(types) > 1 and "str" in types:
        raise TypeError("Feature names are only supported if all input features have string "
                        f"names, but your input has {types} as feature name / column name "
                        "types. If you want feature names to be stored and validated, you "
                        "must convert them all to strings, by using X.columns = "
                        "X.columns.astype(str) for example. Otherwise you can remove feature "
                        "/ column names from your input data, or convert them all to a "
                        "non-string data type.")
    return names if types == ["str"] else None


def fit_feature_names(estimator, names):
    """Record the names a fit saw (*names*: feature_names of its X)."""
    if names is None:
        estimator.__dict__.pop("feature_names_in_", None)
    else:
        estimator.feature_names_in_ = names


def check_feature_names(estimator, X):
    """Rows *X* given to a fitted *estimator*: ValueError if their column
    names differ from the fit's, a UserWarning if only one side has names."""
    fitted = getattr(estimator, "feature_names_in_", None)
    given = feature_names(X)
    name = type(estimator).__name__
    if fitted is None and given is None:
        return
    if given is not None and fitted is None:
        warnings.warn(f"X has feature names, but {name} was fitted without feature names",
                      UserWarning, stacklevel=user_stacklevel())
        return
    if given is None:
        warnings.warn(f"X does not have valid feature names, but {name} was fitted with "
                      "feature names", UserWarning, stacklevel=user_stacklevel())
        return
    if len(fitted) == len(given) and np.all(fitted == given):
        return
    message = "The feature names should match those that were passed during fit.\n"
    unseen = sorted(set(given) - set(fitted))
    missing = sorted(set(fitted) - set(given))

    def listed(names, at_most=5):
        shown = "".join(f"- {n}\n" for n in names[:at_most])
        return shown + ("- ...\n" if len(names) > at_most else "")
    if unseen:
        message += "Feature names unseen at fit time:\n" + listed(unseen)
    if missing:
        message += "Feature names seen at fit time, yet now missing:\n" + listed(missing)
    if not unseen and not missing:
        message += "Feature names must be in the same order as they were in fit.\n"
    raise ValueError(message)


class NamedRows:
    """Rows with named columns, for callers without pandas (the command line
    reading a CSV with a header): a fit on them records the names, a predict
    checks them.  numpy reads the rows through ``__array__``."""

    def __init__(self, values, columns):
        self.values, self.columns = np.asarray(values), list(columns)
        if self.values.ndim != 2 or self.values.shape[1] != len(self.columns):
            raise ValueError(f"NamedRows: {len(self.columns)} column names for rows of shape "
                             f"{self.values.shape}")

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype, copy=False)

    def __len__(self):
        return len(self.values)

    @property
    def shape(self):
        return self.values.shape
