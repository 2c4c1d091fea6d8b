"""The smooth reduced SVM (Lee & Huang; Lee & Mangasarian's RSVM) on chunked data.

:class:`ReducedSVC` draws a stratified uniform reduced set Ã in one read
(:func:`bigkern.reduce.reduced.reduced_set.select_reduced_set`), then minimizes problem
(5) — the smooth squared-hinge SVM on the rectangular kernel ``K(A, Ã)`` over
*every* usable row — by Newton–Armijo, one distributed read of the data per
Newton iteration (:mod:`bigkern.reduce.reduced.svm`,
:mod:`bigkern.solvers.smooth_svm`). The fitted model is the Gaussian expansion
``f(x) = Σ_j v_j k(z(x), ã_j) − γ`` over the m̃ centers.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any, ClassVar

import dask.array as da
import numpy as np
import xarray as xr
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import StrOptions

from bigkern.cluster.compute import task_threads
from bigkern.errors import LabelError
from bigkern.features.scaling import robust_standardizer
from bigkern.kernels import GaussianBasis, GaussianExpansion
from bigkern.models._base import _KernelClassifier
from bigkern.models._constraints import (
    COUNT,
    FRACTION,
    NON_NEGATIVE,
    POSITIVE,
    REDUCED_SET_SIZE,
)
from bigkern.models._regressor_dataset import _attrs, _feature_names
from bigkern.models.kernel_regression import _KernelRegressor
from bigkern.reduce.passes import (
    as_row_chunked,
    int_counts,
    per_feature_counts,
    without_per_feature,
)
from bigkern.reduce.reduced.reduced_set import select_reduced_set
from bigkern.reduce.reduced.svm import ReducedNewtonPasses
from bigkern.solvers.smooth_svm import SmoothEpsilonInsensitive, SmoothHinge, newton_armijo

__all__ = ["ReducedSVC", "ReducedSVR"]

DEFAULT_MAX_SIZE = 500

#: The parameters of a reduced set drawn from the rows (the reduced and Nyström models).
_REDUCED_SET_CONSTRAINTS: dict[str, list[Any]] = {
    "omega": [POSITIVE],
    "size": [REDUCED_SET_SIZE, None],
    "fraction": [FRACTION, None],
    "standardize": ["boolean"],
    "random_state": ["random_state"],
}

#: The parameters of the smooth reduced SVMs' Newton–Armijo fit.
_NEWTON_CONSTRAINTS: dict[str, list[Any]] = {
    **_REDUCED_SET_CONSTRAINTS,
    "C": [POSITIVE],
    "smoothing": [POSITIVE],
    "tol": [POSITIVE],
    "max_iter": [COUNT],
    "hessian": [StrOptions({"float32", "float64"})],
}


def _plus_minus(block: np.ndarray, positive: Any) -> np.ndarray:
    """Labels as ±1 floats: +1 where equal to the positive class."""
    return np.where(np.asarray(block) == positive, 1.0, -1.0)


def fit_labels(est: Any, y: Any, mask: Any) -> tuple[Any, bool]:
    """Labels for the passes and whether they are lazy.

    numpy ``y`` with a numpy (or no) mask becomes 0/1 codes, ``classes_`` taken from
    the rows the mask keeps (the others may hold anything, e.g. 0 for unlabelled
    pixels); a dask ``y`` or mask stays lazy, and ``classes_`` comes from the draw
    (:meth:`ReducedSVC._classes_from_draw`).
    """
    if isinstance(mask, xr.DataArray):
        mask = mask.data
    if isinstance(y, da.Array) or isinstance(mask, da.Array):
        return y, True
    y = np.asarray(y)
    if mask is None:
        return est._fit_classes(y), False
    keep = np.asarray(mask)
    if keep.shape != y.shape or keep.dtype != bool:
        raise ValueError(f"mask must be a boolean array with one entry per row of X "
                         f"({y.shape[0]}); got {keep.dtype} of shape {keep.shape}")
    if not keep.any():
        raise ValueError(f"mask keeps none of the {y.shape[0]} rows")
    codes = np.zeros(y.shape, dtype=np.int8)
    codes[keep] = est._fit_classes(y[keep])
    return codes, False


def masked_targets(y: Any, mask: Any) -> Any:
    """Real targets with the masked-out entries of a numpy ``y`` set to 0.

    Those rows are left out of the fit, so their values (NaN where a target is
    unknown) must not fail the finite check of numpy targets; dask targets are
    only read where the mask keeps them.
    """
    if mask is None or isinstance(y, da.Array | xr.DataArray) \
            or isinstance(mask, da.Array | xr.DataArray):
        return y
    y, keep = np.asarray(y), np.asarray(mask)
    if keep.dtype != bool or keep.shape != y.shape[:1]:
        raise ValueError(f"mask must be a boolean array with one entry per row of X "
                         f"({y.shape[0]}); got {keep.dtype} of shape {keep.shape}")
    return np.where(keep if y.ndim == 1 else keep[:, None], y, 0)


def default_size(n_rows: int, size: int | None, fraction: float | None) -> int | None:
    """``size`` as given, or (neither ``size`` nor ``fraction`` given) 10% of the rows in
    ``[2, DEFAULT_MAX_SIZE]``."""
    if size is None and fraction is None:
        return min(n_rows, max(2, min(DEFAULT_MAX_SIZE, math.ceil(0.1 * n_rows))))
    return size


def reduced_basis(rs: Any, omega: float, standardize: bool
                  ) -> tuple[GaussianBasis, np.ndarray, np.ndarray]:
    """The Gaussian basis on the drawn rows (robustly standardized when asked)."""
    if standardize:
        offset, scale = robust_standardizer(rs.X)
    else:
        offset, scale = np.zeros(rs.X.shape[1]), np.ones(rs.X.shape[1])
    basis = GaussianBasis.checked((rs.X - offset) / scale, float(omega), rs.X.shape[1],
                                  offset, scale)
    return basis, offset, scale


def newton_fit(est: Any, Xd: Any, yd: Any, basis: GaussianBasis, loss: Any, md: Any = None
               ) -> tuple[Any, dict[str, int]]:
    """Newton–Armijo on the chunked rows (one read per pass); warns when not converged."""
    with ReducedNewtonPasses(Xd, yd, basis, loss, hessian_dtype=est.hessian,
                             mask=md) as passes:
        res = newton_armijo(passes, basis.n_basis + 1, C=float(est.C), tol=float(est.tol),
                            max_iter=int(est.max_iter), refine=passes.exact_hessian)
    if not res.converged:
        warnings.warn(f"{type(est).__name__} did not converge: {res.message} after "
                      f"{res.iterations} iterations (gradient norm {res.grad_norm:.3g}, "
                      f"{res.grad_norm / max(res.grad_norm0, 1e-300):.2g} of the initial)",
                      ConvergenceWarning, stacklevel=4)
    return res, passes.counts


def fit_report(est: Any, rs: Any, res: Any, counts: dict[str, int], n_basis: int, t0: float,
               t_draw: float) -> dict[str, Any]:
    """The ``fit_report_`` of a reduced Newton fit (see :class:`ReducedSVC`)."""
    names = getattr(est, "feature_names_in_", None)
    names = [f"f{i}" for i in range(est.n_features_in_)] if names is None else list(names)
    attrs = {k: v for k, v in int_counts(counts).items()
             if not k.startswith("n_first") and (k != "n_masked" or v)}
    return {
        **without_per_feature(attrs),
        "n_nonfinite_by_feature": per_feature_counts(attrs, names),
        "first_nonfinite": int(counts.get("first_nonfinite", -1)),
        "n_basis": n_basis,
        "n_duplicates": rs.n_duplicates,
        "drawn_per_class": None if rs.drawn_per_class is None else
        [int(c) for c in rs.drawn_per_class],
        "iterations": res.iterations,
        "passes": res.passes,
        "reads": res.passes + 1,
        "backtracked": res.backtracked,
        "steps": list(res.steps),
        "refined_at": res.refined_at,
        "grad_norm": res.grad_norm,
        "grad_norm0": res.grad_norm0,
        "converged": res.converged,
        "message": res.message,
        "objective": res.objective,
        "seconds_reduced_set": t_draw,
        "seconds_total": time.perf_counter() - t0,
    }


def expansion_regressor_dataset(model: Any, widths: Any = None, cv_scores: Any = None,
                                **fitted: Any) -> xr.Dataset:
    """A fitted expansion regressor in the OHT/RM layout of
    :mod:`bigkern.models._regressor_dataset` (so ``regressor_from_dataset`` loads it):
    ``basis``, ``coef``, ``offset``, ``scale``, ``cv_score (width)``, attrs ``omega``,
    ``intercept``; ``fitted`` scalars go to ``fitted_json``."""
    import json

    widths = np.atleast_1d(np.asarray(model.omega_ if widths is None else widths, dtype=float))
    scores = (np.full(widths.shape, np.nan) if cv_scores is None
              else np.asarray(cv_scores, dtype=np.float64))
    attrs = _attrs(model, omega=float(model.omega_), intercept=float(model.intercept_))
    attrs["fitted_json"] = json.dumps(fitted, sort_keys=True)
    return xr.Dataset(
        {"basis": (("basis", "feature"), np.asarray(model.centers_, dtype=np.float64)),
         "coef": ("basis", np.asarray(model.coef_, dtype=np.float64)),
         "offset": ("feature", np.asarray(model.offset_, dtype=np.float64)),
         "scale": ("feature", np.asarray(model.scale_, dtype=np.float64)),
         "cv_score": ("width", scores)},
        coords={"feature": _feature_names(model), "width": widths}, attrs=attrs)


class ReducedSVC(_KernelClassifier):
    """Smooth reduced support vector classifier (RSVM, Lee & Huang's problem (5)).

    Minimizes over ``u = (v, γ)``::

        C/2 Σ_i p(1 − y_i (K(A_i, Ã) v − γ), α)² + ½ (‖v‖² + γ²)

    on every usable row ``A_i`` of the data, with ``y_i = ±1``, the smooth plus
    function ``p`` (6) and a reduced set Ã drawn uniformly within each class.
    Newton–Armijo needs one read of the data per iteration (the Armijo step
    sizes are batched into that read; see :mod:`bigkern.solvers.smooth_svm`).

    Parameters
    ----------
    omega : float
        Gaussian width ω (scikit-learn's ``gamma = 1 / (2 ω²)``), in standardized
        units when ``standardize``.
    C : float
        Weight of the data term (the paper's ν); note it multiplies a *sum* over all
        rows. Lee & Huang suggest a larger value than for a full-kernel SVM.
    smoothing : float
        Smoothing α of ``p`` (``p → (·)₊`` as α → ∞).
    size : int, optional
        Centers m̃ to draw. Default (with ``fraction`` None too): 10% of the rows,
        at least 2 and at most 500 (``DEFAULT_MAX_SIZE``; a pass costs ``n·m̃²``).
    fraction : float, optional
        Instead of ``size``: ``ceil(fraction · n)`` centers.
    stratified : bool
        Draw within each class, in proportion to the class sizes (Remark 2).
    standardize : bool
        Center each feature on the median of Ã and divide by a robust σ (10%/90%
        quantiles of Ã).
    tol : float
        Stop when ``‖∇F‖ ≤ tol · ‖∇F(0)‖``.
    max_iter : int
        Most Newton iterations.
    hessian : {"float64", "float32"}
        Precision of the Hessian's products (``syrk``, ``n·m̃²`` flops per pass, most of
        the work). ``"float32"`` runs them on float32 copies of the scaled kernel
        blocks (about 2× faster products, 20% faster fits at 10^5 × 500) and switches
        to float64 for the last iterations; the gradient, hence the solution, stays
        float64. Its fits then agree across chunkings to the convergence tolerance
        rather than to round-off, so the default is ``"float64"``.
    random_state : int, RandomState or None
        Seed of the reduced set (the same seed gives the same Ã, and the same model,
        for any chunking and number of workers).

    Attributes
    ----------
    classes_ : ndarray (2,)
        (negative, positive) labels.
    expansion_ : GaussianExpansion
        Centers Ã (standardized), coefficients ``v``, intercept ``−γ``.
    reduced_index_ : ndarray of int
        Global row numbers of the centers.
    fit_report_ : dict
        ``iterations``, ``passes`` (Newton reads), ``reads`` (with the draw of Ã),
        ``backtracked``, ``steps``, ``grad_norm``, ``grad_norm0``, ``converged``,
        ``objective``, ``n_basis``, ``n_duplicates``, row counts (``n_rows``,
        ``n_valid``, ``n_absent``, ``n_nonfinite``, ``n_nonfinite_y``,
        ``n_nonfinite_by_feature``), timings. Not saved with the model.

    Notes
    -----
    Rows with a non-finite feature are left out of the fit and counted (over
    ``bigkern.max_nonfinite_fraction`` of the present rows is an error); dask
    input stays lazy and is read once to draw Ã and once per Newton pass.

    Examples
    --------
    The same seed gives the same model from a dask array in any chunks:

    >>> import dask.array as da
    >>> import numpy as np
    >>> from bigkern import ReducedSVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.where((X**2).sum(axis=1) < 1.5, 1, -1)  # cloud (1) inside a circle, clear (-1)
    >>> model = ReducedSVC(omega=1.0, C=10.0, size=30, random_state=0).fit(X, y)
    >>> model.expansion_.n_basis, bool(model.score(X, y) > 0.9)
    (30, True)
    >>> Xd, yd = da.from_array(X, chunks=(100, 2)), da.from_array(y, chunks=100)
    >>> lazy = ReducedSVC(omega=1.0, C=10.0, size=30, random_state=0).fit(Xd, yd)
    >>> bool(np.allclose(lazy.decision_function(X), model.decision_function(X)))
    True
    """

    _allow_nan = True
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **_NEWTON_CONSTRAINTS,
        "stratified": ["boolean"],
    }

    def __init__(
        self,
        omega: float = 1.0,
        C: float = 1.0,
        *,
        smoothing: float = 5.0,
        size: int | None = None,
        fraction: float | None = None,
        stratified: bool = True,
        standardize: bool = True,
        tol: float = 1e-8,
        max_iter: int = 50,
        hessian: str = "float64",
        random_state: Any = None,
    ) -> None:
        self.omega = omega
        self.C = C
        self.smoothing = smoothing
        self.size = size
        self.fraction = fraction
        self.stratified = stratified
        self.standardize = standardize
        self.tol = tol
        self.max_iter = max_iter
        self.hessian = hessian
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, *, mask: Any = None) -> ReducedSVC:
        """Fit on ``X`` (n, d) — numpy, dask or a DataArray — and two-class labels ``y``.

        Parameters
        ----------
        X : array-like, dask array or DataArray (sample, feature), shape (n, d)
            Samples; dask input stays lazy.
        y : array-like or dask array, shape (n,)
            Labels of two classes (any dtype) where ``mask`` is true.
        mask : array-like or dask array of bool, shape (n,), optional
            Rows to fit on, e.g. ``label != 0`` for the labelled pixels of
            :func:`bigkern.io.samples.stack_samples`; the others are left out and
            counted (``n_masked``), their labels never looked at.

        Returns
        -------
        self
        """
        t0 = time.perf_counter()
        loss = SmoothHinge(float(self.smoothing))
        arr, y = self._fit_input(X, y)
        labels, lazy_labels = fit_labels(self, y, mask)
        Xd, yd, md = as_row_chunked(arr, labels, mask, min_chunks=task_threads())
        n_rows = int(Xd.shape[0])
        rs = select_reduced_set(Xd, yd, size=default_size(n_rows, self.size, self.fraction),
                                fraction=self.fraction, stratified=self.stratified,
                                random_state=self.random_state, mask=md,
                                features=getattr(self, "feature_names_in_", None))
        if lazy_labels:
            self._classes_from_draw(rs)
            ypm = yd.map_blocks(_plus_minus, positive=self.classes_[1], dtype=np.float64)
        else:
            if rs.class_counts is not None and len(rs.class_counts) < 2:
                raise LabelError(f"the usable rows have one class only: {type(self).__name__} "
                                 f"needs samples of two classes")
            ypm = yd.map_blocks(_plus_minus, positive=1, dtype=np.float64)
        t_draw = time.perf_counter() - t0
        basis, offset, scale = reduced_basis(rs, self.omega, self.standardize)
        res, counts = newton_fit(self, Xd, ypm, basis, loss, md)
        v, gamma = res.u[:-1], float(res.u[-1])
        self.expansion_ = GaussianExpansion.from_parts(basis.centers, v, -gamma,
                                                       float(self.omega), offset, scale)
        self.reduced_index_ = rs.index
        self.n_iter_ = res.iterations
        self.fit_report_ = fit_report(self, rs, res, counts, basis.n_basis, t0, t_draw)
        return self

    def _classes_from_draw(self, rs: Any) -> None:
        """``classes_`` from the labels the draw saw (lazy ``y``); exactly two are needed."""
        if rs.classes is None or len(rs.classes) > 2:
            n = "many" if rs.classes is None else len(rs.classes)
            raise LabelError(f"Only binary classification is supported: y has {n} classes "
                             f"among the usable rows; {type(self).__name__} takes two classes "
                             f"(mask out the others, e.g. unlabelled pixels)")
        if len(rs.classes) < 2:
            raise LabelError(f"y has one class only ({rs.classes.tolist()}): "
                             f"{type(self).__name__} needs samples of two classes")
        self.classes_ = np.asarray(rs.classes)


class ReducedSVR(_KernelRegressor):
    """Smooth reduced support vector regression (ε-SSVR on the reduced kernel).

    Minimizes over ``u = (v, γ)``::

        C/2 Σ_i [p(e_i − ε, α)² + p(−e_i − ε, α)²] + ½ (‖v‖² + γ²),
        e_i = y_i − (K(A_i, Ã) v − γ),

    the smooth squared ε-insensitive loss (→ ``½ (|e| − ε)₊²`` as α → ∞) over every
    usable row, by the Newton–Armijo of :class:`ReducedSVC`: one read of the data
    per Newton iteration, Ã a uniform random draw of the rows.

    Parameters
    ----------
    omega, C, smoothing, size, fraction, standardize, tol, max_iter, hessian, random_state
        As for :class:`ReducedSVC` (no stratification: there are no classes).
    epsilon : float
        Half-width ε ≥ 0 of the insensitive tube, in the units of ``y``.

    Attributes
    ----------
    centers_, coef_, intercept_, omega_, offset_, scale_
        The fitted expansion ``f(x) = Σ_j coef_j k(z(x), c_j) + intercept``
        (``expansion_``, a float64 :class:`~bigkern.kernels.GaussianExpansion`).
    reduced_index_ : ndarray of int
        Global row numbers of the centers.
    n_iter_ : int
        Newton iterations.
    fit_report_ : dict
        As for :class:`ReducedSVC`. Not saved with the model.

    Notes
    -----
    Rows with a non-finite feature or target are left out and counted (over
    ``bigkern.max_nonfinite_fraction`` of the present rows is an error); at
    predict time such a row gets NaN.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import ReducedSVR
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(300, 1))
    >>> truth = np.sin(2 * np.pi * X[:, 0])
    >>> y = truth + 0.1 * rng.standard_normal(300)
    >>> model = ReducedSVR(omega=0.5, C=100.0, epsilon=0.05, size=30, random_state=0).fit(X, y)
    >>> model.n_basis_, model.fit_report_["converged"]
    (30, True)
    >>> bool(np.abs(model.predict(X) - truth).mean() < 0.1)  # close to the noiseless curve
    True
    """

    _allow_nan = True
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **_NEWTON_CONSTRAINTS,
        "epsilon": [NON_NEGATIVE],
    }

    def __init__(
        self,
        omega: float = 1.0,
        C: float = 1.0,
        *,
        epsilon: float = 0.1,
        smoothing: float = 5.0,
        size: int | None = None,
        fraction: float | None = None,
        standardize: bool = True,
        tol: float = 1e-8,
        max_iter: int = 50,
        hessian: str = "float64",
        random_state: Any = None,
    ) -> None:
        self.omega = omega
        self.C = C
        self.epsilon = epsilon
        self.smoothing = smoothing
        self.size = size
        self.fraction = fraction
        self.standardize = standardize
        self.tol = tol
        self.max_iter = max_iter
        self.hessian = hessian
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, *, mask: Any = None) -> ReducedSVR:
        """Fit on ``X`` (n, d) — numpy, dask or a DataArray — and real targets ``y`` (n,).

        ``mask`` (n,) of bool, optional, keeps the rows to fit on (as for
        :meth:`ReducedSVC.fit`); the others are counted as ``n_masked``.

        Returns
        -------
        self
        """
        t0 = time.perf_counter()
        loss = SmoothEpsilonInsensitive(float(self.smoothing), float(self.epsilon))
        arr, y = self._fit_input(X, masked_targets(y, mask), y_numeric=True)
        if not isinstance(y, da.Array):
            y = np.asarray(y, dtype=np.float64)
        Xd, yd, md = as_row_chunked(arr, y, mask, min_chunks=task_threads())
        n_rows = int(Xd.shape[0])
        if n_rows < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 samples to fit; got "
                             f"n_samples={n_rows}")
        rs = select_reduced_set(Xd, None, size=default_size(n_rows, self.size, self.fraction),
                                fraction=self.fraction, random_state=self.random_state,
                                mask=md, features=getattr(self, "feature_names_in_", None))
        t_draw = time.perf_counter() - t0
        basis, offset, scale = reduced_basis(rs, self.omega, self.standardize)
        res, counts = newton_fit(self, Xd, yd.astype(np.float64), basis, loss, md)
        self.centers_, self.coef_ = basis.centers, res.u[:-1].copy()
        self.intercept_ = -float(res.u[-1])
        self.omega_, self.offset_, self.scale_ = float(self.omega), offset, scale
        self.cv_scores_ = np.full(1, np.nan)
        self.reduced_index_ = rs.index
        self.n_iter_ = res.iterations
        self.fit_report_ = fit_report(self, rs, res, counts, basis.n_basis, t0, t_draw)
        return self

    def to_dataset(self) -> Any:
        """The fitted model as a small :class:`xarray.Dataset` (the OHT/RM regressors' layout:
        ``basis``, ``coef``, ``offset``, ``scale``, attrs ``omega`` and ``intercept``)."""
        return expansion_regressor_dataset(self, n_iter_=int(self.n_iter_))
