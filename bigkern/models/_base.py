"""Shared parts of bigkern's estimators: the base (input handling, tags, the dask path), the
regressor and classifier bases, and the classifiers' kernel expansion and persistence."""

from __future__ import annotations

import functools
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

from bigkern import config
from bigkern.errors import DataQualityError, LabelError
from bigkern.kernels import KernelExpansion
from bigkern.models._input import fit_input, map_rows, predict_input, refuse_nonfinite
from bigkern.reduce.passes import per_feature_counts

__all__ = ["INTEGER_LABEL_SPAN", "BigkernEstimator", "BigkernRegressor", "ClassesMixin",
           "class_code_dtype", "fitted_expansion", "integer_classes", "predicted_classes"]


class BigkernEstimator(BaseEstimator):
    """The base of bigkern's estimators: scikit-learn validation, tags, the dask path.

    Class attributes declare what an estimator takes; ``__sklearn_tags__``
    reports them to scikit-learn:

    ``_allow_nan``
        Rows with NaN/±inf are left out of the fit and counted (binned
        models); otherwise they are refused with scikit-learn's error.
    """

    _allow_nan = False

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self._allow_nan
        return tags

    def _fit_input(self, X: Any, y: Any = None, **kwargs: Any) -> tuple[Any, Any]:
        if y is None and self.__sklearn_tags__().target_tags.required:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             f"is None.")
        return fit_input(self, X, y, allow_nan=self._allow_nan, **kwargs)

    def _predict_input(self, X: Any) -> Any:
        return predict_input(self, X, allow_nan=self._allow_nan)


class BigkernRegressor(RegressorMixin, BigkernEstimator):
    """The base of bigkern's regressors: ``fit`` on finite numbers, one predict path.

    ``fit`` validates with :meth:`_fit_xy` (at least two samples; NaN/±inf refused
    naming the first one; a column-vector ``y`` raveled with scikit-learn's
    ``DataConversionWarning``); ``predict`` evaluates a per-row function with
    :meth:`_predict_rows`: eagerly on numpy, one lazy task per row chunk on dask,
    where a row with a non-finite feature raises when its chunk is computed.
    """

    def _fit_xy(self, X: Any, y: Any, *, lazy: bool = False) -> tuple[Any, Any]:
        """Validated ``X`` (n, d) and float ``y`` (n,); in memory unless ``lazy``.

        ``lazy`` keeps dask input lazy (its rows are checked where they are read);
        otherwise it is computed, in one pass for ``X`` and ``y``, and checked.
        """
        X, y = self._fit_input(X, y, y_numeric=True)
        if not lazy and (isinstance(X, da.Array) or isinstance(y, da.Array)):
            from bigkern.cluster.compute import compute  # watched on any client

            X, y = (np.asarray(a) for a in compute(X, y, label="reading the samples"))
            refuse_nonfinite(X, "X in fit")
            refuse_nonfinite(y, "y")
        if not isinstance(X, da.Array):  # float32 data are fitted in double too; C order (a
            X = np.ascontiguousarray(X, dtype=np.float64)  # DataFrame's is F) as once reloaded
        if not isinstance(y, da.Array):
            y = np.asarray(y, dtype=np.float64)
        n = X.shape[0]
        if n < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 samples to fit; got "
                             f"n_samples={n}")
        return X, y

    def _predict_rows(self, X: Any, func: Any) -> Any:
        """``func`` (float rows in the fitted feature order → one value each) on ``X``'s rows."""
        arr = self._predict_input(X)
        if isinstance(arr, da.Array):
            return map_rows(functools.partial(_finite_rows, func=func,
                                              who=type(self).__name__), arr)
        return map_rows(func, arr)


def _first_row(bad: np.ndarray, block_info: Any) -> int:
    """The global row number of the first true entry of ``bad`` (a block's, on dask)."""
    first = int(np.flatnonzero(bad)[0])
    if block_info is not None:
        first += block_info[0]["array-location"][0][0]
    return first


def _finite_rows(block: np.ndarray, func: Any, who: str, block_info: Any = None) -> np.ndarray:
    """``func(block)``, raising (with the global row number) when a row is not finite."""
    bad = ~np.isfinite(block).all(axis=1)
    if bad.any():
        first = _first_row(bad, block_info)
        raise DataQualityError(
            f"Input X contains NaN or infinity: {int(bad.sum())} row(s) of X in predict (first: "
            f"row {first}) have a non-finite feature; {who} cannot predict them: drop them first")
    return func(block)


