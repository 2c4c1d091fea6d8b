"""Kernel ridge / regularized least squares from one eigendecomposition.

``K = V diag(w) Vᵀ`` gives, for every ridge ``r > 0``,

* the coefficients ``c(r) = (K + r I)⁻¹ y = V diag(1/(w + r)) Vᵀ y``,
* the diagonal of ``G(r) = (K + r I)⁻¹``: ``G_ii = Σ_j V_ij² / (w_j + r)``,
* the exact leave-one-out residuals of kernel ridge without intercept,
  ``y_i − f^{(−i)}(x_i) = c_i / G_ii``,

each in O(n²) per ridge after the single O(n³) decomposition, with no refits.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike

from bigkern.errors import DoublePrecisionWarning, ExtendedPrecisionWarning

__all__ = [
    "DoublePrecisionWarning",
    "ExtendedPrecisionWarning",
    "RidgeEigensystem",
    "condition_estimate",
    "double_resolves",
    "extended_backend",
    "extended_solve",
]


def _check_ridges(ridges: ArrayLike) -> np.ndarray:
    r = np.atleast_1d(np.asarray(ridges, dtype=np.float64))
    if r.ndim != 1 or r.size == 0:
        raise ValueError(f"ridges must be a non-empty 1-D sequence; got shape {r.shape}")
    bad = np.flatnonzero(~(np.isfinite(r) & (r > 0)))
    if bad.size:
        raise ValueError(
            f"ridges must be positive and finite; ridges[{bad[0]}] = {r[bad[0]]!r}"
        )
    return r


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
        r = _check_ridges(ridges)
        Vty, squeeze = self._project(y)
        scaled = Vty[None, :, :] / (self.values[None, :, None] + r[:, None, None])
        C = np.einsum("ij,rjk->rik", self.vectors, scaled, optimize=True)
        return C[..., 0] if squeeze else C

    def inverse_diagonal(self, ridges: ArrayLike) -> np.ndarray:
        """Diagonals of ``(K + r I)⁻¹`` for every ridge ``r``: shape (R, n)."""
        r = _check_ridges(ridges)
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
    r = _check_ridges(ridges)
    w = np.asarray(values, dtype=np.float64)
    w_max = float(w[-1])
    floor = len(w) * np.finfo(np.float64).eps * max(w_max, 0.0)
    w_min = float(w[0]) if w[0] > floor else 0.0
    return (w_max + r) / (w_min + r)


def double_resolves(condition: ArrayLike) -> np.ndarray:
    """True where double precision resolves a system of the given condition number."""
    return np.asarray(condition) * np.finfo(np.float64).eps < DOUBLE_RESOLUTION


def extended_backend() -> str:
    """The default extended-precision backend: "flint" when python-flint is installed
    (arb ball arithmetic in C, ~50-100x faster here), else "mpmath"."""
    try:
        import flint  # noqa: F401
    except ImportError:
        return "mpmath"
    return "flint"


def _start_bits(n: int, ridge: float) -> int:
    """Working precision (bits): the double's 53 + 30 guard bits + log2 of the bound n/ridge."""
    return 83 + int(np.ceil(np.log2((n + ridge) / ridge)))


def _arb_gauss(flint, A: list, B: list, neg_inv_2s2) -> object:
    """Gaussian kernel matrix (arb_mat) between lists of points (lists of arb coordinates)."""
    rows = []
    for a in A:
        row = []
        for b in B:
            d2 = sum(((ai - bi) ** 2 for ai, bi in zip(a, b, strict=True)), flint.arb(0))
            row.append((d2 * neg_inv_2s2).exp())
        rows.append(row)
    return flint.arb_mat(rows)


def _flint_solve(X, Y, Z, sigma, ridges, bits, want):
    """One pass at ``bits`` bits with python-flint's arb (ball) arithmetic.

    ``want`` is "predict" (affinities ``(K + rI)⁻¹ k(x)`` then ``yᵀ·``, one ridge),
    "coef" (``c``) or "loo" (exact LOO MSE for every ridge).
    Returns (midpoints, max radius) as float64 arrays.
    """
    import flint

    old = flint.ctx.prec
    flint.ctx.prec = bits
    try:
        xs = [[flint.arb(float(v)) for v in row] for row in X]
        s = flint.arb(float(sigma))
        neg = -1 / (2 * s * s)
        K = _arb_gauss(flint, xs, xs, neg)
        n = len(xs)
        ymat = flint.arb_mat([[float(v)] for v in Y])
        out = []
        for r in ridges:
            A = flint.arb_mat(K)
            for i in range(n):
                A[i, i] += flint.arb(float(r))
            if want == "predict":
                for lo in range(0, len(Z), 1024):
                    zs = [[flint.arb(float(v)) for v in row] for row in Z[lo:lo + 1024]]
                    V = A.solve(_arb_gauss(flint, xs, zs, neg))  # affinities (K + rI)⁻¹ k(x)
                    F = ymat.transpose() * V
                    out += [F[0, j] for j in range(F.ncols())]
            elif want == "coef":
                C = A.solve(ymat)
                out += [C[i, 0] for i in range(n)]
            else:  # exact LOO: c_i / (A⁻¹)_ii
                G = A.inv()
                C = G * ymat
                res = [C[i, 0] / G[i, i] for i in range(n)]
                out.append(sum((e * e for e in res), flint.arb(0)) / n)
        mids = np.array([float(v.mid()) for v in out])
        rads = np.array([float(v.rad()) for v in out])
        return mids, rads
    finally:
        flint.ctx.prec = old


