"""scikit-learn style estimators: percentile bins (distributed) + a small kernel solve (local).

``fit`` accepts numpy arrays, dask arrays or an ``xarray.DataArray`` with
dims ``(sample, feature)``; the ``feature`` coordinate of a DataArray is
remembered and checked when predicting. Every fitted model is a Gaussian
kernel expansion ``f(x) = Σ_j c_j k(z(x), b_j) + b`` in robustly
standardized features ``z``; its class is the positive one where ``f > 0``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.svm import SVC

from bigkern import config
from bigkern.errors import DataQualityError, LabelError
from bigkern.kernels import gaussian_kernel, kernel_expansion, omega_to_gamma
from bigkern.reduce.percentile import percentile_bins
from bigkern.reduce.quantiles import DECILES
from bigkern.solvers.kernel_ridge import solve_weighted_kernel_ridge

__all__ = [
    "BinnedKernelRidge",
    "BinnedSVC",
    "KernelExpansion",
    "KernelRidgeClassifier",
    "load_model_dataset",
]


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


class _KernelClassifier(ClassifierMixin, BaseEstimator):
    """Shared predict/score/persistence of the kernel-expansion classifiers."""

    _bins_based = False

    # -- prediction ----------------------------------------------------------------------------
    def _check_features(self, X: Any) -> Any:
        arr, names = _as_samples(X)
        expected = getattr(self, "feature_names_in_", None)
        if names is not None and expected is not None:
            missing = [f for f in expected if f not in names]
            if missing:
                raise ValueError(f"X lacks feature(s) {missing} that the model was fitted on "
                                 f"({list(expected)})")
            if list(names) != list(expected):
                X = X.sel(feature=list(expected))
                arr, names = _as_samples(X)
        if arr.shape[-1] != self.n_features_in_:
            raise ValueError(f"X has {arr.shape[-1]} features; the model was fitted on "
                             f"{self.n_features_in_}")
        return arr

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


class _BinnedKernelClassifier(_KernelClassifier):
    """Fit = percentile bins of the samples (3 distributed passes) + a solve on the bins."""

    def fit(self, X: Any, y: Any, *, mask: Any = None) -> _BinnedKernelClassifier:
        """Bin ``X`` by per-feature quantiles and fit on the bins.

        Parameters
        ----------
        X : array-like, dask array or DataArray (sample, feature)
            Samples. Rows with a non-finite feature are left out and counted
            in ``fit_report_``; over ``bigkern.max_nonfinite_fraction`` of them
            raises :class:`~bigkern.errors.DataQualityError`.
        y : array-like (n,)
            Two-class labels (e.g. -1 clear / 1 cloud).
        mask : array-like of bool (n,), optional
            Rows to use, e.g. ``y != 0`` to leave out unlabelled pixels.
        """
        t0 = time.perf_counter()
        arr, names = _as_samples(X)
        if isinstance(y, xr.DataArray):
            y = y.data
        bins = percentile_bins(arr, y, quantiles=self.quantiles, mask=mask, features=names)
        t_bins = time.perf_counter() - t0
        self.fit_bins(bins)
        self.fit_report_["seconds_binning"] = t_bins
        self.fit_report_["seconds_total"] = time.perf_counter() - t0
        return self

    def fit_bins(self, bins: xr.Dataset) -> _BinnedKernelClassifier:
        """Fit on precomputed bins (from :func:`~bigkern.reduce.percentile_bins`).

        Reusing one set of bins across a parameter grid is how
        :func:`~bigkern.tuning.grid_search_bins` avoids re-reading the data.
        """
        if "positive" not in bins:
            raise LabelError("the bins carry no labels: bin with y to fit a classifier")
        t0 = time.perf_counter()
        _check_nonfinite(bins.attrs)
        self.classes_ = np.asarray(bins.attrs["classes"])
        names = [str(f) for f in bins["feature"].values]
        if not all(n == f"f{i}" for i, n in enumerate(names)):
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_features_in_ = len(names)
        offset = bins["offset"].values if self.standardize else np.zeros(len(names))
        scale = bins["scale"].values if self.standardize else np.ones(len(names))
        Z = (bins["center"].values - offset) / scale
        basis, coef, intercept = self._solve(Z, bins)
        self.expansion_ = KernelExpansion(basis, coef, float(intercept), float(self.omega),
                                          offset, scale)
        self.n_bins_ = int(bins.sizes["bin"])
        self.fit_report_ = {
            **{k: v for k, v in bins.attrs.items() if k.startswith("n_")},
            "passes": bins.attrs.get("passes", 0),
            "plan": bins.attrs.get("plan", ""),
            "n_basis": self.expansion_.n_basis,
            "seconds_solve": time.perf_counter() - t0,
        }
        return self


class BinnedKernelRidge(_BinnedKernelClassifier):
    """Gaussian kernel regularization with L2 loss on percentile-bin centers (Shi & Yu, 5.2.1).

    With ``labels="fuzzy"`` (default) the targets are the share of the
    positive class in each bin and the loss is weighted by the bin counts:
    ``c = (K + λ W⁻¹)⁻¹ y`` with ``W = diag(count) / mean(count)``. With
    ``labels="majority"`` each bin counts once with its majority label:
    ``c = (K + λ I)⁻¹ y``. Targets are coded 0/1; a pixel is positive where
    ``Σ c_j k(x, center_j) > 0.5``.

    Parameters
    ----------
    omega : float
        Gaussian width ω, in standardized feature units.
    lam : float
        Regularization λ.
    labels : {"fuzzy", "majority"}
        Bin targets (see above).
    quantiles : sequence of float
        Per-feature split points (deciles: up to 10**d bins).
    standardize : bool
        Center each feature on its median and divide by a robust σ
        (from the exact 10% and 90% quantiles).

    Attributes
    ----------
    classes_ : ndarray (2,)
        (negative, positive) labels.
    expansion_ : KernelExpansion
        The fitted model.
    n_bins_ : int
        Occupied bins.
    fit_report_ : dict
        Row counts (used, masked, absent, non-finite), bins, passes, timings.
    """

    def __init__(
        self,
        omega: float = 0.8,
        lam: float = 0.1,
        *,
        labels: str = "fuzzy",
        quantiles: Sequence[float] = DECILES,
        standardize: bool = True,
    ) -> None:
        self.omega = omega
        self.lam = lam
        self.labels = labels
        self.quantiles = quantiles
        self.standardize = standardize

    def _solve(self, Z: np.ndarray, bins: xr.Dataset) -> tuple[np.ndarray, np.ndarray, float]:
        K = gaussian_kernel(Z, Z, self.omega)
        if self.labels == "fuzzy":
            target = bins["fuzzy_label"].values
            counts = bins["count"].values.astype(np.float64)
            weights = counts / counts.mean()
        elif self.labels == "majority":
            target = (bins["majority_label"].values == self.classes_[1]).astype(np.float64)
            weights = None
        else:
            raise ValueError(f"labels must be 'fuzzy' or 'majority'; got {self.labels!r}")
        coef = solve_weighted_kernel_ridge(K, target, self.lam, weights)
        return Z, coef, -0.5


class BinnedSVC(_BinnedKernelClassifier):
    """Gaussian-kernel SVM (libsvm via scikit-learn) on percentile-bin centers (Shi & Yu, 5.2.2).

    Each bin is one training point with its majority label and, when
    ``weighted``, a sample weight proportional to its count (scaled to mean 1,
    so ``C`` keeps its usual meaning).

    Parameters
    ----------
    omega : float
        Gaussian width ω (scikit-learn's ``gamma = 1 / (2 ω²)``).
    C : float
        SVM cost.
    weighted : bool
        Weight bins by their counts.
    quantiles, standardize
        As in :class:`BinnedKernelRidge`.
    """

    def __init__(
        self,
        omega: float = 0.8,
        C: float = 1.0,
        *,
        weighted: bool = True,
        quantiles: Sequence[float] = DECILES,
        standardize: bool = True,
    ) -> None:
        self.omega = omega
        self.C = C
        self.weighted = weighted
        self.quantiles = quantiles
        self.standardize = standardize

    def _solve(self, Z: np.ndarray, bins: xr.Dataset) -> tuple[np.ndarray, np.ndarray, float]:
        labels = bins["majority_label"].values
        if len(np.unique(labels)) < 2:
            raise LabelError(
                f"every bin has the majority label {labels[0]!r}: an SVM needs two classes; "
                "use BinnedKernelRidge with fuzzy labels or more balanced data"
            )
        counts = bins["count"].values.astype(np.float64)
        weights = counts / counts.mean() if self.weighted else None
        svc = SVC(C=self.C, kernel="rbf", gamma=omega_to_gamma(self.omega))
        svc.fit(Z, labels, sample_weight=weights)
        sign = 1.0 if svc.classes_[1] == self.classes_[1] else -1.0
        self.n_support_ = int(svc.support_.size)
        return svc.support_vectors_, sign * svc.dual_coef_[0], sign * float(svc.intercept_[0])


class KernelRidgeClassifier(_KernelClassifier):
    """Plain in-memory Gaussian kernel regularization ``c = (K + λI)⁻¹ y`` on 0/1 labels.

    The paper's baseline: fit on a random subsample of the same size as the
    number of bins (and bagged with :class:`sklearn.ensemble.BaggingClassifier`).
    Standardization, when on, uses the subsample's own median and robust σ.
    """

    def __init__(self, omega: float = 0.8, lam: float = 0.1, *, standardize: bool = False) -> None:
        self.omega = omega
        self.lam = lam
        self.standardize = standardize

    def fit(self, X: Any, y: Any) -> KernelRidgeClassifier:
        """Fit on in-memory samples (rows with a non-finite feature raise)."""
        arr, names = _as_samples(X)
        arr = np.asarray(arr, dtype=np.float64)
        y = np.asarray(y)
        if not np.isfinite(arr).all():
            raise DataQualityError("KernelRidgeClassifier needs finite X; drop non-finite rows")
        classes = np.unique(y)
        if len(classes) != 2:
            raise LabelError(f"y must have two classes; got {classes.tolist()[:10]}")
        self.classes_ = classes
        self.n_features_in_ = arr.shape[1]
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        if self.standardize:
            q10, med, q90 = np.quantile(arr, [0.1, 0.5, 0.9], axis=0)
            scale = (q90 - q10) / (2 * 1.2815515655446004)
            offset, scale = med, np.where(scale > 0, scale, 1.0)
        else:
            offset, scale = np.zeros(arr.shape[1]), np.ones(arr.shape[1])
        Z = (arr - offset) / scale
        K = gaussian_kernel(Z, Z, self.omega)
        coef = solve_weighted_kernel_ridge(K, (y == classes[1]).astype(np.float64), self.lam)
        self.expansion_ = KernelExpansion(Z, coef, -0.5, float(self.omega), offset, scale)
        return self


_MODELS = {cls.__name__: cls for cls in (BinnedKernelRidge, BinnedSVC, KernelRidgeClassifier)}


def load_model_dataset(ds: xr.Dataset) -> _KernelClassifier:
    """Rebuild a fitted estimator from :meth:`to_dataset`'s output."""
    import json

    name = ds.attrs.get("model")
    if name not in _MODELS:
        raise ValueError(f"not a bigkern model dataset (model={name!r})")
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


def _check_nonfinite(counts: dict[str, Any]) -> None:
    bad = int(counts.get("n_nonfinite", 0))
    present = bad + int(counts.get("n_valid", 0))
    limit = float(config.get("max_nonfinite_fraction"))
    if present and bad / present > limit:
        raise DataQualityError(
            f"{bad} of {present} present rows ({bad / present:.1%}) have a non-finite feature "
            f"(NaN or ±inf), over the limit bigkern.max_nonfinite_fraction={limit:g}"
        )


def _json(obj: Any) -> str:
    import json

    return json.dumps(obj, sort_keys=True)
