"""The one saved layout of every model that predicts through a kernel expansion.

Classifiers and regressors alike (every estimator with a fitted ``expansion_``) are
saved as one Dataset:

* ``basis (basis, feature)`` — the centers, in standardized units; ``coef (basis)``,
  or ``coef (basis, output)`` and ``intercept (output)`` for an expansion of k columns
  (a classifier's k classes, in the order of ``classes``); ``offset`` and
  ``scale (feature)``;
* attrs ``kernel`` (its name in :data:`bigkern.kernels.KERNELS`), ``omega``,
  ``intercept`` (one column), ``clip`` (absent: not clipped), ``dtype`` (the precision of the
  kernel blocks: float32 for the classifiers, float64 for the regressors), ``classes``
  (classifiers only);
* ``params_json`` (the constructor parameters), ``fitted_json`` (the fit's scalar
  results the class names in ``_saved_fitted``: the chosen width and penalty, counts),
  and one variable per array the class names in ``_saved_arrays`` (attribute → dim,
  e.g. ``cv_scores_`` along ``width``);
* a classifier fitted with ``calibration``: its calibrator's arrays and attrs
  (:func:`~bigkern.models.calibration.calibration_variables`);
* ``model``, ``has_feature_names`` (``feature`` holds ``feature_names_in_`` when 1,
  else ``f0, f1, …``), ``bigkern_format`` and ``bigkern_version``.

A loaded model predicts bit for bit as the saved one. Files of the earlier layouts
(format 1: classifiers and regressors apart) are refused, saying to refit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from bigkern.kernels import Kernel, KernelExpansion
from bigkern.models._format import check_layout, format_attrs, saved_kernel, saved_params
from bigkern.models.calibration import calibration_variables, saved_calibration

__all__ = ["FORMAT", "clip_attrs", "expansion_from_dataset", "expansion_to_dataset",
           "feature_names", "model_attrs", "param_value"]

#: The layout written here; 1 was the classifiers' and the regressors' layouts apart.
FORMAT = 2


def param_value(v: Any) -> Any:
    """A JSON-able parameter value: scalars as they are, a kernel by its name, number
    sequences as float lists, mappings of them as objects.

    Examples
    --------
    >>> from bigkern.kernels import Laplacian
    >>> param_value(np.float32(0.5)), param_value(Laplacian), param_value((1, 2))
    (0.5, 'laplacian', [1.0, 2.0])
    """
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, Kernel) or (isinstance(v, type) and issubclass(v, Kernel)):
        return saved_kernel(v)
    if isinstance(v, np.integer | np.floating):
        return v.item()
    if isinstance(v, Mapping):
        return {str(k): param_value(x) for k, x in v.items()}
    if isinstance(v, Sequence | np.ndarray):
        return [float(x) for x in np.asarray(v, dtype=np.float64).ravel()]
    raise TypeError(f"parameter value {v!r} cannot be saved with the model (not a number, "
                    f"string or sequence of numbers); pass an int seed for random_state")


def from_json(v: Any) -> Any:
    """A saved parameter value back: lists as tuples (in mappings too)."""
    if isinstance(v, list):
        return tuple(v)
    if isinstance(v, dict):
        return {k: from_json(x) for k, x in v.items()}
    return v


def clip_attrs(clip: Any) -> dict[str, float]:
    """The saved form of a model's clipping bound: ``{"clip": bound}``, or nothing when its
    standardized values are not clipped (``None`` or ``inf``; JSON has no infinity)."""
    return {} if clip is None or not np.isfinite(clip) else {"clip": float(clip)}


def feature_names(model: Any) -> list[str]:
    """``feature_names_in_``, else ``f0, f1, …``."""
    return list(getattr(model, "feature_names_in_",
                        [f"f{i}" for i in range(int(model.n_features_in_))]))


def model_attrs(model: Any, fitted: Mapping[str, Any], fmt: int) -> dict[str, Any]:
    """The attrs every model file carries: its class, parameters, scalar results, format."""
    params = {k: param_value(v) for k, v in model.get_params().items()}
    return {"model": type(model).__name__,
            "params_json": json.dumps(params, sort_keys=True),
            "fitted_json": json.dumps({k: param_value(v) for k, v in fitted.items()},
                                      sort_keys=True),
            "has_feature_names": int(hasattr(model, "feature_names_in_")),
            **format_attrs(fmt)}


def expansion_to_dataset(model: Any) -> xr.Dataset:
    """A fitted model with an ``expansion_`` as a Dataset (see the module docstring)."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model, "expansion_")
    exp: KernelExpansion = model.expansion_
    fitted = {k: getattr(model, k) for k in getattr(model, "_saved_fitted", ())
              if hasattr(model, k)}
    columns = exp.n_outputs > 1
    data: dict[str, Any] = {
        "basis": (("basis", "feature"), np.asarray(exp.centers, dtype=np.float64)),
        "coef": (("basis", "output") if columns else "basis",
                 np.asarray(exp.coef, dtype=np.float64)),
        "offset": ("feature", np.asarray(exp.offset, dtype=np.float64)),
        "scale": ("feature", np.asarray(exp.scale, dtype=np.float64)),
    }
    if columns:
        data["intercept"] = ("output", np.asarray(exp.intercept, dtype=np.float64))
    for name, dims in getattr(model, "_saved_arrays", {}).items():
        if getattr(model, name, None) is not None:
            data[name.rstrip("_")] = (dims, np.asarray(getattr(model, name)))
    calibration, calibration_attrs = calibration_variables(getattr(model, "calibration_", None))
    data |= calibration
    attrs = {"kernel": saved_kernel(exp.kernel), "omega": float(exp.omega),
             **({} if columns else {"intercept": float(exp.intercept)}), "dtype": exp.dtype,
             **clip_attrs(exp.basis.clip), **model_attrs(model, fitted, FORMAT),
             **calibration_attrs}
    if hasattr(model, "classes_"):
        attrs["classes"] = [c.item() if hasattr(c, "item") else c for c in model.classes_]
    return xr.Dataset(data, coords={"feature": feature_names(model)}, attrs=attrs)


