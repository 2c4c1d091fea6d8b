"""Regression estimators of Hagiwara (2011): OHT (thresholded orthogonal regression) and RM.

Both use Gaussian basis functions at the training inputs, ``g_j(x) = k(x, x_j)``
with ``k(s, t) = exp(-‖s − t‖² / (2 ω²))`` on inputs standardized to zero mean
and unit variance (training statistics), and pick the width ω from a candidate
set by two-fold cross-validation, as in section 5 of the paper (candidates
``{1, 2, 5, 8}``). ``y`` is centred by its training mean (the intercept).

* :class:`OHTRegressor` — orthogonalization + hard thresholding, methods ED, ED2,
  GS, GS2 (:mod:`bigkern.solvers.oht`). A width whose stable set has as many
  components as samples (``l = n``: the basis interpolates, and the noise
  variance (21) is undefined) scores ``inf`` in the cross-validation.
  ``basis=m̃`` fits on a reduced basis of ``m̃`` centers sampled from the data
  (dask input welcome), from normal equations accumulated in one distributed pass.
* :class:`LOOKernelRidge` — the paper's regularization method (RM): ridge on the
  same basis with ``λ`` chosen by exact leave-one-out from one eigendecomposition
  of the kernel matrix (:class:`bigkern.solvers.rls.RidgeEigensystem`). The
  paper's regularizer is ``‖w‖²`` (``penalty="weights"``: ``w = (K² + λI)⁻¹ K y``);
  ``penalty="rkhs"`` is kernel ridge ``wᵀKw`` (``w = (K + λI)⁻¹ y``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state

from bigkern.errors import DataQualityError
from bigkern.kernels import gaussian_kernel, kernel_expansion
from bigkern.solvers.oht import (
    METHODS,
    NoResidualDegreesOfFreedomError,
    OHTSolution,
    oht_fit_methods,
)
from bigkern.solvers.rls import RidgeEigensystem

__all__ = [
    "PAPER_RIDGES",
    "PAPER_WIDTHS",
    "LOOKernelRidge",
    "OHTRegressor",
    "fit_at_width",
    "two_fold_width_scores",
]

PAPER_WIDTHS: tuple[float, ...] = (1.0, 2.0, 5.0, 8.0)
"""Hagiwara's candidate widths T = {1, 2, 5, 8} (read as ω, bigkern's convention)."""

PAPER_RIDGES: tuple[float, ...] = tuple(k * 10.0**j for j in range(-4, 3) for k in (1, 5))
"""Hagiwara's RM candidates ``{k·10^j : k = 1, 5; j = −4 … 2}``."""

MODELS: tuple[str, ...] = ("RM", *METHODS)


def _as_dense(X: Any, what: str = "X") -> np.ndarray:
    """``X`` as a float64 2-D array (no sparse or complex input; 1-D asks to reshape)."""
    import scipy.sparse

    if scipy.sparse.issparse(X):
        raise TypeError(f"sparse input is not supported for {what}: pass a dense array")
    X = np.asarray(X)
    if np.iscomplexobj(X):
        raise ValueError(f"Complex data not supported: {what} has a complex dtype")
    X = X.astype(np.float64)
    if X.ndim != 2:
        raise ValueError(f"{what} must be 2-D (sample, feature); got shape {X.shape}. "
                         f"Reshape your data with X.reshape(-1, 1) for a single feature or "
                         f"X.reshape(1, -1) for a single sample")
    if X.shape[1] == 0:
        raise ValueError(f"{what} has 0 feature(s) (shape={X.shape}) while a minimum of 1 is "
                         f"required.")
    return X


def _check_X(X: Any, what: str = "X") -> np.ndarray:
    X = _as_dense(X, what)
    bad = np.argwhere(~np.isfinite(X))
    if bad.size:
        i, j = bad[0]
        raise DataQualityError(f"{what} has {len(bad)} non-finite value(s) (NaN or ±inf); "
                               f"first at row {i}, column {j}")
    return X


