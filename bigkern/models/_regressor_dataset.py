"""Fitted Gaussian-basis regressors (OHT, RM) as small xarray Datasets, and back.

The layout follows the classifiers' (:meth:`bigkern.models._base._KernelClassifier.to_dataset`):
``basis (basis, feature)`` centers in standardized units, ``coef (basis)``,
``offset`` / ``scale (feature)``, and attrs ``model``, ``omega``, ``intercept``,
``params_json`` (constructor parameters) and ``bigkern_format``. Regressors add
``cv_score (width)`` and, in ``fitted_json``, the scalar summaries of the fit
(e.g. OHT's ``n_components_``, ``n_stable_``, ``sigma2_``; RM's ``ridge_``).
A loaded model predicts exactly as the saved one; the solver's full result
(``OHTRegressor.solution_``: every γ, threshold and coefficient) is not saved.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["regressor_from_dataset", "regressor_to_dataset"]

FORMAT = 1

#: fitted scalar attributes saved per estimator class, when present
FITTED_SCALARS: dict[str, tuple[str, ...]] = {
    "OHTRegressor": ("n_components_", "n_stable_", "sigma2_"),
    "LOOKernelRidge": ("ridge_",),
}
#: fitted array attributes saved as variables along ``basis`` (dtype int)
FITTED_BASIS_INDEX = ("basis_used_",)


def _param_value(v: Any) -> Any:
    """A JSON-able parameter value: scalars as they are, number sequences as float lists."""
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, np.integer | np.floating):
        return v.item()
    if isinstance(v, Sequence | np.ndarray):
        return [float(x) for x in np.asarray(v, dtype=np.float64).ravel()]
    raise TypeError(f"parameter value {v!r} cannot be saved with the model (not a number, "
                    f"string or sequence of numbers); pass an int seed for random_state")


def regressor_to_dataset(model: Any) -> xr.Dataset:
    """The fitted regressor as a Dataset (see the module docstring)."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model, "coef_")
    name = type(model).__name__
    params = {k: _param_value(v) for k, v in model.get_params().items()}
    widths = np.atleast_1d(np.asarray(model.widths, dtype=np.float64))
    scores = np.asarray(model.cv_scores_, dtype=np.float64)
    if scores.shape != widths.shape:  # a single width: no CV, one NaN score
        scores = np.full(widths.shape, np.nan)
    fitted = {k: _param_value(getattr(model, k)) for k in FITTED_SCALARS.get(name, ())
              if hasattr(model, k)}
    data: dict[str, Any] = {
        "basis": (("basis", "feature"), np.asarray(model.centers_, dtype=np.float64)),
        "coef": ("basis", np.asarray(model.coef_, dtype=np.float64)),
        "offset": ("feature", np.asarray(model.offset_, dtype=np.float64)),
        "scale": ("feature", np.asarray(model.scale_, dtype=np.float64)),
        "cv_score": ("width", scores),
    }
    for k in FITTED_BASIS_INDEX:
        if hasattr(model, k):
            data[k.rstrip("_")] = ("basis", np.asarray(getattr(model, k), dtype=np.int64))
    return xr.Dataset(
        data,
        coords={"feature": [f"f{i}" for i in range(int(model.n_features_in_))],
                "width": widths},
        attrs={"model": name, "omega": float(model.omega_),
               "intercept": float(model.intercept_),
               "params_json": json.dumps(params, sort_keys=True),
               "fitted_json": json.dumps(fitted, sort_keys=True),
               "bigkern_format": FORMAT},
    )


def regressor_from_dataset(ds: xr.Dataset, cls: type) -> Any:
    """Rebuild a fitted ``cls`` from :func:`regressor_to_dataset`'s output."""
    fmt = int(ds.attrs.get("bigkern_format", 0))
    if fmt > FORMAT:
        raise ValueError(f"the model was saved by a newer bigkern (format {fmt}; this one "
                         f"reads up to {FORMAT})")
    params = json.loads(ds.attrs["params_json"])
    valid = cls().get_params()
    model = cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in params.items()
                   if k in valid})
    model.centers_ = np.asarray(ds["basis"].values, dtype=np.float64)
    model.coef_ = np.asarray(ds["coef"].values, dtype=np.float64)
    model.offset_ = np.asarray(ds["offset"].values, dtype=np.float64)
    model.scale_ = np.asarray(ds["scale"].values, dtype=np.float64)
    model.omega_ = float(ds.attrs["omega"])
    model.intercept_ = float(ds.attrs["intercept"])
    model.n_features_in_ = int(ds.sizes["feature"])
    scores = np.asarray(ds["cv_score"].values, dtype=np.float64)
    model.cv_scores_ = scores if len(scores) > 1 else np.full(1, np.nan)
    for k, v in json.loads(ds.attrs.get("fitted_json", "{}")).items():
        setattr(model, k, v)
    for k in FITTED_BASIS_INDEX:
        if k.rstrip("_") in ds:
            setattr(model, k, np.asarray(ds[k.rstrip("_")].values, dtype=np.int64))
    return model
