"""A small base for oclclust estimators: scikit-learn's contract.

With scikit-learn installed the estimators derive from its BaseEstimator and
mixins (so they pass check_estimator and work in pipelines); without it, a
minimal stand-in gives get_params/set_params and the same mixin methods.
"""
import inspect

try:
    from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
except ImportError:  # scikit-learn is optional
    class BaseEstimator:
        @classmethod
        def _get_param_names(cls):
            sig = inspect.signature(cls.__init__)
            return sorted(p.name for p in sig.parameters.values()
                          if p.name != "self" and p.kind != p.VAR_KEYWORD)

        def get_params(self, deep=True):
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            valid = self._get_param_names()
            for key, value in params.items():
                if key not in valid:
                    raise ValueError(f"Invalid parameter {key!r} for estimator {self}.")
                setattr(self, key, value)
            return self

        def __repr__(self):
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class ClusterMixin:
        def fit_predict(self, X, y=None, **kwargs):
            self.fit(X, **kwargs)
            return self.labels_

    class TransformerMixin:
        def fit_transform(self, X, y=None, **kwargs):
            return self.fit(X, **kwargs).transform(X)
