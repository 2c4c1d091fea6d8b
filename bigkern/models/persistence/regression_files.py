"""The saved layouts of the two regressors that do not predict through a kernel expansion.

Both carry the attrs every model file carries (``model``, ``params_json``,
``fitted_json``, ``has_feature_names``, ``bigkern_format``, ``bigkern_version``; see
:mod:`bigkern.models.persistence.expansion_files`), and:

* :class:`~bigkern.models.GaussianRLS` (family ``rls``) — what its extended-precision
  prediction solves with: ``X_fit (sample, feature)``, ``y_fit`` and ``coef (sample)``,
  ``loo_mse (candidate)``; ``fitted_json``: ``lam_``, ``condition_``, ``precision_``,
  ``dps_``.
* :class:`~bigkern.models.PeriodicKernelRidge` (family ``periodic``; a periodic kernel
  on [0, 1)) — ``centers``, ``coef`` and ``bin_counts (basis)``, Cp over the grid
  ``cp (cp_omega, cp_lam)`` when there was a grid; ``fitted_json``: ``omega_``,
  ``lam_``, ``lam_b_``, ``sigma2_``, ``trace_``, ``n_bins_``, ``n_empty_bins_``.

Scalars travel as JSON (Python writes the shortest repr that reads back to the same
double), arrays as float64 / int64 variables; a loaded model predicts bit for bit as
the saved one.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import xarray as xr

from bigkern.models._format import check_format, saved_params
from bigkern.models.persistence.expansion_files import feature_names, from_json, model_attrs

__all__ = ["FORMAT", "periodic_to_dataset", "regressor_from_dataset", "rls_to_dataset"]

FORMAT = 1


def _fitted(model: Any) -> dict[str, Any]:
    return {k: getattr(model, k) for k in type(model)._saved_fitted if hasattr(model, k)}


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
    return xr.Dataset(data, coords={"feature": feature_names(model)},
                      attrs=model_attrs(model, _fitted(model), FORMAT))


def periodic_to_dataset(model: Any) -> xr.Dataset:
    """The fitted :class:`~bigkern.models.PeriodicKernelRidge` as a Dataset (module docstring)."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model, "coef_")
    data: dict[str, Any] = {
        "centers": ("basis", np.asarray(model.centers_, dtype=np.float64)),
        "coef": ("basis", np.asarray(model.coef_, dtype=np.float64)),
        "bin_counts": ("basis", np.asarray(model.bin_counts_, dtype=np.int64)),
    }
    coords: dict[str, Any] = {"feature": feature_names(model)}
    if model.cp_ is not None:
        data["cp"] = (("cp_omega", "cp_lam"), np.asarray(model.cp_.values, dtype=np.float64))
        coords.update(cp_omega=model.cp_["omega"].values, cp_lam=model.cp_["lam"].values)
    return xr.Dataset(data, coords=coords, attrs=model_attrs(model, _fitted(model), FORMAT))


def regressor_from_dataset(ds: xr.Dataset, cls: type) -> Any:
    """Rebuild a fitted GaussianRLS or PeriodicKernelRidge from its Dataset."""
    check_format(ds, FORMAT)
    model = cls(**saved_params(ds, cls, decode=from_json))
    model.n_features_in_ = int(ds.sizes["feature"])
    if int(ds.attrs.get("has_feature_names", 0)):
        model.feature_names_in_ = np.asarray([str(f) for f in ds["feature"].values],
                                             dtype=object)
    for k, v in json.loads(ds.attrs.get("fitted_json", "{}")).items():
        setattr(model, k, v)
    if "X_fit" in ds:  # GaussianRLS
        for k in ("X_fit", "y_fit", "coef", "loo_mse"):
            setattr(model, f"{k}_", np.asarray(ds[k].values, dtype=np.float64))
        return model
    model.centers_ = np.asarray(ds["centers"].values, dtype=np.float64)
    model.coef_ = np.asarray(ds["coef"].values, dtype=np.float64)
    model.bin_counts_ = np.asarray(ds["bin_counts"].values, dtype=np.int64)
    model.cp_ = None
    if "cp" in ds:
        model.cp_ = xr.DataArray(
            np.asarray(ds["cp"].values, dtype=np.float64), dims=("omega", "lam"),
            coords={"omega": ds["cp_omega"].values, "lam": ds["cp_lam"].values}, name="cp")
    return model
