"""Input handling shared by every bigkern estimator: one validation, one numpy-or-dask path.

* numpy, lists and pandas go through scikit-learn's own
  :func:`~sklearn.utils.validation.validate_data`, so errors (NaN/inf, sparse,
  complex, empty, wrong number of features, renamed or reordered DataFrame
  columns) read exactly like scikit-learn's and ``feature_names_in_`` comes
  from DataFrame columns;
* an :class:`xarray.DataArray` with dims ``(sample, feature)`` gives its
  ``feature`` coordinate as the feature names; at predict time its features
  are matched by name (reordered when needed);
* a dask array stays lazy: only its shape and dtype are checked (its rows are
  checked where they are read);
* NaN/±inf, where an estimator refuses them, raise scikit-learn's "Input X
  contains NaN" as a :class:`~bigkern.errors.DataQualityError` (a ``ValueError``)
  that also counts them and names the first row and column;
* an :class:`xarray.Dataset` is refused with a hint to stack it first.

:func:`map_rows` is the one prediction path: eager on numpy, one lazy task
per row chunk on dask.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from sklearn.utils.validation import check_array, validate_data

from bigkern.errors import DataQualityError
from bigkern.reduce.passes import unwrap_samples

__all__ = ["fit_input", "map_rows", "predict_input", "refuse_nonfinite"]

_FLOATS = (np.float64, np.float32)


def _refuse_dataset(X: Any) -> None:
    if isinstance(X, xr.Dataset):
        raise TypeError(
            "X is an xarray.Dataset of scene variables; estimators take samples "
            "(sample, feature): use bigkern.stack_samples(ds, features).as_dataarray() "
            "(or predict whole scenes with bigkern.predict_scenes)")


def _dataarray(X: xr.DataArray) -> tuple[Any, list[str] | None]:
    """A DataArray's data, (sample, feature), and its feature names: as every pass unwraps."""
    X, _, _, names = unwrap_samples(X, None, None, None)
    return X, None if names is None else list(names)


def _check_dask(arr: da.Array, what: str = "X") -> da.Array:
    if arr.ndim != 2:
        raise ValueError(f"Expected 2D array, got {arr.ndim}D array instead: {what} must be "
                         f"(sample, feature); reshape a single feature with x[:, None]")
    if arr.dtype.kind == "c":
        raise ValueError("Complex data not supported")
    if arr.dtype.kind not in "iufb":
        raise ValueError(f"{what} must hold numbers; got dtype {arr.dtype}")
    if arr.shape[1] == 0:
        raise ValueError(f"0 feature(s) (shape={arr.shape}) while a minimum of 1 is required.")
    return arr if len(arr.chunks[1]) == 1 else arr.rechunk({1: -1})


def fit_input(est: Any, X: Any, y: Any = None, *, allow_nan: bool,
              y_numeric: bool = False, min_samples: int = 1) -> tuple[Any, Any]:
    """Validate ``X`` (and ``y``) for ``fit``; set ``n_features_in_`` and ``feature_names_in_``.

    Returns ``(X, y)``: numpy float arrays, or dask arrays for dask input
    (``y`` as given when it is dask). ``allow_nan`` lets rows with NaN/±inf
    through (estimators that leave such rows out and count them).
    """
    _refuse_dataset(X)
    names = None
    if isinstance(X, xr.DataArray):
        X, names = _dataarray(X)
    if isinstance(y, xr.DataArray):
        y = y.data
    if isinstance(X, da.Array) or isinstance(y, da.Array):
        arr = _check_dask(da.asarray(X))
        if y is not None and not isinstance(y, da.Array):
            y = _column(np.asarray(y))
        elif y is not None and y.ndim == 2 and y.shape[1] == 1:
            _warn_column()
            y = y[:, 0]
        for what, rows in (("X", arr.shape[0]), ("y", None if y is None else y.shape[0])):
            if rows is not None and math.isnan(rows):
                raise ValueError(
                    f"{what} is a dask array of unknown chunk sizes (as boolean indexing "
                    f"leaves it): its number of rows is not known; call "
                    f"{what}.compute_chunk_sizes() first, or keep every row and pass a mask")
        if y is not None and y.shape[0] != arr.shape[0]:
            raise ValueError(f"X has {arr.shape[0]} rows but y has {y.shape[0]} values")
        est.n_features_in_ = int(arr.shape[1])
        _set_names(est, names)
        return arr, y
    if y is not None:
        y = _checked_y(X, y, allow_nan)
    # rows with NaN or ±inf are left out and counted by the estimators that allow them;
    # the others refuse them below, naming the first one
    if names is not None:  # a numpy-backed DataArray: numbers checked like any array
        arr = check_array(np.asarray(X), dtype=_FLOATS, ensure_all_finite=False,
                          ensure_min_samples=min_samples, estimator=est)
        est.n_features_in_ = int(arr.shape[1])
        _set_names(est, names)
        if y is not None:
            y = _column(np.asarray(y))
    elif y is None:
        arr = validate_data(est, X, reset=True, dtype=_FLOATS, ensure_all_finite=False,
                            ensure_min_samples=min_samples)
    else:
        arr, y = validate_data(est, X, y, reset=True, dtype=_FLOATS, ensure_all_finite=False,
                               ensure_min_samples=min_samples, y_numeric=y_numeric)
    if not allow_nan:
        refuse_nonfinite(arr, "X in fit")
    return arr, y