class ClassesMixin(ClassifierMixin):
    """Classes of any dtype, mapped to codes once at fit; ``predict`` never invents a class.

    ``fit`` stores ``classes_`` (sorted, as :func:`numpy.unique` gives them) and
    works on integer codes ``0 … k−1``. Two classes give one decision value per
    row: ``predict`` returns ``classes_[1]`` where it is > 0 and ``classes_[0]``
    elsewhere. k > 2 classes give k one-vs-rest decision values per row (column
    j: ``classes_[j]`` against the rest) and ``predict`` returns the class of the
    largest. A row that cannot be predicted (a non-finite feature: its decision
    values are NaN) is **an error** in ``predict`` — no class, not even 0, is ever
    made up for it; ``decision_function`` gives NaN there, and
    :func:`bigkern.predict_scenes` writes its "no prediction" flag.

    ``_binary_only = True`` (a class attribute) keeps a model to two classes: more
    are refused with scikit-learn's "Only binary classification is supported".
    """

    _binary_only = True

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = not self._binary_only
        return tags

    def _fit_classes(self, y: Any) -> np.ndarray:
        """``y`` as codes ``0 … k−1`` (int8 up to 127 classes); sets ``classes_``.

        Raises :class:`~bigkern.errors.LabelError` for one class, for more than two
        in a binary-only model, and for targets that are not one class per row.
        """
        from sklearn.utils.multiclass import check_classification_targets, type_of_target

        found = integer_classes(y)
        # check_classification_targets' own call: binary and multiclass targets pass its
        # check, which is then spared; any other kind gets its errors and warnings
        kind = (type_of_target(y, input_name="y") if found is None  # 1-D integers: by count
                else "binary" if len(found[0]) <= 2 else "multiclass")
        if kind not in ("binary", "multiclass"):
            check_classification_targets(y)  # "unknown" and "continuous" raise here
            raise LabelError(f"y must hold one class per row; the type of the target is "
                             f"{kind}: {type(self).__name__} takes one label per row")
        if kind == "multiclass" and self._binary_only:
            raise LabelError(
                f"Only binary classification is supported. The type of the target is {kind}: "
                f"{type(self).__name__} takes two classes (mask out the others, e.g. "
                f"unlabelled pixels)")
        classes, codes = np.unique(y, return_inverse=True) if found is None else found
        if len(classes) == 1:  # "binary" above means one or two classes
            raise LabelError(
                f"y has one class only ({classes.tolist()}): {type(self).__name__} needs "
                f"samples of two classes at least")
        self.classes_ = classes
        return codes.reshape(np.shape(y)).astype(class_code_dtype(len(classes)))

    def predict(self, X: Any) -> Any:
        """The class of each row; rows with a non-finite feature raise (see the class docs)."""
        dec = self.decision_function(X)
        classes = self.classes_
        if isinstance(dec, da.Array):
            return dec.map_blocks(_classes_of, classes=classes, dtype=classes.dtype,
                                  drop_axis=1 if dec.ndim == 2 else None,
                                  meta=np.empty((0,), dtype=classes.dtype))
        return _classes_of(dec, classes)


def class_code_dtype(n_classes: int) -> np.dtype:
    """The smallest signed integer dtype of the codes ``0 … n_classes−1``.

    Examples
    --------
    >>> class_code_dtype(2), class_code_dtype(300)
    (dtype('int8'), dtype('int16'))
    """
    return np.min_scalar_type(-max(int(n_classes), 2))


#: Widest range of integer labels that :func:`integer_classes` counts in a table.
INTEGER_LABEL_SPAN = 1 << 16


