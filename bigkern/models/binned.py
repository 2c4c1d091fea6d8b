"""Percentile-bin classifiers (Shi & Yu, 5.2): distributed bins + a small kernel solve."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

import dask.array as da
import numpy as np
import xarray as xr
from sklearn.base import _fit_context
from sklearn.svm import SVC
from sklearn.utils._param_validation import StrOptions

from bigkern.errors import LabelError
from bigkern.kernels import Gaussian, KernelExpansion, as_kernel, omega_to_gamma
from bigkern.models._base import _check_nonfinite, _KernelClassifier
from bigkern.models._constraints import KERNEL, domain
from bigkern.models.calibrated_fit import CALIBRATION, ProbabilityMixin, calibrated_fit
from bigkern.reduce.binning.percentile import percentile_bins
from bigkern.reduce.binning.quantiles import DECILES
from bigkern.reduce.passes import per_feature_counts, without_per_feature
from bigkern.solvers.kernel_ridge import solve_weighted_kernel_ridge

__all__ = ["BinnedKernelRidgeClassifier", "BinnedSVC"]


def _row_mask(mask: Any, n: int) -> np.ndarray:
    mask = np.asarray(mask.data if isinstance(mask, xr.DataArray) else mask)
    if mask.shape != (n,):
        raise ValueError(f"mask must have one entry per row of X ({n}); got shape {mask.shape}")
    return mask.astype(bool)


class _BinnedKernelClassifier(ProbabilityMixin, _KernelClassifier):
    """Fit = percentile bins of the samples (2 distributed passes) + a solve on the bins.

    Rows with NaN/±inf are left out of the bins and counted (``_allow_nan``).
    """

    _allow_nan = True
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "omega": [domain("omega")],
        "kernel": KERNEL,
        "quantiles": ["array-like"],
        "standardize": ["boolean"],
        "calibration": CALIBRATION,
    }

    @_fit_context(prefer_skip_nested_validation=True)
    @calibrated_fit
    def fit(self, X: Any, y: Any, *, mask: Any = None) -> _BinnedKernelClassifier:
        """Bin ``X`` by per-feature quantiles and fit on the bins.

        Parameters
        ----------
        X : array-like, dask array or DataArray (sample, feature)
            Samples. Rows with a non-finite feature are left out and counted
            in ``fit_report_`` (``n_nonfinite``, and per feature in
            ``n_nonfinite_by_feature``); over ``bigkern.max_nonfinite_fraction``
            of them raises :class:`~bigkern.errors.DataQualityError`.
        y : array-like (n,)
            Two-class labels (e.g. -1 clear / 1 cloud).
        mask : array-like of bool (n,), optional
            Rows to use, e.g. ``y != 0`` to leave out unlabelled pixels.
        """
        t0 = time.perf_counter()
        arr, y = self._fit_input(X, y)
        names = getattr(self, "feature_names_in_", None)
        names = None if names is None else [str(f) for f in names]
        classes = None
        if isinstance(y, da.Array) or isinstance(mask, da.Array):
            # lazy labels: their two classes are found by the binning's first pass
            bins = percentile_bins(arr, y, quantiles=self.quantiles, mask=mask, features=names)
        else:
            used = np.ones(len(y), dtype=bool) if mask is None else _row_mask(mask, len(y))
            codes = np.zeros(len(y), dtype=np.int8)
            codes[used] = self._fit_classes(y[used])
            classes = self.classes_
            bins = percentile_bins(arr, codes, quantiles=self.quantiles, mask=used,
                                   classes=(0, 1), features=names)
        t_bins = time.perf_counter() - t0
        self.fit_bins(bins)
        if classes is not None:
            self.classes_ = classes
        self.fit_report_["seconds_binning"] = t_bins
        self.fit_report_["seconds_total"] = time.perf_counter() - t0
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_bins(self, bins: xr.Dataset) -> _BinnedKernelClassifier:
        """Fit on precomputed bins (from :func:`~bigkern.reduce.percentile_bins`).

        Reusing one set of bins across a parameter grid is how
        :func:`~bigkern.jobs.tuning.grid_search_bins` avoids re-reading the data.
        """
        if "positive" not in bins:
            raise LabelError("the bins carry no labels: bin with y to fit a classifier")
        t0 = time.perf_counter()
        self.calibration_ = None  # bins hold no held-out rows to calibrate on
        names = [str(f) for f in bins["feature"].values]
        _check_nonfinite(bins.attrs, names)
        self.classes_ = np.asarray(bins.attrs["classes"])
        if not all(n == f"f{i}" for i, n in enumerate(names)):
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_features_in_ = len(names)
        offset = bins["offset"].values if self.standardize else np.zeros(len(names))
        scale = bins["scale"].values if self.standardize else np.ones(len(names))
        Z = (bins["center"].values - offset) / scale
        basis, coef, intercept = self._solve(Z, bins)
        self.expansion_ = KernelExpansion.from_parts(basis, coef, float(intercept),
                                                       float(self.omega), offset, scale,
                                                       kernel=self.kernel)
        self.n_bins_ = int(bins.sizes["bin"])
        self.fit_report_ = {
            **without_per_feature({k: v for k, v in bins.attrs.items() if k.startswith("n_")}),
            "n_nonfinite_by_feature": per_feature_counts(bins.attrs, names),
            "passes": bins.attrs.get("passes", 0),
            "plan": bins.attrs.get("plan", ""),
            "n_basis": self.expansion_.n_basis,
            "seconds_solve": time.perf_counter() - t0,
        }
        return self


class BinnedKernelRidgeClassifier(_BinnedKernelClassifier):
    """Gaussian kernel regularization with L2 loss on percentile-bin centers (Shi & Yu, 5.2.1).

    With ``bin_target="fuzzy"`` (default) the targets are the share of the
    positive class in each bin and the loss is weighted by the bin counts:
    ``c = (K + λ W⁻¹)⁻¹ y`` with ``W = diag(count) / mean(count)``. With
    ``bin_target="majority"`` each bin counts once with its majority label:
    ``c = (K + λ I)⁻¹ y``. Targets are coded 0/1; a pixel is positive where
    ``Σ c_j k(x, center_j) > 0.5``.

    Parameters
    ----------
    omega : float
        Gaussian width ω, in standardized feature units.
    kernel : str, Kernel or Kernel subclass, default "gaussian"
        The kernel: ``"gaussian"``, ``"laplacian"``, ``"matern32"``, ``"matern52"``
        or a :class:`~bigkern.kernels.Kernel`; its width is ``omega``.
    lam : float
        Regularization λ.
    bin_target : {"fuzzy", "majority"}
        Bin targets (see above).
    quantiles : sequence of float
        Per-feature split points (deciles: up to 10**d bins).
    standardize : bool
        Center each feature on its median and divide by a robust σ
        (from the exact 10% and 90% quantiles).
    calibration : {None, "sigmoid", "isotonic"}, default None
        Probabilities: None gives none (no ``predict_proba``); "sigmoid" (Platt) or
        "isotonic" fit a calibrator of the decision values on a share of the rows held
        out of the fit (:mod:`bigkern.models.calibrated_fit`).

    Attributes
    ----------
    classes_ : ndarray (2,)
        (negative, positive) labels.
    expansion_ : KernelExpansion
        The fitted model.
    n_bins_ : int
        Occupied bins.
    fit_report_ : dict
        Row counts (``n_valid``, ``n_masked``, ``n_absent``, ``n_nonfinite``),
        ``n_nonfinite_by_feature`` (feature name → rows left out because that
        feature is non-finite, e.g. a masked fill value; absent rows are not
        counted there), bins, passes, timings. Not saved with the model.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import BinnedKernelRidgeClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.where((X**2).sum(axis=1) < 1.5, 1, -1)  # cloud (1) inside a circle, clear (-1)
    >>> model = BinnedKernelRidgeClassifier(omega=0.8, lam=0.01, quantiles=[0.25, 0.5, 0.75])
    >>> model = model.fit(X, y)  # the quartiles of two features: at most 16 bins
    >>> model.n_bins_, model.fit_report_["n_valid"]
    (16, 300)
    >>> bool(model.score(X, y) > 0.9)
    True
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **_BinnedKernelClassifier._parameter_constraints,
        "lam": [domain("lam")],
        "bin_target": [StrOptions({"fuzzy", "majority"})],
    }

    def __init__(
        self,
        omega: float = 0.8,
        lam: float = 0.1,
        *,
        kernel: Any = "gaussian",
        bin_target: str = "fuzzy",
        quantiles: Sequence[float] = DECILES,
        standardize: bool = True,
        calibration: str | None = None,
    ) -> None:
        self.omega = omega
        self.lam = lam
        self.kernel = kernel
        self.bin_target = bin_target
        self.quantiles = quantiles
        self.standardize = standardize
        self.calibration = calibration

    def _solve(self, Z: np.ndarray, bins: xr.Dataset) -> tuple[np.ndarray, np.ndarray, float]:
        K = as_kernel(self.kernel, float(self.omega))(Z, Z)
        if self.bin_target == "fuzzy":
            target = bins["fuzzy_label"].values
            counts = bins["count"].values.astype(np.float64)
            weights = counts / counts.mean()
        else:  # "majority"
            target = (bins["majority_label"].values == self.classes_[1]).astype(np.float64)
            weights = None
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
    kernel : str, Kernel or Kernel subclass, default "gaussian"
        The kernel: ``"gaussian"``, ``"laplacian"``, ``"matern32"``, ``"matern52"``
        or a :class:`~bigkern.kernels.Kernel`; its width is ``omega``.
    C : float
        SVM cost.
    weighted : bool
        Weight bins by their counts.
    quantiles, standardize, calibration
        As in :class:`BinnedKernelRidgeClassifier`.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import BinnedSVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.where((X**2).sum(axis=1) < 1.5, 1, -1)  # cloud (1) inside a circle, clear (-1)
    >>> y[rng.random(300) < 0.2] = 0  # unlabelled pixels, left out by the mask
    >>> model = BinnedSVC(omega=0.8, C=10.0).fit(X, y, mask=y != 0)
    >>> model.fit_report_["n_masked"], model.classes_.tolist()
    (56, [-1, 1])
    >>> bool(model.score(X[y != 0], y[y != 0]) > 0.9)
    True
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **_BinnedKernelClassifier._parameter_constraints,
        "C": [domain("C")],
        "weighted": ["boolean"],
    }

    def __init__(
        self,
        omega: float = 0.8,
        C: float = 1.0,
        *,
        kernel: Any = "gaussian",
        weighted: bool = True,
        quantiles: Sequence[float] = DECILES,
        standardize: bool = True,
        calibration: str | None = None,
    ) -> None:
        self.omega = omega
        self.C = C
        self.kernel = kernel
        self.weighted = weighted
        self.quantiles = quantiles
        self.standardize = standardize
        self.calibration = calibration

    def _solve(self, Z: np.ndarray, bins: xr.Dataset) -> tuple[np.ndarray, np.ndarray, float]:
        labels = bins["majority_label"].values
        if len(np.unique(labels)) < 2:
            raise LabelError(
                f"every bin has the majority label {labels[0]!r}: an SVM needs two classes; "
                "use BinnedKernelRidgeClassifier with fuzzy labels or more balanced data"
            )
        counts = bins["count"].values.astype(np.float64)
        weights = counts / counts.mean() if self.weighted else None
        kernel = as_kernel(self.kernel, float(self.omega))
        sign = 1.0 if np.unique(labels)[1] == self.classes_[1] else -1.0
        if type(kernel) is Gaussian:  # libsvm's own rbf
            svc = SVC(C=self.C, kernel="rbf", gamma=omega_to_gamma(self.omega))
            svc.fit(Z, labels, sample_weight=weights)
            support = svc.support_vectors_
        else:  # the kernel matrix of the bins' centres
            svc = SVC(C=self.C, kernel="precomputed")
            svc.fit(kernel(Z, Z), labels, sample_weight=weights)
            support = Z[svc.support_]
        self.n_support_ = int(svc.support_.size)
        return support, sign * svc.dual_coef_[0], sign * float(svc.intercept_[0])
