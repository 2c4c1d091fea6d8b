"""Percentile-bin classifiers (Shi & Yu, 5.2): distributed bins + a small kernel solve.

Two classes are fitted as in the paper. k > 2 classes are fitted one-vs-rest
on the same bins, with no further read of the rows: the bins count each class
per cell (``class_count``), and each class's problem takes its own count on
one side and the rest of the bin on the other.

This module holds what the binned classifiers share (the fit from bins, the class
counts) and :class:`BinnedKernelRidgeClassifier`; the SVM is
:mod:`bigkern.models.binned_svc`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import dask.array as da
import numpy as np
import xarray as xr
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions

from bigkern.errors import LabelError
from bigkern.kernels import KernelExpansion, as_kernel
from bigkern.models._base import _check_nonfinite, _KernelClassifier
from bigkern.models._constraints import KERNEL, domain
from bigkern.models.calibrated_fit import CALIBRATION, ProbabilityMixin, calibrated_fit
from bigkern.reduce.binning.percentile import percentile_bins_parts
from bigkern.reduce.binning.quantiles import DECILES
from bigkern.reduce.passes import per_feature_counts, without_per_feature
from bigkern.solvers.kernel_ridge import solve_weighted_kernel_ridge

__all__ = ["BinnedKernelRidgeClassifier", "bin_class_counts"]


def _row_mask(mask: Any, n: int) -> np.ndarray:
    mask = np.asarray(mask.data if isinstance(mask, xr.DataArray) else mask)
    if mask.shape != (n,):
        raise ValueError(f"mask must have one entry per row of X ({n}); got shape {mask.shape}")
    return mask.astype(bool)


def bin_class_counts(bins: xr.Dataset) -> np.ndarray:
    """Rows of each class per bin, (bins, k), in the order of ``bins.attrs["classes"]``.

    From ``class_count`` (k > 2 classes), or for two classes ``count − positive``
    and ``positive``.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.models.binned import bin_class_counts
    >>> from bigkern.reduce import bin_statistics
    >>> X = np.array([[0.0], [0.1], [1.0], [1.1], [1.2]])
    >>> bins = bin_statistics(X, np.array([0, 1, 1, 1, 0]), edges=[[0.5]], classes=(0, 1))
    >>> bin_class_counts(bins).tolist()
    [[1, 1], [1, 2]]
    """
    return _class_counts(bins.variables)


def _class_counts(arrays: Mapping[str, Any]) -> np.ndarray:
    """:func:`bin_class_counts` of the bins' variables by name (numpy arrays or Variables)."""
    if "class_count" in arrays:
        return np.asarray(arrays["class_count"], dtype=np.int64)
    if "positive" not in arrays:
        raise LabelError("the bins carry no labels: bin with y to fit a classifier")
    positive = np.asarray(arrays["positive"], dtype=np.int64)
    return np.stack([np.asarray(arrays["count"], dtype=np.int64) - positive, positive],
                    axis=1)


def _check_every_class_present(counts: np.ndarray, classes: np.ndarray) -> None:
    """A class with no row in the bins cannot be fitted: :class:`LabelError` naming it."""
    absent = np.flatnonzero(counts.sum(axis=0) == 0)
    if len(absent):
        names = ", ".join(repr(c) for c in classes[absent].tolist())
        raise LabelError(
            f"class {names} has no row in the bins (of {int(counts.sum())} rows binned): a "
            f"classifier cannot learn a class it never sees; give classes= without it, or bin "
            f"rows that hold it")


def _bin_arrays(data_vars: dict[str, Any], coords: dict[str, Any]) -> dict[str, Any]:
    """The bins' variables and coordinates by name, as arrays, from their parts
    (:func:`~bigkern.reduce.binning.percentile.percentile_bins_parts`): what a fit reads
    of a bins Dataset's ``variables``, without building the Dataset."""
    return {**{k: v[1] for k, v in data_vars.items()},
            **{k: np.asarray(v) for k, v in coords.items()}}


