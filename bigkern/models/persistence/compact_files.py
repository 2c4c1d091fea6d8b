"""Fitted compactly supported kernel models as small xarray Datasets, and back.

A compact model predicts from its training rows (only those within ``radius`` of a
new point contribute), so the Dataset holds them: ``X_fit (sample, feature)``,
with ``dual_coef (sample)`` for :class:`~bigkern.models.CompactLSSVC`,
:class:`~bigkern.models.CompactKernelRidge` and :class:`~bigkern.models.CompactSVC`
(a classifier of k > 2 classes: ``dual_coef (sample, output)`` and ``intercept
(output)``, one column per class in the order of ``classes_json``, as the expansion
files lay out k columns), or ``eigenvectors (sample, component)``, ``eigenvalues
(component)`` and ``row_means (sample)`` for :class:`~bigkern.models.CompactKernelPCA`.
attrs: the attrs every model file carries
(:func:`~bigkern.models.persistence.expansion_files.model_attrs`: ``model``,
``params_json``, ``fitted_json``, ``has_feature_names``, ``bigkern_format``,
``bigkern_version``), the kernel (``kernel``, the name of the radial kernel that is
tapered; ``omega``, ``support_radius``, ``taper_power``; ``taper_power = -1``: chosen
from the dimension), ``intercept`` (of one column), ``classes_json`` and ``grand_mean``;
a classifier fitted with ``calibration``: its calibrator's arrays and attrs
(:func:`~bigkern.models.calibration.calibration_variables`). The fit report
(``fit_report_``) is not saved. Files of format 1 (before the kernel was recorded) are
refused, saying to refit.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import xarray as xr

from bigkern.models._format import check_layout, saved_kernel, saved_params
from bigkern.models.calibration import calibration_variables, saved_calibration
from bigkern.models.persistence.expansion_files import feature_names, from_json, model_attrs

__all__ = ["FORMAT", "compact_from_dataset", "compact_to_dataset"]

FORMAT = 2


def compact_to_dataset(model: Any) -> xr.Dataset:
    """The fitted compact model as a Dataset (see the module docstring)."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model, "X_fit_")
    kernel = model.kernel_
    data: dict[str, Any] = {"X_fit": (("sample", "feature"), model.X_fit_)}
    attrs: dict[str, Any] = {
        "kernel": saved_kernel(kernel.kernel),
        "omega": float(kernel.kernel.omega),
        "support_radius": float(kernel.radius),
        "taper_power": -1 if kernel.taper_power is None else int(kernel.taper_power),
        **model_attrs(model, {}, FORMAT),
    }
    if hasattr(model, "dual_coef_"):
        coef = np.asarray(model.dual_coef_, dtype=np.float64)
        if coef.ndim == 1:
            data["dual_coef"] = ("sample", coef)
            attrs["intercept"] = float(model.intercept_)
        else:  # k classes: one column each
            data["dual_coef"] = (("sample", "output"), coef)
            data["intercept"] = ("output", np.asarray(model.intercept_, dtype=np.float64))
    else:
        sol = model._solution
        data["eigenvectors"] = (("sample", "component"), sol.eigenvectors)
        data["eigenvalues"] = ("component", sol.eigenvalues)
        data["row_means"] = ("sample", sol.row_means)
        attrs["grand_mean"] = float(sol.grand_mean)
    calibration, calibration_attrs = calibration_variables(getattr(model, "calibration_", None))
    data |= calibration
    attrs |= calibration_attrs
    if hasattr(model, "classes_"):
        attrs["classes_json"] = json.dumps([c.item() if hasattr(c, "item") else c
                                            for c in model.classes_])
    return xr.Dataset(data, coords={"feature": feature_names(model)}, attrs=attrs)


def compact_from_dataset(ds: xr.Dataset, cls: type, *, support_from_coef: bool = False) -> Any:
    """Rebuild a fitted ``cls`` from :func:`compact_to_dataset`'s output.

    Parameters
    ----------
    ds : xarray.Dataset
        The output of :func:`compact_to_dataset`.
    cls : type
        The estimator class named by ``ds.attrs["model"]``.
    support_from_coef : bool
        Set ``support_`` to the rows with a nonzero dual coefficient in any column (the
        indices of the support vectors that :class:`~bigkern.models.CompactSVC` keeps).
        The caller says so: this module does not import the estimators.

    Returns
    -------
    object
        The fitted estimator.

    Raises
    ------
    StoreError
        A file of an earlier layout (format 1), or of a newer bigkern.
    """
    from bigkern.kernels import CompactSupport, as_kernel
    from bigkern.solvers.kpca import KernelPCASolution

    check_layout(ds, FORMAT, "without its kernel's name")
    model = cls(**saved_params(ds, cls, decode=from_json))
    taper_power = int(ds.attrs["taper_power"])
    model.kernel_ = CompactSupport(as_kernel(str(ds.attrs["kernel"]), float(ds.attrs["omega"])),
                                   float(ds.attrs["support_radius"]),
                                   None if taper_power < 0 else taper_power)
    model.support_radius_ = float(ds.attrs["support_radius"])
    model.X_fit_ = np.asarray(ds["X_fit"].values, dtype=np.float64)
    model.n_features_in_ = int(ds.sizes["feature"])
    if int(ds.attrs.get("has_feature_names", 0)):
        model.feature_names_in_ = np.asarray([str(f) for f in ds["feature"].values],
                                             dtype=object)
    if "dual_coef" in ds:
        model.dual_coef_ = np.asarray(ds["dual_coef"].values, dtype=np.float64)
        if model.dual_coef_.ndim == 1:
            model.intercept_ = float(ds.attrs["intercept"])
        else:
            model.intercept_ = np.asarray(ds["intercept"].values, dtype=np.float64)
        if support_from_coef:
            nonzero = model.dual_coef_ != 0
            model.support_ = np.flatnonzero(nonzero if nonzero.ndim == 1 else
                                            nonzero.any(axis=1))
    else:
        model._solution = KernelPCASolution(
            np.asarray(ds["eigenvalues"].values, dtype=np.float64),
            np.asarray(ds["eigenvectors"].values, dtype=np.float64),
            np.asarray(ds["row_means"].values, dtype=np.float64),
            float(ds.attrs["grand_mean"]))
        model.eigenvalues_ = model._solution.eigenvalues
        model.eigenvectors_ = model._solution.eigenvectors
    if "classes_json" in ds.attrs:
        model.classes_ = np.asarray(json.loads(ds.attrs["classes_json"]))
    if "calibration" in model.get_params():
        model.calibration_ = saved_calibration(ds)
    return model
