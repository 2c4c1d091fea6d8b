"""Gaussian RLS in extended precision (python-flint's arb, or mpmath).

Lippert & Rifkin's large-σ, small-λ limit makes ``K + λnI`` far too ill-conditioned
for double precision (condition about ``n / (λn)``). :func:`extended_solve` rebuilds
the kernel from the float64 inputs in a working precision of ``83 + log2(n / r)``
bits (raised until rigorous error balls are small, with python-flint), and
associates the products as the paper does, so that predictions stay bounded.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike

from bigkern.errors import ExtendedPrecisionWarning
from bigkern.extras import available, require
from bigkern.solvers.checks import check_ridges

__all__ = ["extended_backend", "extended_solve"]


def extended_backend() -> str:
    """The default extended-precision backend: "flint" when python-flint is installed
    (arb ball arithmetic in C, where mpmath computes in Python), else "mpmath".

    Raises
    ------
    MissingExtraError
        Neither is installed (both come with ``bigkern[precision]``).
    """
    if available("flint"):
        return "flint"
    require("mpmath", extra="precision", purpose="Gaussian RLS in extended precision")
    return "mpmath"


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


def _flint_solve(X, Y, Z, omega, ridges, bits, want):
    """One pass at ``bits`` bits with python-flint's arb (ball) arithmetic.

    ``want`` is "predict" (affinities ``(K + rI)⁻¹ k(x)`` then ``yᵀ·``, one ridge),
    "coef" (``c``) or "loo" (exact LOO MSE for every ridge).
    Returns (midpoints, max radius) as float64 arrays.
    """
    flint = require("flint", extra="precision", purpose="the flint backend of extended precision")
    old = flint.ctx.prec
    flint.ctx.prec = bits
    try:
        xs = [[flint.arb(float(v)) for v in row] for row in X]
        s = flint.arb(float(omega))
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


def _mpmath_solve(X, Y, Z, omega, ridges, bits, want):
    """The same as :func:`_flint_solve` with mpmath (no error radii: returns zeros)."""
    mp = require("mpmath", extra="precision",
                 purpose="the mpmath backend of extended precision").mp
    with mp.workprec(bits):
        n = len(X)
        neg = -1 / (2 * mp.mpf(float(omega)) ** 2)

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
    omega: float,
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
    omega : float
        Gaussian width, ``k(x, x') = exp(−‖x − x'‖² / (2ω²))``.
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
        Default: python-flint when installed (compiled, so much faster), else mpmath.

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
    r = check_ridges(ridges)
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
            mids, rads = solve(X, y, Z, omega, r, bits, want)
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
                f"K + ridge·I (n={len(X)}, omega={omega:g}, ridge={r.min():g}) is singular "
                f"to {digits} digits: raise dps (or leave dps=None to choose it)"
            )
        warnings.warn(
            f"{digits} digits do not resolve the Gaussian RLS solution (n={len(X)}, "
            f"omega={omega:g}, ridge={r.min():g}) to double accuracy; raise dps",
            ExtendedPrecisionWarning,
            stacklevel=2,
        )
    return mids, digits
