"""Kernel ridge / regularized least squares from one eigendecomposition.

``K = V diag(w) Vᵀ`` gives, for every ridge ``r > 0``,

* the coefficients ``c(r) = (K + r I)⁻¹ y = V diag(1/(w + r)) Vᵀ y``,
* the diagonal of ``G(r) = (K + r I)⁻¹``: ``G_ii = Σ_j V_ij² / (w_j + r)``,
* the exact leave-one-out residuals of kernel ridge without intercept,
  ``y_i − f^{(−i)}(x_i) = c_i / G_ii``,

each in O(n²) per ridge after the single O(n³) decomposition, with no refits.

The condition check (:func:`condition_estimate`, :func:`double_resolves`) says when
double precision cannot resolve ``K + rI``; :mod:`bigkern.solvers.rls_extended` then
solves in extended precision.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike

from bigkern.errors import DoublePrecisionWarning, ExtendedPrecisionWarning
from bigkern.solvers.checks import check_ridges
from bigkern.solvers.rls_extended import extended_backend, extended_solve

__all__ = [
    "DoublePrecisionWarning",
    "ExtendedPrecisionWarning",
    "RidgeEigensystem",
    "condition_estimate",
    "double_resolves",
    "extended_backend",
    "extended_solve",
]


@dataclass(frozen=True)
class RidgeEigensystem:
    """Eigendecomposition ``K = V diag(w) Vᵀ`` of a symmetric PSD kernel matrix.

    Attributes
    ----------
    values : ndarray, shape (n,)
        Eigenvalues ``w`` of ``K``, ascending, negative round-off clipped at 0.
    vectors : ndarray, shape (n, n)
        Orthonormal eigenvectors ``V`` (columns).
    """

    values: np.ndarray
    vectors: np.ndarray

    @classmethod
    def from_kernel(cls, K: np.ndarray) -> RidgeEigensystem:
        """Decompose a symmetric positive semi-definite matrix ``K`` (n, n).

        Parameters
        ----------
        K : ndarray, shape (n, n)
            Kernel matrix; only its lower triangle is read.

        Returns
        -------
        RidgeEigensystem
        """
        K = np.asarray(K, dtype=np.float64)
        if K.ndim != 2 or K.shape[0] != K.shape[1]:
            raise ValueError(f"K must be a square matrix; got shape {K.shape}")
        if not np.all(np.isfinite(K)):
            i, j = np.argwhere(~np.isfinite(K))[0]
            raise ValueError(f"K has a non-finite entry at row {i}, column {j}")
        w, V = scipy.linalg.eigh(K, lower=True, check_finite=False)
        np.maximum(w, 0.0, out=w)
        return cls(values=w, vectors=V)

    @property
    def n(self) -> int:
        """Size of the system."""
        return int(self.values.shape[0])

    def _project(self, y: np.ndarray) -> tuple[np.ndarray, bool]:
        y = np.asarray(y, dtype=np.float64)
        if y.ndim not in (1, 2) or y.shape[0] != self.n:
            raise ValueError(
                f"y must have shape ({self.n},) or ({self.n}, k); got {y.shape}"
            )
        squeeze = y.ndim == 1
        Y = y[:, None] if squeeze else y
        return self.vectors.T @ Y, squeeze

    def coef(self, y: np.ndarray, ridge: float) -> np.ndarray:
        """Coefficients ``c = (K + ridge·I)⁻¹ y``.

        Parameters
        ----------
        y : ndarray, shape (n,) or (n, k)
            Targets.
        ridge : float
            Value added to the diagonal of ``K`` (> 0).

        Returns
        -------
        ndarray, shape like ``y``
        """
        return self.coef_path(y, [ridge])[0]

    def coef_path(self, y: np.ndarray, ridges: ArrayLike) -> np.ndarray:
        """Coefficients for every ridge in ``ridges``.

        Parameters
        ----------
        y : ndarray, shape (n,) or (n, k)
            Targets.
        ridges : array_like, shape (R,)
            Positive values added to the diagonal of ``K``.

        Returns
        -------
        ndarray, shape (R, n) or (R, n, k)
        """
        r = check_ridges(ridges)
        Vty, squeeze = self._project(y)
        scaled = Vty[None, :, :] / (self.values[None, :, None] + r[:, None, None])
        C = np.einsum("ij,rjk->rik", self.vectors, scaled, optimize=True)
        return C[..., 0] if squeeze else C

    def inverse_diagonal(self, ridges: ArrayLike) -> np.ndarray:
        """Diagonals of ``(K + r I)⁻¹`` for every ridge ``r``: shape (R, n)."""
        r = check_ridges(ridges)
        inv = 1.0 / (self.values[:, None] + r[None, :])  # (n, R)
        return ((self.vectors**2) @ inv).T

    def loo_residuals(self, y: np.ndarray, ridges: ArrayLike) -> np.ndarray:
        """Exact leave-one-out residuals ``y_i − f^{(−i)}(x_i) = c_i / [(K + rI)⁻¹]_ii``.

        Parameters
        ----------
        y : ndarray, shape (n,) or (n, k)
            Targets.
        ridges : array_like, shape (R,)
            Positive values added to the diagonal of ``K``.

        Returns
        -------
        ndarray, shape (R, n) or (R, n, k)
        """
        C = self.coef_path(y, ridges)
        G = self.inverse_diagonal(ridges)
        return C / (G if C.ndim == 2 else G[:, :, None])

    def loo_mse(self, y: np.ndarray, ridges: ArrayLike) -> np.ndarray:
        """Mean squared leave-one-out residual for every ridge (averaged over outputs too).

        Returns
        -------
        ndarray, shape (R,)
        """
        res = self.loo_residuals(y, ridges)
        return np.mean(res.reshape(res.shape[0], -1) ** 2, axis=1)


# ---------------------------------------------------------------------------
# Precision: when double cannot resolve (K + ridge·I), and the extended solve.
# ---------------------------------------------------------------------------

#: Double precision is trusted while ``condition × eps`` stays below this.
DOUBLE_RESOLUTION = 1e-6


def condition_estimate(values: np.ndarray, ridges: ArrayLike) -> np.ndarray:
    """Estimated 2-norm condition numbers of ``K + r I`` from the eigenvalues of ``K``.

    Eigenvalues below ``n · eps · max(w)`` are below what double precision resolves in
    ``K`` and are counted as 0 (``K`` is positive semi-definite), so that the estimate
    is ``(w_max + r) / r`` whenever ``K`` itself is numerically singular — the regime of
    Lippert & Rifkin's large σ, where the true condition number is about ``n / r``.

    Parameters
    ----------
    values : ndarray, shape (n,)
        Eigenvalues of ``K``, ascending.
    ridges : array_like, shape (R,)
        Positive ridges.

    Returns
    -------
    ndarray, shape (R,)
    """
    r = check_ridges(ridges)
    w = np.asarray(values, dtype=np.float64)
    w_max = float(w[-1])
    floor = len(w) * np.finfo(np.float64).eps * max(w_max, 0.0)
    w_min = float(w[0]) if w[0] > floor else 0.0
    return (w_max + r) / (w_min + r)


def double_resolves(condition: ArrayLike) -> np.ndarray:
    """True where double precision resolves a system of the given condition number."""
    return np.asarray(condition) * np.finfo(np.float64).eps < DOUBLE_RESOLUTION