def _checked_y(X: Any, y: Any, allow_nan: bool) -> Any:
    """``y`` of the length of ``X`` and, unless ``allow_nan``, finite (naming the first bad row)."""
    n_x, n_y = _length(X), _length(y)
    if n_x is not None and n_y is not None and n_x != n_y:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: X has "
                         f"{n_x} rows but y has {n_y} values")
    if not allow_nan:
        values = np.asarray(y)
        if values.dtype.kind in "fc":
            refuse_nonfinite(values, "y")
    return y


def _length(a: Any) -> int | None:
    """Number of rows of an array-like (None for a scalar or anything without a length)."""
    shape = getattr(a, "shape", None)
    if shape is not None:
        return int(shape[0]) if len(shape) else None
    try:
        return len(a)
    except TypeError:
        return None


def refuse_nonfinite(arr: np.ndarray, what: str) -> None:
    """Raise scikit-learn's "Input X contains NaN" error, counting and naming the first bad value.

    Parameters
    ----------
    arr : ndarray
        Numbers (1-D or 2-D).
    what : str
        ``"X in fit"``, ``"X in predict"`` or ``"y"``: the start of the message.

    Raises
    ------
    DataQualityError
        (a ``ValueError``) when ``arr`` holds NaN or ±inf.
    """
    bad = ~np.isfinite(arr)
    if not bad.any():
        return
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    where = f"row {first[0]}" + (f", column {first[1]}" if len(first) > 1 else "")
    kind = "NaN" if np.isnan(arr[bad]).any() else "infinity"
    raise DataQualityError(
        f"Input {what.split()[0]} contains {kind}: {what} has {int(bad.sum())} non-finite "
        f"value(s) (NaN or ±inf); first at {where} ({arr[first].item()!r})")


def _column(y: np.ndarray) -> np.ndarray:
    from sklearn.utils.validation import column_or_1d

    return column_or_1d(y, warn=True)


def _warn_column() -> None:
    import warnings

    from sklearn.exceptions import DataConversionWarning

    warnings.warn("A column-vector y was passed when a 1d array was expected. Please change "
                  "the shape of y to (n_samples, ), for example using ravel().",
                  DataConversionWarning, stacklevel=4)


def _set_names(est: Any, names: list[str] | None) -> None:
    if names is not None:
        est.feature_names_in_ = np.asarray(names, dtype=object)
    elif hasattr(est, "feature_names_in_"):
        del est.feature_names_in_


def predict_input(est: Any, X: Any, *, allow_nan: bool = True) -> Any:
    """Validate ``X`` for ``predict``/``decision_function``/``transform`` of a fitted ``est``.

    Returns a float numpy array or a lazy dask array with ``est``'s features
    in the fitted order. ``allow_nan`` lets rows with NaN/±inf through (their
    outputs are NaN); otherwise they raise scikit-learn's error.
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(est)
    _refuse_dataset(X)
    expected = getattr(est, "feature_names_in_", None)
    if isinstance(X, xr.DataArray):
        _, names = _dataarray(X)
        if names is not None and expected is not None:
            missing = [f for f in expected if f not in names]
            if missing:
                raise ValueError(f"X lacks feature(s) {missing} that the model was fitted on "
                                 f"({list(expected)})")
            if list(names) != list(expected):
                X = X.sel(feature=list(expected))
        X, _ = _dataarray(X)
        if not isinstance(X, da.Array):
            arr = _checked_width(est, check_array(np.asarray(X), dtype=_FLOATS,
                                                  ensure_all_finite=False))
            if not allow_nan:
                refuse_nonfinite(arr, "X in predict")
            return arr
    if isinstance(X, da.Array):
        return _checked_width(est, _check_dask(X))
    arr = validate_data(est, X, reset=False, dtype=_FLOATS, ensure_all_finite=False)
    if not allow_nan:
        refuse_nonfinite(arr, "X in predict")
    return arr


def _checked_width(est: Any, arr: Any) -> Any:
    if arr.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {arr.shape[1]} features, but {type(est).__name__} is "
                         f"expecting {est.n_features_in_} features as input.")
    return arr


def map_rows(func: Callable[[np.ndarray], np.ndarray], arr: Any, *,
             dtype: Any = np.float64, trailing: tuple[int, ...] = ()) -> Any:
    """``func`` on the rows of ``arr``: eagerly on numpy, one lazy task per row chunk on dask.

    ``trailing`` is the shape of ``func``'s output per row (``()`` for one value).
    """
    if isinstance(arr, da.Array):
        if trailing:
            return arr.map_blocks(func, dtype=dtype, chunks=(arr.chunks[0], *[(t,) for t in
                                                                                trailing]))
        return arr.map_blocks(func, drop_axis=1, dtype=dtype)
    return func(arr)
