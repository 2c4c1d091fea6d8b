"""Hagiwara's (2011) thresholded orthogonal regression, in memory or on a reduced basis.

:class:`OHTRegressor` — orthogonalization + hard thresholding, methods ED, ED2,
GS, GS2 (:mod:`bigkern.solvers.oht`), on Gaussian basis functions at the
training inputs with the width chosen by two-fold cross-validation
(:mod:`bigkern.models.regression.kernel_regression`). A width whose stable set has as many
components as samples (``l = n``: the basis interpolates, and the noise
variance (21) is undefined) scores ``inf`` in the cross-validation.
``size=m̃`` fits on a reduced basis of ``m̃`` centers sampled from the data
(dask input welcome), from normal equations accumulated in one distributed pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import StrOptions

from bigkern.models._base import fitted_expansion
from bigkern.models._constraints import candidates, domain
from bigkern.models.regression.kernel_regression import (
    DEFAULT_OMEGAS,
    PAPER_LAMS,
    PAPER_OMEGAS,
    LOOKernelRidge,
    _KernelRegressor,
    _refuse_constant,
    _standardizer,
    fit_at_width,
    two_fold_width_scores,
)
from bigkern.solvers.oht import (
    METHODS,
    NoResidualDegreesOfFreedomError,
    OHTSolution,
)

__all__ = [
    "DEFAULT_OMEGAS",
    "PAPER_LAMS",
    "PAPER_OMEGAS",
    "LOOKernelRidge",
    "OHTRegressor",
    "fit_at_width",
    "two_fold_width_scores",
]


class OHTRegressor(_KernelRegressor):
    """Orthogonalization + hard thresholding regression (Hagiwara 2011).

    Parameters
    ----------
    method : {"ED", "ED2", "GS", "GS2"}
        Orthogonalization by eigendecomposition (ED) or largest-norm Gram–Schmidt
        (GS); ``2`` keeps every component up to the last surviving one.
    omega : float or sequence of float
        The Gaussian width ω, or candidate widths chosen by two-fold CV; default
        :data:`~bigkern.models.regression.kernel_regression.DEFAULT_OMEGAS`, the paper's
        {1, 2, 5, 8} extended by doublings to 128.
    eta : float
        Stable-set bound ``γ_j > η`` (paper: 1e-10).
    size : int or None
        None: a basis function at every training input (the paper). An int
        ``m̃``: a reduced basis of ``m̃`` centers sampled uniformly from the rows
        with ``random_state``; ``fit`` then accepts dask arrays and reads the data
        in one pass (:func:`bigkern.reduce.reduced_normal_equations_folds`).
    random_state : int, RandomState or None
        Seed of the two-fold split (and of the reduced basis sample).

    Attributes
    ----------
    omega_ : float
        Chosen width.
    solution_ : OHTSolution
        The solver's result at ``omega_`` (weights on all basis functions, kept
        components, σ̂², thresholds, γ).
    expansion_ : KernelExpansion
        The fitted expansion: the basis functions used (nonzero weights for GS/GS2:
        sparse), their centers in standardized units, the intercept and the input
        standardization.
    basis_used_ : ndarray of int
        Indices of those basis functions among the training rows / reduced set.
    n_components_, n_stable_ : int
        Kept orthogonal components and size of the stable set.
    sigma2_ : float
        Noise variance estimate (21).
    cv_scores_ : ndarray
        Two-fold CV MSE of every width (inf: unusable, NaN: single width).
    n_features_in_ : int
        Features seen by ``fit``.
    feature_names_in_ : ndarray of str
        Column names of a DataFrame (or a DataArray's ``feature`` coordinate) given
        to ``fit``; ``predict`` then checks them.

    Notes
    -----
    Input is validated as by scikit-learn (:class:`~bigkern.models._base.BigkernRegressor`):
    NaN/±inf are refused, naming the first one. A dask ``X`` with ``size=m̃`` stays lazy:
    its rows with a non-finite value are left out and counted by the distributed pass
    (an error over ``bigkern.max_nonfinite_fraction``). ``predict`` on dask is lazy.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import OHTRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(100, 1))
    >>> truth = np.sin(2 * np.pi * X[:, 0])
    >>> y = truth + 0.1 * rng.standard_normal(100)
    >>> model = OHTRegressor("GS", [0.5, 1.0, 2.0], random_state=0).fit(X, y)
    >>> model.omega_, model.n_components_, round(model.sigma2_, 3)
    (1.0, 4, 0.009)
    >>> bool(np.abs(model.predict(X) - truth).mean() < 0.1)  # close to the noiseless curve
    True
    """

    _saved_fitted: ClassVar[tuple[str, ...]] = ("omega_", "n_components_", "n_stable_",
                                                "sigma2_")
    _saved_arrays: ClassVar[dict[str, str]] = {"cv_scores_": "width", "basis_used_": "basis"}

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "method": [StrOptions(set(METHODS))],
        "omega": [domain("omega"), "array-like"],  # one width (no cross-validation), or candidates
        "eta": [domain("eta")],
        "size": [domain("size"), None],
        "random_state": ["random_state"],
    }

    def __init__(self, method: str = "ED2", omega: float | Sequence[float] = DEFAULT_OMEGAS, *,
                 eta: float = 1e-10, size: int | None = None,
                 random_state: Any = None) -> None:
        self.method = method
        self.omega = omega
        self.eta = eta
        self.size = size
        self.random_state = random_state

    def _store(self, sol: OHTSolution, centers: np.ndarray, offset: np.ndarray,
               scale: np.ndarray) -> None:
        used = sol.basis_used
        self.solution_ = sol
        self.expansion_ = fitted_expansion(self, centers[used], sol.weights[used],
                                           sol.intercept, self.omega_, offset, scale)
        self.basis_used_ = used
        self.n_components_ = sol.n_components
        self.n_stable_ = sol.n_stable
        self.sigma2_ = sol.sigma2

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any) -> OHTRegressor:
        """Fit on ``X`` (n, d) and ``y`` (n,).

        Returns
        -------
        self
        """
        candidates("omega", self.omega)  # before the data are read
        if self.size is not None:
            return self._fit_reduced(X, y)
        X, y = self._fit_xy(X, y)
        _refuse_constant(y)
        offset, scale = _standardizer(X)
        Z = (X - offset) / scale
        self.omega_ = self._select(Z, y, self.method, eta=self.eta)
        fits = fit_at_width(Z, y, self.omega_, (self.method,), eta=self.eta)
        if self.method not in fits:
            raise NoResidualDegreesOfFreedomError(
                f"at width {self.omega_} the stable set has as many components as samples "
                f"({len(y)}); the noise variance (21) is undefined: use a wider width")
        self._store(fits[self.method][2], Z, offset, scale)
        return self

    # -- reduced basis (distributed) -----------------------------------------------------------
    def _fit_reduced(self, X: Any, y: Any) -> OHTRegressor:
        """Fit on a reduced basis of ``self.size`` sampled rows (see the class docstring).

        Standardization (mean / SD) is estimated on the sampled centers. With
        several widths, the rows are split in two folds by a seeded hash of their
        global row number, and one read of the data gives the normal equations of
        every (width, fold) pair (:func:`bigkern.reduce.reduced_normal_equations_folds`):
        the fit on one fold is tested, from the other fold's pieces, by its MSE;
        the folds' pieces add up to the full data's, so the final fit needs no
        further read.
        """
        from bigkern.reduce.reduced.folds import fold_pieces, reduced_normal_equations_folds
        from bigkern.reduce.sampling import sample_rows
        from bigkern.solvers.oht import oht_from_normal_equations

        m = self.size
        omegas = candidates("omega", self.omega)
        # dask input stays lazy: its rows are read once by the sample and once by the pass,
        # which leaves out and counts rows with a non-finite value (numpy input is checked here)
        X, y = self._fit_xy(X, y, lazy=True)
        seed = int(check_random_state(self.random_state).randint(2**31 - 1))
        C, _, _ = sample_rows(X, y, n=int(m), seed=seed)
        offset, scale = _standardizer(np.asarray(C, dtype=np.float64))
        centers = (C - offset) / scale
        method, eta = self.method, self.eta

        def solve(p: dict[str, Any]) -> OHTSolution:
            # a formed G'G resolves its eigenvalues only to ~ m̃ ε γ₁: with η's test alone,
            # round-off below that passes as "stable" components with huge weights
            return oht_from_normal_equations(p["GtG"], p["Gty"], float(p["yty"]), int(p["n"]),
                                             method=method, eta=eta, Gsum=p["Gsum"],
                                             ysum=float(p["ysum"]),
                                             rtol=len(centers) * np.finfo(np.float64).eps)

        n_folds = 1 if len(omegas) == 1 else 2
        ds = reduced_normal_equations_folds(X, y, centers, omegas, n_folds=n_folds, seed=seed,
                                            offset=offset, scale=scale)
        if n_folds == 1:
            self.omega_, self.cv_scores_ = omegas[0], np.full(1, np.nan)
            full = fold_pieces(ds, 0, 0)
        else:
            scores = np.zeros(len(omegas))
            for i in range(len(omegas)):
                for fit_on, test_on in ((0, 1), (1, 0)):
                    try:
                        sol = solve(fold_pieces(ds, i, fit_on))
                    except NoResidualDegreesOfFreedomError:
                        scores[i] = np.inf
                        break
                    scores[i] += 0.5 * _pieces_mse(fold_pieces(ds, i, test_on), sol.weights,
                                                   sol.intercept)
            self.cv_scores_ = scores
            if not np.isfinite(scores).any():
                raise ValueError(f"no width in {omegas} gives a usable fit for {method}")
            best = int(np.argmin(scores))
            self.omega_, full = omegas[best], fold_pieces(ds, best, [0, 1])
        self.reduced_centers_ = centers
        self._store(solve(full), centers, offset, scale)
        return self


def _pieces_mse(p: dict[str, Any], w: np.ndarray, b: float) -> float:
    """Mean of ``(y − Gw − b)²`` from the normal-equation pieces of the data."""
    rss = (float(p["yty"]) - 2 * w @ p["Gty"] - 2 * b * float(p["ysum"]) + w @ p["GtG"] @ w
           + 2 * b * (w @ p["Gsum"]) + float(p["n"]) * b * b)
    return max(rss, 0.0) / float(p["n"])

