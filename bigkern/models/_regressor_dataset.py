"""Fitted regressors as small xarray Datasets, and back.

Every regressor's Dataset has attrs ``model``, ``params_json`` (constructor
parameters), ``fitted_json`` (the fit's scalar results), ``has_feature_names``
(``feature`` holds ``feature_names_in_`` when 1, else ``f0, f1, …``),
``bigkern_format`` and ``bigkern_version`` (:mod:`bigkern.models._format`).
A loaded model predicts bit for bit as the saved one. Per family:

* OHT, RM (:class:`~bigkern.models.OHTRegressor`, :class:`~bigkern.models.LOOKernelRidge`)
  — the classifiers' layout (:meth:`bigkern.models._base._KernelClassifier.to_dataset`):
  ``basis (basis, feature)`` centers in standardized units, ``coef (basis)``,
  ``offset`` / ``scale (feature)``, attrs ``omega`` and ``intercept``; plus
  ``cv_score (width)``, OHT's ``basis_used (basis)`` and, in ``fitted_json``,
  OHT's ``n_components_``, ``n_stable_``, ``sigma2_`` or RM's ``lam_``. The
  solver's full result (``OHTRegressor.solution_``) is not saved.
* :class:`~bigkern.models.GaussianRLS` — the expansion's centers and what the
  extended-precision prediction solves with: ``X_fit (sample, feature)``,
  ``y_fit`` and ``coef (sample)``, ``loo_mse (candidate)``; ``fitted_json``:
  ``lam_``, ``condition_``, ``precision_``, ``dps_``.
* :class:`~bigkern.models.PeriodicKernelRidge` — ``centers``, ``coef`` and
  ``bin_counts (basis)``, Cp over the grid ``cp (cp_omega, cp_lam)`` when
  there was a grid; ``fitted_json``: ``omega_``, ``lam_``, ``lam_b_``,
  ``sigma2_``, ``trace_``, ``n_bins_``, ``n_empty_bins_``.

Scalars travel as JSON (Python writes the shortest repr that reads back to
the same double), arrays as float64 / int64 variables.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from bigkern.kernels import Kernel
from bigkern.models._format import check_format, format_attrs, saved_kernel, saved_params

__all__ = ["periodic_to_dataset", "regressor_from_dataset", "regressor_to_dataset",
           "rls_to_dataset"]

FORMAT = 1

#: fitted scalar attributes saved per estimator class, when present
FITTED_SCALARS: dict[str, tuple[str, ...]] = {
    "OHTRegressor": ("n_components_", "n_stable_", "sigma2_"),
    "LOOKernelRidge": ("lam_",),
    "GaussianRLS": ("lam_", "condition_", "precision_", "dps_"),
    "PeriodicKernelRidge": ("omega_", "lam_", "lam_b_", "sigma2_", "trace_", "n_bins_",
                            "n_empty_bins_"),
}
#: fitted array attributes saved as variables along ``basis`` (dtype int)
FITTED_BASIS_INDEX = ("basis_used_",)


def _param_value(v: Any) -> Any:
    """A JSON-able parameter value: scalars as they are, number sequences as float lists."""
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, Kernel) or (isinstance(v, type) and issubclass(v, Kernel)):
        return saved_kernel(v)
    if isinstance(v, np.integer | np.floating):
        return v.item()
    if isinstance(v, Mapping):
        return {str(k): _param_value(x) for k, x in v.items()}
    if isinstance(v, Sequence | np.ndarray):
        return [float(x) for x in np.asarray(v, dtype=np.float64).ravel()]
    raise TypeError(f"parameter value {v!r} cannot be saved with the model (not a number, "
                    f"string or sequence of numbers); pass an int seed for random_state")


def _from_json(v: Any) -> Any:
    """A saved parameter value back: lists as tuples (in mappings too)."""
    if isinstance(v, list):
        return tuple(v)
    if isinstance(v, dict):
        return {k: _from_json(x) for k, x in v.items()}
    return v


def _fitted(model: Any) -> dict[str, Any]:
    return {k: _param_value(getattr(model, k))
            for k in FITTED_SCALARS.get(type(model).__name__, ()) if hasattr(model, k)}


def _attrs(model: Any, **extra: Any) -> dict[str, Any]:
    params = {k: _param_value(v) for k, v in model.get_params().items()}
    return {"model": type(model).__name__, **extra,
            "params_json": json.dumps(params, sort_keys=True),
            "fitted_json": json.dumps(_fitted(model), sort_keys=True),
            "has_feature_names": int(hasattr(model, "feature_names_in_")),
            **format_attrs(FORMAT)}


def clip_attrs(clip: Any) -> dict[str, float]:
    """The saved form of a model's clipping bound: ``{"clip": bound}``, or nothing when its
    standardized values are not clipped (``None`` or ``inf``; JSON has no infinity)."""
    return {} if clip is None or not np.isfinite(clip) else {"clip": float(clip)}


def _feature_names(model: Any) -> list[str]:
    return list(getattr(model, "feature_names_in_",
                        [f"f{i}" for i in range(int(model.n_features_in_))]))


def regressor_to_dataset(model: Any) -> xr.Dataset:
    """The fitted OHT / RM regressor as a Dataset (see the module docstring)."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model, "coef_")
    widths = np.atleast_1d(np.asarray(model.omegas, dtype=np.float64))
    scores = np.asarray(model.cv_scores_, dtype=np.float64)
    if scores.shape != widths.shape:  # a single width: no CV, one NaN score
        scores = np.full(widths.shape, np.nan)
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
    return xr.Dataset(data, coords={"feature": _feature_names(model), "width": widths},
                      attrs=_attrs(model, omega=float(model.omega_),
                                   intercept=float(model.intercept_),
                                   **clip_attrs(getattr(model, "clip_", None))))


