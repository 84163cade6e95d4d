"""Tables with named columns for the column-contract tests, without pandas:
an array-like with ``columns`` (pandas' DataFrame's shape of it) and one of
the dataframe interchange protocol (``__dataframe__``: polars, pyarrow)."""
import numpy as np


class Table:
    """Rows with named ``columns`` that numpy reads through ``__array__``."""

    def __init__(self, values, columns):
        self.values, self.columns = np.asarray(values), list(columns)

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)

    def __len__(self):
        return len(self.values)

    @property
    def shape(self):
        return self.values.shape


class _Interchange:
    def __init__(self, names):
        self.names = names

    def column_names(self):
        return iter(self.names)


class ProtocolTable(Table):
    """The same, its names given only by the dataframe interchange protocol."""

    def __init__(self, values, columns):
        super().__init__(values, columns)
        self._names = self.__dict__.pop("columns")

    def __dataframe__(self, nan_as_null=False, allow_copy=True):
        return _Interchange(self._names)