def expansion_from_dataset(ds: xr.Dataset, cls: type) -> Any:
    """Rebuild a fitted ``cls`` from :func:`expansion_to_dataset`'s output.

    Raises
    ------
    StoreError
        A file of an earlier layout, or of a newer bigkern.
    """
    check_layout(ds, FORMAT, "classifiers and regressors were saved apart")
    model = cls(**saved_params(ds, cls, decode=from_json))
    model.n_features_in_ = int(ds.sizes["feature"])
    if int(ds.attrs.get("has_feature_names", 0)):
        model.feature_names_in_ = np.asarray([str(f) for f in ds["feature"].values],
                                             dtype=object)
    if "classes" in ds.attrs:
        model.classes_ = np.asarray(ds.attrs["classes"])
    for k, v in json.loads(ds.attrs.get("fitted_json", "{}")).items():
        setattr(model, k, v)
    for name in getattr(cls, "_saved_arrays", {}):
        if name.rstrip("_") in ds:
            setattr(model, name, np.asarray(ds[name.rstrip("_")].values))
    if "calibration" in model.get_params():
        model.calibration_ = saved_calibration(ds)
    model.expansion_ = KernelExpansion.from_parts(
        np.asarray(ds["basis"].values, dtype=np.float64),
        np.asarray(ds["coef"].values, dtype=np.float64),
        np.asarray(ds["intercept"].values, dtype=np.float64) if "intercept" in ds
        else float(ds.attrs["intercept"]),
        float(ds.attrs["omega"]),
        np.asarray(ds["offset"].values, dtype=np.float64),
        np.asarray(ds["scale"].values, dtype=np.float64),
        clip=ds.attrs.get("clip"),
        dtype=str(ds.attrs.get("dtype", "float32")),
        kernel=str(ds.attrs.get("kernel", "gaussian")),
    )
    return model