def _check_Xy(X: Any, y: Any, who: str) -> tuple[np.ndarray, np.ndarray]:
    if y is None:
        raise ValueError(f"{who} requires y to be passed, but the target y is None")
    X = _check_X(X)
    y = np.asarray(y)
    if np.iscomplexobj(y):
        raise ValueError("Complex data not supported: y has a complex dtype")
    y = y.astype(np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must be 1-D with one entry per row of X ({X.shape[0]}); "
                         f"got shape {y.shape}")
    if X.shape[0] < 2:
        raise ValueError(f"at least 2 samples are needed; got n_samples = {X.shape[0]}")
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise DataQualityError(f"y has {bad.size} non-finite value(s) (NaN or ±inf); "
                               f"first at row {bad[0]}")
    if np.ptp(y) == 0:
        raise DataQualityError(f"y is constant (every value = {y[0]:.6g}): nothing to "
                               f"regress on")
    return X, y


def _check_widths(widths: Any) -> tuple[float, ...]:
    w = tuple(float(v) for v in np.atleast_1d(np.asarray(widths, dtype=np.float64)))
    if not w or not all(np.isfinite(v) and v > 0 for v in w):
        raise ValueError(f"widths must be a non-empty sequence of positive finite numbers; "
                         f"got {widths!r}")
    return w