def _mpmath_solve(X, Y, Z, sigma, ridges, bits, want):
    """The same as :func:`_flint_solve` with mpmath (no error radii: returns zeros)."""
    from mpmath import mp

    with mp.workprec(bits):
        n = len(X)
        neg = -1 / (2 * mp.mpf(float(sigma)) ** 2)

        def gauss(A, B):
            M = mp.matrix(len(A), len(B))
            for i, a in enumerate(A):
                for j, b in enumerate(B):
                    d2 = mp.fsum((mp.mpf(float(u)) - mp.mpf(float(v))) ** 2
                                 for u, v in zip(a, b, strict=True))
                    M[i, j] = mp.exp(d2 * neg)
            return M

        K = gauss(X, X)
        yv = mp.matrix([float(v) for v in Y])
        out = []
        for r in ridges:
            G = mp.inverse(K + mp.mpf(float(r)) * mp.eye(n))
            if want == "predict":  # yᵀ[(K + rI)⁻¹ k(x)]: the affinities first
                F = yv.T * (G * gauss(X, Z))
                out += [F[0, j] for j in range(len(Z))]
            elif want == "coef":
                c = G * yv
                out += [c[i] for i in range(n)]
            else:
                c = G * yv
                out.append(mp.fsum((c[i] / G[i, i]) ** 2 for i in range(n)) / n)
        mids = np.array([float(v) for v in out])
        return mids, np.zeros_like(mids)


def extended_solve(
    X: np.ndarray,
    y: np.ndarray,
    sigma: float,
    ridges: ArrayLike,
    *,
    want: str = "predict",
    Z: np.ndarray | None = None,
    dps: int | None = None,
    backend: str | None = None,
) -> tuple[np.ndarray, int]:
    """Gaussian RLS quantities in extended precision, the products associated as in the paper.

    ``K`` and ``k(x)`` are evaluated from the float64 inputs (taken as exact) in the
    working precision. Predictions are ``yᵀ[(K + rI)⁻¹ k(x)]``: the point affinities
    ``(K + rI)⁻¹ k(x)``, which stay bounded as σ → ∞ (Lippert & Rifkin, Theorem 1),
    are solved first; ``c = (K + rI)⁻¹ y`` grows like ``1/r`` and is never formed for
    prediction.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Training inputs.
    y : ndarray, shape (n,)
        Targets.
    sigma : float
        Kernel width, ``k(x, x') = exp(−‖x − x'‖² / (2σ²))``.
    ridges : array_like, shape (R,)
        Values added to the diagonal of ``K`` (``λn``); one ridge for "predict" and "coef".
    want : {"predict", "coef", "loo"}
        Predictions at ``Z``; coefficients ``c``; or exact LOO MSE for every ridge.
    Z : ndarray, shape (m, d), optional
        Points to predict at (for ``want="predict"``).
    dps : int, optional
        Decimal digits of working precision. By default the precision starts at
        ``83 + log2(n / r)`` bits and, with python-flint, is doubled until the
        rigorous error radius of every result is below ``1e-13 ×`` its scale.
    backend : {"flint", "mpmath"}, optional
        Default: python-flint when installed (much faster), else mpmath.

    Returns
    -------
    values : ndarray
        float64 results (m predictions, n coefficients or R LOO MSEs).
    dps : int
        Decimal digits of the last working precision.

    Raises
    ------
    ValueError
        When the working precision cannot even prove ``K + rI`` non-singular (a fixed
        ``dps`` far too small).

    Warns
    -----
    ExtendedPrecisionWarning
        When a fixed ``dps`` does not resolve the results to double accuracy.
    """
    r = _check_ridges(ridges)
    if want not in ("predict", "coef", "loo"):
        raise ValueError(f"want must be 'predict', 'coef' or 'loo'; got {want!r}")
    if want != "loo" and r.size != 1:
        raise ValueError(f"want={want!r} takes one ridge; got {r.size}")
    if want == "predict" and Z is None:
        raise ValueError("want='predict' needs the points Z")
    backend = backend or extended_backend()
    if backend not in ("flint", "mpmath"):
        raise ValueError(f"backend must be 'flint' or 'mpmath'; got {backend!r}")
    solve = _flint_solve if backend == "flint" else _mpmath_solve
    X = np.asarray(X, dtype=np.float64)
    Z = None if Z is None else np.asarray(Z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (len(X),) or (Z is not None and Z.shape[1:] != X.shape[1:]):
        raise ValueError(f"need X (n, d), y (n,) and Z (m, d); got shapes {X.shape}, "
                         f"{y.shape}, {None if Z is None else Z.shape}")
    if dps is not None:
        bits = int(np.ceil(dps * np.log2(10)))
    else:
        bits = _start_bits(len(X), float(r.min()))
        if backend == "mpmath":  # no radii to check: take a doubled margin
            bits *= 2
    for _ in range(6):
        try:
            mids, rads = solve(X, y, Z, sigma, r, bits, want)
            ok = np.all(rads <= 1e-13 * max(1.0, float(np.max(np.abs(mids)))))
        except ZeroDivisionError:  # arb could not prove the matrix non-singular
            mids, ok = None, False
        if ok or dps is not None:
            break
        bits *= 2
    digits = int(bits / np.log2(10))
    if not ok:
        if mids is None:
            raise ValueError(
                f"K + ridge·I (n={len(X)}, sigma={sigma:g}, ridge={r.min():g}) is singular "
                f"to {digits} digits: raise dps (or leave dps=None to choose it)"
            )
        warnings.warn(
            f"{digits} digits do not resolve the Gaussian RLS solution (n={len(X)}, "
            f"sigma={sigma:g}, ridge={r.min():g}) to double accuracy; raise dps",
            ExtendedPrecisionWarning,
            stacklevel=2,
        )
    return mids, digits
