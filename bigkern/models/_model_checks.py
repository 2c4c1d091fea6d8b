"""What a loaded model's own attributes must be before an estimator is rebuilt from them.

A model file's digest (:mod:`bigkern.models.persistence.model_digest`) proves that the file is
the one bigkern wrote, not that what was written is usable: a model saved with
``omega = 1e-300`` is intact and still predicts nonsense. :func:`check_model_dataset`
checks every value the estimators' ``*_from_dataset`` functions would otherwise
trust, and raises :class:`~bigkern.errors.StoreError` naming the model and the
attribute:

- ``omega`` (the kernel width): in its domain in the parameter table
  (:data:`bigkern.models.parameters.PARAMETERS`), the one ``fit`` accepts;
- ``support_radius``: finite and positive; ``taper_power``: an integer;
- ``intercept``, ``grand_mean``: finite numbers;
- ``classes`` / ``classes_json``: two distinct labels, both numbers (finite) or
  both strings;
- ``params_json`` / ``fitted_json``: JSON objects;
- the arrays a prediction uses (``basis``, ``coef``, ``offset``, ``scale``,
  ``X_fit``, ``dual_coef``, ``centers`` …): numeric and finite, ``scale``
  positive.
"""

from __future__ import annotations

import json
import math

import numpy as np
import xarray as xr

from bigkern.errors import StoreError
from bigkern.models.parameters import PARAMETERS

__all__ = ["check_model_dataset"]
_FINITE_ATTRS = ("intercept", "grand_mean")
_FINITE_ARRAYS = ("basis", "coef", "intercept", "offset", "scale", "X_fit", "y_fit",
                  "dual_coef", "centers", "eigenvectors", "eigenvalues", "row_means",
                  "bin_counts", "calibration_coef", "calibration_intercept",
                  "calibration_knots", "calibration_levels", "calibration_starts")


def _number(ds: xr.Dataset, key: str, where: str) -> float:
    value = ds.attrs[key]
    try:
        arr = np.asarray(value)
        if arr.size != 1 or arr.dtype.kind not in "iuf":
            raise TypeError
        return float(arr.reshape(()))
    except (TypeError, ValueError):
        raise StoreError(f"model {where}: attribute {key!r} is {value!r}, not a number") from None


def _check_omega(ds: xr.Dataset, where: str) -> None:
    omega = _number(ds, "omega", where)
    widths = PARAMETERS["omega"].domain
    if omega not in widths:
        raise StoreError(
            f"model {where}: attribute 'omega' (the kernel width) is {omega!r}; it must be a "
            f"number of the {widths}")


def _check_classes(ds: xr.Dataset, where: str) -> None:
    for key in ("classes", "classes_json"):
        if key not in ds.attrs:
            continue
        raw = ds.attrs[key]
        try:
            labels = json.loads(raw) if key == "classes_json" else np.asarray(raw).tolist()
        except (TypeError, ValueError):
            raise StoreError(f"model {where}: attribute {key!r} is not readable JSON") from None
        if not isinstance(labels, list) or len(labels) < 2:
            raise StoreError(f"model {where}: attribute {key!r} is {labels!r}; a classifier "
                             f"has two class labels or more")
        strings = all(isinstance(c, str) for c in labels)
        numbers = all(isinstance(c, int | float) and not isinstance(c, bool)
                      and math.isfinite(c) for c in labels)
        if not (strings or numbers):
            raise StoreError(f"model {where}: attribute {key!r} is {labels!r}; the class "
                             f"labels must all be finite numbers or all strings")
        if len(set(labels)) != len(labels):
            raise StoreError(f"model {where}: attribute {key!r} is {labels!r}; the class "
                             f"labels must differ")
        _check_outputs(ds, where, key, len(labels))


def _check_outputs(ds: xr.Dataset, where: str, key: str, n_classes: int) -> None:
    """A k-class model's coefficients have one column (dim ``output``) per class; a
    two-class model's have one column."""
    for name in ("coef", "dual_coef"):
        if name not in ds.variables:
            continue
        columns = ds.sizes["output"] if "output" in ds[name].dims else 1
        wanted = 1 if n_classes == 2 else n_classes
        if columns != wanted:
            raise StoreError(f"model {where}: attribute {key!r} names {n_classes} classes but "
                             f"variable {name!r} has {columns} column(s); {wanted} expected")


def _check_json(ds: xr.Dataset, where: str) -> None:
    for key in ("params_json", "fitted_json"):
        if key in ds.attrs:
            try:
                value = json.loads(str(ds.attrs[key]))
            except ValueError:
                value = None
            if not isinstance(value, dict):
                raise StoreError(f"model {where}: attribute {key!r} is not a JSON object")


def _check_arrays(ds: xr.Dataset, where: str) -> None:
    for name in _FINITE_ARRAYS:
        if name not in ds.variables:
            continue
        values = np.asarray(ds.variables[name].values)
        if values.dtype.kind not in "iuf":
            raise StoreError(f"model {where}: variable {name!r} has dtype {values.dtype}, "
                             f"not a number")
        if not np.isfinite(values).all():
            raise StoreError(f"model {where}: variable {name!r} holds "
                             f"{int(np.count_nonzero(~np.isfinite(values)))} non-finite values")
    if "scale" in ds.variables and not (np.asarray(ds["scale"].values) > 0).all():
        raise StoreError(f"model {where}: variable 'scale' (the feature scales) must be positive")


def check_model_dataset(ds: xr.Dataset, where: str) -> None:
    """Refuse a model dataset whose attributes or arrays no estimator can use.

    Parameters
    ----------
    ds : xarray.Dataset
        A model's dataset, as read (and digest-verified) from its file.
    where : str
        The model's path or URL, for messages.

    Raises
    ------
    StoreError
        Naming the model and the attribute or variable that is wrong, and why.
    """
    if not isinstance(ds.attrs.get("model"), str):
        raise StoreError(f"model {where}: attribute 'model' (the estimator's name) is "
                         f"{ds.attrs.get('model')!r}")
    _check_json(ds, where)
    if "omega" in ds.attrs:
        _check_omega(ds, where)
    for key in _FINITE_ATTRS:
        if key in ds.attrs and not math.isfinite(_number(ds, key, where)):
            raise StoreError(f"model {where}: attribute {key!r} is "
                             f"{_number(ds, key, where)!r}; it must be finite")
    if "support_radius" in ds.attrs:
        radius = _number(ds, "support_radius", where)
        if not (math.isfinite(radius) and radius > 0):
            raise StoreError(f"model {where}: attribute 'support_radius' is {radius!r}; it "
                             f"must be finite and positive")
    if "taper_power" in ds.attrs:
        power = _number(ds, "taper_power", where)
        if not (math.isfinite(power) and power == int(power)):
            raise StoreError(f"model {where}: attribute 'taper_power' is {power!r}; it must be "
                             f"an integer")
    _check_classes(ds, where)
    _check_arrays(ds, where)
