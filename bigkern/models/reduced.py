"""The smooth reduced SVM (Lee & Huang; Lee & Mangasarian's RSVM) on chunked data.

:class:`ReducedSVC` draws a stratified uniform reduced set Ã in one read
(:func:`bigkern.reduce.reduced_set.select_reduced_set`), then minimizes problem
(5) — the smooth squared-hinge SVM on the rectangular kernel ``K(A, Ã)`` over
*every* usable row — by Newton–Armijo, one distributed read of the data per
Newton iteration (:mod:`bigkern.reduce.reduced_svm`,
:mod:`bigkern.solvers.smooth_svm`). The fitted model is the Gaussian expansion
``f(x) = Σ_j v_j k(z(x), ã_j) − γ`` over the m̃ centers.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import dask.array as da
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from bigkern.errors import LabelError
from bigkern.kernels import GaussianBasis, GaussianExpansion, omega_to_gamma
from bigkern.models._base import _KernelClassifier
from bigkern.reduce.passes import as_row_chunked, per_feature_counts, without_per_feature
from bigkern.reduce.reduced_set import select_reduced_set
from bigkern.reduce.reduced_svm import ReducedNewtonPasses
from bigkern.solvers.smooth_svm import SmoothHinge, newton_armijo

__all__ = ["ReducedSVC"]

_PROBIT_90 = 1.2815515655446004  # the standard normal's 90% quantile
DEFAULT_MAX_SIZE = 1000


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number) \
            or not math.isfinite(float(value)) or not float(value) > 0:
        raise ValueError(f"{name} must be a positive finite number; got {value!r}")
    return float(value)


def _plus_minus(block: np.ndarray, positive: Any) -> np.ndarray:
    """Labels as ±1 floats: +1 where equal to the positive class."""
    return np.where(np.asarray(block) == positive, 1.0, -1.0)


def robust_standardizer(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Median and robust σ ((q90 − q10) / 2.563) per column; σ = 1 where it is 0."""
    q10, med, q90 = np.quantile(np.asarray(rows, dtype=np.float64), [0.1, 0.5, 0.9], axis=0)
    scale = (q90 - q10) / (2 * _PROBIT_90)
    return med, np.where(scale > 0, scale, 1.0)


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
    alpha : float
        Smoothing α of ``p`` (``p → (·)₊`` as α → ∞).
    size : int, optional
        Centers m̃ to draw. Default (with ``fraction`` None too): 10% of the rows,
        at least 2 and at most 1000.
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
    """

    _allow_nan = True

    def __init__(
        self,
        omega: float = 1.0,
        C: float = 1.0,
        *,
        alpha: float = 5.0,
        size: int | None = None,
        fraction: float | None = None,
        stratified: bool = True,
        standardize: bool = True,
        tol: float = 1e-8,
        max_iter: int = 50,
        random_state: Any = None,
    ) -> None:
        self.omega = omega
        self.C = C
        self.alpha = alpha
        self.size = size
        self.fraction = fraction
        self.stratified = stratified
        self.standardize = standardize
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    def _checked_params(self) -> SmoothHinge:
        omega_to_gamma(_positive("omega", self.omega))
        _positive("C", self.C)
        _positive("tol", self.tol)
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, int | np.integer) \
                or self.max_iter < 1:
            raise ValueError(f"max_iter must be a positive int; got {self.max_iter!r}")
        return SmoothHinge(_positive("alpha", self.alpha))

    def _size(self, n_rows: int) -> int | None:
        if self.size is None and self.fraction is None:
            return min(n_rows, max(2, min(DEFAULT_MAX_SIZE, math.ceil(0.1 * n_rows))))
        return self.size

    def fit(self, X: Any, y: Any) -> ReducedSVC:
        """Fit on ``X`` (n, d) — numpy, dask or a DataArray — and two-class labels ``y``.

        Returns
        -------
        self
        """
        t0 = time.perf_counter()
        loss = self._checked_params()
        arr, y = self._fit_input(X, y)
        lazy_labels = isinstance(y, da.Array)
        if not lazy_labels:
            codes = self._fit_classes(np.asarray(y))
            labels: Any = codes
        else:
            labels = y
        Xd, yd, _ = as_row_chunked(arr, labels)
        n_rows = int(Xd.shape[0])
        rs = select_reduced_set(Xd, yd, size=self._size(n_rows), fraction=self.fraction,
                                stratified=self.stratified, random_state=self.random_state)
        if lazy_labels:
            self._classes_from_draw(rs)
            ypm = yd.map_blocks(_plus_minus, positive=self.classes_[1], dtype=np.float64)
        else:
            if rs.class_counts is not None and len(rs.class_counts) < 2:
                raise LabelError(f"the usable rows have one class only: {type(self).__name__} "
                                 f"needs samples of two classes")
            ypm = yd.map_blocks(_plus_minus, positive=1, dtype=np.float64)
        t_draw = time.perf_counter() - t0
        if self.standardize:
            offset, scale = robust_standardizer(rs.X)
        else:
            offset, scale = np.zeros(rs.X.shape[1]), np.ones(rs.X.shape[1])
        basis = GaussianBasis.checked((rs.X - offset) / scale, float(self.omega),
                                      rs.X.shape[1], offset, scale)
        with ReducedNewtonPasses(Xd, ypm, basis, loss) as passes:
            res = newton_armijo(passes, basis.n_basis + 1, C=float(self.C), tol=float(self.tol),
                                max_iter=int(self.max_iter))
        if not res.converged:
            warnings.warn(f"{type(self).__name__} did not converge: {res.message} after "
                          f"{res.iterations} iterations (gradient norm {res.grad_norm:.3g}, "
                          f"{res.grad_norm / max(res.grad_norm0, 1e-300):.2g} of the initial)",
                          ConvergenceWarning, stacklevel=2)
        v, gamma = res.u[:-1], float(res.u[-1])
        self.expansion_ = GaussianExpansion.from_parts(basis.centers, v, -gamma,
                                                       float(self.omega), offset, scale)
        self.reduced_index_ = rs.index
        self.n_iter_ = res.iterations
        self._report(rs, res, passes.counts, t0, t_draw)
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

    def _report(self, rs: Any, res: Any, counts: dict[str, int], t0: float,
                t_draw: float) -> None:
        names = getattr(self, "feature_names_in_", None)
        names = [f"f{i}" for i in range(self.n_features_in_)] if names is None else list(names)
        attrs = {f"n_{k}": int(v) for k, v in counts.items() if not k.startswith("first")}
        self.fit_report_ = {
            **without_per_feature(attrs),
            "n_nonfinite_by_feature": per_feature_counts(attrs, names),
            "first_nonfinite": int(counts.get("first_nonfinite", -1)),
            "n_basis": self.expansion_.n_basis,
            "n_duplicates": rs.n_duplicates,
            "drawn_per_class": None if rs.drawn_per_class is None else
            [int(c) for c in rs.drawn_per_class],
            "iterations": res.iterations,
            "passes": res.passes,
            "reads": res.passes + 1,
            "backtracked": res.backtracked,
            "steps": list(res.steps),
            "grad_norm": res.grad_norm,
            "grad_norm0": res.grad_norm0,
            "converged": res.converged,
            "message": res.message,
            "objective": res.objective,
            "seconds_reduced_set": t_draw,
            "seconds_total": time.perf_counter() - t0,
        }