def _standardizer(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    offset = X.mean(axis=0)
    scale = X.std(axis=0)
    return offset, np.where(scale > 0, scale, 1.0)


def fit_at_width(
    Z: np.ndarray,
    y: np.ndarray,
    omega: float,
    models: Sequence[str] = MODELS,
    *,
    eta: float = 1e-10,
    ridges: Sequence[float] = PAPER_RIDGES,
    penalty: str = "weights",
) -> dict[str, tuple[np.ndarray, float, Any]]:
    """Fit several models on the basis ``k(·, z_j)`` of the rows of ``Z`` at one width.

    One kernel matrix and (for RM and ED/ED2) one eigendecomposition serve every model.

    Parameters
    ----------
    Z : ndarray, shape (n, d)
        Standardized training inputs (also the basis centers).
    y : ndarray, shape (n,)
        Targets.
    omega : float
        Gaussian width.
    models : sequence of str
        Any of ``"RM"``, ``"ED"``, ``"ED2"``, ``"GS"``, ``"GS2"``.
    eta : float
        OHT stable-set bound.
    ridges : sequence of float
        RM candidates for λ.
    penalty : {"weights", "rkhs"}
        RM regularizer ``‖w‖²`` (the paper's) or ``wᵀKw``.

    Returns
    -------
    dict
        ``name -> (weights (n,), intercept, info)`` with ``info`` the
        :class:`~bigkern.solvers.oht.OHTSolution` for OHT methods and
        ``(ridge, loo_mse per ridge)`` for RM. An OHT method whose stable set has
        ``l = n`` components is absent.
    """
    K = gaussian_kernel(Z, Z, omega)
    ybar = float(np.mean(y))
    yc = y - ybar
    out: dict[str, tuple[np.ndarray, float, Any]] = {}
    es = None
    if "RM" in models or "ED" in models or "ED2" in models:
        es = RidgeEigensystem.from_kernel(K)
    if "RM" in models:
        if penalty == "weights":  # hat matrix K²(K² + λ)⁻¹: ridge on the basis, ‖w‖²
            sq = RidgeEigensystem(values=es.values**2, vectors=es.vectors)
            loo = sq.loo_mse(yc, ridges)
            lam = float(np.asarray(ridges)[int(np.argmin(loo))])
            w = K @ sq.coef(yc, lam)
        elif penalty == "rkhs":
            loo = es.loo_mse(yc, ridges)
            lam = float(np.asarray(ridges)[int(np.argmin(loo))])
            w = es.coef(yc, lam)
        else:
            raise ValueError(f"penalty must be 'weights' or 'rkhs'; got {penalty!r}")
        out["RM"] = (w, ybar, (lam, loo))
    oht = tuple(m for m in models if m in METHODS)
    if oht:
        eig = None if es is None else (es.values, es.vectors)
        for ms in ([m for m in oht if m.startswith("ED")], [m for m in oht
                                                             if m.startswith("GS")]):
            if not ms:
                continue
            try:
                sols = oht_fit_methods(K, y, methods=tuple(ms), eta=eta, eigensystem=eig)
            except NoResidualDegreesOfFreedomError:
                continue
            out.update({m: (s.weights, s.intercept, s) for m, s in sols.items()})
    return out


def _mse(Zt: np.ndarray, yt: np.ndarray, Z: np.ndarray, omega: float, w: np.ndarray,
         b: float) -> float:
    pred = kernel_expansion(Zt, Z, w, omega, b, dtype=np.float64)
    return float(np.mean((pred - yt) ** 2))


def two_fold_width_scores(
    Z: np.ndarray,
    y: np.ndarray,
    widths: Sequence[float],
    models: Sequence[str] = MODELS,
    *,
    eta: float = 1e-10,
    ridges: Sequence[float] = PAPER_RIDGES,
    penalty: str = "weights",
    random_state: Any = None,
) -> dict[str, np.ndarray]:
    """Two-fold cross-validated mean squared error of every model at every width.

    The rows are split at random into two halves; each half is fitted and
    tested on the other; the score is the mean of the two test MSEs
    (``inf`` where a model cannot be fitted at that width).

    Returns
    -------
    dict of str to ndarray, shape (len(widths),)
    """
    n = len(y)
    perm = check_random_state(random_state).permutation(n)
    halves = (np.sort(perm[: n // 2]), np.sort(perm[n // 2:]))
    scores = {m: np.zeros(len(widths)) for m in models}
    for i, omega in enumerate(widths):
        for a, b in (halves, halves[::-1]):
            fits = fit_at_width(Z[a], y[a], omega, models, eta=eta, ridges=ridges,
                                penalty=penalty)
            for m in models:
                if m in fits:
                    w, icpt, _ = fits[m]
                    scores[m][i] += 0.5 * _mse(Z[b], y[b], Z[a], omega, w, icpt)
                else:
                    scores[m][i] = np.inf
    return scores


class _KernelRegressor(RegressorMixin, BaseEstimator):
    """Prediction by the fitted expansion ``Σ_j coef_j k(z(x), c_j) + intercept``."""

    def _expansion(self, Xb: np.ndarray) -> np.ndarray:
        return kernel_expansion(Xb, self.centers_, self.coef_, self.omega_, self.intercept_,
                                offset=self.offset_, scale=self.scale_, dtype=np.float64)

    def predict(self, X: Any) -> Any:
        """Predicted targets for the rows of ``X`` (n, d); NaN for a row with a NaN feature.

        Parameters
        ----------
        X : array-like or dask array, shape (n, d)

        Returns
        -------
        ndarray, shape (n,) (a lazy dask array for dask input)
        """
        import dask.array as da
        import xarray as xr
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "coef_")
        if isinstance(X, xr.DataArray):
            X = X.data
        if not isinstance(X, da.Array):
            X = _as_dense(X)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[-1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input")
        if isinstance(X, da.Array):
            return X.rechunk({1: -1}).map_blocks(self._expansion, drop_axis=1,
                                                 dtype=np.float64)
        return self._expansion(X)

    def _select(self, Z: np.ndarray, y: np.ndarray, model: str, **kw: Any) -> float:
        widths = _check_widths(self.widths)
        if len(widths) == 1:
            self.cv_scores_ = np.full(1, np.nan)
            return widths[0]
        scores = two_fold_width_scores(Z, y, widths, (model,),
                                       random_state=self.random_state, **kw)[model]
        self.cv_scores_ = scores
        if not np.isfinite(scores).any():
            raise ValueError(f"no width in {widths} gives a usable fit for {model} (each "
                             f"stable set has as many components as samples); try wider "
                             f"widths")
        return widths[int(np.argmin(scores))]


class LOOKernelRidge(_KernelRegressor):
    """The regularization method (RM) of Hagiwara's experiments.

    Ridge on the Gaussian basis at the training inputs with ``λ`` chosen from
    ``ridges`` by exact leave-one-out (closed form from one eigendecomposition),
    and the width chosen from ``widths`` by two-fold cross-validation.

    Parameters
    ----------
    widths : sequence of float
        Candidate Gaussian widths ω (one: no cross-validation).
    ridges : sequence of float
        Candidate ``λ`` (default the paper's ``{1, 5}·10^{−4…2}``).
    penalty : {"weights", "rkhs"}
        ``‖w‖²`` (the paper's RM) or ``wᵀKw`` (kernel ridge).
    random_state : int, RandomState or None
        Seed of the two-fold split.

    Attributes
    ----------
    omega_ : float
        Chosen width.
    ridge_ : float
        Chosen ``λ``.
    loo_mse_ : ndarray
        Leave-one-out MSE of every candidate ``λ`` at ``omega_``.
    cv_scores_ : ndarray
        Two-fold CV MSE of every width (NaN with a single width).
    coef_, centers_, intercept_, offset_, scale_, n_features_in_
        The fitted expansion (centers in standardized units).
    """

    def __init__(self, widths: Sequence[float] = PAPER_WIDTHS,
                 ridges: Sequence[float] = PAPER_RIDGES, penalty: str = "weights",
                 random_state: Any = None) -> None:
        self.widths = widths
        self.ridges = ridges
        self.penalty = penalty
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> LOOKernelRidge:
        """Fit on ``X`` (n, d) and ``y`` (n,).

        Returns
        -------
        self
        """
        if self.penalty not in ("weights", "rkhs"):
            raise ValueError(f"penalty must be 'weights' or 'rkhs'; got {self.penalty!r}")
        ridges = tuple(float(r) for r in np.atleast_1d(self.ridges))
        X, y = _check_Xy(X, y, type(self).__name__)
        self.offset_, self.scale_ = _standardizer(X)
        Z = (X - self.offset_) / self.scale_
        kw = {"ridges": ridges, "penalty": self.penalty}
        self.omega_ = self._select(Z, y, "RM", **kw)
        w, b, (lam, loo) = fit_at_width(Z, y, self.omega_, ("RM",), **kw)["RM"]
        self.ridge_, self.loo_mse_ = lam, loo
        self.coef_, self.intercept_, self.centers_ = w, b, Z
        self.n_features_in_ = X.shape[1]
        return self


class OHTRegressor(_KernelRegressor):
    """Orthogonalization + hard thresholding regression (Hagiwara 2011).

    Parameters
    ----------
    method : {"ED", "ED2", "GS", "GS2"}
        Orthogonalization by eigendecomposition (ED) or largest-norm Gram–Schmidt
        (GS); ``2`` keeps every component up to the last surviving one.
    widths : sequence of float
        Candidate Gaussian widths ω, chosen by two-fold CV (one: no CV).
    eta : float
        Stable-set bound ``γ_j > η`` (paper: 1e-10).
    basis : int or None
        None: a basis function at every training input (the paper). An int
        ``m̃``: a reduced basis of ``m̃`` centers sampled uniformly from the rows
        with ``random_state``; ``fit`` then accepts dask arrays and reads the data
        through :func:`bigkern.reduce.reduced_kernel.reduced_normal_equations`.
    random_state : int, RandomState or None
        Seed of the two-fold split (and of the reduced basis sample).

    Attributes
    ----------
    omega_ : float
        Chosen width.
    solution_ : OHTSolution
        The solver's result at ``omega_`` (weights on all basis functions, kept
        components, σ̂², thresholds, γ).
    coef_ : ndarray
        Weights of the basis functions used (nonzero ones for GS/GS2: sparse).
    centers_ : ndarray
        Their centers, in standardized units.
    basis_used_ : ndarray of int
        Indices of those basis functions among the training rows / reduced set.
    n_components_, n_stable_ : int
        Kept orthogonal components and size of the stable set.
    sigma2_ : float
        Noise variance estimate (21).
    cv_scores_ : ndarray
        Two-fold CV MSE of every width (inf: unusable, NaN: single width).
    intercept_, offset_, scale_, n_features_in_
        Intercept and input standardization.
    """

    def __init__(self, method: str = "ED2", widths: Sequence[float] = PAPER_WIDTHS,
                 eta: float = 1e-10, basis: int | None = None,
                 random_state: Any = None) -> None:
        self.method = method
        self.widths = widths
        self.eta = eta
        self.basis = basis
        self.random_state = random_state

    def _store(self, sol: OHTSolution, centers: np.ndarray) -> None:
        used = sol.basis_used
        self.solution_ = sol
        self.coef_ = sol.weights[used]
        self.centers_ = centers[used]
        self.basis_used_ = used
        self.intercept_ = sol.intercept
        self.n_components_ = sol.n_components
        self.n_stable_ = sol.n_stable
        self.sigma2_ = sol.sigma2

    def fit(self, X: Any, y: Any) -> OHTRegressor:
        """Fit on ``X`` (n, d) and ``y`` (n,).

        Returns
        -------
        self
        """
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}; got {self.method!r}")
        if self.basis is not None:
            return self._fit_reduced(X, y)
        X, y = _check_Xy(X, y, type(self).__name__)
        self.offset_, self.scale_ = _standardizer(X)
        Z = (X - self.offset_) / self.scale_
        self.omega_ = self._select(Z, y, self.method, eta=self.eta)
        fits = fit_at_width(Z, y, self.omega_, (self.method,), eta=self.eta)
        if self.method not in fits:
            raise NoResidualDegreesOfFreedomError(
                f"at width {self.omega_} the stable set has as many components as samples "
                f"({len(y)}); the noise variance (21) is undefined: use a wider width")
        self._store(fits[self.method][2], Z)
        self.n_features_in_ = X.shape[1]
        return self

    # -- reduced basis (distributed) -----------------------------------------------------------
    def _fit_reduced(self, X: Any, y: Any) -> OHTRegressor:
        """Fit on a reduced basis of ``self.basis`` sampled rows (see the class docstring).

        Standardization (mean / SD) is estimated on the sampled centers. With
        several widths, the rows are split in two halves by a seeded hash of their
        index; the normal equations of each half at each width (one read of the
        data per half and width) give the fit on one half and, from the other
        half's pieces, its test MSE; the two halves' pieces add up to the full
        data's, so the final fit needs no further read.
        """
        import dask.array as da
        import xarray as xr

        from bigkern.reduce.reduced_kernel import reduced_normal_equations
        from bigkern.sampling import sample_rows
        from bigkern.solvers.oht import oht_from_normal_equations

        m = self.basis
        if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 1:
            raise ValueError(f"basis must be None or a positive int (number of centers); "
                             f"got {m!r}")
        widths = _check_widths(self.widths)
        if isinstance(X, xr.DataArray):
            X = X.transpose(..., "feature").data
        if isinstance(y, xr.DataArray):
            y = y.data
        X = X if isinstance(X, da.Array) else np.asarray(X, dtype=np.float64)
        y = y if isinstance(y, da.Array) else np.asarray(y, dtype=np.float64)
        if X.ndim != 2 or y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"X must be 2-D and y 1-D with one entry per row of X; got "
                             f"shapes {X.shape} and {y.shape}")
        if X.shape[0] < 2:
            raise ValueError(f"at least 2 samples are needed; got n = {X.shape[0]}")
        seed = int(check_random_state(self.random_state).randint(2**31 - 1))
        C, _, _ = sample_rows(X, y, n=int(m), seed=seed)
        offset, scale = _standardizer(np.asarray(C, dtype=np.float64))
        centers = (C - offset) / scale
        method, eta = self.method, self.eta

        def pieces(Xp: Any, yp: Any, omega: float) -> dict[str, Any]:
            ds = reduced_normal_equations(Xp, yp, centers, omega, offset=offset, scale=scale)
            return {k: np.asarray(ds[k].values, dtype=np.float64)
                    for k in ("GtG", "Gty", "Gsum", "yty", "ysum", "n")}

        def solve(p: dict[str, Any]) -> OHTSolution:
            return oht_from_normal_equations(p["GtG"], p["Gty"], float(p["yty"]), int(p["n"]),
                                             method=method, eta=eta, Gsum=p["Gsum"],
                                             ysum=float(p["ysum"]))

        if len(widths) == 1:
            self.omega_, self.cv_scores_ = widths[0], np.full(1, np.nan)
            full = pieces(X, y, widths[0])
        else:
            halves = _hash_halves(X, y, seed)
            scores, sums = np.zeros(len(widths)), []
            for i, omega in enumerate(widths):
                pa, pb = (pieces(Xh, yh, omega) for Xh, yh in halves)
                for fit_on, test_on in ((pa, pb), (pb, pa)):
                    try:
                        sol = solve(fit_on)
                    except NoResidualDegreesOfFreedomError:
                        scores[i] = np.inf
                        break
                    scores[i] += 0.5 * _pieces_mse(test_on, sol.weights, sol.intercept)
                sums.append({k: pa[k] + pb[k] for k in pa})
            self.cv_scores_ = scores
            if not np.isfinite(scores).any():
                raise ValueError(f"no width in {widths} gives a usable fit for {method}")
            best = int(np.argmin(scores))
            self.omega_, full = widths[best], sums[best]
        self.offset_, self.scale_ = offset, scale
        self.reduced_centers_ = centers
        self._store(solve(full), centers)
        self.n_features_in_ = int(X.shape[1])
        return self


def _pieces_mse(p: dict[str, Any], w: np.ndarray, b: float) -> float:
    """Mean of ``(y − Gw − b)²`` from the normal-equation pieces of the data."""
    rss = (float(p["yty"]) - 2 * w @ p["Gty"] - 2 * b * float(p["ysum"]) + w @ p["GtG"] @ w
           + 2 * b * (w @ p["Gsum"]) + float(p["n"]) * b * b)
    return max(rss, 0.0) / float(p["n"])


def _hash_halves(X: Any, y: Any, seed: int) -> list[tuple[Any, Any]]:
    """The rows split in two by a seeded hash of the row index (chunking-independent)."""
    import dask.array as da

    from bigkern.sampling import uniform_from_index

    if not isinstance(X, da.Array):
        X, y = np.asarray(X), np.asarray(y)
        first = uniform_from_index(np.arange(X.shape[0]), seed) < 0.5
        return [(X[first], y[first]), (X[~first], y[~first])]
    X = X.rechunk({1: -1})
    y = y.rechunk((X.chunks[0],)) if isinstance(y, da.Array) else da.from_array(
        np.asarray(y), chunks=(X.chunks[0],))
    starts = np.concatenate(([0], np.cumsum(X.chunks[0])[:-1]))
    firsts = [int(np.count_nonzero(uniform_from_index(np.arange(s, s + c), seed) < 0.5))
              for s, c in zip(starts, X.chunks[0], strict=True)]
    out = []
    for which, counts in ((True, firsts), (False, [c - f for c, f in zip(X.chunks[0], firsts,
                                                                          strict=True)])):
        def take(b: np.ndarray, block_info: Any = None, which: bool = which) -> np.ndarray:
            s = block_info[0]["array-location"][0][0]
            keep = (uniform_from_index(np.arange(s, s + len(b)), seed) < 0.5) == which
            return b[keep]

        Xh = X.map_blocks(take, chunks=(tuple(counts), X.chunks[1]), dtype=X.dtype)
        yh = y.map_blocks(take, chunks=(tuple(counts),), dtype=y.dtype)
        out.append((Xh, yh))
    return out