def integer_classes(y: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """``np.unique(y, return_inverse=True)`` of a 1-D integer numpy ``y``, by a table of its
    range instead of a sort; None for any other ``y`` or a range over
    :data:`INTEGER_LABEL_SPAN` values.

    The classes (sorted, in ``y``'s dtype) and the codes are those of
    :func:`numpy.unique`, in a fraction of its time: a fit's labels are few integers.

    Examples
    --------
    >>> import numpy as np
    >>> classes, codes = integer_classes(np.array([1, -1, 1, 0, -1], dtype=np.int8))
    >>> classes.tolist(), codes.tolist()
    ([-1, 0, 1], [2, 0, 2, 1, 0])
    >>> integer_classes(np.array([0.5, 1.0])) is None
    True
    """
    if not (isinstance(y, np.ndarray) and y.ndim == 1 and y.size
            and (y.dtype.kind == "i" or (y.dtype.kind == "u" and y.dtype.itemsize < 8))):
        return None
    lo, hi = int(y.min()), int(y.max())
    if hi - lo >= INTEGER_LABEL_SPAN:
        return None
    offsets = y.astype(np.intp) - lo
    present = np.bincount(offsets, minlength=hi - lo + 1) > 0
    classes = (np.flatnonzero(present) + lo).astype(y.dtype)
    code_of_offset = np.cumsum(present, dtype=np.intp) - 1
    return classes, code_of_offset[offsets]


def _classes_of(dec: np.ndarray, classes: np.ndarray, block_info: Any = None) -> np.ndarray:
    """The class of each row of decision values: (n,) by sign, (n, k) by the largest."""
    bad = np.isnan(dec) if dec.ndim == 1 else np.isnan(dec).any(axis=1)
    if bad.any():
        first = _first_row(bad, block_info)
        raise DataQualityError(
            f"{int(bad.sum())} row(s) of X (first: row {first}) have a non-finite feature and "
            f"cannot be predicted: no class is made up for them; drop them first, or use "
            f"decision_function (NaN there) or predict_scenes (a no-prediction flag)")
    return predicted_classes(dec, classes)


def predicted_classes(decision: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """The class of each row of finite decision values: (n,) by sign, (n, k) by the largest.

    The one rule of ``predict``; a class map (:mod:`bigkern.jobs.class_outputs`) applies
    it to the pixels it can predict.

    Examples
    --------
    >>> import numpy as np
    >>> predicted_classes(np.array([[0.1, 0.5, -1.0], [2.0, 0.0, 1.0]]), np.array([4, 5, 6]))
    array([5, 4])
    >>> predicted_classes(np.array([-0.5, 0.5, 0.0]), np.array(["clear", "cloud"])).tolist()
    ['clear', 'cloud', 'clear']
    """
    if decision.ndim == 2:
        return classes[np.argmax(decision, axis=1)]
    return classes[(decision > 0).astype(np.intp)]


class _KernelClassifier(ClassesMixin, BigkernEstimator):
    """Shared predict/score/persistence of the kernel-expansion classifiers."""

    _bins_based = False

    # -- prediction ----------------------------------------------------------------------------
    def decision_rows(self, X: np.ndarray) -> np.ndarray:
        """Decision values of a float array of rows in the fitted feature order, unvalidated.

        What :func:`bigkern.predict_scenes` evaluates in each task; NaN for rows
        with a non-finite feature.
        """
        return self.expansion_.decision(X)

    @property
    def n_basis_(self) -> int:
        """Basis functions of the fitted expansion (its prediction cost per row)."""
        return self.expansion_.n_basis

    def decision_function(self, X: Any) -> Any:
        """Decision values; NaN for rows with a non-finite feature.

        Two classes: one value per row, > 0 → ``classes_[1]``. k classes: (n, k), column
        j the one-vs-rest value of ``classes_[j]``. numpy in → numpy out; dask in → lazy
        dask out (one task per row chunk).
        """
        arr = self._predict_input(X)  # raises NotFittedError before fit
        k = self.expansion_.n_outputs
        return map_rows(self.decision_rows, arr, trailing=() if k == 1 else (k,))

    # -- persistence ---------------------------------------------------------------------------
    def to_dataset(self) -> xr.Dataset:
        """The fitted model as a small :class:`xarray.Dataset` (for zarr or netCDF): the one
        layout of :mod:`bigkern.models.persistence.expansion_files`."""
        from bigkern.models.persistence.expansion_files import expansion_to_dataset

        return expansion_to_dataset(self)


def fitted_expansion(model: Any, centers: Any, coef: Any, intercept: Any, omega: float,
                     offset: Any = None, scale: Any = None, clip: float | None = None
                     ) -> KernelExpansion:
    """The ``expansion_`` of a fitted model, in its kernel (``model.kernel``, else the
    Gaussian) at width ``omega``: float32 kernel blocks for a classifier (the sign is what
    it predicts), float64 for a regressor."""
    from sklearn.base import is_classifier

    return KernelExpansion.from_parts(centers, coef, intercept, float(omega), offset,
                                      scale, clip=clip,
                                      dtype="float32" if is_classifier(model) else "float64",
                                      kernel=getattr(model, "kernel", "gaussian"))


def _check_nonfinite(counts: dict[str, Any], names: Any = None) -> None:
    """Raise when too many present rows have a non-finite feature, naming the features.

    ``counts`` are ``n_``-prefixed row counts (bins attrs); ``names`` the
    features, in column order, to say which of them the rows were lost to.
    """
    bad = int(counts.get("n_nonfinite", 0))
    present = bad + int(counts.get("n_valid", 0))
    limit = float(config.get("max_nonfinite_fraction"))
    if present and bad / present > limit:
        by_feature = _nonfinite_summary(counts, names)
        raise DataQualityError(
            f"{bad} of {present} present rows ({bad / present:.1%}) have a non-finite feature "
            f"(NaN or ±inf, or a masked fill or out-of-range value){by_feature}, over the "
            f"limit bigkern.max_nonfinite_fraction={limit:g}"
        )


def _nonfinite_summary(counts: dict[str, Any], names: Any) -> str:
    """``" (NDAI: 12, SD: 3)"``: the features with non-finite rows, most first ("" if none)."""
    if names is None:
        return ""
    per = {k: v for k, v in per_feature_counts(counts, list(names)).items() if v}
    if not per:
        return ""
    parts = sorted(per.items(), key=lambda kv: -kv[1])
    return " (" + ", ".join(f"{k}: {v}" for k, v in parts) + ")"
