"""OHT from the normal-equation pieces ``GᵀG``, ``Gᵀy``, ``yᵀy``, ``n``.

The shared core of :mod:`bigkern.solvers.oht`: stable set, noise variance (21),
thresholds and the ED / GS solutions (see the package docstring).
"""


from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy.linalg import lapack

from bigkern.errors import DataQualityError, NoResidualDegreesOfFreedomError

__all__ = [
    "METHODS",
    "NoResidualDegreesOfFreedomError",
    "OHTSolution",
    "oht_from_normal_equations",
    "oht_solutions",
]

METHODS: tuple[str, ...] = ("ED", "ED2", "GS", "GS2")
"""The four training methods of Hagiwara (2011)."""


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
        Noise variance ``σ̂²`` by (21) (or the value supplied).
    stable_weights : ndarray, shape (m,)
        Weights of the unthresholded projection ``Hy`` on the stable set
        (``Q Γ⁻¹ Aᵀy``): a second pass over the data with them gives the residual
        sum of squares of (21) without the cancellation of ``yᵀy − Σ (a_jᵀy)²/γ_j``.
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
    stable_weights: np.ndarray
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


def _threshold(gamma: np.ndarray, c: np.ndarray, yty: float, n: int, method: str,
               sigma2: float | None = None
               ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, int]:
    """σ̂² by (21) (unless given), thresholds, v̂, the mask of kept components and ``m``."""
    l = len(gamma)
    if sigma2 is None:
        if l >= n:
            raise NoResidualDegreesOfFreedomError(
                f"the stable set has l = {l} components for n = {n} samples: the noise "
                f"variance (21) needs n - l > 0 (raise eta, or use a wider kernel / fewer "
                f"basis functions)")
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


def _solution(gamma: np.ndarray, c: np.ndarray, yty: float, n: int, method: str,
              weights_of: object, pivots: np.ndarray, intercept: float,
              sigma2: float | None) -> OHTSolution:
    sigma2, thr, v, keep, last = _threshold(gamma, c, yty, n, method, sigma2)
    weights, basis_used = weights_of(v, keep, last)  # type: ignore[operator]
    stable, _ = weights_of(v, np.ones(len(v), dtype=bool), len(v))  # type: ignore[operator]
    kept = np.flatnonzero(keep)
    return OHTSolution(
        weights=weights, intercept=intercept, kept=kept, basis_used=basis_used,
        sigma2=float(sigma2), stable_weights=stable, thresholds=thr, gamma=gamma, coefficients=v,
        n_components=len(kept), n_stable=len(gamma), last=last, pivots=pivots,
        method=method, n=n,
    )


def _ed_solutions(evals: np.ndarray, U: np.ndarray, c: np.ndarray, yty: float, n: int,
                  methods: tuple[str, ...], intercept: float,
                  sigma2: float | None = None) -> dict[str, OHTSolution]:
    """ED/ED2 from stable eigenpairs of GᵀG (descending ``evals``) and ``c = Uᵀ Gᵀy``."""

    def weights_of(v: np.ndarray, keep: np.ndarray, last: int) -> tuple[np.ndarray, np.ndarray]:
        w = U[:, keep] @ v[keep]
        return w, np.flatnonzero(w)

    none = np.zeros(0, dtype=np.int64)
    return {meth: _solution(evals, c, yty, n, meth, weights_of, none, intercept, sigma2)
            for meth in methods if meth.startswith("ED")}


def _gs_solutions(R: np.ndarray, piv: np.ndarray, Gty: np.ndarray, yty: float, n: int,
                  methods: tuple[str, ...], intercept: float,
                  sigma2: float | None = None) -> dict[str, OHTSolution]:
    """GS/GS2 from the triangular factor of the ``l`` stable pivoted columns.

    ``R`` (l, l) upper triangular with ``G[:, piv] = Q_o R`` (``Q_o`` orthonormal),
    equivalently ``P ᵀ GᵀG P = RᵀR``; the GS vectors are ``a_k = Q_o[:, k] R_kk``.
    """
    m = len(Gty)
    d = np.diag(R).copy()
    z = scipy.linalg.solve_triangular(R, Gty[piv], trans="T", check_finite=False)  # Q_oᵀy

    def weights_of(v: np.ndarray, keep: np.ndarray, last: int) -> tuple[np.ndarray, np.ndarray]:
        w = np.zeros(m)
        if last:
            vbar = np.where(keep, v, 0.0)[:last]
            w[piv[:last]] = scipy.linalg.solve_triangular(R[:last, :last], d[:last] * vbar,
                                                          check_finite=False)
        return w, np.sort(piv[:last])

    return {meth: _solution(d * d, d * z, yty, n, meth, weights_of, piv, intercept, sigma2)
            for meth in methods if meth.startswith("GS")}


