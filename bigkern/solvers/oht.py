"""Orthogonalization and hard thresholding regression (Hagiwara 2011).

The model is ``f(x) = Σ_j w_j g_j(x)`` on fixed basis functions (Gaussian
kernels at the training inputs in the paper, any basis here). With ``G`` the
n×m matrix ``G_ij = g_j(x_i)``, an invertible ``Q`` makes the columns of
``A = G Q`` orthogonal, ``AᵀA = Γ = diag(γ_j)``; the least-squares orthogonal
coefficients are ``v̂_j = a_jᵀy / γ_j`` (eq. 6 with ``λ_j = 0``).

* **Stable set** (section 4.3): only components with ``γ_j > η`` are used
  (``l`` of them).
* **Noise variance** (eq. 21, Carter & Eagleson): with ``H = A_l Γ_l⁻¹ A_lᵀ``, a
  projection, ``(I − H)² = I − H``, so
  ``σ̂² = (yᵀy − Σ_{j≤l} (a_jᵀy)² / γ_j) / (n − l)``.
* **Thresholds** (section 4.4): ``θ_j = σ̂² / γ_j · 2 log n``; ``v̄_j = v̂_j`` if
  ``v̂_j² > θ_j`` else 0 (eq. 7).
* **ED / ED2, GS / GS2**: ``m`` is the last surviving component; ED/GS keep only
  the survivors among the first ``m``, ED2/GS2 keep all of the first ``m``
  (section 4.5). The weights are ``w̄ = Q v̄``.

Everything is computed from the normal-equation pieces ``GᵀG``, ``Gᵀy`` and
``yᵀy`` (and the sample count ``n``), so the same solver serves an in-memory
basis and a distributed reduced basis accumulated in one pass:

* ``ED``: ``Q`` = eigenvectors of ``GᵀG`` (descending eigenvalues ``γ_j``),
  ``a_jᵀy = q_jᵀ(Gᵀy)``.
* ``GS``: Gram–Schmidt that orthogonalizes, at each step, the remaining basis
  vector with the largest residual norm. The residual norms are the diagonal of
  the Schur complement of ``GᵀG``, so this is exactly Cholesky with complete
  diagonal pivoting, ``P ᵀ GᵀG P = RᵀR`` (LAPACK ``dpstrf``): ``γ_k = R_kk²``,
  ``a_kᵀy = R_kk (R⁻ᵀ Pᵀ Gᵀy)_k``, and LAPACK stops at the first pivot ``≤ η``,
  which is the stable-set rule. The GS vectors are ``A = G P R⁻¹ diag(R)``, so
  ``w̄ = R_m⁻¹ diag(R_m) v̄`` on the pivoted basis functions ``c_1 … c_m``: a
  sparse model in the original basis.

Intercept: the paper's model has none (it standardizes ``y`` to mean zero). When
``ysum`` (and ``Gsum``) are given, ``y`` is centred first — ``Gᵀy − ȳ·Gᵀ1``,
``yᵀy − nȳ²`` — and ``ȳ`` is returned as the intercept; the denominator of (21)
stays ``n − l`` as in the paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import scipy.linalg
from scipy.linalg import lapack

from bigkern.errors import DataQualityError

__all__ = ["METHODS", "OHTSolution", "oht_fit", "oht_from_normal_equations"]

METHODS: tuple[str, ...] = ("ED", "ED2", "GS", "GS2")
"""The four training methods of Hagiwara (2011)."""


class NoResidualDegreesOfFreedomError(ValueError):
    """The stable set has ``l ≥ n`` components: (21) has no residual degrees of freedom."""


@dataclass(frozen=True)
class OHTSolution:
    """Result of orthogonalization + hard thresholding.

    Attributes
    ----------
    weights : ndarray, shape (m,)
        ``w̄`` on the original basis functions (zero where unused).
    intercept : float
        ``ȳ`` when ``y`` was centred, else 0.
    kept : ndarray of int
        Indices (into the ``l`` stable components, in orthogonalization order)
        of the components with a nonzero coefficient ``v̄_j``.
    basis_used : ndarray of int
        Indices of the basis functions with a nonzero weight (for GS/GS2 the
        pivots ``c_1 … c_m``: the sparse model).
    sigma2 : float
        Noise variance ``σ̂²`` by (21).
    thresholds : ndarray, shape (l,)
        ``θ_j = σ̂² · 2 log n / γ_j``.
    gamma : ndarray, shape (l,)
        Squared norms ``γ_j`` of the stable orthogonal components, in order.
    coefficients : ndarray, shape (l,)
        Least-squares orthogonal coefficients ``v̂_j`` (before thresholding).
    n_components : int
        Number of kept components (``len(kept)``).
    n_stable : int
        Size ``l`` of the stable set.
    last : int
        ``m``: one more than the index of the last surviving component (0 if none).
    pivots : ndarray of int
        For GS/GS2 the basis index orthogonalized at each step (``c_k``); empty for ED.
    method : str
        ``"ED"``, ``"ED2"``, ``"GS"`` or ``"GS2"``.
    n : int
        Number of samples.
    """

    weights: np.ndarray
    intercept: float
    kept: np.ndarray
    basis_used: np.ndarray
    sigma2: float
    thresholds: np.ndarray
    gamma: np.ndarray
    coefficients: np.ndarray
    n_components: int
    n_stable: int
    last: int
    pivots: np.ndarray
    method: str
    n: int


def _check_method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    return method


def _check_eta(eta: float) -> float:
    if not (isinstance(eta, int | float | np.floating | np.integer) and math.isfinite(eta)
            and eta > 0):
        raise ValueError(f"eta (stable-set bound on γ_j) must be a positive finite number; "
                         f"got {eta!r}")
    return float(eta)


def _check_n(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2:
        raise ValueError(f"n (number of samples) must be an integer >= 2; got {n!r}")
    return int(n)


def _finite(name: str, a: np.ndarray) -> None:
    bad = np.argwhere(~np.isfinite(a))
    if bad.size:
        where = ", ".join(str(int(i)) for i in bad[0])
        raise DataQualityError(f"{name} has a non-finite entry (NaN or ±inf) at index [{where}]")


def _threshold(gamma: np.ndarray, c: np.ndarray, yty: float, n: int, method: str
               ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, int]:
    """σ̂² by (21), thresholds, v̂, the mask of kept components and ``m``."""
    l = len(gamma)
    if l >= n:
        raise NoResidualDegreesOfFreedomError(
            f"the stable set has l = {l} components for n = {n} samples: the noise variance "
            f"(21) needs n - l > 0 (raise eta, or use a wider kernel / fewer basis functions)")
    rss = yty - float(np.sum(c * c / gamma))
    sigma2 = max(rss, 0.0) / (n - l)
    thresholds = sigma2 * 2.0 * math.log(n) / gamma
    v = c / gamma
    survive = v * v > thresholds
    last = int(np.flatnonzero(survive)[-1]) + 1 if survive.any() else 0
    if method.endswith("2"):
        keep = np.zeros(l, dtype=bool)
        keep[:last] = True
    else:
        keep = survive
    return sigma2, thresholds, v, keep, last


def oht_from_normal_equations(
    GtG: np.ndarray,
    Gty: np.ndarray,
    yty: float,
    n: int,
    *,
    method: str = "ED",
    eta: float = 1e-10,
    Gsum: np.ndarray | None = None,
    ysum: float | None = None,
    rtol: float = 0.0,
) -> OHTSolution:
    """Orthogonalization + hard thresholding from the normal-equation pieces.

    Parameters
    ----------
    GtG : ndarray, shape (m, m)
        ``GᵀG`` (symmetric; only its upper triangle is read by GS).
    Gty : ndarray, shape (m,)
        ``Gᵀy``.
    yty : float
        ``yᵀy``.
    n : int
        Number of samples (rows of ``G``), ≥ 2.
    method : {"ED", "ED2", "GS", "GS2"}
        Eigendecomposition or pivoted Gram–Schmidt; ``2`` keeps every component
        up to the last surviving one (section 4.5).
    eta : float
        Stable-set bound: components with ``γ_j ≤ eta`` are not used (> 0).
    Gsum : ndarray, shape (m,), optional
        Column sums ``Gᵀ1``; needed with ``ysum``.
    ysum : float, optional
        ``Σ y_i``. When given, ``y`` is centred and ``ȳ`` is the intercept.
    rtol : float
        Optional extra stable-set bound relative to the largest ``γ``: components
        with ``γ_j ≤ rtol·γ_1`` are dropped too. 0 (default) is the paper's rule.
        Eigenvalues of a formed ``GᵀG`` are only accurate to about
        ``m·ε·γ_1`` (ε = 2.2e-16), which is above ``η = 1e-10`` once ``γ_1`` is
        large (many samples); ``rtol ≈ m·ε`` then keeps round-off out of the set.

    Returns
    -------
    OHTSolution

    Raises
    ------
    ValueError
        Bad ``method``, ``eta`` or ``n``, mismatched shapes, or ``l ≥ n``.
    DataQualityError
        A non-finite piece, or a constant (centred) / all-zero ``y``.
    """
    method = _check_method(method)
    eta = _check_eta(eta)
    n = _check_n(n)
    if not (math.isfinite(rtol) and 0 <= rtol < 1):
        raise ValueError(f"rtol must be in [0, 1); got {rtol!r}")
    GtG = np.asarray(GtG, dtype=np.float64)
    Gty = np.asarray(Gty, dtype=np.float64)
    if GtG.ndim != 2 or GtG.shape[0] != GtG.shape[1]:
        raise ValueError(f"GtG must be a square (m, m) matrix; got shape {GtG.shape}")
    m = GtG.shape[0]
    if Gty.shape != (m,):
        raise ValueError(f"Gty must have shape ({m},) to match GtG; got {Gty.shape}")
    _finite("GtG", GtG)
    _finite("Gty", Gty)
    yty = float(yty)
    _finite("yty", np.asarray(yty))
    intercept = 0.0
    if ysum is not None:
        if Gsum is None:
            raise ValueError("centring y (ysum given) needs Gsum, the column sums of G")
        Gsum = np.asarray(Gsum, dtype=np.float64)
        if Gsum.shape != (m,):
            raise ValueError(f"Gsum must have shape ({m},) to match GtG; got {Gsum.shape}")
        _finite("Gsum", Gsum)
        _finite("ysum", np.asarray(float(ysum)))
        intercept = float(ysum) / n
        Gty = Gty - intercept * Gsum
        centred = yty - n * intercept * intercept
        if not centred > 1e-12 * max(yty, np.finfo(float).tiny):
            raise DataQualityError(
                f"y is constant (every value = {intercept:.6g}): nothing to regress on")
        yty = centred
    elif not yty > 0:
        raise DataQualityError("y is all zero (yty = 0): nothing to regress on")

    top = float(np.max(np.diag(GtG))) if m else 0.0
    if method.startswith("ED"):
        evals, evecs = scipy.linalg.eigh(GtG, check_finite=False)
        order = np.argsort(evals)[::-1]
        bound = max(eta, rtol * float(evals[order[0]])) if m else eta
        stable = order[evals[order] > bound]
        gamma = evals[stable]
        U = evecs[:, stable]
        c = U.T @ Gty
        sigma2, thr, v, keep, last = _threshold(gamma, c, yty, n, method)
        weights = U[:, keep] @ v[keep]
        pivots = np.zeros(0, dtype=np.int64)
        basis_used = np.flatnonzero(weights)
    else:
        R, piv, rank, info = lapack.dpstrf(GtG, tol=max(eta, rtol * top), lower=0)
        if info < 0:  # pragma: no cover - argument error inside LAPACK
            raise RuntimeError(f"LAPACK dpstrf failed (info={info})")
        l = int(rank) if info > 0 else m
        piv = piv[:l].astype(np.int64) - 1
        R = np.triu(R[:l, :l])
        d = np.diag(R).copy()
        gamma = d * d
        z = scipy.linalg.solve_triangular(R, Gty[piv], trans="T", check_finite=False)
        c = d * z
        sigma2, thr, v, keep, last = _threshold(gamma, c, yty, n, method)
        vbar = np.where(keep, v, 0.0)[:last]
        weights = np.zeros(m)
        if last:
            weights[piv[:last]] = scipy.linalg.solve_triangular(
                R[:last, :last], d[:last] * vbar, check_finite=False)
        pivots = piv
        basis_used = np.sort(piv[:last])
    kept = np.flatnonzero(keep)
    return OHTSolution(
        weights=weights, intercept=intercept, kept=kept, basis_used=basis_used,
        sigma2=float(sigma2), thresholds=thr, gamma=gamma, coefficients=v,
        n_components=len(kept), n_stable=len(gamma), last=last, pivots=pivots,
        method=method, n=n,
    )


def oht_fit(
    G: np.ndarray,
    y: np.ndarray,
    *,
    method: str = "ED",
    eta: float = 1e-10,
    center: bool = True,
    rtol: float = 0.0,
) -> OHTSolution:
    """Orthogonalization + hard thresholding for an in-memory basis matrix ``G`` (n, m).

    Forms ``GᵀG``, ``Gᵀy`` and ``yᵀy`` (``y`` centred exactly first when
    ``center``) and calls :func:`oht_from_normal_equations`.

    Parameters
    ----------
    G : ndarray, shape (n, m)
        Basis outputs ``G_ij = g_j(x_i)``.
    y : ndarray, shape (n,)
        Targets.
    method : {"ED", "ED2", "GS", "GS2"}
        See :func:`oht_from_normal_equations`.
    eta : float
        Stable-set bound (> 0).
    center : bool
        Centre ``y`` and return ``ȳ`` as the intercept.
    rtol : float
        See :func:`oht_from_normal_equations`.

    Returns
    -------
    OHTSolution
    """
    G = np.asarray(G, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if G.ndim != 2:
        raise ValueError(f"G must be a 2-D (n, m) matrix; got shape {G.shape}")
    if y.shape != (G.shape[0],):
        raise ValueError(f"y must have shape ({G.shape[0]},) to match G's rows; got {y.shape}")
    _check_n(G.shape[0])
    _finite("G", G)
    _finite("y", y)
    intercept = float(np.mean(y)) if center else 0.0
    yc = y - intercept
    if center and not np.any(yc):
        raise DataQualityError(f"y is constant (every value = {intercept:.6g}): "
                               f"nothing to regress on")
    sol = oht_from_normal_equations(G.T @ G, G.T @ yc, float(yc @ yc), G.shape[0],
                                    method=method, eta=eta, rtol=rtol)
    return replace(sol, intercept=intercept)