def _named_classes(arrays: dict[str, Any], attrs: dict[str, Any], classes: np.ndarray
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Bins of class codes ``0 … k−1`` relabelled with the ``classes`` they stand for."""
    arrays = {**arrays, "class": classes,
              "majority_label": classes[np.asarray(arrays["majority_label"])]}
    return arrays, {**attrs, "classes": classes.tolist()}


class _BinnedKernelClassifier(ProbabilityMixin, _KernelClassifier):
    """Fit = percentile bins of the samples (2 distributed passes) + a solve on the bins.

    Rows with NaN/±inf are left out of the bins and counted (``_allow_nan``).
    Two classes or more: k > 2 are fitted one-vs-rest on the same bins.
    """

    _allow_nan = True
    _binary_only = False
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
            Labels of two classes (e.g. -1 clear / 1 cloud) or more (any
            integers or strings); a dask ``y`` has its classes found by the
            binning's first read.
        mask : array-like of bool (n,), optional
            Rows to use, e.g. ``y != 0`` to leave out unlabelled pixels.
        """
        t0 = time.perf_counter()
        arr, y = self._fit_input(X, y)
        names = getattr(self, "feature_names_in_", None)
        names = None if names is None else [str(f) for f in names]
        classes = None
        if isinstance(y, da.Array) or isinstance(mask, da.Array):
            # lazy labels: their classes are found by the binning's first pass
            parts = percentile_bins_parts(arr, y, quantiles=self.quantiles, mask=mask,
                                          features=names)
        else:
            if mask is None:
                used = np.ones(len(y), dtype=bool)
                codes = self._fit_classes(y)
            else:
                used = _row_mask(mask, len(y))
                used_codes = self._fit_classes(y[used])
                codes = np.zeros(len(y), dtype=used_codes.dtype)
                codes[used] = used_codes
            classes = self.classes_
            parts = percentile_bins_parts(arr, codes, quantiles=self.quantiles, mask=used,
                                          classes=tuple(range(len(classes))), features=names)
        t_bins = time.perf_counter() - t0
        arrays, attrs = _bin_arrays(parts[0], parts[1]), parts[2]
        if classes is not None and len(classes) > 2:
            arrays, attrs = _named_classes(arrays, attrs, classes)
        self._fit_bin_arrays(arrays, attrs)
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
        Bins of two classes (``positive``) give one decision value per row; bins
        of k > 2 (``class_count``) give k one-vs-rest columns, in the order of
        ``classes_`` (the bins' classes, sorted when they sort). A class with no
        row in the bins raises :class:`~bigkern.errors.LabelError` naming it.
        """
        arrays = dict(bins.variables)
        if "feature" not in arrays:  # a dimension without coordinate: features 0 … d−1
            arrays["feature"] = bins["feature"].variable
        return self._fit_bin_arrays(arrays, bins.attrs)

    def _fit_bin_arrays(self, arrays: Mapping[str, Any], attrs: Mapping[str, Any]
                        ) -> _BinnedKernelClassifier:
        """:meth:`fit_bins` on the bins' variables and coordinates by name (a Dataset's
        ``variables``, or numpy arrays) and attrs."""
        counts = _class_counts(arrays)
        t0 = time.perf_counter()
        self.calibration_ = None  # bins hold no held-out rows to calibrate on
        names = [str(f) for f in np.asarray(arrays["feature"])]
        _check_nonfinite(attrs, names)
        classes = np.asarray(attrs["classes"])
        if len(classes) > 2:  # one-vs-rest columns in scikit-learn's order of classes_
            try:
                order = np.argsort(classes, kind="stable")
            except TypeError:  # classes that do not sort: the bins' order
                order = np.arange(len(classes))
            classes, counts = classes[order], counts[:, order]
        _check_every_class_present(counts, classes)
        self.classes_ = classes
        if not all(n == f"f{i}" for i, n in enumerate(names)):
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_features_in_ = len(names)
        offset = np.asarray(arrays["offset"]) if self.standardize else np.zeros(len(names))
        scale = np.asarray(arrays["scale"]) if self.standardize else np.ones(len(names))
        Z = (np.asarray(arrays["center"]) - offset) / scale
        if len(classes) == 2:
            basis, coef, intercept = self._solve(Z, arrays)
        else:
            basis, coef, intercept = self._solve_one_vs_rest(Z, arrays, counts)
        self.expansion_ = KernelExpansion.from_parts(basis, coef, intercept,
                                                       float(self.omega), offset, scale,
                                                       kernel=self.kernel)
        self.n_bins_ = len(counts)
        self.fit_report_ = {
            **without_per_feature({k: v for k, v in attrs.items() if k.startswith("n_")}),
            "n_nonfinite_by_feature": per_feature_counts(attrs, names),
            "passes": attrs.get("passes", 0),
            "plan": attrs.get("plan", ""),
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

    k > 2 classes are k one-vs-rest problems on the same bins, solved together:
    one Cholesky factorization of ``K + λW⁻¹`` (the same matrix for every class)
    and k right-hand sides, column j the share of class j in each bin (fuzzy)
    or whether class j is the bin's most frequent (majority; ties go to the
    later class). Each column equals the binary model fitted on bins whose
    positives are class j's rows. ``decision_function`` gives (n, k) values
    ``f_j(x) − 0.5`` and ``predict`` the class of the largest. The decision
    values are fitted class shares minus one half, not probabilities: they
    need not lie in [−0.5, 0.5] nor sum to anything.

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
    classes_ : ndarray (k,)
        The labels, sorted; for two, (negative, positive).
    expansion_ : KernelExpansion
        The fitted model: coefficients (bins,) for two classes, (bins, k) for more.
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

    Three classes (bands across the plane), one-vs-rest on the same bins:

    >>> bands = np.digitize(X[:, 0] + X[:, 1], [-1.0, 1.0])  # classes 0, 1, 2
    >>> model = model.fit(X, bands)
    >>> model.classes_.tolist(), model.decision_function(X[:4]).shape
    ([0, 1, 2], (4, 3))
    >>> bool(model.score(X, bands) > 0.9)
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

    def _solve(self, Z: np.ndarray, bins: Mapping[str, Any]
               ) -> tuple[np.ndarray, np.ndarray, float]:
        K = as_kernel(self.kernel, float(self.omega))(Z, Z)
        if self.bin_target == "fuzzy":
            target = np.asarray(bins["fuzzy_label"])
            counts = np.asarray(bins["count"]).astype(np.float64)
            weights = counts / counts.mean()
        else:  # "majority"
            target = (np.asarray(bins["majority_label"]) == self.classes_[1]).astype(np.float64)
            weights = None
        coef = solve_weighted_kernel_ridge(K, target, self.lam, weights)
        return Z, coef, -0.5

    def _solve_one_vs_rest(self, Z: np.ndarray, bins: Mapping[str, Any], counts: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """k one-vs-rest problems on one factorization of ``K + λW⁻¹``: k right-hand sides.

        Column j's targets are class j's share of each bin (fuzzy) or whether it
        is the bin's majority label; each is what the binary model fits on bins
        whose positives are class j's rows.
        """
        K = as_kernel(self.kernel, float(self.omega))(Z, Z)
        n = counts.sum(axis=1).astype(np.float64)
        if self.bin_target == "fuzzy":
            target = counts / n[:, None]
            weights = n / n.mean()
        else:  # "majority": the most frequent class, ties to the later (as the bins')
            k = counts.shape[1]
            target = np.zeros(counts.shape)
            target[np.arange(len(counts)), k - 1 - np.argmax(counts[:, ::-1], axis=1)] = 1.0
            weights = None
        coef = solve_weighted_kernel_ridge(K, target, self.lam, weights)
        return Z, coef, np.full(counts.shape[1], -0.5)
