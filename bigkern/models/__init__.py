"""scikit-learn style estimators: percentile bins (distributed) + a small kernel solve (local).

``fit`` accepts numpy arrays, dask arrays or an ``xarray.DataArray`` with
dims ``(sample, feature)``; the ``feature`` coordinate of a DataArray is
remembered and checked when predicting. Every fitted model is a Gaussian
kernel expansion ``f(x) = Σ_j c_j k(z(x), b_j) + b`` in robustly
standardized features ``z``; its class is the positive one where ``f > 0``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import xarray as xr

from bigkern.models._base import FORMAT, KernelExpansion
from bigkern.models._format import check_format
from bigkern.models.baselines import KernelRidgeClassifier
from bigkern.models.binned import BinnedKernelRidge, BinnedSVC
from bigkern.models.compact import CompactKernelPCA, CompactKernelRidge, CompactLSSVC, CompactSVC
from bigkern.models.kernel_regression import LOOKernelRidge
from bigkern.models.oht import OHTRegressor
from bigkern.models.periodic import PeriodicKernelRidge, shi_yu_grid
from bigkern.models.rls import GaussianRLS

__all__ = [
    "BinnedKernelRidge",
    "BinnedSVC",
    "CompactKernelPCA",
    "CompactKernelRidge",
    "CompactLSSVC",
    "CompactSVC",
    "GaussianRLS",
    "KernelExpansion",
    "KernelRidgeClassifier",
    "LOOKernelRidge",
    "OHTRegressor",
    "PeriodicKernelRidge",
    "load_model_dataset",
    "shi_yu_grid",
]

_MODELS = {cls.__name__: cls for cls in (BinnedKernelRidge, BinnedSVC, KernelRidgeClassifier)}
_REGRESSORS = {cls.__name__: cls for cls in (OHTRegressor, LOOKernelRidge, GaussianRLS,
                                             PeriodicKernelRidge)}
_COMPACT = {cls.__name__: cls for cls in (CompactLSSVC, CompactKernelRidge, CompactSVC,
                                          CompactKernelPCA)}


def load_model_dataset(ds: xr.Dataset) -> Any:
    """Rebuild a fitted estimator from its ``to_dataset()`` output."""
    from bigkern.models._compact_dataset import compact_from_dataset
    from bigkern.models._regressor_dataset import regressor_from_dataset

    name = ds.attrs.get("model")
    if name in _REGRESSORS:
        return regressor_from_dataset(ds, _REGRESSORS[name])
    if name in _COMPACT:
        return compact_from_dataset(ds, _COMPACT[name],
                                    support_from_coef=issubclass(_COMPACT[name], CompactSVC))
    if name not in _MODELS:
        raise ValueError(f"not a bigkern model dataset (model={name!r})")
    check_format(ds, FORMAT)
    params = json.loads(ds.attrs["params_json"])
    if "quantiles" in params:
        params["quantiles"] = tuple(params["quantiles"])
    valid = _MODELS[name]().get_params()
    model = _MODELS[name](**{k: v for k, v in params.items() if k in valid})
    model.classes_ = np.asarray(ds.attrs["classes"])
    model.n_features_in_ = int(ds.sizes["feature"])
    if int(ds.attrs.get("has_feature_names", 1)):
        model.feature_names_in_ = np.asarray([str(f) for f in ds["feature"].values], dtype=object)
    model.expansion_ = KernelExpansion(
        np.asarray(ds["basis"].values, dtype=np.float64),
        np.asarray(ds["coef"].values, dtype=np.float64),
        float(ds.attrs["intercept"]),
        float(ds.attrs["omega"]),
        np.asarray(ds["offset"].values, dtype=np.float64),
        np.asarray(ds["scale"].values, dtype=np.float64),
    )
    return model
