"""Periodic Gaussian kernel regularization on [0, 1) with equal-spaced binning (Shi & Yu §2–5.1).

The periodic Gaussian kernel of width ω is (Shi & Yu eq. 6, with the eigenvalue
``ρ₀ = 1`` of their Theorem 1)::

    K(s, t) = Σ_{l ∈ ℤ} exp(−l² ω² / 2) cos(2π l (s − t))
            = 1 + 2 Σ_{l ≥ 1} exp(−l² ω² / 2) cos(2π l (s − t))        (Fourier series)
            = Σ_{k ∈ ℤ} φ_σ(s − t − k),  σ = ω / (2π)                  (wrapped Gaussian)

with ``φ_σ`` the N(0, σ²) density (the two forms agree by Poisson summation).
Shi & Yu compute with the wrapped approximation ``G^J`` that keeps the terms
``|k| ≤ J`` (J = 1). Their Gaussian is written in 2π units, so their ``G^1`` is
``K / (2π)``; this module keeps ``K``'s scale (a constant factor only rescales λ).
Here ``G^J`` reduces the difference to the circle distance in ``[0, 1/2]`` first, so it is exactly
1-periodic and ``0 < K − G^J ≤`` :func:`wrap_error_bound`.

Unbinned fit (eq. 7): ``c = (G + λI)⁻¹ y``, ``ŷ = G (G + λI)⁻¹ y = S y``.
Binned fit (eqs. 14–15): ``m`` equal-width bins ``[j/m, (j+1)/m)``; bin centers
``x̄_j`` and bin means ``ȳ = B y`` (``B`` averages the rows of a bin);
``c = (G^{(m)} + λ_B I)⁻¹ ȳ`` and ``ŷ = G^{(n,m)} (G^{(m)} + λ_B I)⁻¹ B y = S_B y``,
with ``λ_B = m λ / n`` matching an unbinned λ. Both come from one
eigendecomposition of the m×m (or n×n) kernel matrix, for a whole λ path at once
(:class:`SmootherPath`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from bigkern.errors import BigkernWarning
from bigkern.kernels.periodic import (
    PeriodicGaussian,
    exact_periodic_kernel,
    wrap_error_bound,
    wrapped_gaussian_kernel,
)
from bigkern.solvers.checks import check_ridges

__all__ = [
    "EqualBins",
    "SmootherPath",
    "binned_hat_matrix",
    "equal_bins",
    "exact_periodic_kernel",
    "hat_matrix",
    "wrap_error_bound",
    "wrapped_gaussian_kernel",
]


# ---------------------------------------------------------------------------------------------
# equal-spaced binning
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EqualBins:
    """Equal-width bins ``[j/m, (j+1)/m)`` of points on [0, 1); empty bins dropped.

    Attributes
    ----------
    index : ndarray of int, shape (n,)
        Row ``i`` falls in kept bin ``index[i]`` (0 … n_bins − 1).
    counts : ndarray of int, shape (n_bins,)
        Number of points in each kept bin.
    centers : ndarray, shape (n_bins,)
        Bin centers ``x̄_j``: the mean of the points in the bin (Shi & Yu §4.1).
    n_requested : int
        The ``m`` asked for; ``n_requested − n_bins`` bins were empty.
    """

    index: np.ndarray
    counts: np.ndarray
    centers: np.ndarray
    n_requested: int

    @property
    def n_bins(self) -> int:
        """Number of non-empty bins."""
        return len(self.counts)

    @property
    def n_empty(self) -> int:
        """Number of empty bins (dropped)."""
        return self.n_requested - len(self.counts)

    def means(self, y: ArrayLike) -> np.ndarray:
        """Bin means ``ȳ = B y`` (y of shape (n,) or (n, k))."""
        y = np.asarray(y, dtype=np.float64)
        flat = y.reshape(len(self.index), -1)
        sums = np.zeros((self.n_bins, flat.shape[1]))
        np.add.at(sums, self.index, flat)
        out = sums / self.counts[:, None]
        return out.reshape((self.n_bins, *y.shape[1:]))

    def averaging_matrix(self) -> np.ndarray:
        """The m×n averaging matrix ``B`` of eq. (15) (``1/count`` in a bin's columns)."""
        B = np.zeros((self.n_bins, len(self.index)))
        B[self.index, np.arange(len(self.index))] = 1.0 / self.counts[self.index]
        return B


def equal_bins(x: ArrayLike, n_bins: int) -> EqualBins:
    """Put points of [0, 1) into ``n_bins`` equal-width bins ``[j/m, (j+1)/m)``.

    With the design ``x_i = (i − 1/2)/n`` and ``n = m p`` every bin holds ``p``
    consecutive points and its center is the paper's ``x̄_j``.

    Parameters
    ----------
    x : array_like, shape (n,)
        Points in [0, 1) (checked by the caller).
    n_bins : int
        Number of bins ``m`` (1 ≤ m).
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    if int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer; got {n_bins!r}")
    m = int(n_bins)
    raw = np.minimum(np.floor(x * m).astype(np.int64), m - 1)
    kept, index, counts = np.unique(raw, return_inverse=True, return_counts=True)
    centers = np.zeros(len(kept))
    np.add.at(centers, index, x)
    return EqualBins(index.reshape(-1), counts, centers / counts, m)


# ---------------------------------------------------------------------------------------------
# fits along a λ path from one eigendecomposition
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SmootherPath:
    """Fitted values, traces and coefficients of ``S_B(λ_B)`` for many ridges at once.

    ``G^{(m)} = U diag(e) Uᵀ`` (eigenvalues clipped at 0). Then, for each ridge r,
    ``c(r) = U diag(1/(e + r)) Uᵀ ȳ``, ``ŷ(r) = P diag(1/(e + r)) Uᵀ ȳ`` with
    ``P = G^{(n,m)} U``, and ``trace S_B(r) = Σ_k q_k / (e_k + r)`` with
    ``q = diag(Uᵀ B G^{(n,m)} U)``. Without bins (``bins=None``) the basis is the
    data, ``B = I`` and this is the unbinned ``S = G (G + λI)⁻¹``.
    """

    x: np.ndarray
    basis: np.ndarray
    bins: EqualBins | None
    kernel: PeriodicGaussian
    values: np.ndarray
    vectors: np.ndarray
    projected: np.ndarray
    trace_weights: np.ndarray

    @classmethod
    def build(
        cls, x: ArrayLike, kernel: PeriodicGaussian, bins: EqualBins | None = None,
    ) -> SmootherPath:
        """Decompose the basis kernel matrix of ``kernel``.

        Parameters
        ----------
        x : array_like, shape (n,)
            Design points in [0, 1).
        kernel : PeriodicGaussian
            The kernel (its width ω and approximation).
        bins : EqualBins, optional
            Binning of ``x``; ``None`` for the unbinned fit.
        """
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        basis = x if bins is None else bins.centers
        Gm = kernel(basis, basis)
        e, U = np.linalg.eigh(Gm)
        if e[0] < -1e-10 * max(e[-1], 1.0):
            wrapped = kernel.approximation == "wrapped"
            warnings.warn(
                f"the {kernel.approximation} kernel matrix at omega={kernel.omega:g} is "
                f"indefinite (eigenvalue {e[0]:.3g}, largest {e[-1]:.3g}); negative "
                "eigenvalues are set to 0"
                + ("; G^J is not positive definite for wide kernels (omega > ~1.5 with "
                   "J = 1): use approximation='exact' or more wraps" if wrapped else ""),
                BigkernWarning, stacklevel=2)
        e = np.clip(e, 0.0, None)
        if bins is None:
            P = U * e  # G U = U diag(e)
            q = e
        else:
            P = kernel(x, basis) @ U
            q = np.einsum("jk,jk->k", U, bins.means(P))
        return cls(x, basis, bins, kernel, e, U, P, q)

    @property
    def n(self) -> int:
        """Number of data points."""
        return len(self.x)

    @property
    def m(self) -> int:
        """Number of basis points (bins, or n without bins)."""
        return len(self.basis)

    def _spectral_y(self, y: np.ndarray) -> np.ndarray:
        ybar = y if self.bins is None else self.bins.means(y)
        return self.vectors.T @ ybar

    def fitted(self, y: ArrayLike, ridges: ArrayLike) -> np.ndarray:
        """In-sample fitted values ``S_B(r) y`` at the n data points, shape (n, len(ridges))."""
        r = check_ridges(ridges, "ridges")
        a = self._spectral_y(np.asarray(y, dtype=np.float64).reshape(-1))
        return self.projected @ (a[:, None] / (self.values[:, None] + r[None, :]))

    def traces(self, ridges: ArrayLike) -> np.ndarray:
        """``trace S_B(r)`` for each ridge, shape (len(ridges),)."""
        r = check_ridges(ridges, "ridges")
        return (self.trace_weights[:, None] / (self.values[:, None] + r[None, :])).sum(axis=0)

    def coefficients(self, y: ArrayLike, ridge: float) -> np.ndarray:
        """Coefficients ``c = (G^{(m)} + r I)⁻¹ ȳ`` on the basis points, shape (m,)."""
        r = check_ridges(ridge, "ridge")[0]
        a = self._spectral_y(np.asarray(y, dtype=np.float64).reshape(-1))
        return self.vectors @ (a / (self.values + r))

    def residual_ss(self, y: ArrayLike, ridges: ArrayLike) -> np.ndarray:
        """Residual sums of squares ``‖y − S_B(r) y‖²`` over the n points, per ridge."""
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        return ((y[:, None] - self.fitted(y, ridges)) ** 2).sum(axis=0)


def hat_matrix(x: ArrayLike, kernel: PeriodicGaussian, lam: float) -> np.ndarray:
    """Unbinned smoother matrix ``S = G (G + λI)⁻¹`` (n×n), by a direct solve.

    ``G + λI`` is symmetric, so ``S = ((G + λI)⁻¹ G)ᵀ``.
    """
    lam = check_ridges(lam, "lam")[0]
    G = kernel(x, x)
    return np.linalg.solve(G + lam * np.eye(len(G)), G).T


def binned_hat_matrix(x: ArrayLike, kernel: PeriodicGaussian, lam_b: float,
                      n_bins: int) -> np.ndarray:
    """Binned smoother matrix ``S_B = G^{(n,m)} (G^{(m)} + λ_B I)⁻¹ B`` (n×n), by a direct solve."""
    lam_b = check_ridges(lam_b, "lam_b")[0]
    bins = equal_bins(x, n_bins)
    Gm = kernel(bins.centers, bins.centers)
    Gnm = kernel(x, bins.centers)
    inner = np.linalg.solve(Gm + lam_b * np.eye(len(Gm)), bins.averaging_matrix())
    return Gnm @ inner
