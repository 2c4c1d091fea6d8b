"""Shared parts of bigkern's classifiers: the fitted kernel expansion, input handling,
prediction and persistence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from sklearn.base import BaseEstimator, ClassifierMixin

from bigkern import config
from bigkern.errors import DataQualityError
from bigkern.kernels import kernel_expansion
from bigkern.reduce._tree import per_feature_counts

__all__ = ["KernelExpansion"]


@dataclass(frozen=True)
class KernelExpansion:
    """A fitted Gaussian kernel expansion: everything needed to predict.

    ``decision(x) = Σ_j coef_j exp(-‖(x − offset)/scale − basis_j‖² / (2 ω²)) + intercept``
    """

    basis: np.ndarray  # (m, d), standardized space
    coef: np.ndarray  # (m,)
    intercept: float
    omega: float
    offset: np.ndarray  # (d,)
    scale: np.ndarray  # (d,)

    def decision(self, X: np.ndarray) -> np.ndarray:
        """Decision values of the rows of ``X`` (n, d); NaN where a feature is non-finite."""
        return kernel_expansion(X, self.basis, self.coef, self.omega, self.intercept,
                                offset=self.offset, scale=self.scale)

    @property
    def n_basis(self) -> int:
        """Number of basis functions (bins, samples or support vectors)."""
        return len(self.coef)


def _as_samples(X: Any) -> tuple[Any, list[str] | None]:
    """Array data of ``X`` and its feature names (for a DataArray with a ``feature`` dim)."""
    if isinstance(X, xr.DataArray):
        if "feature" not in X.dims or X.ndim != 2:
            raise ValueError(f"a DataArray X must have dims (sample, feature); got {X.dims}")
        X = X.transpose(..., "feature")
        names = [str(f) for f in X["feature"].values] if "feature" in X.coords else None
        return X.data, names
    if isinstance(X, da.Array):
        return X, None
    return np.asarray(X), None


def checked_features(model: Any, X: Any) -> Any:
    """``X``'s array with the features ``model`` was fitted on, in the fitted order.

    A DataArray's ``feature`` coordinate is matched by name (reordered when
    needed); any input must have ``model.n_features_in_`` features.
    """
    arr, names = _as_samples(X)
    expected = getattr(model, "feature_names_in_", None)
    if names is not None and expected is not None:
        missing = [f for f in expected if f not in names]
        if missing:
            raise ValueError(f"X lacks feature(s) {missing} that the model was fitted on "
                             f"({list(expected)})")
        if list(names) != list(expected):
            X = X.sel(feature=list(expected))
            arr, names = _as_samples(X)
    if arr.shape[-1] != model.n_features_in_:
        raise ValueError(f"X has {arr.shape[-1]} features; the model was fitted on "
                         f"{model.n_features_in_}")
    return arr


class _KernelClassifier(ClassifierMixin, BaseEstimator):
    """Shared predict/score/persistence of the kernel-expansion classifiers."""

    _bins_based = False

    # -- prediction ----------------------------------------------------------------------------
    def _check_features(self, X: Any) -> Any:
        return checked_features(self, X)

    def decision_function(self, X: Any) -> Any:
        """Decision values (> 0 → ``classes_[1]``); NaN for rows with a non-finite feature.

        numpy in → numpy out; dask in → lazy dask out (one task per row chunk).
        """
        arr = self._check_features(X)
        exp = self.expansion_
        if isinstance(arr, da.Array):
            if len(arr.chunks[1]) != 1:
                arr = arr.rechunk({1: -1})
            return arr.map_blocks(exp.decision, drop_axis=1, dtype=np.float64)
        return exp.decision(arr)

    def predict(self, X: Any) -> Any:
        """Class of each row: ``classes_[1]`` where the decision is > 0, else ``classes_[0]``.

        Rows with a non-finite feature get 0 (MISR's "unlabelled").
        """
        dec = self.decision_function(X)
        neg, pos = self.classes_
        if isinstance(dec, da.Array):
            return da.where(da.isnan(dec), 0, da.where(dec > 0, pos, neg))
        return np.where(np.isnan(dec), 0, np.where(dec > 0, pos, neg))

    # -- persistence ---------------------------------------------------------------------------
    def to_dataset(self) -> xr.Dataset:
        """The fitted model as a small :class:`xarray.Dataset` (for zarr or netCDF)."""
        exp = self.expansion_
        names = list(getattr(self, "feature_names_in_", [f"f{i}" for i in
                                                          range(self.n_features_in_)]))
        params = {k: v for k, v in self.get_params().items()
                  if isinstance(v, (int, float, str, bool)) or v is None}
        params["quantiles"] = list(map(float, getattr(self, "quantiles", ())))
        return xr.Dataset(
            {
                "basis": (("basis", "feature"), exp.basis),
                "coef": ("basis", exp.coef),
                "offset": ("feature", exp.offset),
                "scale": ("feature", exp.scale),
            },
            coords={"feature": names},
            attrs={
                "model": type(self).__name__,
                "omega": float(exp.omega),
                "intercept": float(exp.intercept),
                "classes": [c.item() if hasattr(c, "item") else c for c in self.classes_],
                "params_json": _json(params),
                "has_feature_names": int(hasattr(self, "feature_names_in_")),
                "bigkern_format": 1,
            },
        )


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


def _json(obj: Any) -> str:
    import json

    return json.dumps(obj, sort_keys=True)