def _pivoted_cholesky(GtG: np.ndarray, bound: float) -> tuple[np.ndarray, np.ndarray]:
    """Cholesky of GᵀG with complete diagonal pivoting, stopped at the first pivot ≤ bound."""
    m = GtG.shape[0]
    R, piv, rank, info = lapack.dpstrf(GtG, tol=bound, lower=0)
    if info < 0:  # pragma: no cover - argument error inside LAPACK
        raise RuntimeError(f"LAPACK dpstrf failed (info={info})")
    l = int(rank) if info > 0 else m
    return np.triu(R[:l, :l]), piv[:l].astype(np.int64) - 1


def _check_methods(methods: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    methods = (methods,) if isinstance(methods, str) else tuple(methods)
    if not methods:
        raise ValueError("methods must name at least one of " + ", ".join(METHODS))
    for meth in methods:
        _check_method(meth)
    return methods


def _check_rtol(rtol: float) -> float:
    if not (math.isfinite(rtol) and 0 <= rtol < 1):
        raise ValueError(f"rtol must be in [0, 1); got {rtol!r}")
    return float(rtol)


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
    sigma2: float | None = None,
) -> OHTSolution:
    """Orthogonalization + hard thresholding from the normal-equation pieces.

    Parameters
    ----------
    GtG : ndarray, shape (m, m)
        ``GᵀG`` (symmetric; GS reads its upper triangle).
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
        with ``γ_j ≤ rtol·γ_1`` are dropped too (GS: ``rtol·max diag GᵀG``). 0
        (default) is the paper's rule. Eigenvalues of a formed ``GᵀG`` are only
        accurate to about ``m·ε·γ_1`` (ε = 2.2e-16), which is above
        ``η = 1e-10`` once ``γ_1`` is large (many samples); ``rtol ≈ m·ε`` then
        keeps round-off out of the stable set.
    sigma2 : float, optional
        A noise variance to threshold with instead of (21) from the pieces (e.g.
        the residual sum of squares of ``stable_weights`` from a second pass,
        divided by ``n − n_stable``).

    Returns
    -------
    OHTSolution

    Raises
    ------
    ValueError
        Bad ``method``, ``eta``, ``rtol`` or ``n``, mismatched shapes, or ``l ≥ n``
        (:class:`NoResidualDegreesOfFreedomError`).
    DataQualityError
        A non-finite piece, or a constant (centred) / all-zero ``y``.
    """
    return oht_solutions(GtG, Gty, yty, n, methods=(_check_method(method),), eta=eta,
                         Gsum=Gsum, ysum=ysum, rtol=rtol, sigma2=sigma2)[method]


def oht_solutions(
    GtG: np.ndarray,
    Gty: np.ndarray,
    yty: float,
    n: int,
    *,
    methods: tuple[str, ...] = METHODS,
    eta: float = 1e-10,
    Gsum: np.ndarray | None = None,
    ysum: float | None = None,
    rtol: float = 0.0,
    sigma2: float | None = None,
) -> dict[str, OHTSolution]:
    """Several methods from one set of pieces (one eigendecomposition, one pivoted Cholesky).

    Parameters are those of :func:`oht_from_normal_equations`, with ``methods`` a
    tuple of method names.

    Returns
    -------
    dict of str to OHTSolution
    """
    methods = _check_methods(methods)
    eta = _check_eta(eta)
    n = _check_n(n)
    rtol = _check_rtol(rtol)
    if sigma2 is not None and not (math.isfinite(sigma2) and sigma2 >= 0):
        raise ValueError(f"sigma2 must be a finite number >= 0; got {sigma2!r}")
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

    out: dict[str, OHTSolution] = {}
    if any(meth.startswith("ED") for meth in methods):
        evals, evecs = scipy.linalg.eigh(GtG, check_finite=False)
        order = np.argsort(evals)[::-1]
        bound = max(eta, rtol * float(evals[order[0]])) if m else eta
        stable = order[evals[order] > bound]
        U = evecs[:, stable]
        out.update(_ed_solutions(evals[stable], U, U.T @ Gty, yty, n, methods, intercept,
                                 sigma2))
    if any(meth.startswith("GS") for meth in methods):
        top = float(np.max(np.diag(GtG))) if m else 0.0
        R, piv = _pivoted_cholesky(GtG, max(eta, rtol * top))
        out.update(_gs_solutions(R, piv, Gty, yty, n, methods, intercept, sigma2))
    return {meth: out[meth] for meth in methods}

