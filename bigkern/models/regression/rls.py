"""Gaussian regularized least squares with the whole λ path, exact LOO and a precision check.

Lippert & Rifkin (NIPS 2005): ``min_f (1/n) Σ (f(x_i) − y_i)² + λ‖f‖²_K`` with the
Gaussian kernel ``K(x, x') = exp(−‖x − x'‖² / (2σ²))`` is solved by
``f(x) = Σ_i c_i K(x_i, x)``, ``(K + λnI) c = y``. With ``σ = s`` and
``λ = C s^−(2k+1)``, ``f`` tends as ``s → ∞`` to the degree-k polynomial of least
empirical squared error (their Theorem 2) — a regime that needs ``λ`` far below
machine epsilon and therefore more than double precision.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from bigkern.errors import BigkernWarning
from bigkern.kernels import KernelExpansion, gaussian_kernel
from bigkern.models._base import BigkernRegressor
from bigkern.models._constraints import candidates, domain
from bigkern.solvers.rls import (
    DoublePrecisionWarning,
    ExtendedPrecisionWarning,
    RidgeEigensystem,
    condition_estimate,
    double_resolves,
)
from bigkern.solvers.rls_extended import extended_solve

__all__ = ["GaussianRLS"]

_PRECISIONS = ("auto", "double", "extended")


class GaussianRLS(BigkernRegressor):
    """Gaussian RLS ``(K + λnI) c = y``, λ by exact leave-one-out over a grid.

    The kernel is Lippert & Rifkin's ``K(x, x') = exp(−‖x − x'‖² / (2σ²))`` — σ is
    the width ω of :func:`bigkern.kernels.gaussian_kernel` (scikit-learn's
    ``gamma = 1/(2σ²)``), and ``λ`` multiplies ``n`` on the diagonal (the ``1/n`` of
    the empirical risk), so ``ridge = λn``. There is no intercept.

    Parameters
    ----------
    omega : float, default 1.0
        Gaussian width ω > 0, ``k(x, x') = exp(−‖x − x'‖² / (2ω²))`` (the paper's σ;
        scikit-learn's ``gamma`` is ``1 / (2ω²)``).
    lam : float or array_like of float, default 1e-3
        Regularization λ > 0, or a grid of candidates: the whole path and the exact
        LOO errors then come from one eigendecomposition of ``K`` (double) and λ
        minimizing the LOO mean squared error is kept (the first one on ties).
    precision : {"auto", "double", "extended"}, default "auto"
        "double" solves in float64 and warns (:class:`DoublePrecisionWarning`, an
        ``IllConditionedWarning``) when the estimated condition number of ``K + λnI``
        times machine epsilon exceeds ``bigkern.solvers.rls.DOUBLE_RESOLUTION``;
        "extended" evaluates ``K``, the LOO errors and the predictions in arbitrary
        precision (python-flint when installed, else mpmath), predicting by
        ``yᵀ[(K + λnI)⁻¹ k(x)]`` — the point affinities first, as in the paper;
        "auto" is "double" when every λ of the grid is resolved, else "extended" with
        an :class:`ExtendedPrecisionWarning`.
    dps : int, optional
        Decimal digits for "extended". Default: chosen from the condition bound and,
        with python-flint, raised until the rigorous error bounds reach double accuracy.

    Attributes
    ----------
    coef_ : ndarray, shape (n,)
        ``c = (K + λ_ n I)⁻¹ y`` (rounded to float64; in the extended regime these are
        huge and cancel, so ``predict`` does not use them).
    lam_ : float
        The λ used (chosen by LOO when ``lam`` is a grid).
    loo_mse_ : ndarray, shape (len(lam),) or (1,)
        Exact leave-one-out mean squared error for each λ of the grid.
    condition_ : float
        Estimated 2-norm condition number of ``K + λ_ n I`` (from double eigenvalues,
        unresolved ones counted as 0).
    precision_ : str
        "double" or "extended": how the fit was computed.
    dps_ : int or None
        Decimal digits used by the extended solve.
    X_fit_ : ndarray, shape (n, d)
        Training inputs (the expansion's centers).
    y_fit_ : ndarray, shape (n,)
        Training targets (needed by the extended prediction).
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of str
        Column names of a DataFrame (or a DataArray's ``feature`` coordinate) given
        to ``fit``; ``predict`` then checks them.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import GaussianRLS
    >>> x = np.linspace(0, 1, 30)[:, None]
    >>> model = GaussianRLS(0.3, np.logspace(-8, 0, 9)).fit(x, np.sin(6 * x[:, 0]))
    >>> bool(abs(model.predict([[0.5]])[0] - np.sin(3)) < 1e-2)
    True
    """

    #: fitted scalars a model file keeps
    _saved_fitted: ClassVar[tuple[str, ...]] = ("lam_", "condition_", "precision_", "dps_")

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "omega": [domain("omega")],
        "lam": [domain("lam"), "array-like"],  # one λ, or candidates
        "precision": [StrOptions(set(_PRECISIONS))],
        "dps": [domain("dps"), None],
    }

    def __init__(
        self,
        omega: float = 1.0,
        lam: float | ArrayLike = 1e-3,
        *,
        precision: str = "auto",
        dps: int | None = None,
    ) -> None:
        self.omega = omega
        self.lam = lam
        self.precision = precision
        self.dps = dps

    def _grid(self) -> np.ndarray:
        """The λ candidates (each value checked): ``lam`` as a 1-D array."""
        return np.array(candidates("lam", self.lam))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any) -> GaussianRLS:
        """Fit on ``X`` (n, d) and targets ``y`` (n,) (dask input is computed: RLS is in memory).

        Raises
        ------
        ValueError
            Bad parameters, fewer than 2 samples, or mismatched lengths.
        DataQualityError
            NaN or infinite values in ``X`` or ``y`` (row and column named).

        Warns
        -----
        BigkernWarning
            ``y`` is constant.
        DoublePrecisionWarning
            ``precision="double"`` and double precision cannot resolve some λ.
        ExtendedPrecisionWarning
            ``precision="auto"`` switched to extended precision.
        """
        grid = self._grid()
        X, y = self._fit_xy(X, y)
        n = X.shape[0]
        if np.all(y == y[0]):
            warnings.warn(
                f"y is constant ({y[0]:g}) on all {n} rows: the fit is that constant shrunk "
                "toward 0, and LOO only measures the shrinkage",
                BigkernWarning,
                stacklevel=3,
            )
        ridges = grid * n
        es = RidgeEigensystem.from_kernel(gaussian_kernel(X, X, float(self.omega)))
        cond = condition_estimate(es.values, ridges)
        unresolved = ~double_resolves(cond)
        mode = self.precision
        if mode == "auto":
            mode = "extended" if unresolved.any() else "double"
            if mode == "extended":
                warnings.warn(
                    f"double precision cannot resolve K + λnI for λ = "
                    f"{', '.join(f'{v:.3g}' for v in grid[unresolved])} (condition up to "
                    f"{cond.max():.2g}); solving in extended precision",
                    ExtendedPrecisionWarning,
                    stacklevel=3,
                )
        elif mode == "double" and unresolved.any():
            warnings.warn(
                f"double precision cannot resolve K + λnI (n={n}, omega={self.omega:g}) for "
                f"λ = {', '.join(f'{v:.3g}' for v in grid[unresolved])}: condition estimate "
                f"{cond.max():.2g} × eps = {cond.max() * np.finfo(float).eps:.2g}; "
                "the coefficients, LOO errors and predictions are unreliable — "
                "use precision='extended'",
                DoublePrecisionWarning,
                stacklevel=3,
            )
        if mode == "double":
            self.loo_mse_ = es.loo_mse(y, ridges)
            self.dps_ = None
        else:
            self.loo_mse_, self.dps_ = extended_solve(
                X, y, self.omega, ridges, want="loo", dps=self.dps
            )
        best = int(np.argmin(self.loo_mse_))
        self.lam_ = float(grid[best])
        if mode == "double":
            self.coef_ = es.coef(y, ridges[best])
        else:
            self.coef_, dps = extended_solve(
                X, y, self.omega, [ridges[best]], want="coef", dps=self.dps
            )
            self.dps_ = max(self.dps_, dps)
        self.condition_ = float(cond[best])
        self.precision_ = mode
        self.X_fit_ = X
        self.y_fit_ = y
        return self

    def predict(self, X: Any) -> Any:
        """Predictions ``f(x) = Σ_i c_i K(x_i, x)`` for the rows of ``X``.

        In extended precision they are computed as ``yᵀ[(K + λnI)⁻¹ k(x)]``.

        Parameters
        ----------
        X : array-like, DataFrame, DataArray (sample, feature) or dask array, shape (m, d)
            Finite features, in the fitted order.

        Returns
        -------
        ndarray, shape (m,)
            A lazy dask array for dask input (one task per row chunk).
        """
        return self._predict_rows(X, self.decision_rows)

    @property
    def expansion_(self) -> KernelExpansion:
        """The fitted expansion ``Σ_i c_i K(x_i, ·)`` over the training rows (float64 blocks).

        Only in double precision: an extended-precision fit predicts through
        ``yᵀ[(K + λnI)⁻¹ k(x)]`` instead (its coefficients cancel in double).
        """
        check_is_fitted(self, "coef_")
        if self.precision_ != "double":
            raise AttributeError("an extended-precision GaussianRLS has no double-precision "
                                 "expansion: it predicts by yᵀ[(K + λnI)⁻¹ k(x)]")
        return KernelExpansion.from_parts(self.X_fit_, self.coef_, 0.0, float(self.omega),
                                            dtype="float64")

    @property
    def n_basis_(self) -> int:
        """Training rows in the expansion (the prediction cost per row)."""
        return len(self.X_fit_)

    def decision_rows(self, X: np.ndarray) -> np.ndarray:
        """Predictions for a float array of rows in the fitted feature order, unvalidated;
        NaN for a row with a non-finite feature (what :func:`bigkern.predict_scenes` uses)."""
        if self.precision_ == "double":
            return self.expansion_.decision(X)
        X = np.asarray(X, dtype=np.float64)
        out = np.full(len(X), np.nan)
        good = np.isfinite(X).all(axis=1)
        if good.any():
            ridge = self.lam_ * len(self.X_fit_)
            out[good], _ = extended_solve(self.X_fit_, self.y_fit_, self.omega, [ridge],
                                          want="predict", Z=X[good], dps=self.dps)
        return out

    def to_dataset(self) -> Any:
        """The fitted model as a small :class:`xarray.Dataset` (for zarr or netCDF).

        Saved and loaded by :func:`bigkern.save_model` / :func:`bigkern.load_model`;
        see :mod:`bigkern.models.persistence.regression_files` for the layout.
        """
        from bigkern.models.persistence.regression_files import rls_to_dataset

        return rls_to_dataset(self)