def rls_to_dataset(model: Any) -> xr.Dataset:
    """The fitted :class:`~bigkern.models.GaussianRLS` as a Dataset (see the module docstring)."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model, "coef_")
    data = {
        "X_fit": (("sample", "feature"), np.asarray(model.X_fit_, dtype=np.float64)),
        "y_fit": ("sample", np.asarray(model.y_fit_, dtype=np.float64)),
        "coef": ("sample", np.asarray(model.coef_, dtype=np.float64)),
        "loo_mse": ("candidate", np.asarray(model.loo_mse_, dtype=np.float64)),
    }
    return xr.Dataset(data, coords={"feature": _feature_names(model)}, attrs=_attrs(model))


def periodic_to_dataset(model: Any) -> xr.Dataset:
    """The fitted :class:`~bigkern.models.PeriodicKernelRidge` as a Dataset (module docstring)."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model, "coef_")
    data: dict[str, Any] = {
        "centers": ("basis", np.asarray(model.centers_, dtype=np.float64)),
        "coef": ("basis", np.asarray(model.coef_, dtype=np.float64)),
        "bin_counts": ("basis", np.asarray(model.bin_counts_, dtype=np.int64)),
    }
    coords: dict[str, Any] = {"feature": _feature_names(model)}
    if model.cp_ is not None:
        data["cp"] = (("cp_omega", "cp_lam"), np.asarray(model.cp_.values, dtype=np.float64))
        coords.update(cp_omega=model.cp_["omega"].values, cp_lam=model.cp_["lam"].values)
    return xr.Dataset(data, coords=coords, attrs=_attrs(model))


def regressor_from_dataset(ds: xr.Dataset, cls: type) -> Any:
    """Rebuild a fitted ``cls`` from the output of one of the ``*_to_dataset`` functions."""
    check_format(ds, FORMAT)
    model = cls(**saved_params(ds, cls, decode=_from_json))
    model.n_features_in_ = int(ds.sizes["feature"])
    if int(ds.attrs.get("has_feature_names", 0)):
        model.feature_names_in_ = np.asarray([str(f) for f in ds["feature"].values],
                                             dtype=object)
    for k, v in json.loads(ds.attrs.get("fitted_json", "{}")).items():
        setattr(model, k, v)
    name = ds.attrs["model"]
    if name == "GaussianRLS":
        for k in ("X_fit", "y_fit", "coef", "loo_mse"):
            setattr(model, f"{k}_", np.asarray(ds[k].values, dtype=np.float64))
    elif name == "PeriodicKernelRidge":
        model.centers_ = np.asarray(ds["centers"].values, dtype=np.float64)
        model.coef_ = np.asarray(ds["coef"].values, dtype=np.float64)
        model.bin_counts_ = np.asarray(ds["bin_counts"].values, dtype=np.int64)
        model.cp_ = None
        if "cp" in ds:
            model.cp_ = xr.DataArray(
                np.asarray(ds["cp"].values, dtype=np.float64), dims=("omega", "lam"),
                coords={"omega": ds["cp_omega"].values, "lam": ds["cp_lam"].values}, name="cp")
    else:
        _expansion_from_dataset(ds, model)
    return model


def _expansion_from_dataset(ds: xr.Dataset, model: Any) -> None:
    model.centers_ = np.asarray(ds["basis"].values, dtype=np.float64)
    model.coef_ = np.asarray(ds["coef"].values, dtype=np.float64)
    model.offset_ = np.asarray(ds["offset"].values, dtype=np.float64)
    model.scale_ = np.asarray(ds["scale"].values, dtype=np.float64)
    if "clip" in ds.attrs:
        model.clip_ = float(ds.attrs["clip"])
    model.omega_ = float(ds.attrs["omega"])
    model.intercept_ = float(ds.attrs["intercept"])
    scores = np.asarray(ds["cv_score"].values, dtype=np.float64)
    model.cv_scores_ = scores if len(scores) > 1 else np.full(1, np.nan)
    for k in FITTED_BASIS_INDEX:
        if k.rstrip("_") in ds:
            setattr(model, k, np.asarray(ds[k.rstrip("_")].values, dtype=np.int64))
