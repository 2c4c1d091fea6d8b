"""Periodic Gaussian kernel regression on [0, 1), optionally binned, with Cp selection (Shi & Yu).

A single-node estimator for 1-D periodic data (Shi & Yu §2, §4.1, §5.1): the
fit is ``f(x) = Σ_j c_j K(x, b_j)`` with ``b_j`` the data points (unbinned) or
the centers of ``n_bins`` equal-width bins; ``c = (G + λ_B I)⁻¹ ȳ``. The
regularization ``lam`` is always given on the unbinned scale λ of eq. (7); the
binned solve uses ``λ_B = m λ / n`` (m non-empty bins), so one grid serves both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import xarray as xr
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from bigkern.errors import DataQualityError
from bigkern.kernels.periodic import APPROXIMATIONS, PeriodicGaussian
from bigkern.models._base import BigkernRegressor
from bigkern.models._constraints import candidates, domain
from bigkern.models.criteria import difference_noise_variance, grid_argmin, mallows_cp
from bigkern.solvers.periodic import SmootherPath, equal_bins

__all__ = ["PeriodicKernelRidge", "shi_yu_grid"]


def shi_yu_grid() -> dict[str, np.ndarray]:
    """The (ω, λ) search grid of Shi & Yu §5.1.

    ``ω = 0.3 k₁ − 0.1`` (k₁ = 1…10) and ``λ = exp(−0.4 k₂ + 7)`` (k₂ = 1…50), as the
    keywords ``omega`` and ``lam``: ``PeriodicKernelRidge(**shi_yu_grid())`` searches it.

    Examples
    --------
    >>> from bigkern.models import shi_yu_grid
    >>> {name: len(values) for name, values in shi_yu_grid().items()}
    {'omega': 10, 'lam': 50}
    """
    return {"omega": 0.3 * np.arange(1, 11) - 0.1,
            "lam": np.exp(-0.4 * np.arange(1, 51) + 7.0)}


def _as_column(X: Any) -> Any:
    """Points of shape (n,) as one column (n, 1); anything else as it is (validated later)."""
    import scipy.sparse

    if scipy.sparse.issparse(X):
        return X  # refused by the validation, with scikit-learn's message
    if isinstance(X, xr.DataArray) and X.ndim == 1:
        X = X.data
    if getattr(X, "ndim", None) == 1:
        return X.to_frame() if hasattr(X, "to_frame") else X[:, None]  # a pandas Series
    if isinstance(X, list | tuple):
        arr = np.asarray(X)
        return arr[:, None] if arr.ndim == 1 else X
    return X


def _on_circle(x: np.ndarray, wrap: bool, where: str) -> np.ndarray:
    """Finite points ``x`` (n,) on [0, 1): taken mod 1 with ``wrap``, else checked."""
    if wrap:
        return np.mod(x, 1.0)
    out = np.flatnonzero((x < 0) | (x >= 1))
    if out.size:
        raise ValueError(f"X in {where} must lie in [0, 1) (the circle of period 1); "
                         f"{out.size} value(s) do not, first at row {out[0]}: "
                         f"{float(x[out[0]])!r}. "
                         "Rescale it, or pass wrap=True to take x mod 1")
    return x


class PeriodicKernelRidge(BigkernRegressor):
    """Periodic Gaussian kernel regularization on [0, 1), optionally on equal-width bins.

    Parameters
    ----------
    omega : float or sequence of float, default 1.0
        Kernel width ω of eq. (6), or candidate widths.
    lam : float or sequence of float, default 1.0
        Regularization λ on the unbinned scale of eq. (7), or candidates. When either
        is a sequence, (ω, λ) is chosen at the minimum of Mallows' Cp
        (:func:`bigkern.models.criteria.mallows_cp`) over the grid of both; ties go to
        the first grid point. ``**shi_yu_grid()`` is the paper's grid.
    n_bins : int, optional
        Number of equal-width bins ``m`` (1 ≤ m ≤ n); ``None`` fits on the data
        (``m = n`` with one point per bin gives the same fit). Empty bins are
        dropped and counted in ``n_empty_bins_``.
    sigma2 : float, optional
        Noise variance used by Cp. Shi & Yu's simulation has known N(0, 1)
        noise, i.e. ``sigma2=1``; ``None`` estimates it from successive
        differences (:func:`bigkern.models.criteria.difference_noise_variance`).
    approximation : {"exact", "wrapped"}, default "exact"
        The kernel as the exact series of eq. (6), or Shi & Yu's wrapped approximation ``G^J``.
        ``G¹`` equals ``K`` to round-off for ω ≤ 1 but is indefinite beyond
        ω ≈ 1.4 (the paper's grid reaches 2.9): negative eigenvalues are then
        set to 0 with a :class:`~bigkern.errors.BigkernWarning`.
    n_wraps : int, default 1
        Wraps of ``G^J`` (with ``approximation="wrapped"``).
    wrap : bool, default False
        Take ``x mod 1`` instead of rejecting ``x`` outside [0, 1).

    Attributes
    ----------
    omega_, lam_ : float
        Width and (unbinned-scale) λ used; chosen by Cp over candidates.
    kernel_ : PeriodicGaussian
        The kernel at ``omega_`` (:class:`~bigkern.kernels.PeriodicGaussian`).
    lam_b_ : float
        Ridge of the solve: ``n_bins_ · lam_ / n`` when binned, else ``lam_``.
    cp_ : xarray.DataArray or None
        Cp over the grid, dims ``("omega", "lam")`` (``None`` without candidates).
    n_bins_ : int
        Number of basis points (non-empty bins; ``n`` when unbinned).
    n_empty_bins_ : int
        Bins of the ``n_bins`` requested that held no point.
    bin_counts_ : ndarray of int
        Points per basis point.
    centers_ : ndarray, shape ``(n_bins_,)``
        Basis points (bin centers or the data).
    coef_ : ndarray, shape ``(n_bins_,)``
        Coefficients ``c``.
    sigma2_ : float or None
        Noise variance used by Cp (``None`` without candidates).
    trace_ : float
        Degrees of freedom ``trace(S_B)`` of the chosen fit.
    n_features_in_ : int
        Always 1.
    feature_names_in_ : ndarray of str
        The column name of a one-column DataFrame (or a named Series) given to ``fit``.

    Notes
    -----
    ``X`` is points on the circle: shape (n,) or (n, 1) (a list, Series, one-column
    DataFrame, DataArray or dask array); more columns are refused. The tags say so as
    scikit-learn's ``IsotonicRegression`` does (``one_d_array``, not ``two_d_array``).
    Dask input is computed by ``fit`` (the solve is in memory) and kept lazy by
    ``predict``.

    Examples
    --------
    (ω, λ) chosen by Cp on 20 bins, with the noise variance known:

    >>> import numpy as np
    >>> from bigkern import PeriodicKernelRidge
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 1, 200)
    >>> y = np.sin(2 * np.pi * x) + 0.3 * rng.standard_normal(200)
    >>> model = PeriodicKernelRidge([0.2, 0.5, 1.0], [1e-3, 1e-2, 1e-1], n_bins=20, sigma2=0.09)
    >>> model = model.fit(x, y)
    >>> model.omega_, model.lam_, model.n_bins_, model.cp_.dims
    (1.0, 0.1, 20, ('omega', 'lam'))
    >>> bool(np.abs(model.predict(x) - np.sin(2 * np.pi * x)).mean() < 0.1)
    True
    """

    #: fitted scalars a model file keeps
    _saved_fitted: ClassVar[tuple[str, ...]] = ("omega_", "lam_", "lam_b_", "sigma2_", "trace_",
                                                "n_bins_", "n_empty_bins_")

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "omega": [domain("omega"), "array-like"],  # one width, or candidates
        "lam": [domain("lam"), "array-like"],
        "n_bins": [domain("n_bins"), None],
        "sigma2": [domain("sigma2"), None],
        "approximation": [StrOptions(set(APPROXIMATIONS))],
        "n_wraps": [domain("n_wraps")],
        "wrap": ["boolean"],
    }

    def __init__(
        self,
        omega: float | Sequence[float] = 1.0,
        lam: float | Sequence[float] = 1.0,
        *,
        n_bins: int | None = None,
        sigma2: float | None = None,
        approximation: str = "exact",
        n_wraps: int = 1,
        wrap: bool = False,
    ) -> None:
        self.omega = omega
        self.lam = lam
        self.n_bins = n_bins
        self.sigma2 = sigma2
        self.approximation = approximation
        self.n_wraps = n_wraps
        self.wrap = wrap

    # -- fitting -------------------------------------------------------------------------------
    def _searched(self) -> bool:
        """Whether ``omega`` or ``lam`` is a sequence of candidates (chosen by Cp)."""
        return np.ndim(self.omega) > 0 or np.ndim(self.lam) > 0

    def _grid(self) -> tuple[np.ndarray, np.ndarray]:
        """The (ω, λ) candidates, each value checked."""
        return np.array(candidates("omega", self.omega)), np.array(candidates("lam", self.lam))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any) -> PeriodicKernelRidge:
        """Fit on points ``X`` of [0, 1) (shape (n,) or (n, 1)) and responses ``y`` (n,).

        Raises
        ------
        ValueError
            A parameter outside its declared domain (scikit-learn's
            ``InvalidParameterError``), ``n_bins`` > n, a candidate outside its domain,
            n < 2, mismatched lengths, or ``X`` outside [0, 1) (without ``wrap``).
        DataQualityError
            NaN or ±inf in ``X`` or ``y``; constant ``y`` when Cp must estimate σ².
        """
        X, yv = self._fit_xy(_as_column(X), y)
        if X.shape[1] != 1:
            del self.n_features_in_  # not fitted
            self.__dict__.pop("feature_names_in_", None)
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} takes one "
                             f"column: points x on the circle [0, 1), of shape (n,) or (n, 1)")
        x = _on_circle(X[:, 0], self.wrap, "fit")
        n = len(x)
        bins = None
        if self.n_bins is not None:
            if self.n_bins > n:
                raise ValueError(f"n_bins must be an integer in [1, n={n}] (the samples); "
                                 f"got {self.n_bins!r}")
            bins = equal_bins(x, int(self.n_bins))
        omegas, lams = self._grid()
        m_eff = n if bins is None else bins.n_bins
        ridges = lams * (m_eff / n)

        sigma2 = None
        if self._searched():
            if self.sigma2 is None:
                if np.ptp(yv) == 0:
                    raise DataQualityError(
                        f"y is constant (all {n} values are {float(yv[0])!r}): the noise variance "
                        "estimate for Cp is 0; give sigma2= or fixed omega and lam")
                sigma2 = difference_noise_variance(x, yv, period=1.0)
            else:
                sigma2 = float(self.sigma2)

        kernels = [PeriodicGaussian(w, self.approximation, self.n_wraps) for w in omegas]
        paths = [SmootherPath.build(x, kernel, bins) for kernel in kernels]
        if self._searched():
            cp = np.stack([mallows_cp(p.residual_ss(yv, ridges), p.traces(ridges), n, sigma2)
                           for p in paths])
            i, j = grid_argmin(cp)
            self.cp_ = xr.DataArray(cp, dims=("omega", "lam"),
                                    coords={"omega": omegas, "lam": lams}, name="cp")
        else:
            i, j = 0, 0
            self.cp_ = None
        path = paths[i]
        self.omega_ = float(omegas[i])
        self.lam_ = float(lams[j])
        self.lam_b_ = float(ridges[j])
        self.sigma2_ = sigma2
        self.coef_ = path.coefficients(yv, self.lam_b_)
        self.trace_ = float(path.traces(self.lam_b_)[0])
        self.centers_ = path.basis.copy()
        self.n_bins_ = m_eff
        self.n_empty_bins_ = 0 if bins is None else bins.n_empty
        self.bin_counts_ = np.ones(n, dtype=np.int64) if bins is None else bins.counts.copy()
        return self

    def __sklearn_tags__(self) -> Any:
        """Points on a circle, shape (n,) or (n, 1): declared as scikit-learn's IsotonicRegression.

        ``two_d_array=False``: the estimator takes no general 2-D ``X`` (k > 1
        columns are refused). scikit-learn's ``check_estimator`` skips such an
        estimator (its checks build k-column data); the checks that apply to
        points on a circle are run by bigkern's own tests.
        """
        tags = super().__sklearn_tags__()
        tags.input_tags.one_d_array = True
        tags.input_tags.two_d_array = False
        return tags

    # -- prediction ----------------------------------------------------------------------------
    def predict(self, X: Any) -> Any:
        """``f̂(x) = Σ_j c_j K(x, b_j)`` at points of [0, 1).

        Parameters
        ----------
        X : array-like, Series, DataFrame, DataArray or dask array, shape (n,) or (n, 1)
            Finite points (any real numbers with ``wrap=True``).

        Returns
        -------
        ndarray, shape (n,)
            A lazy dask array for dask input (one task per row chunk).
        """
        return self._predict_rows(_as_column(X), self._rows)

    def _rows(self, X: np.ndarray) -> np.ndarray:
        x = _on_circle(X[:, 0], self.wrap, "predict")
        return self.kernel_(x, self.centers_) @ self.coef_

    @property
    def kernel_(self) -> PeriodicGaussian:
        """The fitted kernel: width ``omega_``, with the ``approximation`` and wraps asked for."""
        check_is_fitted(self, "omega_")
        return PeriodicGaussian(self.omega_, self.approximation, self.n_wraps)

    def to_dataset(self) -> xr.Dataset:
        """The fitted model as a small :class:`xarray.Dataset` (for zarr or netCDF).

        Saved and loaded by :func:`bigkern.save_model` / :func:`bigkern.load_model`;
        see :mod:`bigkern.models.persistence.regression_files` for the layout.
        """
        from bigkern.models.persistence.regression_files import periodic_to_dataset

        return periodic_to_dataset(self)
